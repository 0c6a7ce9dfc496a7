// CUDA's rules for the calls a thread may make while a stream captures a graph, kept by the
// sim and cuda devices alike (kernels/cuda/graph.h begins and ends the captures). From the
// CUDA runtime API (cudaStreamBeginCapture, cudaThreadExchangeStreamCaptureMode):
// - a capture is begun in a mode, and each thread has an interaction mode of its own (global
//   until exchanged). A "potentially unsafe" call is one that is not queued on a stream and so
//   escapes the capture: cudaMalloc, a synchronous copy, a stream, event or device
//   synchronization, an event query, a library handle's creation. A thread may not make one
//     in global mode:     while it has a capture of its own not begun in relaxed mode, or any
//                         other thread has a capture begun in global mode;
//     in per-thread mode: while it has a capture of its own not begun in relaxed mode;
//     in relaxed mode:    ever forbidden.
// - Such a call fails with cudaErrorStreamCaptureUnsupported, and it invalidates the captures
//   that forbade it: their end fails with cudaErrorStreamCaptureInvalidated.
// - Whatever the modes, a capturing stream may not be synchronized or queried, and a capture
//   not begun in relaxed mode must end on the thread that began it.
// Here each such call is checked before it is made, on both devices, and refused with one
// rg::Error naming the call, the capture and CUDA's error; on cuda CUDA would refuse it too.
// The caching allocator switches to relaxed mode around its raw allocations while it fills a
// graph's pool, as PyTorch's does (cudaMalloc is then safe: replays never free that memory).
#pragma once
#include <string>

#include "kernels/cuda/stream.h"

namespace rg::gpu {

// cudaStreamCaptureModeGlobal, cudaStreamCaptureModeThreadLocal, cudaStreamCaptureModeRelaxed.
enum class CaptureMode { global, per_thread, relaxed };
const char* capture_mode_name(CaptureMode mode);  // "global", "thread-local", "relaxed"

// Sets this thread's interaction mode and returns the previous one (on cuda also
// cudaThreadExchangeStreamCaptureMode while a cuda capture is under way).
CaptureMode exchange_capture_mode(CaptureMode mode);
CaptureMode thread_capture_mode();

// Sets this thread's interaction mode until destroyed (push-pop, as CUDA recommends).
class CaptureModeGuard {
 public:
  explicit CaptureModeGuard(CaptureMode mode) : previous_(exchange_capture_mode(mode)) {}
  ~CaptureModeGuard() { exchange_capture_mode(previous_); }
  CaptureModeGuard(const CaptureModeGuard&) = delete;
  CaptureModeGuard& operator=(const CaptureModeGuard&) = delete;

 private:
  CaptureMode previous_;
};

// The registry of captures under way (kernels/cuda/graph.cpp): one per device at most,
// begun by the calling thread.
void register_capture(const Stream& stream, CaptureMode mode);
// Removes `device`'s capture; returns what invalidated it ("" when nothing did). Throws
// (cudaErrorStreamCaptureWrongThread) when a capture not begun in relaxed mode is ended by
// another thread, unless `abandon` (an error path: it is removed all the same).
std::string unregister_capture(Device device, bool abandon = false);
bool is_capturing(Device device);          // by any thread
void* capturing_stream_of(Device device);  // null when none

// Throws rg::Error with cudaErrorStreamCaptureUnsupported when the rules above forbid the
// calling thread a potentially unsafe call now (`operation` names it), after invalidating the
// captures that forbid it.
void check_unsafe_call(const char* operation);
// check_unsafe_call for the places that cannot throw (the allocator's event hooks): false,
// after invalidating the captures, where check_unsafe_call would throw.
bool unsafe_call_allowed(const char* operation) noexcept;
// check_unsafe_call, and the refusal of any thread's synchronization or query of `stream`
// while it captures.
void check_stream_not_capturing(const Stream& stream, const char* operation);

}  // namespace rg::gpu
