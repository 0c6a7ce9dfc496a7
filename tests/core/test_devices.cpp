// The built-in backends: registered by one explicit call before first use (not by static
// initialisers, which a static link drops), complete, and a missing one says why.
#include <doctest/doctest.h>

#include <set>
#include <string>

#include "core/op_table.h"
#include "kernels/builtin.h"
#include "ringgrad.h"

using namespace rg;

TEST_CASE("cpu and sim are always available and have every kernel, cpu the optional ones too") {
#define RG_KERNEL_NAME(name) #name,
  const std::set<std::string> optional = {RG_OPTIONAL_KERNELS(RG_KERNEL_NAME)};
  const std::set<std::string> gpu_only = {RG_GPU_ONLY_KERNELS(RG_KERNEL_NAME)};
#undef RG_KERNEL_NAME
  for (DeviceType type : {DeviceType::cpu, DeviceType::sim}) {
    CAPTURE(Device(type).str());
    CHECK(device_available(type));
    const KernelTable& table = kernel_table(type);
#define RG_CHECK_ENTRY(name, ret, params)                                                  \
  CHECK_MESSAGE((bool(table.name) != (type == DeviceType::cpu && gpu_only.count(#name)) || \
                 (type == DeviceType::sim && optional.count(#name))),                      \
                #name);
    RG_KERNELS(RG_CHECK_ENTRY)
#undef RG_CHECK_ENTRY
  }
}

TEST_CASE("an unusable cuda device says whether the backend is missing or finds no device") {
  Device cuda = Device::parse("cuda");
  if (!cuda_backend_built()) {
    CHECK_FALSE(device_available(DeviceType::cuda));
    CHECK_THROWS_WITH_AS(empty({2}, DType::f32, cuda),
                         "device cuda:0: this ringgrad was built without the cuda backend "
                         "(configure with -Dcuda=enabled)",
                         Error);
  } else if (!device_available(DeviceType::cuda)) {
    // with the driver's reason and both CUDA versions, not just "no GPU"
    CHECK_THROWS_WITH_AS(empty({2}, DType::f32, cuda),
                         doctest::Contains("device cuda:0: the backend is built but finds no "
                                           "device: cudaGetDeviceCount"),
                         Error);
    CHECK_THROWS_WITH_AS(
        empty({2}, DType::f32, cuda),
        doctest::Contains("this build needs CUDA 13.0 (a driver >= 580 for CUDA 13)"), Error);
  } else {
    CHECK(empty({2}, DType::f32, cuda).device() == cuda);
  }
}
