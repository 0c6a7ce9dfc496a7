// The sim device's streams, and its delayed-stream mode. Normally sim runs all work at once,
// in order, on the calling thread: nothing can observe a missing event or a block reused
// while another stream still reads it. In delayed-stream mode (set_delayed_streams(true),
// for tests) work queued on the communication stream is held back: kernels, device copies
// and asynchronous host copies wait in a queue until the host synchronizes that stream, an
// event recorded after them is waited for, or a synchronous copy runs on it. The compute
// stream still runs at once. So an ordering bug -- memory freed and reused by compute while
// the communication stream has yet to read it -- shows as wrong values, as on a GPU.
// Graph capture (kernels/cuda/graph.h) uses the same hooks: while a stream captures, the
// work queued on it is appended to the graph's list instead of run (is_delayed is true).
// Stream handles on sim are tokens naming the device: compute_token(i) and comm_token(i) of
// sim:i (null: no stream, at once). The communication streams of all devices share one queue.
#pragma once
#include <cstdint>
#include <functional>
#include <vector>

namespace rg::sim {

inline void* compute_token(int index) { return reinterpret_cast<void*>(uintptr_t(4 * index + 1)); }
inline void* comm_token(int index) { return reinterpret_cast<void*>(uintptr_t(4 * index + 2)); }
inline bool is_comm_token(void* stream) { return (reinterpret_cast<uintptr_t>(stream) & 3) == 2; }
// The sim device a token names; 0 for null (no stream).
inline int device_of_token(void* stream) {
  return stream ? int((reinterpret_cast<uintptr_t>(stream) - 1) / 4) : 0;
}
// sim:0's streams.
inline void* const kComputeStream = compute_token(0);
inline void* const kCommStream = comm_token(0);

void set_delayed_streams(bool on);  // drains the queue when turned off
bool delayed_streams();
// Delayed-stream mode for a scope (tests): on at construction, off (drained) at destruction.
struct DelayedStreamsScope {
  DelayedStreamsScope() { set_delayed_streams(true); }
  ~DelayedStreamsScope() { set_delayed_streams(false); }
  DelayedStreamsScope(const DelayedStreamsScope&) = delete;
  DelayedStreamsScope& operator=(const DelayedStreamsScope&) = delete;
};

// True when work on `stream` is to be queued (or recorded by a capture) rather than run now.
bool is_delayed(void* stream);
// Queues `work` on `stream` (which is_delayed); records it when `stream` is capturing.
void enqueue(void* stream, std::function<void()> work);

// Graph capture on sim: one stream at a time in the process (the tokens are shared by all
// sim devices and threads). Until end_capture, work queued on `stream` is appended to `*into`.
using WorkList = std::vector<std::function<void()>>;
void begin_capture(void* stream, WorkList* into);  // throws if a capture is under way
void end_capture(void* stream);
void* capturing_stream();  // null when none
// Test instrumentation: kernels launched by the host through launch() (not by a replay).
void count_launch();
uint64_t launches();
// The position after the last work queued on `stream` so far (0 for an undelayed stream):
// an event records it; the event is complete once the stream has run that far.
uint64_t ticket(void* stream);
bool reached(void* stream, uint64_t ticket);
void run_until(void* stream, uint64_t ticket);
void drain(void* stream);  // runs everything queued on `stream` (any stream: no-op if none)
void drain_all();

// Test instrumentation: how many times another stream (the compute stream) of sim device
// `index` was made to wait for work queued on the delayed communication stream
// (gpu::Event::wait). Each such wait orders all that stream runs later after that work.
void count_wait_on_comm(int index);
uint64_t waits_on_comm(int index);

// Events of the caching allocator's record_stream (gpu::RawMemory's hooks) on sim streams:
// a position in the queue; null when `stream` is not delayed (its work has all run).
void* record_queue_event(void* stream, int stream_device) noexcept;
bool queue_event_done(void* event) noexcept;
void queue_event_synchronize(void* event) noexcept;
void queue_event_release(void* event) noexcept;

}  // namespace rg::sim
