// register_gpu_device; see capture_checked_device.h. DeviceInterface holds plain function
// pointers, so the checked entry points are per device type, each forwarding to the
// device's own.
#include "kernels/cuda/capture_checked_device.h"

#include "kernels/cuda/graph.h"

namespace rg::gpu {
namespace {

template <DeviceType T>
struct CaptureChecked {
  static inline DeviceInterface inner;

  static void copy(void* dst, Device dst_device, const void* src, Device src_device, size_t n) {
    check_copy_not_capturing(dst_device, src_device);
    inner.copy(dst, dst_device, src, src_device, n);
  }
  static void synchronize(int index) {
    check_unsafe_call("device synchronize");
    inner.synchronize(index);
  }
  static void empty_cache(int index) {
    check_unsafe_call("empty_cache (cudaFree)");
    inner.empty_cache(index);
  }

  static void install(const DeviceInterface& device) {
    inner = device;
    DeviceInterface checked = device;
    checked.copy = copy;
    checked.synchronize = synchronize;
    checked.empty_cache = empty_cache;
    register_device(T, checked);
  }
};

}  // namespace

void register_gpu_device(DeviceType type, const DeviceInterface& device) {
  RG_CHECK(type == DeviceType::sim || type == DeviceType::cuda, "register_gpu_device: ", int(type),
           " is not a GPU device type");
  if (type == DeviceType::sim) return CaptureChecked<DeviceType::sim>::install(device);
  CaptureChecked<DeviceType::cuda>::install(device);
}

}  // namespace rg::gpu
