// Connecting the ranks of a tcp group to each other: every rank connects twice (data, then
// control) to every lower rank and accepts two connections from every higher one. Each
// connection opens with a hello (job token, rank, world size, role) that the listener checks
// and answers with a verdict, so a process of another job is refused (and fails naming the
// cause) and never takes a rank's place.
#pragma once
#include <string>
#include <vector>

#include "dist/tcp_rendezvous.h"

namespace rg::dist {

// The connected sockets of one rank; -1 for itself. Closes what it still owns.
struct PeerSockets {
  std::vector<int> data, control;
  explicit PeerSockets(int size) : data(size, -1), control(size, -1) {}
  ~PeerSockets();
  PeerSockets(const PeerSockets&) = delete;
  PeerSockets& operator=(const PeerSockets&) = delete;
};

// Connects rank `rank` to all others, accepting on `listen_fd`. Connections that fail the
// hello (another job, a stray client, one that stays silent) are refused or dropped without
// holding up the others. Throws rg::Error naming the rank that did not connect by `deadline`.
void connect_peers(PeerSockets& sockets, int listen_fd, const std::vector<PeerAddress>& peers,
                   int rank, const std::string& job_token, Clock::time_point deadline,
                   const std::string& me);

}  // namespace rg::dist
