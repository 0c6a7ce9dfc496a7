// Messages that complete on a device stream (the nccl backend), handed between streams by
// events instead of host waits:
//   - before a send from a thread whose current stream is not the communication stream (a
//     user's send, nccl_allreduce), the communication stream waits for the work queued so
//     far on that stream, which produced the bytes; a collective runs on the communication
//     stream itself, after the event of its issue (dist/stream_work.h), and waits for nothing;
//   - each message's completion is an event recorded on the communication stream after it;
//   - when the collective consumes a message (reduces a receive, or may overwrite a sent
//     buffer), the consuming stream waits for that event: the host does not;
//   - at the end of the collective the transport hands those events to a watchdog
//     (dist/stream_watchdog.h) that polls them off the critical path with the group's
//     timeout, so a peer that stopped answering still fails the group, named; watch() is
//     the same poll on the calling thread.
// Device-agnostic (gpu::Stream, gpu::Event): on sim's delayed-stream mode the same logic runs
// with the communication stream really held back (tests/dist/test_stream_messages.cpp).
#pragma once
#include <functional>
#include <memory>
#include <optional>
#include <utility>
#include <vector>

#include "dist/work.h"
#include "kernels/cuda/stream.h"

namespace rg::dist {

class StreamMessages {
 public:
  explicit StreamMessages(gpu::Stream comm) : comm_(comm) {}

  const gpu::Stream& comm() const { return comm_; }
  // The communication stream waits for the calling thread's current stream, unless that is
  // the communication stream itself (a collective's messages: already in order there).
  void wait_for_producers() const;
  // An event recorded on the communication stream now: the completion of what was queued.
  std::shared_ptr<gpu::Event> completion() const;
  // The thread's current stream waits for `done` (the collective consumes the message); the
  // message is remembered for watch().
  void hand_back(std::shared_ptr<gpu::Event> done, int peer, const Envelope& env);

  struct Late {
    int peer;
    Envelope env;
  };
  struct Handed {
    std::shared_ptr<gpu::Event> done;
    Late what;
  };
  // Polls the handed-back messages in order until all are done or `deadline` passes (calling
  // `check` between polls: it may throw the backend's asynchronous error); returns the first
  // message not done by then, or nothing. Forgets them either way.
  std::optional<Late> watch(Clock::time_point deadline, const std::function<void()>& check);
  size_t pending() const { return handed_.size(); }
  // The handed-back messages, forgotten here (for a watchdog: dist/stream_watchdog.h).
  std::vector<Handed> take() { return std::exchange(handed_, {}); }

 private:
  gpu::Stream comm_;
  std::vector<Handed> handed_;
};

}  // namespace rg::dist
