// All-reduces on threads of the test (the threads backend), each rank checking its result
// against the f64 reference: allreduce_on_threads returns each rank's result bytes, so that
// callers can compare them across ranks and runs; allreduce_bytes_by_tier also counts the
// bytes sent by link tier. `host_of` pretends the ranks run on hosts (make_thread_groups).
#pragma once
#include <string>
#include <vector>

#include "dist/threads_group.h"
#include "tests/dist/dist_test_util.h"

namespace rg::dist::test {

inline std::vector<std::vector<char>> allreduce_on_threads(int world, DType dtype, CombineOp op,
                                                           int64_t length, Options options = {},
                                                           std::vector<int> host_of = {}) {
  std::vector<std::vector<char>> results(world);
  run_threads(
      world,
      [&](ProcessGroup& pg) {
        Tensor t = make_input(dtype, length, pg.rank());
        pg.allreduce(t, op)->wait();
        std::string problem = check_reduction(t, op, world);
        RG_CHECK(problem.empty(), problem);
        results[pg.rank()] = bytes_of(t);
      },
      options, std::move(host_of));
  return results;
}

// One f32 sum all-reduce of `length` elements on ranks that pretend to run on hosts
// `host_of`, every result checked against the reference: the payload bytes all ranks sent
// during it, by link tier, and each rank's result.
struct TierRun {
  LinkTierBytes sent;
  std::vector<std::vector<char>> results;
};

inline TierRun allreduce_bytes_by_tier(const std::vector<int>& host_of, int64_t length,
                                       const Options& options) {
  const int world = static_cast<int>(host_of.size());
  std::vector<LinkTierBytes> sent(world);
  TierRun run;
  run.results.resize(world);
  run_threads(
      world,
      [&](ProcessGroup& pg) {
        Tensor t = make_input(DType::f32, length, pg.rank());
        const LinkTierBytes before = pg.transport().bytes_sent();
        pg.allreduce(t, CombineOp::sum)->wait();
        const LinkTierBytes after = pg.transport().bytes_sent();
        sent[pg.rank()] = {after.within_host - before.within_host, after.network - before.network};
        std::string problem = check_reduction(t, CombineOp::sum, world);
        RG_CHECK(problem.empty(), problem);
        run.results[pg.rank()] = bytes_of(t);
      },
      options, host_of);
  for (const LinkTierBytes& s : sent) {
    run.sent.within_host += s.within_host;
    run.sent.network += s.network;
  }
  return run;
}

}  // namespace rg::dist::test
