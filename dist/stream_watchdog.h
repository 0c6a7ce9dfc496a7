// StreamWatchdog: the timeout of messages that complete on device streams, enforced off the
// critical path (as PyTorch's NCCL watchdog). The communication thread hands it each
// collective's messages (StreamMessages::take) with a deadline and goes on; its own thread
// polls their events in order, sleeping briefly between polls. A message still not done at
// its deadline makes it call on_late once, naming the peer and the collective (the transport
// then aborts and the group fails); every later batch is dropped unwatched. `check` runs
// between polls (the backend's asynchronous error; it may throw, which also counts as late),
// and so does an event's query that throws (a sticky device error): on_late gets its message.
#pragma once
#include <condition_variable>
#include <deque>
#include <functional>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "dist/stream_messages.h"

namespace rg::dist {

class StreamWatchdog {
 public:
  using OnLate = std::function<void(const StreamMessages::Late&, const std::string& error)>;
  explicit StreamWatchdog(OnLate on_late, std::function<void()> check = nullptr);
  ~StreamWatchdog();  // stops polling (what is pending is dropped)
  StreamWatchdog(const StreamWatchdog&) = delete;
  StreamWatchdog& operator=(const StreamWatchdog&) = delete;

  void watch(std::vector<StreamMessages::Handed> messages, Clock::time_point deadline);
  // Batches handed over and not yet seen done.
  size_t pending() const;
  bool fired() const;

 private:
  struct Batch {
    std::vector<StreamMessages::Handed> messages;
    Clock::time_point deadline;
  };
  void loop();
  // Polls `batch` until done (true) or late (false; *error set when check threw).
  bool poll(const Batch& batch, const StreamMessages::Late** late, std::string* error);

  OnLate on_late_;
  std::function<void()> check_;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::deque<Batch> batches_;
  bool stopping_ = false;
  bool fired_ = false;
  std::thread thread_;
};

}  // namespace rg::dist
