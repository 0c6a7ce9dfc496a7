// Address exchange and launch consistency checks (see tcp_rendezvous.h).
//
// Keys under `prefix`: claim/R counts the processes that said they are rank R (more than one:
// a duplicate RANK); addr/R holds "ip port host world_size pid"; abort holds the first
// inconsistency found, which every rank waits on alongside the address it needs.
#include "dist/tcp_rendezvous.h"

#include <sstream>

#include "dist/dist_error.h"

namespace rg::dist {
namespace {

std::string encode(const PeerAddress& a) {
  return str(a.ip, " ", a.port, " ", a.host, " ", a.world_size, " ", a.pid);
}

PeerAddress decode(const std::string& text, int q, const std::string& me) {
  PeerAddress a;
  std::istringstream in(text);
  in >> a.ip >> a.port >> a.host >> a.world_size >> a.pid;
  RG_CHECK(!in.fail(), me, ": malformed address record of rank ", q, " in the store: '", text, "'");
  return a;
}

// Publishes the inconsistency for every rank still waiting, and throws it here.
[[noreturn]] void abort_rendezvous(Store& store, const std::string& prefix, const std::string& me,
                                   const std::string& problem) {
  try {
    store.set(prefix + "/abort", problem);
  } catch (const Error&) {
  }
  RG_FAIL(me, ": ", problem);
}

Milliseconds left_until(Clock::time_point deadline) {
  return std::max(Milliseconds(0),
                  std::chrono::duration_cast<Milliseconds>(deadline - Clock::now()));
}

}  // namespace

std::vector<PeerAddress> exchange_addresses(Store& store, const std::string& prefix, int rank,
                                            int size, const PeerAddress& mine,
                                            Clock::time_point deadline, const std::string& me) {
  const std::string self = str("rank ", rank, " (host ", mine.host.substr(0, mine.host.find('/')),
                               ", pid ", mine.pid, ", WORLD_SIZE=", size, ")");
  if (store.add(str(prefix, "/claim/", rank), 1) != 1)
    abort_rendezvous(store, prefix, me,
                     str("two processes were started as rank ", rank, " (RANK=", rank,
                         "); this one is ", self, ". Every process needs its own rank"));
  store.set(str(prefix, "/addr/", rank), encode(mine));
  std::vector<PeerAddress> peers(size);
  peers[rank] = mine;
  const std::string abort_key = prefix + "/abort";
  for (int q = 0; q < size; ++q) {
    if (q == rank) continue;
    std::pair<size_t, std::string> found;
    try {
      found = store.wait_any({abort_key, str(prefix, "/addr/", q)}, left_until(deadline));
    } catch (const StoreTimeout&) {
      throw DistError(
          {FailureKind::timeout, q, "rendezvous", 0},
          str(me, ": rank ", q, " did not join within the timeout (no address in the store)"));
    }
    if (found.first == 0) RG_FAIL(me, ": the launch is inconsistent: ", found.second);
    peers[q] = decode(found.second, q, me);
    if (peers[q].world_size != size)
      abort_rendezvous(store, prefix, me,
                       str("world size mismatch: rank ", q, " was started with WORLD_SIZE=",
                           peers[q].world_size, " but rank ", rank, " with WORLD_SIZE=", size));
  }
  return peers;
}

}  // namespace rg::dist
