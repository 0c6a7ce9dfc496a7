// Stream hand-offs of the nccl backend's messages (see the header).
#include "dist/stream_messages.h"

#include <thread>

namespace rg::dist {

void StreamMessages::wait_for_producers() const {
  const gpu::Stream current = gpu::current_stream(comm_.device);
  if (current.handle == comm_.handle) return;
  gpu::Event ready(comm_.device);  // may be destroyed once the wait is queued
  ready.record(current);
  ready.wait(comm_);
}

std::shared_ptr<gpu::Event> StreamMessages::completion() const {
  auto done = std::make_shared<gpu::Event>(comm_.device);
  done->record(comm_);
  return done;
}

void StreamMessages::hand_back(std::shared_ptr<gpu::Event> done, int peer, const Envelope& env) {
  RG_CHECK(done, "stream messages: handing back a message whose batch has not ended");
  done->wait(gpu::current_stream(comm_.device));
  handed_.push_back({std::move(done), {peer, env}});
}

std::optional<StreamMessages::Late> StreamMessages::watch(Clock::time_point deadline,
                                                          const std::function<void()>& check) {
  std::vector<Handed> handed = std::move(handed_);
  handed_.clear();
  for (const Handed& h : handed) {
    while (!h.done->query()) {
      if (check) check();
      if (Clock::now() >= deadline) return h.what;
      std::this_thread::yield();
    }
  }
  return std::nullopt;
}

}  // namespace rg::dist
