// Forked ranks for the benches that measure the tcp backend between processes
// (bench/allreduce, bench/ddp): this process hosts the store, each child joins one tcp group.
#pragma once
#include <functional>

#include "dist/process_group.h"

namespace rg::bench {

// Forks `nproc` ranks. Each runs before_group(rank) (may be empty), joins the tcp group, runs
// body(group) and exits: 0, or 1 after printing "<who>: rank R: <error>". Returns true when
// every rank exited 0.
bool run_forked_tcp_ranks(int nproc, const char* who, const std::function<void(int)>& before_group,
                          const std::function<void(dist::ProcessGroup&)>& body);

}  // namespace rg::bench
