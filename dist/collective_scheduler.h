// CollectiveScheduler: runs a group's collectives one at a time, in the order they were
// issued, and owns everything about when they run: the queue and the communication thread
// that drains it, the inline run of a collective its issuer waits for at once, the lean path
// of small collectives (dist/lean_collective.cpp), the group's first failure, and the counts
// of what was issued. What a collective does is an algorithm over the CollectiveContext it
// is given (ring_allreduce.h, direct_exchange.h, broadcast.h, single_copy_allreduce.h).
#pragma once
#include <atomic>
#include <condition_variable>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "dist/collective_context.h"

namespace rg::dist {

class LeanWork;

class CollectiveScheduler {
 public:
  // Starts the communication thread. `transport` and `options` outlive the scheduler.
  CollectiveScheduler(Transport& transport, const Options& options);
  ~CollectiveScheduler();  // shutdown()
  CollectiveScheduler(const CollectiveScheduler&) = delete;
  CollectiveScheduler& operator=(const CollectiveScheduler&) = delete;

  using Algorithm = std::function<void(CollectiveContext&)>;
  // The envelope of the next collective: numbered in issue order (the same on every rank).
  Envelope next_envelope(Collective kind, const Tensor& t, int64_t count);
  // Queues `algorithm` behind the collectives issued before it. On a device_streams transport
  // it runs on the transport's stream, ordered after the issuing thread's stream, and
  // `touched` are record_stream'ed there (dist/stream_work.h).
  std::shared_ptr<Work> enqueue(Collective kind, Algorithm algorithm,
                                const std::vector<Tensor>& touched = {});
  // A small all-reduce or barrier issued while nothing else is queued or running sends at
  // once and is received by its waiter. Null when it does not qualify (the caller queues it).
  std::shared_ptr<Work> issue_lean(Collective kind, const Tensor& t, CombineOp op);

  // Stops the communication thread after the running collective; queued ones fail.
  void shutdown();
  // Fails the group: every later collective throws `error` (or an Error of `message`).
  void fail(const std::string& message, std::exception_ptr error = nullptr);
  // The message of the group's first failure, or empty.
  std::string failure() const;

  const CollectiveContext& context() const { return context_; }
  uint64_t collectives_issued() const;
  uint64_t collectives_issued(Collective kind) const;
  uint64_t lean_collectives_issued() const { return lean_issued_.load(std::memory_order_relaxed); }

 private:
  using Item = std::pair<Algorithm, std::shared_ptr<PromiseWork>>;
  friend class CollectiveWork;
  friend class LeanWork;
  bool lean_eligible(const Tensor& t) const;
  void count_issued_locked(Collective kind);
  // Receives and reduces the pending lean collective on this thread if it is `work` (true;
  // throws its error if it failed).
  bool complete_lean(const PromiseWork* work);
  // Queues the pending lean collective (if it is `work`, or any when null) first in line for
  // the communication thread; with mu_ held. True if it did (the caller notifies).
  bool hand_over_lean_locked(const PromiseWork* work = nullptr);
  void hand_over_lean(const PromiseWork* work);
  void receive_and_reduce(LeanWork& work);
  std::shared_ptr<LeanWork> recycled_lean(const Tensor& t, CombineOp op, const Envelope& env);
  // Runs the item (unless the group failed), frees the group (running_) and then finishes
  // its work with the outcome: a caller that sees the work finished finds the group free
  // (the next small collective can take the lean path).
  void run_item(Item& item);
  // If `work` is queued and no collective runs, runs the queue up to and including it on the
  // calling thread (the caller waits at once: no hand-off to the communication thread and
  // back). True if it ran `work`.
  bool try_run_inline(const PromiseWork* work);
  void comm_loop();

  Transport& transport_;
  const Options& options_;
  CollectiveContext context_;
  std::atomic<uint64_t> issued_[kNumCollectives] = {};
  std::atomic<uint64_t> lean_issued_{0};
  uint64_t next_seq_ = 1;

  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::deque<Item> queue_;
  bool stopping_ = false;
  bool running_ = false;            // a collective runs (on the communication thread or inline)
  std::shared_ptr<LeanWork> lean_;  // sent, not yet received (it holds running_)
  std::shared_ptr<LeanWork> spare_lean_;  // the last lean work, reused once no one holds it
  std::string failure_;
  std::exception_ptr failure_error_;
  std::thread comm_thread_;
};

}  // namespace rg::dist
