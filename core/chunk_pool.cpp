#include "core/chunk_pool.h"

#include <pthread.h>

#include <chrono>
#include <exception>
#include <new>

namespace rg {

namespace {

// Counts fork()s into this process (a pthread_atfork child handler).
std::atomic<uint64_t> g_fork_epoch{0};

uint64_t fork_epoch() {
  static const bool registered = [] {
    pthread_atfork(nullptr, nullptr, [] { g_fork_epoch.fetch_add(1); });
    return true;
  }();
  (void)registered;
  return g_fork_epoch.load();
}

}  // namespace

ChunkPool::ChunkPool() : fork_epoch_(fork_epoch()) {}

void ChunkPool::forget_inherited_workers() {
  // Kept, never joined or destroyed (joining would wait on the parent's threads; destroying a
  // joinable std::thread terminates), and reachable from a global so leak checkers accept it.
  static auto* forgotten = new std::vector<std::vector<std::thread>>;
  forgotten->push_back(std::move(workers_));
  workers_.clear();
  new (&mutex_) std::mutex;  // it may have been locked by a parent's thread at fork time
  new (&wake_) std::condition_variable;
  posted_ = 0;
  stop_ = false;
  ticket_.store(kClosed);
  fork_epoch_ = fork_epoch();
}

ChunkPool::~ChunkPool() {
  if (fork_epoch_ != fork_epoch()) return;  // a forked child's copy: the workers are not ours
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stop_ = true;
  }
  wake_.notify_all();
  for (auto& w : workers_) w.join();
}

// Claims the next chunk of job `generation` and runs it. The claim is a compare-exchange on
// the whole ticket, so it fails once the caller has closed the job or posted a newer one; the
// job's fields, read before it, are the claimed job's (the caller rewrites them only after
// closing the job, and it closes only when every claimed chunk is done).
bool ChunkPool::run_one_chunk(uint32_t generation) {
  uint64_t t = ticket_.load(std::memory_order_acquire);
  for (;;) {
    if ((t >> 32) != generation || (t & kClosed) == kClosed) return false;
    const int64_t chunks = chunks_.load(std::memory_order_relaxed);
    if (static_cast<int64_t>(t & kClosed) >= chunks) return false;
    if (ticket_.compare_exchange_weak(t, t + 1, std::memory_order_acq_rel)) break;
  }
  const int64_t index = static_cast<int64_t>(t & kClosed), chunks = chunks_.load();
  const int64_t n = n_.load(std::memory_order_relaxed);
  const int64_t begin = index * n / chunks, end = (index + 1) * n / chunks;  // balanced
  if (begin < end) (*fn_.load(std::memory_order_relaxed))(begin, end);
  done_.fetch_add(1, std::memory_order_acq_rel);
  return true;
}

// The generation of a job posted after `seen`, watched for kSpinFor before giving up (then
// `seen`): a training step's ops call parallel_for back to back, microseconds apart, and a
// worker asleep on the condition variable wakes too late to take a chunk of a short one.
uint32_t ChunkPool::spin_for_job(uint32_t seen) const {
  const auto until = std::chrono::steady_clock::now() + kSpinFor;
  for (int round = 1;; ++round) {
    const auto generation = static_cast<uint32_t>(ticket_.load(std::memory_order_acquire) >> 32);
    if (generation != seen) return generation;
    if (round % 32 == 0 && std::chrono::steady_clock::now() >= until) return seen;
#if defined(__x86_64__)
    __builtin_ia32_pause();
#endif
  }
}

void ChunkPool::worker_loop() {
  uint32_t seen = 0;
  for (;;) {
    const uint32_t spotted = spin_for_job(seen);
    if (spotted != seen) {
      seen = spotted;
    } else {
      std::unique_lock<std::mutex> lock(mutex_);
      wake_.wait(lock, [&] { return stop_ || posted_ != seen; });
      if (stop_) return;
      seen = posted_;
    }
    while (run_one_chunk(seen)) {
    }
  }
}

void ChunkPool::run(int64_t n, int64_t chunks, int threads,
                    const std::function<void(int64_t, int64_t)>& fn) {
  if (fork_epoch_ != fork_epoch()) forget_inherited_workers();
  while (static_cast<int>(workers_.size()) < threads - 1)
    workers_.emplace_back([this] { worker_loop(); });
  uint32_t generation;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    generation = ++posted_;
    n_.store(n, std::memory_order_relaxed);
    chunks_.store(chunks, std::memory_order_relaxed);
    fn_.store(&fn, std::memory_order_relaxed);
    done_.store(0, std::memory_order_relaxed);
    ticket_.store(uint64_t(generation) << 32, std::memory_order_release);
  }
  wake_.notify_all();
  std::exception_ptr error;
  try {
    while (run_one_chunk(generation)) {
    }
  } catch (...) {  // close the job first: workers may still be running fn's other chunks
    error = std::current_exception();
    uint64_t t = ticket_.load();
    while (!ticket_.compare_exchange_weak(t, (uint64_t(generation) << 32) | kClosed)) {
    }
    done_.fetch_add(1 + chunks - static_cast<int64_t>(t & kClosed));  // the thrower + unclaimed
  }
  // Every chunk is claimed; wait for those that other threads are still running.
  while (done_.load(std::memory_order_acquire) < chunks) std::this_thread::yield();
  ticket_.store((uint64_t(generation) << 32) | kClosed, std::memory_order_release);
  if (error) std::rethrow_exception(error);
}

}  // namespace rg
