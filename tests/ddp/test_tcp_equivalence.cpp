// DDP with ranks as processes over the tcp backend (shared memory within the host): the
// same equivalence as the thread tests (and Join with uneven inputs), checked inside each
// rank; ranks then compare a hash of their parameters through the group itself.
#include <doctest/doctest.h>

#include <functional>

#include "core/hash.h"
#include "dist/store.h"
#include "dist/tcp_group.h"
#include "join_training.h"
#include "tests/dist/process_util.h"

using namespace rg;
using namespace rg::testing;

namespace {

uint64_t hash_params(const std::vector<Tensor>& params) {
  uint64_t h = kFnv1aOffsetBasis;
  for (const Tensor& p : params) {
    Tensor c = p.contiguous();
    h = fnv1a(c.data_ptr(), c.nbytes(), h);  // chained: the hash of all bytes in order
  }
  return h;
}

using TrainRank = std::function<std::vector<Tensor>(dist::ProcessGroup& group)>;

// Forks `world` tcp ranks; each trains, compares its parameters with the single-process
// `reference` (relative `tolerance`) and its bits with rank 0's through the group.
void check_tcp_ranks(int world, const TrainRank& train_rank,
                     const std::function<std::vector<Tensor>()>& reference, double tolerance) {
  dist::test::StoreProcess server(dist::Milliseconds(20'000));
  const int port = server.port();
  auto results = dist::test::run_processes(
      world,
      [&](int rank) {
        set_num_threads(1);  // forked child: keep OpenMP out of it
        dist::Options options;
        options.timeout = dist::Milliseconds(20'000);
        auto store = std::make_shared<dist::TcpStore>("127.0.0.1", port, false, options.timeout);
        auto pg = dist::make_tcp_group(store, rank, world, options);
        std::vector<Tensor> mine = train_rank(*pg);
        double diff = max_relative_difference(mine, reference());
        RG_CHECK(diff <= tolerance, "rank ", rank, ": DDP differs from single-process training by ",
                 diff);
        Tensor h = tensor(std::vector<int64_t>{static_cast<int64_t>(hash_params(mine))});
        Tensor all = empty({world}, DType::i64);
        pg->allgather(all, h)->wait();
        for (int r = 1; r < world; ++r)
          RG_CHECK(all.data<int64_t>()[r] == all.data<int64_t>()[0], "rank ", r,
                   " ended with different parameter bits than rank 0");
      },
      std::chrono::seconds(240));
  for (int r = 0; r < world; ++r) {
    INFO("rank " << r << ": " << results[r].message);
    CHECK(results[r].status == 0);
    CHECK_FALSE(results[r].killed);
  }
}

void run_tcp_case(const Setup& s) {
  auto train_rank = [&](dist::ProcessGroup& pg) {
    RankResult mine = train_ddp_rank(s, pg);
    RG_CHECK(mine.allreduces_per_step == mine.buckets_per_step, "rank ", pg.rank(),
             ": all-reduces per step differ from the bucket counts");
    RG_CHECK(mine.allreduces_inside_no_sync == 0, "rank ", pg.rank(),
             ": all-reduce inside no_sync");
    return mine.params;
  };
  check_tcp_ranks(
      s.world, train_rank, [&] { return train_single_process(s); },
      s.dtype == DType::f64 ? 1e-10 : 1e-5);
}

}  // namespace

TEST_CASE("DDP over tcp processes equals single-process training (MLP and GPT, world 2)") {
  Setup mlp;
  mlp.world = 2;
  mlp.accum = 2;
  mlp.bucket_cap_mb = 0.0005;
  run_tcp_case(mlp);
  Setup gpt;
  gpt.model = "gpt";
  gpt.optimizer = "adamw";
  gpt.world = 2;
  gpt.accum = 2;
  gpt.micro = 2;
  gpt.grad_view = true;
  run_tcp_case(gpt);
}

TEST_CASE("Join over tcp processes: 3 ranks with 5, 4 and 2 batches equal the union run") {
  JoinSetup s;
  s.micro_batches = {5, 4, 2};
  s.base.world = 3;
  s.base.bucket_cap_mb = 0.0005;
  check_tcp_ranks(
      3, [&](dist::ProcessGroup& pg) { return train_join_rank(s, pg); },
      [&] { return train_union_reference(s); }, 1e-10);
}
