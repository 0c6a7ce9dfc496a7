// Forked ranks for the benches that measure the tcp backend between processes
// (bench/allreduce, bench/ddp): this process hosts the store, each child joins one tcp group
// (or the group `make_group` makes: bench/ddp --device cuda's nccl ranks).
#pragma once
#include <functional>
#include <memory>

#include "dist/process_group.h"
#include "dist/store.h"

namespace rg::bench {

// Forks `nproc` ranks. Each runs before_group(rank) (may be empty), joins the tcp group, runs
// body(group) and exits: 0, or 1 after printing "<who>: rank R: <error>". Returns true when
// every rank exited 0.
using GroupMaker = std::function<std::shared_ptr<dist::ProcessGroup>(
    std::shared_ptr<dist::Store> store, int rank, int nproc)>;
bool run_forked_tcp_ranks(int nproc, const char* who, const std::function<void(int)>& before_group,
                          const std::function<void(dist::ProcessGroup&)>& body,
                          const GroupMaker& make_group = {});

}  // namespace rg::bench
