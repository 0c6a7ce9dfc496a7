// The GPU devices (sim, cuda) are registered through here: their copy, synchronize and
// empty_cache then refuse, with one rg::Error naming the operation, to run while one of the
// device's streams captures a graph (kernels/cuda/graph.h: that work needs the host). The
// checks are written once, above both devices.
#pragma once
#include "core/device_interface.h"

namespace rg::gpu {

// register_device(type, device) with the capture checks in front; type is sim or cuda.
void register_gpu_device(DeviceType type, const DeviceInterface& device);

}  // namespace rg::gpu
