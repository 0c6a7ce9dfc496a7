// See stream_queue.h. One queue (the communication streams'), shared by all sim devices and
// host threads; a mutex keeps its order, and work runs with the mutex held, one item at a
// time, so two threads draining it never reorder it.
#include "kernels/sim/stream_queue.h"

#include <atomic>
#include <deque>
#include <mutex>

#include "core/error.h"
#include "kernels/cuda/capture_rules.h"

namespace rg::sim {

namespace {

struct Queue {
  std::recursive_mutex mutex;  // held while work runs; work may ask reached()
  std::deque<std::function<void()>> pending;
  uint64_t queued = 0;  // items ever queued
  uint64_t done = 0;    // items run
};

std::atomic<bool> g_delayed{false};
std::atomic<void*> g_capture_stream{nullptr};
WorkList* g_capture_list = nullptr;  // guarded by the queue's mutex
std::atomic<uint64_t> g_launches{0};

Queue& comm_queue() {
  static Queue* q = new Queue;  // never destroyed: tensors may be freed after main returns
  return *q;
}

}  // namespace

void set_delayed_streams(bool on) {
  if (!on) drain_all();
  g_delayed = on;
}

bool delayed_streams() { return g_delayed; }

bool is_delayed(void* stream) {
  return (g_delayed && is_comm_token(stream)) || (stream && stream == g_capture_stream.load());
}

void enqueue(void* stream, std::function<void()> work) {
  Queue& q = comm_queue();
  std::lock_guard<std::recursive_mutex> lock(q.mutex);
  if (stream && stream == g_capture_stream.load())
    return g_capture_list->push_back(std::move(work));
  q.pending.push_back(std::move(work));
  ++q.queued;
}

void begin_capture(void* stream, WorkList* into) {
  Queue& q = comm_queue();
  std::lock_guard<std::recursive_mutex> lock(q.mutex);
  RG_CHECK(stream, "graph capture: sim needs a stream to capture, got none");
  RG_CHECK(!g_capture_stream.load(),
           "graph capture: sim captures one stream at a time, and stream ", g_capture_stream.load(),
           " is capturing");
  g_capture_list = into;
  g_capture_stream = stream;
}

void end_capture(void* stream) {
  Queue& q = comm_queue();
  std::lock_guard<std::recursive_mutex> lock(q.mutex);
  RG_CHECK(g_capture_stream.load() == stream, "graph capture: stream ", stream,
           " is not capturing");
  g_capture_stream = nullptr;
  g_capture_list = nullptr;
}

void* capturing_stream() { return g_capture_stream.load(); }

void count_launch() { g_launches.fetch_add(1, std::memory_order_relaxed); }
uint64_t launches() { return g_launches.load(std::memory_order_relaxed); }

uint64_t ticket(void* stream) {
  if (!is_comm_token(stream)) return 0;
  Queue& q = comm_queue();
  std::lock_guard<std::recursive_mutex> lock(q.mutex);
  return q.queued;
}

bool reached(void* stream, uint64_t ticket) {
  if (!is_comm_token(stream)) return true;
  Queue& q = comm_queue();
  std::lock_guard<std::recursive_mutex> lock(q.mutex);
  return q.done >= ticket;
}

void run_until(void* stream, uint64_t ticket) {
  if (!is_comm_token(stream)) return;
  Queue& q = comm_queue();
  std::lock_guard<std::recursive_mutex> lock(q.mutex);
  while (q.done < ticket && !q.pending.empty()) {
    std::function<void()> work = std::move(q.pending.front());
    q.pending.pop_front();
    ++q.done;  // counted first: a throwing item is not run again
    work();
  }
}

void drain(void* stream) { run_until(stream, ~uint64_t(0)); }

void drain_all() { drain(kCommStream); }

namespace {
constexpr int kCountedDevices = 16;
std::atomic<uint64_t> g_waits_on_comm[kCountedDevices] = {};
}  // namespace

void count_wait_on_comm(int index) {
  g_waits_on_comm[index % kCountedDevices].fetch_add(1, std::memory_order_relaxed);
}
uint64_t waits_on_comm(int index) {
  return g_waits_on_comm[index % kCountedDevices].load(std::memory_order_relaxed);
}

namespace {
struct QueueEvent {
  void* stream;
  uint64_t ticket;
};
}  // namespace

void* record_queue_event(void* stream, int) noexcept {
  if (!g_delayed || !is_comm_token(stream)) return nullptr;  // a capturing stream has no queue
  try {
    return new QueueEvent{stream, ticket(stream)};
  } catch (...) {  // no memory for the event: run the queue instead
    queue_event_synchronize(nullptr);
    return nullptr;
  }
}

// sim's cudaEventQuery: as on a GPU, a potentially unsafe call while a stream captures
// (kernels/cuda/capture_rules.h); refused, it invalidates the capture and reports not done.
bool queue_event_done(void* event) noexcept {
  if (!gpu::unsafe_call_allowed("cudaEventQuery (the caching allocator's record_stream event)"))
    return false;
  auto* e = static_cast<QueueEvent*>(event);
  return reached(e->stream, e->ticket);
}

// Runs the queue up to the event (all of it for null). A kernel that throws on the way has
// no one to report to here: its error is dropped, as a GPU's would surface only later.
void queue_event_synchronize(void* event) noexcept {
  if (!gpu::unsafe_call_allowed("cudaEventSynchronize (a record_stream event)")) return;
  auto* e = static_cast<QueueEvent*>(event);
  try {
    e ? run_until(e->stream, e->ticket) : drain_all();
  } catch (...) {
  }
}

void queue_event_release(void* event) noexcept { delete static_cast<QueueEvent*>(event); }

}  // namespace rg::sim
