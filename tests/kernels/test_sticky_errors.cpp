// Sticky errors on sim (kernels/sim/sticky_error.h): after a device fault (__trap() in a
// kernel) every later launch, event record, query and synchronization, synchronous copy and
// cudaMalloc on that device fails with the fault's error, as on a GPU; other devices go on,
// and errors a GPU does not make sticky (a bad launch shape) leave the device usable.
#include <doctest/doctest.h>

#include "ringgrad.h"
#include "tests/error_of.h"
#include "tests/sim_fault.h"

using namespace rg;
using namespace rg::test;

TEST_CASE("sim sticky error: a fault poisons its device for every later call") {
  const Device device(DeviceType::sim, 4), other(DeviceType::sim, 5);
  ClearStickyError clear{device.index};
  Tensor before = ones({64}, DType::f32, device);  // a live block, allocated before the fault
  const std::string fault = fault_device(device);
  CHECK(fault.find("cudaErrorLaunchFailure (unspecified launch failure): kernel 'trap_kernel' "
                   "block (0,0,0) thread (5,0,0) executed __trap() at") != std::string::npos);
  CHECK(fault.find("sim_fault.h:") != std::string::npos);
  const std::string sticky = "on sim:4 failed: cudaErrorLaunchFailure";
  auto fails = [&](const char* operation, auto call) {
    const std::string message = error_of(call);
    CAPTURE(message);
    CHECK(message.find(operation) != std::string::npos);
    CHECK(message.find(sticky) != std::string::npos);
    CHECK(message.find("a sticky error") != std::string::npos);
  };
  fails("launch of kernel 'trap_kernel'", [&] {
    const std::string launch = fault_device(device, 1000);  // a launch that would not trap
    if (launch != "(no error)") throw Error(launch);
  });
  fails("cudaMemcpy", [&] { (void)before.to(kCPU); });
  fails("cudaDeviceSynchronize", [&] { synchronize(device); });
  fails("cudaStreamSynchronize", [&] { gpu::synchronize(gpu::compute_stream(device)); });
  gpu::Event event(device);
  fails("cudaEventRecord", [&] { event.record(gpu::compute_stream(device)); });
  fails("cudaEventQuery", [&] { (void)event.query(); });
  fails("cudaEventSynchronize", [&] { event.synchronize(); });
  fails("cudaMalloc", [&] { (void)empty({size_t(64) << 20}, DType::f32, device); });
  // Another device is not affected.
  CHECK(sum(ones({64}, DType::f32, other)).item() == 64);
}

TEST_CASE("sim sticky error: a bad launch shape is not sticky") {
  const Device device(DeviceType::sim, 4);
  sim::LaunchConfig config;
  config.name = "too_big";
  config.grid = dim3(1);
  config.block = dim3(2048);
  config.stream = gpu::compute_stream(device).handle;
  CHECK(error_of([&] { sim::launch(trap_kernel, config, 5000u); }).find("2048 threads") !=
        std::string::npos);
  CHECK_FALSE(sim::has_sticky_error(device.index));
  CHECK(sum(ones({64}, DType::f32, device)).item() == 64);
}

namespace {
void fill_shared(int* out) {
  RG_DYNAMIC_SHARED(int, buf);
  buf[threadIdx.x] = int(threadIdx.x);
  out[threadIdx.x] = buf[threadIdx.x];
}
}  // namespace

TEST_CASE("sim: a failed opt-in to more shared memory is tried again at the next launch") {
  // launch() raises a kernel's dynamic shared memory limit (cudaFuncSetAttribute) once; a
  // call that failed must not count as done, or every later launch is refused the memory.
  const Device device(DeviceType::sim, 4);
  ClearStickyError clear{device.index};
  sim::LaunchConfig c;
  c.name = "fill_shared";
  c.grid = dim3(1);
  c.block = dim3(32);
  c.shared_bytes = 64 * 1024;
  c.opt_in_shared = true;
  c.stream = gpu::compute_stream(device).handle;
  std::vector<int> out(32, -1);
  (void)fault_device(device);
  CHECK(error_of([&] {
          sim::launch(fill_shared, c, out.data());
        }).find("cudaFuncSetAttribute on sim:4 failed") != std::string::npos);
  sim::clear_sticky_error_for_tests(device.index);  // (no GPU recovers; the next try must work)
  CHECK(error_of([&] { sim::launch(fill_shared, c, out.data()); }) == "(no error)");
  CHECK(out[31] == 31);
}
