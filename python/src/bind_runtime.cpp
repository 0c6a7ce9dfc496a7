// The runtime switches PyTorch scripts reach for around their model: how many GPUs there are
// (torch.cuda.is_available), waiting for a device (torch.cuda.synchronize), autocast's state
// (torch.autocast), and TF32 matmuls (torch.backends.cuda.matmul.allow_tf32). The Python
// side (ringgrad/cuda.py, ringgrad/amp.py, ringgrad/backends.py) gives them PyTorch's names.
#include <nanobind/stl/pair.h>
#include <nanobind/stl/string.h>

#include "autograd/autocast_mode.h"
#include "core/device_interface.h"
#include "kernels/cuda/stream.h"
#include "python/src/bindings.h"

namespace rg::python {

namespace {

// Devices of `type` this process can use: 0 when the backend is not built or has no device.
int usable_devices(const std::string& type) {
  DeviceType t = Device(type).type;
  if (t == DeviceType::cpu) return 1;
  return device_available(t) ? device_interface(t).device_count() : 0;
}

}  // namespace

void bind_runtime(nb::module_& m) {
  m.def("device_count", &usable_devices, nb::arg("type"));
  m.def(
      "synchronize", [](const std::string& device) { rg::synchronize(Device(device)); },
      nb::arg("device"));
  m.def("autocast_state",
        [] { return std::make_pair(AutocastMode::is_enabled(), AutocastMode::lower_dtype()); });
  m.def(
      "set_autocast_state",
      [](bool enabled, DType lower) {
        RG_CHECK(!enabled || lower == DType::bf16, "autocast: dtype ", dtype_name(lower),
                 " is not supported (ringgrad's autocast lowers to bfloat16 only)");
        AutocastMode::set(enabled, lower);
      },
      nb::arg("enabled"), nb::arg("dtype"));
  m.def("allow_tf32", [] { return rg::allow_tf32(); });
  m.def("set_allow_tf32", &rg::set_allow_tf32, nb::arg("allow"));
}

}  // namespace rg::python
