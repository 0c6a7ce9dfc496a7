// See capture_rules.h. A small registry of the captures under way (device, stream, mode, the
// thread that began it, what invalidated it) under one mutex, and each thread's interaction
// mode in a thread_local; an atomic count keeps the checks free while nothing captures.
#include "kernels/cuda/capture_rules.h"

#include <atomic>
#include <mutex>
#include <thread>
#include <vector>

#include "core/error.h"
#if RG_WITH_CUDA
#include <cuda_runtime.h>
#endif

namespace rg::gpu {

#if RG_WITH_CUDA
// CaptureMode converts to cudaStreamCaptureMode by value (graph.cpp, exchange_capture_mode).
static_assert(int(CaptureMode::global) == cudaStreamCaptureModeGlobal &&
              int(CaptureMode::per_thread) == cudaStreamCaptureModeThreadLocal &&
              int(CaptureMode::relaxed) == cudaStreamCaptureModeRelaxed);
#endif

namespace {

struct Capture {
  Stream stream;
  CaptureMode mode;
  std::thread::id thread;
  std::string invalidated_by;  // what made it fail, "" while valid
};

std::mutex g_mutex;
std::vector<Capture> g_captures;
std::atomic<int> g_count{0};       // captures under way: the fast path
std::atomic<int> g_cuda_count{0};  // of them on cuda
thread_local CaptureMode tls_mode = CaptureMode::global;
#if RG_WITH_CUDA
thread_local CaptureMode tls_cuda_mode = CaptureMode::global;  // what CUDA holds for us
#endif

std::string stream_name(const Stream& s) {
  if (s.handle == compute_stream(s.device).handle) return "compute";
  if (s.handle == comm_stream(s.device).handle) return "communication";
  return str(s.handle);
}

std::string describe(const Capture& c) {
  return str("stream ", stream_name(c.stream), " of ", c.stream.device.str(), ":",
             c.stream.device.index, " is capturing a graph (begun in ", capture_mode_name(c.mode),
             " mode by ", c.thread == std::this_thread::get_id() ? "this" : "another", " thread)");
}

Capture* find_locked(Device d) {
  for (Capture& c : g_captures)
    if (c.stream.device == d) return &c;
  return nullptr;
}

// Whether `c` forbids the calling thread, in interaction mode `mode`, a potentially unsafe call.
bool forbids(const Capture& c, CaptureMode mode) {
  if (mode == CaptureMode::relaxed) return false;
  if (c.thread == std::this_thread::get_id()) return c.mode != CaptureMode::relaxed;
  return mode == CaptureMode::global && c.mode == CaptureMode::global;
}

[[noreturn]] void refuse_locked(const char* operation, std::vector<Capture*> forbidding) {
  for (Capture* c : forbidding)
    if (c->invalidated_by.empty()) c->invalidated_by = operation;
  RG_FAIL(operation, " is not allowed while ", describe(*forbidding.front()),
          "; this thread is in ", capture_mode_name(tls_mode),
          " mode: cudaErrorStreamCaptureUnsupported (operation not permitted when stream is "
          "capturing). The capture is invalidated (its end fails). It needs the host: do it "
          "before capture_begin or after capture_end");
}

}  // namespace

const char* capture_mode_name(CaptureMode mode) {
  switch (mode) {
    case CaptureMode::global:
      return "global";
    case CaptureMode::per_thread:
      return "thread-local";
    case CaptureMode::relaxed:
      return "relaxed";
  }
  return "?";
}

CaptureMode exchange_capture_mode(CaptureMode mode) {
  const CaptureMode previous = tls_mode;
  tls_mode = mode;
#if RG_WITH_CUDA
  // CUDA's own copy of the mode matters only while it captures: the runtime is not touched
  // otherwise (a sim or cpu run never initializes it), except to bring a mode it still holds
  // from a cuda capture back in line.
  if (g_cuda_count > 0 || tls_cuda_mode != CaptureMode::global) {
    cudaStreamCaptureMode m = static_cast<cudaStreamCaptureMode>(mode);
    if (cudaThreadExchangeStreamCaptureMode(&m) == cudaSuccess) tls_cuda_mode = mode;
  }
#endif
  return previous;
}

CaptureMode thread_capture_mode() { return tls_mode; }

void register_capture(const Stream& stream, CaptureMode mode) {
  std::lock_guard<std::mutex> lock(g_mutex);
  RG_CHECK(!find_locked(stream.device), "graph capture: a stream of ", stream.device.str(), ":",
           stream.device.index, " is already capturing");
  g_captures.push_back({stream, mode, std::this_thread::get_id(), ""});
  g_count++;
  if (stream.device.is_cuda()) g_cuda_count++;
}

std::string unregister_capture(Device d, bool abandon) {
  std::lock_guard<std::mutex> lock(g_mutex);
  Capture* c = find_locked(d);
  RG_CHECK(c, "graph capture: no stream of ", d.str(), ":", d.index, " is capturing");
  const bool wrong_thread =
      c->mode != CaptureMode::relaxed && c->thread != std::this_thread::get_id();
  RG_CHECK(abandon || !wrong_thread, "Graph::capture_end: ", describe(*c),
           ", and only that thread may end it: cudaErrorStreamCaptureWrongThread");
  std::string why = std::move(c->invalidated_by);
  if (d.is_cuda()) g_cuda_count--;
  g_captures.erase(g_captures.begin() + (c - g_captures.data()));
  g_count--;
  return why;
}

bool is_capturing(Device d) {
  if (g_count == 0 || d.is_cpu()) return false;
  std::lock_guard<std::mutex> lock(g_mutex);
  return find_locked(d) != nullptr;
}

void* capturing_stream_of(Device d) {
  if (g_count == 0) return nullptr;
  std::lock_guard<std::mutex> lock(g_mutex);
  const Capture* c = find_locked(d);
  return c ? c->stream.handle : nullptr;
}

void check_unsafe_call(const char* operation) {
  if (g_count == 0) return;
  std::lock_guard<std::mutex> lock(g_mutex);
  std::vector<Capture*> forbidding;
  for (Capture& c : g_captures)
    if (forbids(c, tls_mode)) forbidding.push_back(&c);
  if (!forbidding.empty()) refuse_locked(operation, std::move(forbidding));
}

bool unsafe_call_allowed(const char* operation) noexcept {
  try {
    check_unsafe_call(operation);
    return true;
  } catch (...) {  // refused (the captures are invalidated), or no memory for the message
    return false;
  }
}

void check_stream_not_capturing(const Stream& stream, const char* operation) {
  if (g_count == 0) return;
  {
    std::lock_guard<std::mutex> lock(g_mutex);
    Capture* c = find_locked(stream.device);
    if (c && c->stream.handle == stream.handle) refuse_locked(operation, {c});
  }
  check_unsafe_call(operation);
}

}  // namespace rg::gpu
