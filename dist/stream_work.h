// Collectives of transports whose messages complete on device streams
// (capabilities().device_streams: nccl), run as a GPU user expects:
//   - when the collective is issued, an event is recorded on the issuing thread's current
//     stream (the compute stream, for DDP's gradient hook: the moment its bucket became
//     ready); the communication stream waits on that event alone, so communication never
//     waits for compute work queued after the issue;
//   - the collective runs on the communication thread with the transport's stream current
//     (gpu::StreamGuard): the ring's reduction kernels and copies go there, not onto the
//     compute stream, and backward kernels queued meanwhile never wait for the network;
//   - the tensors it touches are record_stream'ed on that stream (the caching allocator
//     reuses their blocks only after the communication);
//   - its completion is an event recorded on the communication stream after the collective:
//     StreamWork::wait() makes the waiter's current stream wait for it (the host waits only
//     until the communication thread has queued the collective, never for the network);
//   - both ends are timing events: `started` on the communication stream once it has waited
//     for the issue, `done` at the completion, so the collective's device time is theirs
//     (dist/bucket_transport.h measures DDP's hidden communication with them).
// Timeouts are the transport's watchdog's (dist/stream_watchdog.h).
#pragma once
#include <memory>
#include <vector>

#include "dist/collective_context.h"
#include "dist/work.h"
#include "kernels/cuda/stream.h"

namespace rg::dist {

class StreamWork : public PromiseWork {
 public:
  explicit StreamWork(Device device) : device_(device) {}
  using Work::wait;
  // Once queued: the current stream of `device` waits for the completion (no host wait);
  // with block_host(), the host waits for it (a barrier; the transport's watchdog bounds it).
  bool wait(Milliseconds timeout) override;
  void block_host() { block_host_ = true; }  // before the work is handed out
  // Queued and finished on the device (an event query, no wait).
  bool is_completed() override;
  // The host waits until the collective is queued on its stream (throws its error). Bounded
  // as Work::wait() is: the communication thread queues or fails every work it takes, and
  // a collective stuck behind a dead peer is failed by the transport's timeout.
  void wait_queued();
  // The completion event; set by the communication thread before the work is finished.
  const std::shared_ptr<gpu::Event>& done() const { return done_; }
  void set_done(std::shared_ptr<gpu::Event> done) { done_ = std::move(done); }
  // Where the collective began on the communication stream (a timing event, as `done` then
  // is); null when the work did not record one (nccl_allreduce).
  const std::shared_ptr<gpu::Event>& started() const { return started_; }
  void set_started(std::shared_ptr<gpu::Event> started) { started_ = std::move(started); }

 private:
  Device device_;
  std::shared_ptr<gpu::Event> done_;
  std::shared_ptr<gpu::Event> started_;
  bool block_host_ = false;
};

// Wraps `algorithm` to run as described above; call on the issuing thread (it records the
// issue event and record_streams `touched`). `work` receives the completion event.
std::function<void(CollectiveContext&)> on_comm_stream(
    std::function<void(CollectiveContext&)> algorithm, const gpu::Stream& comm,
    const std::vector<Tensor>& touched, std::shared_ptr<StreamWork> work);

}  // namespace rg::dist
