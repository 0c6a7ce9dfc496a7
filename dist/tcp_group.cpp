// Set-up of the tcp backend (see tcp_group.h); the messages themselves are the message transport's.
// Four phases, each in its own file:
//   1. rendezvous: publish this rank's address in the store, read everybody's, and catch an
//      inconsistent launch (duplicate rank, world sizes that differ)    tcp_rendezvous.cpp
//   2. connections: a data and a control socket per pair, opened with a hello carrying the
//      job token                                                         tcp_connect.cpp
//   3. shared memory: a ring pair per pair of ranks on one host        shared_rings.cpp
//   4. links: rings or sockets as the byte streams of the message engine (below)
#include "dist/tcp_group.h"

#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "core/shareable_host_memory.h"
#include "dist/byte_stream.h"
#include "dist/message_transport.h"
#include "dist/shared_rings.h"
#include "dist/single_copy_allreduce.h"
#include "dist/socket.h"
#include "dist/tcp_connect.h"
#include "dist/tcp_rendezvous.h"
#include "dist/topology.h"

namespace rg::dist {
namespace {

// RG_DIST_SHM: 1 or unset/empty (the default) shares memory between the ranks of a host, 0
// turns it off; anything else is an error rather than a guess.
bool shm_enabled() {
  const char* s = std::getenv("RG_DIST_SHM");
  if (!s || !*s) return true;
  const std::string v = s;
  RG_CHECK(v == "0" || v == "1", "RG_DIST_SHM='", v,
           "': expected 0 (no shared memory) or 1 (shared memory, the default)");
  return v == "1";
}

void set_buffers(int fd) {
  int bytes = 4 << 20;
  setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &bytes, sizeof(bytes));
  setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &bytes, sizeof(bytes));
}

// Closes a descriptor at the end of the scope unless released.
struct ScopedFd {
  int fd;
  ~ScopedFd() {
    if (fd >= 0) ::close(fd);
  }
};

// 4. The byte streams of each peer: its rings when it shares memory, else its data socket;
// control messages always go through the control socket.
std::vector<PeerLink> make_links(int rank, PeerSockets& sockets, const SharedRings& shared) {
  const int size = static_cast<int>(sockets.data.size());
  std::vector<PeerLink> links(size);
  for (int q = 0; q < size; ++q) {
    if (q == rank) continue;
    if (shared.segment[q]) {
      char* base = static_cast<char*>(shared.segment[q].get());
      auto* low_to_high = reinterpret_cast<RingBuffer*>(base);
      auto* high_to_low =
          reinterpret_cast<RingBuffer*>(base + RingBuffer::footprint(shared.capacity[q]));
      const bool low = rank < q;
      // The stream keeps both the rings and the peer's bell mapped.
      auto keep = std::make_shared<std::pair<std::shared_ptr<void>, std::shared_ptr<void>>>(
          shared.segment[q], shared.peer_bell[q]);
      links[q].data =
          make_ring_stream(low ? low_to_high : high_to_low, low ? high_to_low : low_to_high,
                           static_cast<Doorbell*>(shared.peer_bell[q].get()), keep);
      ::close(sockets.data[q]);
    } else {
      set_buffers(sockets.data[q]);
      links[q].data = make_socket_stream(sockets.data[q]);
    }
    sockets.data[q] = -1;
    links[q].control = make_socket_stream(sockets.control[q]);
    sockets.control[q] = -1;
  }
  return links;
}

}  // namespace

std::shared_ptr<ProcessGroup> make_tcp_group(std::shared_ptr<Store> store, int rank, int size,
                                             Options options, const std::string& prefix) {
  RG_CHECK(size >= 1 && rank >= 0 && rank < size, "tcp: rank ", rank, " outside world of size ",
           size);
  const std::string me = str("rank ", rank, ": tcp");
  const auto deadline = Clock::now() + options.timeout;
  const size_t ring_bytes = shm_ring_bytes(std::getenv("RG_DIST_SHM_BYTES"));
  const bool shm = shm_enabled();  // checked before any wait, so every rank fails at once

  // 1. Listen on the interface that reaches the store, and exchange addresses.
  PeerAddress mine{"127.0.0.1", 0, net::host_identity(), size, static_cast<long>(getpid())};
  if (auto* tcp_store = dynamic_cast<TcpStore*>(store.get())) mine.ip = tcp_store->local_address();
  ScopedFd listener{net::listen_tcp(mine.ip, 0, 2 * size + 8, me)};
  mine.port = net::local_port(listener.fd);
  std::vector<PeerAddress> peers =
      exchange_addresses(*store, prefix, rank, size, mine, deadline, me);

  // 2. Connect to the lower ranks, accept the higher ones.
  PeerSockets sockets(size);
  connect_peers(sockets, listener.fd, peers, rank, options.job_token, deadline, me);

  // 3. Shared memory between ranks on the same host.
  std::vector<bool> same_host(size);
  for (int q = 0; q < size; ++q) same_host[q] = q != rank && shm && peers[q].host == mine.host;
  SharedRings shared = setup_shared_rings(rank, same_host, sockets.data, ring_bytes, deadline, me);
  // Large host blocks allocated from now on can be loaded by the peers of this host
  // (the single-copy all-reduce; without it, they read with process_vm_readv).
  if (shared.my_bell) offer_arena_to_peers(options);

  // 4. The links, and the group over them.
  std::vector<PeerLink> links = make_links(rank, sockets, shared);
  auto keep = std::make_shared<std::pair<std::shared_ptr<Store>, std::shared_ptr<void>>>(
      store, shared.my_bell);
  std::vector<std::string> host_names;
  for (const PeerAddress& peer : peers) host_names.push_back(peer.host);
  auto group = make_message_group("tcp", rank, size, options, std::move(links),
                                  static_cast<Doorbell*>(shared.my_bell.get()), keep,
                                  number_hosts(host_names));
  if (const char* debug = std::getenv("RG_DIST_DEBUG");
      debug && *debug && std::string(debug) != "0")
    std::fprintf(stderr, "rg-dist: rank %d of %d (tcp): links %s\n", rank, size,
                 group->describe_links().c_str());
  return group;
}

}  // namespace rg::dist
