// DDP over the mpi backend (run by mpirun with test_mpi.cpp): every rank trains its share of
// the batch and ends with the weights of one process trained on the whole batch (f64, to
// 1e-10, as over tcp: tests/ddp/test_tcp_equivalence.cpp), with one all-reduce per bucket.
#include <doctest/doctest.h>

#include "dist/init.h"
#include "tests/ddp/equivalence.h"

using namespace rg;
using namespace rg::testing;

TEST_CASE("mpi: DDP equals single-process training (MLP and GPT, f64)") {
  set_num_threads(1);  // ranks share the cores (mpirun --oversubscribe)
  dist::Options options;
  options.timeout = dist::Milliseconds(60'000);
  auto pg = dist::init_process_group("mpi", options);
  for (const char* model : {"mlp", "gpt"}) {
    INFO(model);
    Setup s;
    s.model = model;
    s.world = pg->size();
    s.accum = 2;
    s.bucket_cap_mb = 0.0005;
    if (s.model == "gpt") {
      s.optimizer = "adamw";
      s.micro = 2;
      s.grad_view = true;
    }
    RankResult mine = train_ddp_rank(s, *pg);
    CHECK(mine.allreduces_per_step == mine.buckets_per_step);
    CHECK(mine.allreduces_inside_no_sync == 0);
    CHECK(max_relative_difference(mine.params, train_single_process(s)) <= 1e-10);
  }
}
