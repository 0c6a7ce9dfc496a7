// The nccl backend on a real GPU (test_dist_nccl, registered as dist-nccl when CUDA is built).
// One GPU is all a check machine has, and NCCL refuses two ranks on one device, so the ranks
// here are world 1 (collectives must leave every dtype's bits as they are, on the ring path
// and on NCCL's own all-reduce) and a world of 2 whose second rank never comes (init must fail
// within the timeout, naming the wait). Without a GPU it exits 77: meson counts a skip, and
// bench/gpu_check.sh, which runs it directly, a failure.
#define DOCTEST_CONFIG_IMPLEMENT
#include <doctest/doctest.h>

#include <cstdio>
#include <memory>

#include "dist/nccl_group.h"
#include "dist/store.h"
#include "ops/ops.h"

using namespace rg;
using namespace rg::dist;

namespace {

const Device kGpu(DeviceType::cuda, 0);

std::shared_ptr<Store> local_store() {
  return std::make_shared<TcpStore>("127.0.0.1", 0, true, Milliseconds(10000));
}

// Values of every sign and size, exact in each dtype (bf16 keeps 8 bits of mantissa).
Tensor values_on_gpu(DType dtype) {
  return tensor({-3.5, -1, -0.0, 0, 0.25, 1, 2, 1024, 65536, -4096}, {10}, dtype, kGpu);
}

}  // namespace

TEST_CASE("nccl: world 1 collectives leave every dtype's values as they are") {
  Options options;
  options.timeout = Milliseconds(20000);
  auto pg = make_nccl_group(local_store(), 0, 1, 0, options, "nccl-world1");
  CHECK(std::string(pg->backend_name()) == "nccl");
  for (DType dtype : {DType::f32, DType::f64, DType::bf16, DType::i32, DType::i64}) {
    CAPTURE(dtype);
    Tensor expected = values_on_gpu(dtype).to(kCPU);
    Tensor t = values_on_gpu(dtype);
    for (CombineOp op : {CombineOp::sum, CombineOp::max}) {
      pg->allreduce(t, op)->wait();  // the ring path, over ncclSend/ncclRecv
      CHECK(equal(t.to(kCPU), expected));
      nccl_allreduce(*pg, t, op)->wait();  // NCCL's own
      CHECK(equal(t.to(kCPU), expected));
    }
    pg->broadcast(t, 0)->wait();
    CHECK(equal(t.to(kCPU), expected));
  }
  pg->barrier()->wait();
}

TEST_CASE("nccl: a rank that never joins makes init fail within the timeout, naming the wait") {
  Options options;
  options.timeout = Milliseconds(3000);
  CHECK_THROWS_WITH_AS(make_nccl_group(local_store(), 0, 2, 0, options, "nccl-missing"),
                       doctest::Contains("waiting for all 2 ranks to join"), Error);
}

int main(int argc, char** argv) {
  if (!nccl_available()) {
    std::puts("dist-nccl: no GPU with NCCL on this machine: skipped (exit 77)");
    return 77;
  }
  doctest::Context context(argc, argv);
  return context.run();
}
