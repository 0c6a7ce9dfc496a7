// A device fault during DDP (a sticky error on sim, as on a GPU: kernels/sim/sticky_error.h):
// the rank whose device faulted fails with the device's error, and the other ranks fail at
// once naming it, instead of hanging in the all-reduce or going on with a dead device.
#include <doctest/doctest.h>

#include "dist/threads_group.h"
#include "nn/ddp.h"
#include "nn/layers.h"
#include "ringgrad.h"
#include "tests/sim_fault.h"

using namespace rg;

TEST_CASE("DDP on sim: a device fault on one rank fails every rank, naming it") {
  constexpr int kWorld = 2, kFaulty = 1;
  test::ClearStickyError clear{8 + kFaulty};
  std::vector<std::string> errors(kWorld);
  dist::Options options;
  options.timeout = std::chrono::milliseconds(20000);  // far longer than the failure takes
  auto rank_fn = [&](dist::ProcessGroup& group) {
    const int rank = group.rank();
    const Device device(DeviceType::sim, 8 + rank);
    Generator gen{1, 0};
    auto model =
        std::make_shared<nn::MLP>(std::vector<int64_t>{8, 4}, nn::Activation::relu, true, &gen);
    model->to(device);
    nn::DistributedDataParallel ddp(model, group);
    try {
      for (int step = 0; step < 2; ++step) {
        if (step == 1 && rank == kFaulty) (void)test::fault_device(device);
        Tensor x = ones({2, 8}, DType::f32, device);
        Tensor loss = sum(ddp.forward(x));
        loss.backward();
        (void)loss.item();
      }
    } catch (const Error& e) {
      errors[rank] = e.what();
      throw;
    }
  };
  CHECK_THROWS_AS(dist::run_threads(kWorld, rank_fn, options), Error);
  INFO(errors[0]);
  INFO(errors[1]);
  CHECK(errors[kFaulty].find("on sim:9 failed: cudaErrorLaunchFailure") != std::string::npos);
  CHECK(errors[0].find("rank 1") != std::string::npos);
}
