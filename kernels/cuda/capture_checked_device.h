// The GPU devices (sim, cuda) are registered through here: their copy, synchronize and
// empty_cache then refuse, with one rg::Error naming the operation, to run where CUDA's capture
// rules forbid it (kernels/cuda/capture_rules.h: that work needs the host). The checks are
// written once, above both devices.
#pragma once
#include "core/device_interface.h"

namespace rg::gpu {

// register_device(type, device) with the capture checks in front; type is sim or cuda.
void register_gpu_device(DeviceType type, const DeviceInterface& device);

}  // namespace rg::gpu
