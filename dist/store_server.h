// The server of the rendezvous store (protocol: store_wire.h). Rank 0 runs it inside its
// process, so it distrusts whatever connects: a connection must open with the job's token,
// every length is bounded before anything is allocated, and a malformed frame closes that
// connection only (with a line on stderr naming the reason), never the server.
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
