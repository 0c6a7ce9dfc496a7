// The server of the rendezvous store (protocol: store_wire.h). It runs inside rank 0's
// process, so it distrusts whatever connects until that proves itself a member of the job:
//   - a connection that has not yet presented the job's token costs no thread: one poll loop
//     (thread "rg-store") accepts and reads every hello without blocking. A hello must be
//     whole within kHelloTimeout (1 s). At most kMaxPendingHellos (64) connections wait for
//     theirs at once: every connection is accepted at once (none waits in the listen
//     backlog), and past the cap the oldest waiter is closed, so a flood holds at most 64
//     file descriptors. A rank's hello comes with its connection and is read at accept,
//     so ranks get in while strangers come and go;
//   - only a connection whose hello carried the right token gets a thread of its own
//     ("rg-store-conn"), at most kMaxServedConnections at once;
//   - every length is bounded before anything is allocated, and a malformed frame closes
//     that connection only (with a line on stderr naming the reason; a flood of them prints
//     a few lines and then a count), never the server.
// Why the store stays in rank 0's process rather than one of its own (which would need
// starting, supervising and cleaning up, and could outlive the job): what a stranger can cost
// that process is bounded. However many connect, silent, slow or malformed, unauthenticated
// clients get zero threads and at most kMaxPendingHellos + 1 file descriptors, so rank 0's
// training, checkpoints and peer links keep their threads and descriptors.
#pragma once
#include <memory>
#include <string>

namespace rg::dist {

class StoreServer {
 public:
  // Listens on host:port (host "" or "0.0.0.0": every interface; port 0: a free one).
  StoreServer(const std::string& host, int port, std::string job_token);
  ~StoreServer();
  StoreServer(const StoreServer&) = delete;
  StoreServer& operator=(const StoreServer&) = delete;

  int port() const;

 private:
  struct State;
  std::unique_ptr<State> state_;
};

}  // namespace rg::dist
