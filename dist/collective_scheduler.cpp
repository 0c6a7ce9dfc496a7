// The CollectiveScheduler's queue and communication thread: collectives run one after another
// in issue order, on that thread or on the thread that waits for them (see the header; the
// lean path is in lean_collective.cpp).
#include "dist/collective_scheduler.h"

#include <pthread.h>

#include <algorithm>

#include "core/memory_limits.h"
#include "core/parallel.h"
#include "dist/stream_work.h"

namespace rg::dist {

CollectiveScheduler::CollectiveScheduler(Transport& transport, const Options& options)
    : transport_(transport), options_(options), context_(transport, options) {
  comm_thread_ = start_thread("process group (its communication thread)", [this] { comm_loop(); });
  // Named and scheduled from here, so both hold once the constructor returns.
  pthread_t comm = comm_thread_.native_handle();
  pthread_setname_np(comm, "rg-comm");  // named for gdb, top and the tests
  // SCHED_BATCH: waking this thread (every collective is queued for it) does not preempt
  // the thread that runs: the caller that waits at once goes on to run the collective
  // itself (CollectiveWork) instead of losing its core to this thread and then waiting
  // for it. An 8-byte all-reduce over 2 processes on 2 cores: ~20 us -> ~2 us. Best
  // effort: without it (another OS) only the hand-off costs more.
  sched_param param{};
  pthread_setschedparam(comm, SCHED_BATCH, &param);
}

CollectiveScheduler::~CollectiveScheduler() { shutdown(); }

void CollectiveScheduler::shutdown() {
  {
    std::lock_guard lock(mu_);
    if (stopping_) return;
    hand_over_lean_locked();  // fails with the queued ones
    stopping_ = true;
  }
  cv_.notify_all();
  if (comm_thread_.joinable()) comm_thread_.join();
}

std::string CollectiveScheduler::failure() const {
  std::lock_guard lock(mu_);
  return failure_;
}

void CollectiveScheduler::fail(const std::string& message, std::exception_ptr error) {
  std::lock_guard lock(mu_);
  if (!failure_.empty()) return;
  failure_ = message;
  failure_error_ = error;
}

void CollectiveScheduler::comm_loop() {
  set_thread_num_threads_cap(1);  // see core/parallel.h
  for (;;) {
    Item item;
    {
      std::unique_lock lock(mu_);
      cv_.wait(lock, [&] { return stopping_ || (!queue_.empty() && !running_); });
      if (queue_.empty()) return;
      item = std::move(queue_.front());
      queue_.pop_front();
      if (stopping_) {
        lock.unlock();
        item.second->finish(std::make_exception_ptr(Error(str(
            "rank ", transport_.rank(), ": process group destroyed before the collective ran"))));
        continue;
      }
      running_ = true;
    }
    run_item(item);
  }
}

void CollectiveScheduler::run_item(Item& item) {
  std::exception_ptr error;
  const std::string broken = failure();
  if (!broken.empty()) {
    std::lock_guard lock(mu_);
    error = failure_error_ ? failure_error_ : std::make_exception_ptr(Error(broken));
  } else {
    try {
      item.first(context_);
      transport_.finish_collective();
    } catch (const std::exception& e) {
      fail(e.what(), std::current_exception());
      error = std::current_exception();
    }
  }
  // The tensors the collective captured go before it is seen finished: a caller that drops
  // its last reference after wait() (ZeRO-2's released buckets) frees the memory then.
  item.first = nullptr;
  bool more = false;
  {
    std::lock_guard lock(mu_);
    running_ = false;
    more = !queue_.empty();
  }
  if (more) cv_.notify_all();  // the communication thread takes the next one
  item.second->finish(error);  // last: whoever sees it finished finds the group free
}

// Runs the queue up to and including `work` on the calling thread, if nothing runs.
bool CollectiveScheduler::try_run_inline(const PromiseWork* work) {
  for (;;) {
    Item item;
    {
      std::lock_guard lock(mu_);
      auto queued = std::find_if(queue_.begin(), queue_.end(),
                                 [&](const Item& i) { return i.second.get() == work; });
      if (running_ || stopping_ || queued == queue_.end()) return false;
      item = std::move(queue_.front());
      queue_.pop_front();
      running_ = true;
    }
    const int previous_cap = set_thread_num_threads_cap(1);  // as on the communication thread
    run_item(item);
    set_thread_num_threads_cap(previous_cap);
    if (item.second.get() == work) return true;
  }
}

// The work of a collective on a host transport. An untimed wait() that finds it queued, with
// nothing running, runs it (and whatever is queued before it) on the waiting thread (the
// common "pg.allreduce(t)->wait()"): two thread hand-offs less, each a futex wake that costs
// microseconds, and tens of them on a loaded host. Timed waits (the DDP buckets) leave it to the
// communication thread. Collectives still run one at a time, in the order issued.
class CollectiveWork : public PromiseWork {
 public:
  explicit CollectiveWork(CollectiveScheduler& scheduler) : scheduler_(scheduler) {}
  using PromiseWork::wait;
  void wait() override {
    if (!PromiseWork::is_completed()) scheduler_.try_run_inline(this);
    Work::wait();  // at once if it ran here
  }

 private:
  CollectiveScheduler& scheduler_;
};

std::shared_ptr<Work> CollectiveScheduler::enqueue(Collective kind, Algorithm algorithm,
                                                   const std::vector<Tensor>& touched) {
  // Device transports' collectives stay on the communication thread, on its stream.
  std::shared_ptr<PromiseWork> work;
  if (transport_.capabilities().device_streams) {
    auto on_stream = std::make_shared<StreamWork>(transport_.default_device());
    algorithm = on_comm_stream(std::move(algorithm), transport_.comm_stream(), touched, on_stream);
    work = std::move(on_stream);
  } else {
    work = std::make_shared<CollectiveWork>(*this);
  }
  {
    std::lock_guard lock(mu_);
    count_issued_locked(kind);
    RG_CHECK(!stopping_, "rank ", transport_.rank(), ": ", collective_name(kind),
             " on a process group that is shutting down");
    hand_over_lean_locked();  // a pending lean collective runs first
    queue_.emplace_back(std::move(algorithm), work);
  }
  cv_.notify_all();
  return work;
}

// Every count is changed under mu_, so a load and a store do (no locked add per collective).
void CollectiveScheduler::count_issued_locked(Collective kind) {
  std::atomic<uint64_t>& count = issued_[static_cast<int>(kind)];
  count.store(count.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
}

uint64_t CollectiveScheduler::collectives_issued() const {
  uint64_t total = 0;
  for (int k = 1; k < kNumCollectives; ++k) total += issued_[k].load(std::memory_order_relaxed);
  return total;
}

uint64_t CollectiveScheduler::collectives_issued(Collective kind) const {
  return issued_[static_cast<int>(kind)].load(std::memory_order_relaxed);
}

Envelope CollectiveScheduler::next_envelope(Collective kind, const Tensor& t, int64_t count) {
  Envelope env;
  env.kind = kind;
  env.dtype = t.dtype();
  env.tag = kCollectiveTag;
  env.count = count;
  std::lock_guard lock(mu_);
  env.seq = next_seq_++;
  return env;
}

}  // namespace rg::dist
