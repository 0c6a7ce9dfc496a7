// DDP with ranks as processes over the tcp backend (shared memory within the host): the
// same equivalence as the thread tests, checked inside each rank; ranks then compare a
// hash of their parameters through the group itself.
#include <doctest/doctest.h>

#include "core/hash.h"
#include "dist/store.h"
#include "dist/tcp_group.h"
#include "equivalence.h"
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

void run_tcp_case(const Setup& s) {
  dist::test::StoreProcess server(dist::Milliseconds(20'000));
  const int port = server.port();
  auto results = dist::test::run_processes(
      s.world,
      [&](int rank) {
        set_num_threads(1);  // forked child: keep OpenMP out of it
        dist::Options options;
        options.timeout = dist::Milliseconds(20'000);
        auto store = std::make_shared<dist::TcpStore>("127.0.0.1", port, false, options.timeout);
        auto pg = dist::make_tcp_group(store, rank, s.world, options);
        RankResult mine = train_ddp_rank(s, *pg);
        std::vector<Tensor> reference = train_single_process(s);
        double diff = max_relative_difference(mine.params, reference);
        double tolerance = s.dtype == DType::f64 ? 1e-10 : 1e-5;
        RG_CHECK(diff <= tolerance, "rank ", rank, ": DDP differs from single-process training by ",
                 diff);
        RG_CHECK(mine.allreduces_per_step == mine.buckets_per_step, "rank ", rank,
                 ": all-reduces per step differ from the bucket counts");
        RG_CHECK(mine.allreduces_inside_no_sync == 0, "rank ", rank, ": all-reduce inside no_sync");
        Tensor h = tensor(std::vector<int64_t>{static_cast<int64_t>(hash_params(mine.params))});
        Tensor all = empty({s.world}, DType::i64);
        pg->allgather(all, h)->wait();
        for (int r = 1; r < s.world; ++r)
          RG_CHECK(all.data<int64_t>()[r] == all.data<int64_t>()[0], "rank ", r,
                   " ended with different parameter bits than rank 0");
      },
      std::chrono::seconds(240));
  for (int r = 0; r < s.world; ++r) {
    INFO("rank " << r << ": " << results[r].message);
    CHECK(results[r].status == 0);
    CHECK_FALSE(results[r].killed);
  }
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
