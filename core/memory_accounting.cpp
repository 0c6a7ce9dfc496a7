// See memory_accounting.h. One mutex guards every counter and every storage's category; it
// is taken once per allocation and release, next to the allocator's own lock.
#include "core/memory_accounting.h"

#include <algorithm>
#include <mutex>
#include <utility>

namespace rg {

size_t MemoryCategoryStats::model_state() const {
  return at(MemoryCategory::parameters) + at(MemoryCategory::gradients) +
         at(MemoryCategory::optimizer_state);
}

namespace {

constexpr int kMaxDeviceIndex = 64;  // devices above this index are not counted

struct Counters {
  MemoryCategoryStats stats;
  void add(int category, size_t bytes) {
    stats.current[category] += bytes;
    stats.total += bytes;
    stats.peak[category] = std::max(stats.peak[category], stats.current[category]);
    stats.peak_total = std::max(stats.peak_total, stats.total);
    stats.peak_model_state = std::max(stats.peak_model_state, stats.model_state());
  }
  void remove(int category, size_t bytes) {
    stats.current[category] -= bytes;
    stats.total -= bytes;
  }
};

struct Accounts {
  std::mutex mutex;
  Counters counters[kNumDeviceTypes][kMaxDeviceIndex];
};

Accounts& accounts() {
  static auto* a = new Accounts();  // never destroyed: storages may outlive main
  return *a;
}

Counters* counters_of(Device device) {
  if (device.index < 0 || device.index >= kMaxDeviceIndex) return nullptr;
  return &accounts().counters[static_cast<int>(device.type)][device.index];
}

thread_local MemoryCategory t_category = MemoryCategory::other;

}  // namespace

const char* memory_category_name(MemoryCategory category) {
  switch (category) {
    case MemoryCategory::parameters:
      return "parameters";
    case MemoryCategory::buffers:
      return "buffers";
    case MemoryCategory::gradients:
      return "gradients";
    case MemoryCategory::optimizer_state:
      return "optimizer state";
    case MemoryCategory::buckets:
      return "buckets";
    case MemoryCategory::activations:
      return "activations";
    case MemoryCategory::other:
      return "other";
  }
  return "?";
}

MemoryCategoryScope::MemoryCategoryScope(MemoryCategory category) : previous_(t_category) {
  t_category = category;
}
MemoryCategoryScope::~MemoryCategoryScope() { t_category = previous_; }
MemoryCategory current_memory_category() { return t_category; }

void account_allocation(Storage& storage, size_t charged) noexcept {
  Counters* counters = counters_of(storage.device);
  if (counters == nullptr || charged == 0) return;
  std::lock_guard<std::mutex> lock(accounts().mutex);
  storage.charged_bytes = charged;
  storage.memory_category = t_category;
  counters->add(static_cast<int>(t_category), charged);
}

void account_release(const Storage& storage) noexcept {
  std::lock_guard<std::mutex> lock(accounts().mutex);
  counters_of(storage.device)
      ->remove(static_cast<int>(storage.memory_category), storage.charged_bytes);
}

void account_process_block(Device device, size_t charged) noexcept {
  Counters* counters = counters_of(device);
  if (counters == nullptr) return;
  std::lock_guard<std::mutex> lock(accounts().mutex);
  counters->add(static_cast<int>(MemoryCategory::other), charged);
}

void exchange_storage_memory(Storage& a, Storage& b) noexcept {
  std::lock_guard<std::mutex> lock(accounts().mutex);
  std::swap(a.data, b.data);
  std::swap(a.nbytes, b.nbytes);
  std::swap(a.release, b.release);
  std::swap(a.charged_bytes, b.charged_bytes);
  std::swap(a.memory_category, b.memory_category);
}

void tag_memory(Storage& storage, MemoryCategory category) {
  if (storage.charged_bytes == 0) return;
  std::lock_guard<std::mutex> lock(accounts().mutex);
  if (category >= storage.memory_category) return;  // only towards the more specific
  Counters* counters = counters_of(storage.device);
  counters->remove(static_cast<int>(storage.memory_category), storage.charged_bytes);
  counters->add(static_cast<int>(category), storage.charged_bytes);
  storage.memory_category = category;
}

MemoryCategoryStats memory_category_stats(Device device) {
  Counters* counters = counters_of(device);
  if (counters == nullptr) return {};
  std::lock_guard<std::mutex> lock(accounts().mutex);
  return counters->stats;
}

void reset_peak_memory_stats(Device device) {
  Counters* counters = counters_of(device);
  if (counters == nullptr) return;
  std::lock_guard<std::mutex> lock(accounts().mutex);
  counters->stats.peak = counters->stats.current;
  counters->stats.peak_total = counters->stats.total;
  counters->stats.peak_model_state = counters->stats.model_state();
}

}  // namespace rg
