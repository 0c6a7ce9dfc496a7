// How a rank that waits for its peers spends the wait. With a core per rank, the waiter
// spins a few microseconds first (a peer on another core answers within that), then yields,
// then sleeps. When the ranks of a host outnumber its cores, the peer it waits for may not
// be running at all: spinning then only delays it, and the waiter yields its core at once
// (Open MPI does the same when oversubscribed, mpi_yield_when_idle). bench/allreduce, 4 and
// 8 tcp ranks on 2 cores: 1.3-1.8x faster at 1 KiB-1 MiB (docs/dist.md).
#pragma once
#include <cstdint>

namespace rg::dist {

// RG_DIST_IDLE_WAIT: auto (the default: yield at once where the ranks of this host
// outnumber its cores), spin (spin first, always) or yield (yield at once, always).
enum class IdleWait : uint8_t { automatic, spin_first, yield_at_once };
IdleWait default_idle_wait();

// The CPUs this process could run on when the library was loaded (before a program or its
// benchmark pins a rank to one core; a launcher that binds before exec shows 1).
int cores_at_load();

// Whether a waiter yields at once, for `ranks_on_host` ranks sharing `cores` cores.
bool yields_at_once(IdleWait wait, int ranks_on_host, int cores = cores_at_load());

}  // namespace rg::dist
