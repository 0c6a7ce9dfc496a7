// TcpStore: the client of the rendezvous store (protocol: store_wire.h; server:
// store_server.cpp). One connection per client, one request at a time on it.
#include "dist/store.h"

#include <unistd.h>

#include <cstdlib>

#include "dist/socket.h"
#include "dist/store_server.h"
#include "dist/store_wire.h"

namespace rg::dist {

using namespace store_wire;

namespace {

constexpr Milliseconds kIoMargin{5000};  // network slack beyond a request's own timeout

std::string seconds(Milliseconds ms) { return str(ms.count() / 1000.0, " s"); }

// The interface the server listens on: MASTER_ADDR's, unless RG_DIST_BIND_ADDR says otherwise.
std::string bind_address(const std::string& host) {
  const char* s = std::getenv("RG_DIST_BIND_ADDR");
  return s && *s ? s : host;
}

}  // namespace

TcpStore::TcpStore(const std::string& host, int port, bool serve, Milliseconds timeout,
                   std::string job_token)
    : host_(host), port_(port), timeout_(clamp_wait(timeout.count())) {
  RG_CHECK(job_token.size() <= kMaxJobTokenBytes, "store: a job token of ", job_token.size(),
           " bytes (at most ", kMaxJobTokenBytes, ")");
  if (serve) {
    server_ = std::make_unique<StoreServer>(bind_address(host), port, job_token);
    port_ = server_->port();
  }
  try {
    connect(job_token);
  } catch (...) {
    if (fd_ >= 0) ::close(fd_);
    fd_ = -1;
    throw;
  }
}

TcpStore::~TcpStore() {
  if (fd_ >= 0) ::close(fd_);
  server_.reset();
}

std::string TcpStore::where() const { return str("store at ", host_, ":", port_); }

// Connects and presents the job token; the server answers with its verdict.
void TcpStore::connect(const std::string& job_token) {
  const auto deadline = Clock::now() + timeout_;
  fd_ = net::connect_tcp(host_, port_, deadline,
                         str(where(), " (MASTER_ADDR:MASTER_PORT; is rank 0 running?)"));
  const std::string what = str(where(), ": hello");
  uint32_t magic = kHelloMagic, token_len = job_token.size();
  uint8_t accepted = 0;
  uint32_t reason_len = 0;
  std::string reason;
  try {
    net::write_all(fd_, &magic, 4, deadline, what);
    net::write_all(fd_, &token_len, 4, deadline, what);
    net::write_all(fd_, job_token.data(), job_token.size(), deadline, what);
    net::read_all(fd_, &accepted, 1, deadline, what);
    net::read_all(fd_, &reason_len, 4, deadline, what);
    RG_CHECK(reason_len <= kMaxReasonBytes, what, ": malformed answer");
    reason.assign(reason_len, '\0');
    net::read_all(fd_, reason.data(), reason_len, deadline, what);
  } catch (const Error& e) {
    RG_FAIL(e.what(), " (rank 0 hosts the store: is it stopped, hung or gone?)");
  }
  RG_CHECK(accepted == 1, where(), " refused this process: ", reason,
           "; is another job using MASTER_PORT ", port_, "?");
}

std::string TcpStore::local_address() const { return net::local_address(fd_); }

Milliseconds TcpStore::effective(Milliseconds timeout) const {
  return timeout.count() < 0 ? timeout_ : clamp_wait(timeout.count());
}

TcpStore::Reply TcpStore::request(uint8_t command, const std::string& key, const std::string& value,
                                  int64_t argument, Milliseconds timeout) {
  RG_CHECK(key.size() <= kMaxKeyBytes, where(), ": key of ", key.size(), " bytes (at most ",
           kMaxKeyBytes, ")");
  RG_CHECK(value.size() <= kMaxValueBytes, where(), ", key '", key, "': value of ", value.size(),
           " bytes (at most ", kMaxValueBytes, ")");
  std::lock_guard lock(mu_);
  const std::string what = str(where(), ", key '", key, "'");
  const auto deadline = Clock::now() + timeout + kIoMargin;
  uint32_t key_len = key.size();
  uint64_t value_len = value.size(), reply_len = 0;
  Reply reply{kMissing, ""};
  try {
    net::write_all(fd_, &command, 1, deadline, what);
    net::write_all(fd_, &key_len, 4, deadline, what);
    net::write_all(fd_, key.data(), key.size(), deadline, what);
    net::write_all(fd_, &value_len, 8, deadline, what);
    net::write_all(fd_, value.data(), value.size(), deadline, what);
    net::write_all(fd_, &argument, 8, deadline, what);
    net::read_all(fd_, &reply.status, 1, deadline, what);
    net::read_all(fd_, &reply_len, 8, deadline, what);
    RG_CHECK(reply_len <= kMaxReplyBytes, what, ": malformed reply of ", reply_len, " bytes");
    reply.text.assign(reply_len, '\0');
    net::read_all(fd_, reply.text.data(), reply_len, deadline, what);
  } catch (const Error& e) {
    RG_FAIL(e.what(), " (rank 0 hosts the store: is it stopped, hung or gone?)");
  }
  RG_CHECK(reply.status != kFailed, what, ": ", reply.text);
  return reply;
}

void TcpStore::set(const std::string& key, const std::string& value, Milliseconds timeout) {
  request(kSet, key, value, 0, effective(timeout));
}

std::string TcpStore::get(const std::string& key, Milliseconds timeout) {
  timeout = effective(timeout);
  Reply reply = request(kGet, key, "", timeout.count(), timeout);
  if (reply.status != kOk)
    throw StoreTimeout(
        str(where(), ": timed out after ", seconds(timeout), " waiting for key '", key, "'"));
  return reply.text;
}

int64_t TcpStore::add(const std::string& key, int64_t delta, Milliseconds timeout) {
  Reply reply = request(kAdd, key, "", delta, effective(timeout));
  char* end = nullptr;
  long long sum = std::strtoll(reply.text.c_str(), &end, 10);
  RG_CHECK(!reply.text.empty() && *end == '\0', where(), ", key '", key,
           "': malformed reply to add");
  return sum;
}

void TcpStore::wait(const std::vector<std::string>& keys, Milliseconds timeout) {
  auto deadline = Clock::now() + effective(timeout);
  for (const auto& key : keys) {
    auto left = std::chrono::duration_cast<Milliseconds>(deadline - Clock::now());
    get(key, std::max(left, Milliseconds(0)));
  }
}

std::pair<size_t, std::string> TcpStore::wait_any(const std::vector<std::string>& keys,
                                                  Milliseconds timeout) {
  timeout = effective(timeout);
  std::string list;
  for (const auto& key : keys) {
    RG_CHECK(key.find('\n') == std::string::npos, where(), ": wait_any on key '", key,
             "' with a newline");
    list += (list.empty() ? "" : "\n") + key;
  }
  Reply reply = request(kWaitAny, keys.empty() ? "" : keys[0], list, timeout.count(), timeout);
  if (reply.status != kOk)
    throw StoreTimeout(str(where(), ": timed out after ", seconds(timeout), " waiting for key '",
                           keys.empty() ? "" : keys.back(), "'"));
  size_t newline = reply.text.find('\n');
  size_t index = std::strtoul(reply.text.substr(0, newline).c_str(), nullptr, 10);
  RG_CHECK(newline != std::string::npos && index < keys.size(), where(),
           ": malformed reply to wait_any");
  return {index, reply.text.substr(newline + 1)};
}

bool TcpStore::check(const std::string& key) {
  return request(kCheck, key, "", 0, timeout_).status == kOk;
}

}  // namespace rg::dist
