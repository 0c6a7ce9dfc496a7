// Background batching with a bounded queue; see data_loader.h.
#include "data/data_loader.h"

#include <algorithm>
#include <chrono>
#include <cstring>

#include "core/error.h"
#include "core/memory_limits.h"

namespace rg::data {

DataLoader::DataLoader(std::shared_ptr<const Dataset> dataset, DistributedSampler sampler,
                       LoaderOptions options)
    : dataset_(std::move(dataset)), sampler_(std::move(sampler)), options_(options) {
  RG_CHECK(dataset_ != nullptr, "DataLoader: dataset is null");
  RG_CHECK(options.batch_size > 0, "DataLoader: batch_size must be positive, got ",
           options.batch_size);
  RG_CHECK(options.prefetch >= 1, "DataLoader: prefetch must be at least 1, got ",
           options.prefetch);
  RG_CHECK(sampler_.dataset_size() == dataset_->size(), "DataLoader: sampler is for ",
           sampler_.dataset_size(), " examples but the dataset has ", dataset_->size());
  RG_CHECK(num_batches() > 0, "DataLoader: ", sampler_.num_samples(),
           " samples per rank make no full batch of ", options.batch_size,
           " (drop_last); lower batch_size");
}

DataLoader::~DataLoader() { stop(); }

int64_t DataLoader::num_batches() const {
  const int64_t n = sampler_.num_samples(), b = options_.batch_size;
  return options_.drop_last ? n / b : (n + b - 1) / b;
}

void DataLoader::stop() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stopping_ = true;
  }
  changed_.notify_all();
  if (worker_.joinable()) worker_.join();
}

void DataLoader::start(int64_t epoch) {
  stop();
  staged_.reset();
  sampler_.set_epoch(epoch);
  std::vector<int64_t> order = sampler_.indices();
  // drop_last: the final partial batch is never built.
  order.resize(std::min<int64_t>(order.size(), num_batches() * options_.batch_size));
  {
    std::lock_guard<std::mutex> lock(mutex_);
    queue_.clear();
    stopping_ = false;
    worker_done_ = false;
    started_ = true;
    built_ = 0;
  }
  worker_ =
      start_thread("DataLoader (its prefetch thread)", &DataLoader::work, this, std::move(order));
}

void DataLoader::set_epoch(int64_t epoch) { start(epoch); }

void DataLoader::work(std::vector<int64_t> order) {
  const int64_t n = static_cast<int64_t>(order.size()), b = options_.batch_size;
  for (int64_t start = 0; start < n; start += b) {
    {
      std::unique_lock<std::mutex> lock(mutex_);
      changed_.wait(lock, [&] {
        return stopping_ || static_cast<int64_t>(queue_.size()) < options_.prefetch;
      });
      if (stopping_) break;
    }
    Item item;
    bool failed = false;
    try {
      std::vector<int64_t> indices(order.begin() + start, order.begin() + std::min(n, start + b));
      item.batch = build(indices);
    } catch (...) {
      item.error = std::current_exception();
      failed = true;
    }
    {
      std::lock_guard<std::mutex> lock(mutex_);
      queue_.push_back(std::move(item));
      ++built_;
    }
    changed_.notify_all();
    if (failed) break;  // the consumer re-throws; nothing follows an error
  }
  {
    std::lock_guard<std::mutex> lock(mutex_);
    worker_done_ = true;
  }
  changed_.notify_all();
}

Batch DataLoader::build(const std::vector<int64_t>& indices) const {
  const int64_t B = static_cast<int64_t>(indices.size()), T = dataset_->context_length();
  Batch batch{empty({B, T}, DType::i64), empty({B, T}, DType::i64), indices};
  int64_t* in = batch.inputs.data<int64_t>();
  int64_t* tg = batch.targets.data<int64_t>();
  for (int64_t row = 0; row < B; ++row) {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      if (stopping_) break;  // shutting down: the batch will never be read
    }
    const Example ex = dataset_->get(indices[row]);
    RG_CHECK(
        static_cast<int64_t>(ex.input.size()) == T && static_cast<int64_t>(ex.target.size()) == T,
        "DataLoader: example ", indices[row], " has input/target lengths ", ex.input.size(), "/",
        ex.target.size(), ", expected the dataset's context length ", T);
    std::memcpy(in + row * T, ex.input.data(), T * sizeof(int64_t));
    std::memcpy(tg + row * T, ex.target.data(), T * sizeof(int64_t));
  }
  if (pins()) {  // as PyTorch's pin-memory thread: off the consumer's thread
    batch.inputs = batch.inputs.pin_memory();
    batch.targets = batch.targets.pin_memory();
  }
  return batch;
}

bool DataLoader::pins() const {
  return options_.pin_memory && (options_.device.is_cuda() || options_.device.is_sim());
}

// The oldest queued batch; with `wait`, waits for one (timed) unless the epoch is over.
std::optional<DataLoader::Item> DataLoader::take(bool wait) {
  std::optional<Item> item;
  {
    std::unique_lock<std::mutex> lock(mutex_);
    if (wait && queue_.empty() && !worker_done_) {
      const auto begin = std::chrono::steady_clock::now();
      changed_.wait(lock, [&] { return !queue_.empty() || worker_done_; });
      stats_.waits += 1;
      stats_.wait_seconds +=
          std::chrono::duration<double>(std::chrono::steady_clock::now() - begin).count();
    }
    if (queue_.empty()) return std::nullopt;  // the epoch is over (or, without wait, not ready)
    item = std::move(queue_.front());
    queue_.pop_front();
  }
  changed_.notify_all();
  return item;
}

// Issues the batch's copy to options.device: non_blocking from pinned memory.
void DataLoader::to_device(Item& item) const {
  if (item.error || options_.device == kCPU) return;
  item.batch.inputs = item.batch.inputs.to(options_.device, pins());
  item.batch.targets = item.batch.targets.to(options_.device, pins());
}

std::optional<Batch> DataLoader::next() {
  if (!started_) start(sampler_.epoch());
  std::optional<Item> item = std::move(staged_);
  staged_.reset();
  if (!item) {
    item = take(true);
    if (!item) return std::nullopt;
    to_device(*item);
  }
  if (item->error) std::rethrow_exception(item->error);
  if (pins()) {  // stage the next batch if the worker has it ready
    staged_ = take(false);
    if (staged_) to_device(*staged_);
  }
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stats_.batches += 1;
  }
  return std::move(item->batch);
}

int64_t DataLoader::batches_built() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return built_;
}

LoaderStats DataLoader::stats() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return stats_;
}

void DataLoader::reset_stats() {
  std::lock_guard<std::mutex> lock(mutex_);
  stats_ = {};
}

}  // namespace rg::data
