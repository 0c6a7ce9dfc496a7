// Misusing nn::Join is a clear rg::Error on the rank that did it, and the group is aborted
// so the other ranks fail at once (naming that rank) instead of waiting for the timeout.
#include <doctest/doctest.h>

#include <functional>

#include "dist/threads_group.h"
#include "nn/join.h"
#include "nn/layers.h"
#include "ringgrad.h"

using namespace rg;

namespace {

using Body = std::function<void(nn::DistributedDataParallel& ddp, nn::Join& join, int rank)>;

// Runs `body` on 3 thread ranks around a small DDP model with a Join; each rank's error.
std::vector<std::string> errors_of(const Body& body) {
  std::vector<std::string> errors(3);
  dist::Options options;
  options.timeout = std::chrono::milliseconds(5000);
  auto rank_fn = [&](dist::ProcessGroup& group) {
    Generator gen{1, 0};
    auto model =
        std::make_shared<nn::MLP>(std::vector<int64_t>{4, 3}, nn::Activation::relu, true, &gen);
    nn::DistributedDataParallel ddp(model, group);
    nn::Join join(ddp);
    try {
      body(ddp, join, group.rank());
    } catch (const Error& e) {
      errors[group.rank()] = e.what();
      throw;
    }
  };
  CHECK_THROWS_AS(dist::run_threads(3, rank_fn, options), Error);
  return errors;
}

void backward_on(nn::DistributedDataParallel& ddp) {
  Generator gen{2, 0};
  sum(ddp.forward(randn({2, 4}, DType::f32, kCPU, &gen))).backward();
}

bool has(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

}  // namespace

TEST_CASE("Join: backward on a rank that has joined is an error naming the rank") {
  auto errors = errors_of([](nn::DistributedDataParallel& ddp, nn::Join& join, int rank) {
    if (rank == 2) join.step_joined();
    if (rank != 2) join.step(2);
    backward_on(ddp);  // rank 2 should have called join.shadow_backward()
  });
  INFO(errors[2]);
  CHECK(has(errors[2], "rank 2 has joined"));
  CHECK(has(errors[2], "shadow_backward"));
  CHECK(has(errors[0], "rank 2"));
  CHECK(has(errors[1], "rank 2"));
}

TEST_CASE("Join: a joined rank cannot bring data back") {
  auto errors = errors_of([](nn::DistributedDataParallel& ddp, nn::Join& join, int rank) {
    if (rank == 1) {
      join.step_joined();
      join.shadow_backward();
      join.step(3);
    }
    join.step(2);
    backward_on(ddp);
    join.step(2);
  });
  INFO(errors[1]);
  CHECK(has(errors[1], "rank 1 joined (ran out of data) at step 0"));
  CHECK(has(errors[1], "cannot bring data back at step 1"));
}

TEST_CASE("Join: shadow_backward on a rank with data, and a step without a synchronised backward") {
  auto errors = errors_of([](nn::DistributedDataParallel&, nn::Join& join, int rank) {
    join.step(2);
    if (rank == 0) join.shadow_backward();
  });
  CHECK(has(errors[0], "shadow_backward on rank 0 at step 0, which still has data"));
  errors = errors_of([](nn::DistributedDataParallel& ddp, nn::Join& join, int rank) {
    join.step(2);
    {
      auto guard = rank == 1 ? ddp.no_sync() : nn::NoSyncGuard();
      backward_on(ddp);
    }
    join.step(2);
  });
  INFO(errors[1]);
  CHECK(has(errors[1], "rank 1 did 0 synchronised backwards in step 0"));
}
