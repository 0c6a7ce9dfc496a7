// A pool of worker threads for rg::parallel_for in which the calling thread never waits for a
// worker that has not started. The caller and the workers claim chunks of [0, n) from one
// atomic ticket (job generation in the high half, next chunk in the low half); the caller
// runs chunks too and then waits only until every chunk that was claimed has finished. A
// worker that is descheduled when a job is posted (another process holds its core) finds the
// job closed when it runs and claims nothing, so it costs the job no time, where an OpenMP
// region's end barrier waits for every thread of its team. A worker that finishes a job
// watches the ticket for the next one for kSpinFor (50 µs) before it sleeps, as OpenMP's
// threads spin between regions: a training step's ops follow each other microseconds apart,
// and a sleeping worker woke too late to share a short one.
// fork(): a child has none of its parent's threads, only copies of the pool's state (a mutex
// may even be locked). A pool used in a forked child forgets the workers it inherited (their
// std::thread objects are leaked, never joined) and starts afresh; one destroyed there does
// not join them either. Forked rank processes and benches can therefore use it freely.
#pragma once
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace rg {

class ChunkPool {
 public:
  ChunkPool();
  ~ChunkPool();
  ChunkPool(const ChunkPool&) = delete;
  ChunkPool& operator=(const ChunkPool&) = delete;

  // Calls fn(begin, end) on `chunks` chunks covering [0, n) (sizes differ by at most 1, empty
  // ones are skipped), with up to threads - 1 workers helping the caller. One job at a time
  // per pool. An exception from fn on the caller is rethrown once the other chunks are done;
  // on a worker it terminates the program, as it would in an OpenMP region.
  void run(int64_t n, int64_t chunks, int threads, const std::function<void(int64_t, int64_t)>& fn);

 private:
  static constexpr uint64_t kClosed = 0xffffffffu;
  void worker_loop();
  void forget_inherited_workers();          // in a forked child: the workers are the parent's
  bool run_one_chunk(uint32_t generation);  // false: the job is closed or fully claimed
  static constexpr std::chrono::microseconds kSpinFor{50};
  uint32_t spin_for_job(uint32_t seen) const;

  uint64_t fork_epoch_;  // fork_epoch() when the workers were started
  std::vector<std::thread> workers_;
  std::mutex mutex_;
  std::condition_variable wake_;
  uint32_t posted_ = 0;  // generation of the last job posted (guarded by mutex_)
  bool stop_ = false;
  std::atomic<uint64_t> ticket_{kClosed};
  std::atomic<int64_t> done_{0};
  std::atomic<int64_t> n_{0}, chunks_{0};
  std::atomic<const std::function<void(int64_t, int64_t)>*> fn_{nullptr};
};

}  // namespace rg
