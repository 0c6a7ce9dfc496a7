// MessageTransport: the Transport of the threads and tcp backends, over the message pump
// (dist/message_pump.h). Every message op is one posted op of the pump; waiting for it drives
// the pump's progress loop on the waiting thread.
#include "dist/message_transport.h"

#include "dist/message_pump.h"

namespace rg::dist {
namespace {

using messages::MessageOp;
using messages::MessagePump;
using messages::OpPtr;

class MessageWork : public Work {
 public:
  MessageWork(std::shared_ptr<MessagePump> pump, OpPtr op, Milliseconds group_timeout)
      : pump_(std::move(pump)), op_(std::move(op)), group_timeout_(group_timeout) {}
  bool wait(Milliseconds timeout) override { return pump_->wait(*op_, Clock::now() + timeout); }
  void wait() override { pump_->wait_or_fail(*op_, group_timeout_); }
  bool is_completed() override { return pump_->is_done(*op_); }
  const MessageOp& op() const { return *op_; }

 private:
  std::shared_ptr<MessagePump> pump_;
  OpPtr op_;
  Milliseconds group_timeout_;
};

class MessageTransport : public Transport {
 public:
  MessageTransport(const char* backend, int rank, int size, Milliseconds timeout,
                   std::vector<PeerLink> links, Doorbell* doorbell, std::shared_ptr<void> keepalive,
                   std::vector<int> host_of, IdleWait idle_wait)
      : Transport(rank, size, timeout),
        backend_(backend),
        pump_(std::make_shared<MessagePump>(rank, std::move(links), doorbell)),
        keepalive_(std::move(keepalive)) {
    // Without a host map, ranks that reach every peer without sockets share one host.
    if (host_of.empty() && pump_->all_rings()) host_of.assign(size, 0);
    set_host_map(std::move(host_of));
    int ranks_on_host = 1;  // this rank and the peers it reaches without a socket
    for (int q = 0; q < size; ++q) ranks_on_host += q != rank && !pump_->socket_to(q);
    pump_->set_yield_at_once(yields_at_once(idle_wait, ranks_on_host));
  }

  const char* name() const override { return backend_; }
  TransportCapabilities capabilities() const override {
    TransportCapabilities can;
    can.shared_memory = pump_->all_rings();  // every peer through a shared-memory ring
    can.eager_exchange = pump_->all_rings();
    can.combines_on_receive = true;
    return can;
  }
  bool supports_device(Device device) const override { return device.is_host_memory(); }
  std::string link(int peer) const override {
    if (peer == rank()) return Transport::link(peer);
    if (pump_->socket_to(peer)) return "tcp";
    return std::string(backend_) == "threads" ? "memory" : "shm";
  }

  std::shared_ptr<Work> send_message(const Tensor& t, int dst, const Envelope& env) override {
    count_sent(dst, t.nbytes(), pump_->socket_to(dst));
    return std::make_shared<MessageWork>(pump_, pump_->post(true, t, dst, env), timeout());
  }
  std::shared_ptr<Work> recv_message(const Tensor& t, int src, const Envelope& env) override {
    return std::make_shared<MessageWork>(pump_, pump_->post(false, t, src, env), timeout());
  }
  std::shared_ptr<Work> recv_combine_message(const Tensor& into, int src, const Envelope& env,
                                             CombineOp op) override {
    RG_CHECK(combines_bytes(into.dtype()) && into.device().is_host_memory(),
             "recv_combine_message: ", dtype_name(into.dtype()), " on ", into.device().str(),
             " is not folded on receipt");
    return std::make_shared<MessageWork>(pump_, pump_->post(false, into, src, env, op), timeout());
  }
  void wait_message(Work& work, int, const Envelope&) override {
    pump_->wait_or_fail(static_cast<MessageWork&>(work).op(), timeout());
  }

  void exchange_with_all(const Tensor& mine, const Tensor& inputs, const Envelope& env) override {
    send_exchange(mine, env);
    receive_exchange(inputs, mine.nbytes(), env);
  }
  bool send_exchange(const Tensor& mine, const Envelope& env) override {
    for (int q = 0; q < size(); ++q)
      if (q != rank()) count_sent(q, mine.nbytes(), pump_->socket_to(q));
    return pump_->send_exchange(mine, env);
  }
  void receive_exchange(const Tensor& inputs, size_t message_bytes, const Envelope& env) override {
    pump_->receive_exchange(inputs, message_bytes, env, timeout());
  }

  void abort(const Failure& failure, const std::string& message) override {
    pump_->fail(failure, message, true);
  }
  void close(bool) override { pump_->close(); }

 private:
  const char* backend_;
  std::shared_ptr<MessagePump> pump_;
  std::shared_ptr<void> keepalive_;
};

}  // namespace

std::shared_ptr<ProcessGroup> make_message_group(const char* backend, int rank, int size,
                                                 Options options, std::vector<PeerLink> links,
                                                 Doorbell* doorbell,
                                                 std::shared_ptr<void> keepalive,
                                                 std::vector<int> host_of) {
  RG_CHECK(static_cast<int>(links.size()) == size, backend, ": ", links.size(),
           " peer links for a world of size ", size);
  auto transport = std::make_unique<MessageTransport>(
      backend, rank, size, options.timeout, std::move(links), doorbell, std::move(keepalive),
      std::move(host_of), options.idle_wait);
  return std::make_shared<ProcessGroup>(rank, size, std::move(options), std::move(transport));
}

}  // namespace rg::dist
