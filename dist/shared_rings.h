// Shared-memory rings between the ranks of a tcp group that run on one host.
//
// For each such pair the lower rank creates an anonymous memory file (memfd) holding one ring
// per direction, and each rank one more holding its doorbell (a futex word peers ring when they
// move bytes, so an idle rank can sleep). Peers open each other's files through
// /proc/PID/fd/N, so no name ever exists in /dev/shm: nothing is left behind whatever happens,
// SIGKILL included. A pair that cannot open the other's files (another PID namespace, a
// hardened /proc) keeps using its socket.
#pragma once
#include <memory>
#include <string>
#include <vector>

#include "dist/options.h"

namespace rg::dist {

// Ring size from RG_DIST_SHM_BYTES' text (null or empty: the 4 MiB default), rounded up to a
// multiple of kRingAlignment. Throws rg::Error naming the variable and the value when it is
// not a whole number of bytes from 1 to 1 GiB.
size_t shm_ring_bytes(const char* text);

struct SharedRings {
  // Per peer: the mapping holding the rings (low to high rank first), or null if the pair
  // uses its socket; the capacity of those rings; the peer's doorbell.
  std::vector<std::shared_ptr<void>> segment;
  std::vector<size_t> capacity;
  std::vector<std::shared_ptr<void>> peer_bell;
  std::shared_ptr<void> my_bell;  // null if no peer shares memory with this rank
};

// Sets up the rings with every peer q where same_host[q], talking over data_fd[q]. Both
// ranks of a pair reach the same decision. Throws rg::Error on a broken connection.
SharedRings setup_shared_rings(int rank, const std::vector<bool>& same_host,
                               const std::vector<int>& data_fd, size_t capacity,
                               Clock::time_point deadline, const std::string& me);

}  // namespace rg::dist
