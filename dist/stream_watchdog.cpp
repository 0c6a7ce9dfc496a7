// The watchdog's thread (see stream_watchdog.h).
#include "dist/stream_watchdog.h"

#include <chrono>

#include "core/memory_limits.h"

namespace rg::dist {

StreamWatchdog::StreamWatchdog(OnLate on_late, std::function<void()> check)
    : on_late_(std::move(on_late)), check_(std::move(check)) {
  RG_CHECK(on_late_ != nullptr, "StreamWatchdog: on_late is empty");
  thread_ = start_thread("stream watchdog", [this] { loop(); });
}

StreamWatchdog::~StreamWatchdog() {
  {
    std::lock_guard lock(mu_);
    stopping_ = true;
  }
  cv_.notify_all();
  thread_.join();
}

void StreamWatchdog::watch(std::vector<StreamMessages::Handed> messages,
                           Clock::time_point deadline) {
  if (messages.empty()) return;
  {
    std::lock_guard lock(mu_);
    if (fired_) return;  // the group has failed: nothing more to watch
    batches_.push_back({std::move(messages), deadline});
  }
  cv_.notify_all();
}

size_t StreamWatchdog::pending() const {
  std::lock_guard lock(mu_);
  return batches_.size();
}

bool StreamWatchdog::fired() const {
  std::lock_guard lock(mu_);
  return fired_;
}

bool StreamWatchdog::poll(const Batch& batch, const StreamMessages::Late** late,
                          std::string* error) {
  for (const StreamMessages::Handed& h : batch.messages) {
    for (;;) {
      // The query itself may throw: on cuda a sticky error fails every cudaEventQuery. It
      // fails the collective like the backend's error, never this thread (std::terminate).
      try {
        if (h.done->query()) break;
        if (check_) check_();
      } catch (const std::exception& e) {
        *error = e.what();
        *late = &h.what;
        return false;
      }
      if (Clock::now() >= batch.deadline) return *late = &h.what, false;
      {
        std::unique_lock lock(mu_);
        if (cv_.wait_for(lock, std::chrono::microseconds(50), [&] { return stopping_; }))
          return true;  // stopping: give up watching
      }
    }
  }
  return true;
}

void StreamWatchdog::loop() {
  for (;;) {
    Batch batch;
    {
      std::unique_lock lock(mu_);
      cv_.wait(lock, [&] { return stopping_ || !batches_.empty(); });
      if (stopping_) return;
      batch = std::move(batches_.front());  // stays counted in pending() until polled
    }
    const StreamMessages::Late* late = nullptr;
    std::string error;
    const bool done = poll(batch, &late, &error);
    {
      std::lock_guard lock(mu_);
      batches_.pop_front();
      if (!done) {
        fired_ = true;
        batches_.clear();
      }
    }
    if (!done) on_late_(*late, error);
  }
}

}  // namespace rg::dist
