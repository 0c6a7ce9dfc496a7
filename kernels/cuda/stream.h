// Streams, events and device-memory settings of the sim and cuda devices (host API; no CUDA
// headers needed). Each device has a compute stream, where every kernel and copy runs, and a
// communication stream for the DDP reducer's collectives; events hand work between them:
//   gpu::Event ready(device);  ready.record(gpu::compute_stream(device));
//   ready.wait(gpu::comm_stream(device));   // comm work queued from now waits for compute
// On cuda a Stream's handle is its cudaStream_t (for NCCL). On sim everything runs in order
// on the calling thread, so waits are no-ops and events are timestamps -- except in
// delayed-stream mode (kernels/sim/stream_queue.h), where the communication stream's work
// waits in a queue and events mark positions in it.
#pragma once
#include <cstddef>
#include <cstdint>
#include <memory>

#include "core/device.h"
#include "core/device_interface.h"
#include "core/tensor.h"

namespace rg::gpu {

struct Stream {
  Device device;
  void* handle = nullptr;  // cudaStream_t on cuda; a token naming the device on sim
};

Stream compute_stream(Device device);
Stream comm_stream(Device device);
// The stream kernels launched by this host thread go to (compute_stream unless a
// StreamGuard is active). On cuda this also makes `device` the thread's current device.
Stream current_stream(Device device);
void synchronize(const Stream& stream);
// Whether work this thread queues on its current stream of `device` may still be pending
// when the host reads device memory whose bytes the host can address (sim): true on sim's
// delayed communication stream, where such memory must be touched by stream kernels only.
// False for every device whose memory the host cannot address, and for sim's other streams.
bool current_stream_defers_host_access(Device device);

// Makes `stream` the current stream of its device for this thread, until destroyed.
class StreamGuard {
 public:
  explicit StreamGuard(const Stream& stream);
  ~StreamGuard();
  StreamGuard(const StreamGuard&) = delete;
  StreamGuard& operator=(const StreamGuard&) = delete;

 private:
  Device device_;
  Stream previous_;
  bool had_previous_;
};

class Event {
 public:
  explicit Event(Device device, bool timing = false);
  ~Event();
  Event(const Event&) = delete;
  Event& operator=(const Event&) = delete;

  void record(const Stream& stream);
  void wait(const Stream& stream) const;  // work queued on `stream` later waits for this event
  void synchronize() const;               // the host waits
  bool query() const;                     // true once the recorded work is done
  // Device time from this event to `end`, both recorded with timing = true and complete. On
  // sim a timing event holds the host's clock when its stream reached it (on the delayed
  // communication stream: when the queue ran that far, not when it was recorded).
  float elapsed_ms(const Event& end) const;

 private:
  Device device_;
  bool timing_ = false;
  void* handle_ = nullptr;               // cudaEvent_t on cuda
  std::shared_ptr<double> sim_time_ms_;  // sim, timing
  void* sim_stream_ = nullptr;           // sim: the stream recorded on, and its queue position then
  uint64_t sim_ticket_ = 0;
};

// ---- device memory (caching allocator of sim/cuda; see caching_allocator.h)
// Tells the allocator that work queued on `stream` uses `t` (as PyTorch's
// Tensor.record_stream): when t's storage is freed, its block is reused only after that
// work. Needed whenever a tensor allocated on one stream is used on another.
void record_stream(const Tensor& t, const Stream& stream);
// Caps the memory the allocator may reserve on `device` at `fraction` of the device's
// memory; an allocation beyond it throws rg::Error stating the request and the stats.
void set_memory_fraction(Device device, double fraction);
size_t total_memory(Device device);  // device memory (sim: host RAM)

// ---- pinned host memory, for asynchronous host<->device copies
// A cpu tensor whose storage is page-locked (cached, so repeated use is cheap). Without a
// GPU it is ordinary host memory from the same cache.
Tensor empty_pinned(const Shape& shape, DType dtype = DType::f32);
// Copies src into dst (same dtype and shape, both contiguous; one on the host) on the
// current stream without waiting; the host memory must be pinned for real overlap. A
// pinned block is reused only after the copies queued from or into it have run.
void copy_async(const Tensor& dst, const Tensor& src);

}  // namespace rg::gpu

namespace rg {
// f32 matmuls and linears on a GPU may use TF32 tensor cores (faster; the operands keep a
// 10-bit mantissa): PyTorch's torch.backends.cuda.matmul.allow_tf32, off by default as
// there. sim rounds the operands the same way, so the switch shows in its results too.
void set_allow_tf32(bool allow);
bool allow_tf32();
namespace gpu {
using rg::allow_tf32;
using rg::set_allow_tf32;
}  // namespace gpu
}  // namespace rg
