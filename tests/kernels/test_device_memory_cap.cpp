// RG_SIM_DEVICE_MEMORY (kernels/sim/device_memory.cpp): the memory of each sim device, so that
// the caching allocator runs out of it on sim as on a GPU -- a clear out-of-memory error with
// the device's total, cached blocks still served, a graph pool that cannot grow failing its
// capture -- and a bad value is an error naming the variable.
#include <doctest/doctest.h>

#include <cstdlib>

#include "kernels/cuda/graph.h"
#include "ringgrad.h"
#include "tests/error_of.h"

using namespace rg;
using namespace rg::test;

namespace {

constexpr size_t kMiB = size_t(1) << 20;
const Device kDevice(DeviceType::sim, 6);  // its own allocator, empty

// Sets RG_SIM_DEVICE_MEMORY for the scope; the device's cache is emptied on both ends.
struct DeviceMemory {
  explicit DeviceMemory(const char* value) {
    empty_cache(kDevice);
    setenv("RG_SIM_DEVICE_MEMORY", value, 1);
  }
  ~DeviceMemory() {
    empty_cache(kDevice);
    unsetenv("RG_SIM_DEVICE_MEMORY");
  }
};

Tensor mib(size_t n) { return empty({int64_t(n * kMiB / 4)}, DType::f32, kDevice); }

}  // namespace

TEST_CASE("RG_SIM_DEVICE_MEMORY: a sim device runs out of memory with a clear error") {
  DeviceMemory cap("67108864");  // 64 MiB
  CHECK(gpu::total_memory(kDevice) == 64 * kMiB);
  Tensor a = mib(30), b = mib(30);
  const std::string oom = error_of([] { (void)mib(30); });
  CHECK(oom.find("sim:6 out of memory: tried to allocate 31457280 bytes") != std::string::npos);
  CHECK(oom.find("device total 64 MiB") != std::string::npos);
  const void* freed = a.data_ptr();
  a = Tensor();
  Tensor again = mib(30);  // the cached block: no new memory needed
  CHECK(again.data_ptr() == freed);
}

TEST_CASE("RG_SIM_DEVICE_MEMORY: a graph pool that cannot grow fails its capture") {
  DeviceMemory cap("67108864");
  Tensor a = mib(30), b = mib(30);
  Tensor x = ones({1000}, DType::f32, kDevice);
  gpu::Graph graph;
  const std::string oom = error_of([&] {
    gpu::GraphCapture capture(graph, kDevice);
    Tensor y = mul(x, x);  // small: the pool's first segment still fits
    Tensor z = mib(4);     // but not a second one
  });
  CHECK(oom.find("sim:6 out of memory") != std::string::npos);
  CHECK(oom.find("(while capturing a graph)") != std::string::npos);
  CHECK_FALSE(graph.captured());
  CHECK_FALSE(gpu::is_capturing(kDevice));
}

TEST_CASE("RG_SIM_DEVICE_MEMORY: a bad value is an error naming the variable") {
  for (const char* bad : {"64MiB", "0", "-5", "1e9", "99999999999999999999999"}) {
    DeviceMemory cap(bad);
    const std::string error = error_of([] { (void)gpu::total_memory(kDevice); });
    CAPTURE(error);
    CHECK(error.find(std::string("RG_SIM_DEVICE_MEMORY=") + bad) != std::string::npos);
    CHECK(error.find("in bytes") != std::string::npos);
  }
  unsetenv("RG_SIM_DEVICE_MEMORY");
  CHECK(gpu::total_memory(kDevice) > 0);  // unset: the host's memory
}
