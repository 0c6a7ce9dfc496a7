// Stream-ordered collectives (see stream_work.h).
#include "dist/stream_work.h"

namespace rg::dist {

bool StreamWork::wait(Milliseconds timeout) {
  if (!PromiseWork::wait(timeout)) return false;
  if (done_ && block_host_) done_->synchronize();
  if (done_ && !block_host_) done_->wait(gpu::current_stream(device_));
  return true;
}

void StreamWork::wait_queued() {
  while (!PromiseWork::wait(Milliseconds(3'600'000))) {
  }
}

bool StreamWork::is_completed() {
  return PromiseWork::is_completed() && (!done_ || done_->query());
}

std::function<void(CollectiveContext&)> on_comm_stream(
    std::function<void(CollectiveContext&)> algorithm, const gpu::Stream& comm,
    const std::vector<Tensor>& touched, std::shared_ptr<StreamWork> work) {
  const Device device = comm.device;
  auto ready = std::make_shared<gpu::Event>(device);
  ready->record(gpu::current_stream(device));  // what the collective's inputs wait for
  for (const Tensor& t : touched)
    if (t.defined() && t.device() == device && t.numel() > 0) gpu::record_stream(t, comm);
  return [algorithm = std::move(algorithm), comm, ready,
          work = std::move(work)](CollectiveContext& ctx) {
    gpu::StreamGuard on_comm(comm);
    ready->wait(comm);
    auto started = std::make_shared<gpu::Event>(comm.device, /*timing=*/true);
    started->record(comm);
    algorithm(ctx);
    auto done = std::make_shared<gpu::Event>(comm.device, /*timing=*/true);
    done->record(comm);
    work->set_started(std::move(started));
    work->set_done(std::move(done));
  };
}

}  // namespace rg::dist
