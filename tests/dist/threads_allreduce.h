// One all-reduce on `world` threads of this test (the threads backend), each rank checking
// its result against the f64 reference; returns each rank's result bytes, so that callers can
// compare them across ranks and runs. `host_of` pretends the ranks run on hosts
// (make_thread_groups).
#pragma once
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

}  // namespace rg::dist::test
