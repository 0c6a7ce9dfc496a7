// The sim-stream test transport (see sim_stream_transport.h).
#include "tests/dist/sim_stream_transport.h"

#include <cstring>

#include "kernels/sim/stream_queue.h"

namespace rg::test {

namespace {

// A posted message op: what wait_message needs to complete it.
class SimMessageWork : public dist::Work {
 public:
  SimMessageWork(Tensor t, int src, size_t index) : t(std::move(t)), src(src), index(index) {}
  bool wait(dist::Milliseconds) override { return true; }
  bool is_completed() override { return true; }
  Tensor t;      // the destination (receives) or the source (sends)
  int src;       // -1 for a send
  size_t index;  // position among the pair's messages
};

// Runs `work` on the sim communication stream: queued there in delayed-stream mode.
void on_comm(std::function<void()> work) {
  if (sim::is_delayed(sim::kCommStream))
    sim::enqueue(sim::kCommStream, std::move(work));
  else
    work();
}

}  // namespace

SimStreamTransport::SimStreamTransport(std::shared_ptr<SimWire> wire, int rank, int size,
                                       dist::Milliseconds timeout)
    : Transport(rank, size, timeout),
      wire_(std::move(wire)),
      device_(DeviceType::sim, rank),
      messages_(gpu::comm_stream(device_)) {}

dist::TransportCapabilities SimStreamTransport::capabilities() const {
  dist::TransportCapabilities can;
  can.device_streams = true;
  return can;
}

std::shared_ptr<dist::Work> SimStreamTransport::send_message(const Tensor& t, int dst,
                                                             const dist::Envelope&) {
  auto message = std::make_shared<SimWire::Message>();
  message->bytes.resize(t.nbytes());
  // Raw addresses, as NCCL sees them: only record_stream keeps the memory from reuse.
  auto copy = [message, src = t.data_ptr()] {
    if (!message->bytes.empty()) std::memcpy(message->bytes.data(), src, message->bytes.size());
  };
  if (t.device().is_cpu()) {
    copy();
  } else {
    on_comm(copy);
    message->ticket = sim::ticket(sim::kCommStream);
  }
  size_t index;
  {
    std::lock_guard lock(wire_->mu);
    auto& pair = wire_->sent[rank()][dst];
    index = pair.size();
    pair.push_back(message);
  }
  wire_->cv.notify_all();
  return std::make_shared<SimMessageWork>(t, -1, index);
}

std::shared_ptr<dist::Work> SimStreamTransport::recv_message(const Tensor& t, int src,
                                                             const dist::Envelope&) {
  std::lock_guard lock(wire_->mu);
  return std::make_shared<SimMessageWork>(t, src, wire_->received[src][rank()]++);
}

std::shared_ptr<SimWire::Message> SimStreamTransport::posted(int src, size_t index,
                                                             const dist::Envelope& env) {
  std::unique_lock lock(wire_->mu);
  auto& pair = wire_->sent[src][rank()];
  if (!wire_->cv.wait_for(lock, timeout(), [&] { return pair.size() > index; }))
    throw dist::DistError({dist::FailureKind::timeout, src, describe(env), env.seq},
                          str("rank ", rank(), ": ", describe(env), ": rank ", src, " never sent"));
  return pair[index];
}

void SimStreamTransport::deliver(const std::shared_ptr<SimWire::Message>& message,
                                 const Tensor& into) {
  auto copy = [message, dst = into.data_ptr(), wire = wire_, me = rank()] {
    if (!message->bytes.empty()) std::memcpy(dst, message->bytes.data(), message->bytes.size());
    std::lock_guard lock(wire->mu);
    ++wire->delivered[me];
  };
  if (into.device().is_cpu())
    copy();
  else
    on_comm(copy);
}

void SimStreamTransport::wait_message(dist::Work& work, int peer, const dist::Envelope& env) {
  auto& op = static_cast<SimMessageWork&>(work);
  if (op.src >= 0) {
    std::shared_ptr<SimWire::Message> message = posted(op.src, op.index, env);
    sim::run_until(sim::kCommStream, message->ticket);  // the peer's bytes are on the wire
    deliver(message, op.t);
  }
  if (op.t.device().is_cpu()) return;
  messages_.hand_back(messages_.completion(), peer, env);
}

}  // namespace rg::test
