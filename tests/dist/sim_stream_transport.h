// A test transport whose messages complete on sim's communication stream, as NCCL's do on a
// GPU (capabilities().device_streams), for ranks that are threads of one process: a group
// with device streams that runs without a GPU (tests/dist/test_ddp_overlap.cpp).
//
// The ranks share a SimWire: per (source, destination) pair, the messages in the order
// sent. A send of a sim tensor queues, on the communication stream, an item that copies the
// tensor's bytes into the wire (so it reads them after whatever the stream queued before,
// like the ring's reductions), and notes its queue position. A receive is matched, in order,
// to the next message of its pair. wait_message does what the device would: it waits (on the
// communication thread, never the caller's) until the peer has posted the message, runs the
// communication stream up to the peer's copy (the "network"), then queues the copy into the
// destination on the stream and hands the message back through StreamMessages (the consumer's
// stream waits for its event). Host tensors move at once. The queued copies hold raw
// addresses, as NCCL does: a tensor dropped meanwhile stays unreused only by record_stream. The
// ranks' sim devices differ (sim:rank), so each rank's host synchronizations are counted apart.
#pragma once
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <vector>

#include "dist/stream_messages.h"
#include "dist/transport.h"

namespace rg::test {

struct SimWire {
  struct Message {
    std::vector<char> bytes;
    uint64_t ticket = 0;  // the communication stream's position after the copy into bytes
  };
  explicit SimWire(int size)
      : sent(size, std::vector<std::deque<std::shared_ptr<Message>>>(size)),
        received(size, std::vector<size_t>(size, 0)),
        delivered(size, 0) {}
  std::mutex mu;
  std::condition_variable cv;
  std::vector<std::vector<std::deque<std::shared_ptr<Message>>>> sent;  // [src][dst]
  std::vector<std::vector<size_t>> received;                            // [src][dst]: claimed
  std::vector<uint64_t> delivered;  // [dst]: messages whose copy into dst's tensor has run
};

class SimStreamTransport : public dist::Transport {
 public:
  SimStreamTransport(std::shared_ptr<SimWire> wire, int rank, int size, dist::Milliseconds timeout);

  const char* name() const override { return "sim-streams"; }
  dist::TransportCapabilities capabilities() const override;
  bool supports_device(Device d) const override { return d == device_ || d.is_cpu(); }
  Device default_device() const override { return device_; }

  std::shared_ptr<dist::Work> send_message(const Tensor& t, int dst,
                                           const dist::Envelope& env) override;
  std::shared_ptr<dist::Work> recv_message(const Tensor& t, int src,
                                           const dist::Envelope& env) override;
  void wait_message(dist::Work& work, int peer, const dist::Envelope& env) override;
  // The messages were all delivered (wait_message): the handed-back events are dropped.
  void finish_collective() override { messages_.watch(dist::Clock::now(), nullptr); }
  void abort(const dist::Failure&, const std::string&) override {}

 private:
  std::shared_ptr<SimWire::Message> posted(int src, size_t index, const dist::Envelope& env);
  void deliver(const std::shared_ptr<SimWire::Message>& message, const Tensor& into);

  std::shared_ptr<SimWire> wire_;
  Device device_;
  dist::StreamMessages messages_;
};

}  // namespace rg::test
