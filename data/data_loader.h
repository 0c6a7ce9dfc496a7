// DataLoader: batches of a dataset in the order of a DistributedSampler, built on one
// background thread ahead of the consumer.
//   worker thread: for each batch of the epoch, waits until fewer than `prefetch` batches
//     are queued, gathers batch_size examples, stacks them into host tensors
//     inputs [B,T] int64 and targets [B,T] int64, and queues them. An exception from the
//     dataset is queued too and re-thrown by next() in its place.
//   consumer (next()): takes the oldest batch, waiting if none is ready (the wait is timed,
//     see stats()), and moves it to options.device.
// With pin_memory and a GPU device (PyTorch's pin_memory): the worker copies each batch into
// pinned host memory, and next() copies it to the device with non_blocking (no host wait).
// next() also stages the batch after the one it returns: when that batch is already queued,
// its copy is issued at once, so it runs on the stream while the consumer's step is queued.
// The pinned blocks return to their pool only after their copies ran (kernels/cuda/stream.h).
// A new epoch (set_epoch, or the first next()) stops the previous worker and starts one
// over the sampler's indices for that epoch. The destructor stops and joins the worker,
// even mid-epoch. One consumer thread only.
#pragma once
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <exception>
#include <memory>
#include <mutex>
#include <optional>
#include <thread>
#include <vector>

#include "core/tensor.h"
#include "data/dataset.h"
#include "data/distributed_sampler.h"

namespace rg::data {

struct Batch {
  Tensor inputs;                 // [B, T] int64
  Tensor targets;                // [B, T] int64
  std::vector<int64_t> indices;  // dataset indices of the rows
};

struct LoaderOptions {
  int64_t batch_size = 32;
  int64_t prefetch = 2;    // batches prepared ahead of the consumer (>= 1)
  bool drop_last = true;   // drop the epoch's final partial batch
  Device device = kCPU;    // where next() delivers the tensors
  bool pin_memory = true;  // stage in pinned host memory when device is a GPU (cuda, sim)
};

struct LoaderStats {
  int64_t batches = 0;      // delivered by next() since the last reset
  int64_t waits = 0;        // of which the consumer found the queue empty
  double wait_seconds = 0;  // total time next() spent waiting for the worker
};

class DataLoader {
 public:
  DataLoader(std::shared_ptr<const Dataset> dataset, DistributedSampler sampler,
             LoaderOptions options = {});
  ~DataLoader();
  DataLoader(const DataLoader&) = delete;
  DataLoader& operator=(const DataLoader&) = delete;

  // Starts epoch `epoch` (reshuffles through the sampler); drops batches still queued.
  void set_epoch(int64_t epoch);
  // The next batch of the current epoch, or nullopt at its end.
  std::optional<Batch> next();
  int64_t num_batches() const;    // per epoch, on this rank
  int64_t batches_built() const;  // by the worker this epoch (for tests of prefetching)
  LoaderStats stats() const;
  void reset_stats();
  const DistributedSampler& sampler() const { return sampler_; }

 private:
  struct Item {
    Batch batch;
    std::exception_ptr error;
  };
  void start(int64_t epoch);
  void stop();
  void work(std::vector<int64_t> order);
  Batch build(const std::vector<int64_t>& indices) const;
  bool pins() const;  // pin_memory on a GPU device
  std::optional<Item> take(bool wait);
  void to_device(Item& item) const;

  std::shared_ptr<const Dataset> dataset_;
  DistributedSampler sampler_;
  LoaderOptions options_;

  mutable std::mutex mutex_;
  std::condition_variable changed_;
  std::deque<Item> queue_;
  std::optional<Item> staged_;  // the next batch, its device copy issued (consumer only)
  bool stopping_ = false;
  bool worker_done_ = false;
  bool started_ = false;
  int64_t built_ = 0;
  LoaderStats stats_;
  std::thread worker_;
};

}  // namespace rg::data
