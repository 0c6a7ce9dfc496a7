// Store: a small key-value service the ranks use to find each other (rendezvous). Rank 0
// hosts a TcpStore server at MASTER_ADDR:MASTER_PORT; every rank (rank 0 included) is a
// client. Values are byte strings. Every operation is bounded by a timeout (the store's
// default unless given) and throws rg::Error naming the key and the store's address.
//
// The server listens on the interface of MASTER_ADDR only (RG_DIST_BIND_ADDR overrides it,
// e.g. 0.0.0.0 for every interface) and serves only clients that present the job token
// (see job_token.h); limits and protocol: store_wire.h.
#pragma once
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "dist/options.h"

namespace rg::dist {

// Thrown when the store answered that the keys did not appear within the timeout (as opposed
// to a store that does not answer at all).
class StoreTimeout : public Error {
 public:
  using Error::Error;
};

class Store {
 public:
  static constexpr Milliseconds kDefaultTimeout{-1};  // "the store's own timeout"
  virtual ~Store() = default;
  virtual void set(const std::string& key, const std::string& value,
                   Milliseconds timeout = kDefaultTimeout) = 0;
  // Waits until the key exists, then returns its value.
  virtual std::string get(const std::string& key, Milliseconds timeout = kDefaultTimeout) = 0;
  // Adds `delta` to the integer stored at key (missing: 0) and returns the new value.
  virtual int64_t add(const std::string& key, int64_t delta,
                      Milliseconds timeout = kDefaultTimeout) = 0;
  // Waits until every key exists.
  virtual void wait(const std::vector<std::string>& keys,
                    Milliseconds timeout = kDefaultTimeout) = 0;
  // Waits until any of the keys exists; returns the index and value of the first that does.
  virtual std::pair<size_t, std::string> wait_any(const std::vector<std::string>& keys,
                                                  Milliseconds timeout = kDefaultTimeout) = 0;
  virtual bool check(const std::string& key) = 0;
};

class StoreServer;

class TcpStore : public Store {
 public:
  // Connects to host:port, retrying until `timeout` while the server is not up yet, and
  // presents `job_token`. With `serve`, this process first starts the server on `port` (0: a
  // free port, see port()). Throws rg::Error when the server refuses the token.
  TcpStore(const std::string& host, int port, bool serve, Milliseconds timeout = default_timeout(),
           std::string job_token = job_token_from_env());
  ~TcpStore() override;

  int port() const { return port_; }
  const std::string& host() const { return host_; }
  // The local address of the connection to the server: how other hosts can reach this one.
  std::string local_address() const;

  void set(const std::string& key, const std::string& value,
           Milliseconds timeout = kDefaultTimeout) override;
  std::string get(const std::string& key, Milliseconds timeout = kDefaultTimeout) override;
  int64_t add(const std::string& key, int64_t delta,
              Milliseconds timeout = kDefaultTimeout) override;
  void wait(const std::vector<std::string>& keys, Milliseconds timeout = kDefaultTimeout) override;
  std::pair<size_t, std::string> wait_any(const std::vector<std::string>& keys,
                                          Milliseconds timeout = kDefaultTimeout) override;
  bool check(const std::string& key) override;

 private:
  struct Reply {
    uint8_t status;
    std::string text;
  };
  void connect(const std::string& job_token);
  // Sends one request and reads the reply; a kFailed reply throws its text.
  Reply request(uint8_t command, const std::string& key, const std::string& value, int64_t argument,
                Milliseconds timeout);
  Milliseconds effective(Milliseconds timeout) const;
  std::string where() const;

  std::string host_;
  int port_ = 0;
  Milliseconds timeout_;
  std::unique_ptr<StoreServer> server_;
  std::mutex mu_;  // one request at a time on the connection
  int fd_ = -1;
};

}  // namespace rg::dist
