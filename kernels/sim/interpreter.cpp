// The sim scheduler: fibers per CUDA thread, barriers, warp ops (see interpreter.h).
// Order of execution inside a block: warp 0's lanes run in lane order, each until it
// stops (barrier, warp op or return); a warp op waited on by all lanes of its mask is
// resolved and those lanes continue; when every lane of the warp stops at the barrier or
// returns, the next warp runs. When the whole block waits at the barrier it is released.
#include "kernels/sim/interpreter.h"

#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <exception>
#include <mutex>
#include <unordered_map>
#include <vector>

#include "core/error.h"
#include "kernels/sim/check/check.h"
#include "kernels/sim/fiber_switch.h"
#include "kernels/sim/sticky_error.h"
#include "kernels/sim/stream_queue.h"

namespace rg::sim {

thread_local ThreadCoords* tls_thread = nullptr;
thread_local BlockCoords* tls_block = nullptr;
std::atomic<size_t> g_max_shared_bytes{48 * 1024};

namespace {

// Each kernel's cudaFuncAttributeMaxDynamicSharedMemorySize, where it was set.
struct SharedAttributes {
  std::mutex mutex;
  std::unordered_map<const void*, size_t> bytes;
};
SharedAttributes& shared_attributes() {
  static SharedAttributes a;
  return a;
}

constexpr int kWarpSize = 32;
constexpr unsigned kMaxThreads = 1024;
constexpr size_t kStackBytes = 128 * 1024;  // per fiber; a guard page below it catches overflow

enum class FiberState : uint8_t { ready, at_barrier, at_warp_op, done };

struct Fiber {
  FiberContext context;
  ThreadCoords coords;
  FiberState state = FiberState::done;
  WarpOpKind op = WarpOpKind::sync;
  unsigned mask = 0;
  int arg = 0, width = kWarpSize;
  uint64_t value = 0, result = 0;
  WarpCollectiveFn collective = nullptr;  // WarpOpKind::collective
  CallSite site;  // where the kernel calls the barrier or warp op it waits at
  std::exception_ptr error;
};

enum class Mode : uint8_t { idle, plain, fibers };

// Per host thread: fibers, their stacks and the state of the launch in progress.
struct Worker {
  std::vector<Fiber> fibers = std::vector<Fiber>(kMaxThreads);
  std::vector<char*> stacks;  // lazily mapped, kept for the thread's life
  FiberContext scheduler;
  Fiber* current = nullptr;
  Mode mode = Mode::idle;
  KernelBody body;
  const LaunchSpec* spec = nullptr;
  BlockCoords block;
  std::vector<unsigned char> dynamic_shared;

  ~Worker() {
    for (char* s : stacks) munmap(s, kStackBytes + page_size());
  }
  static size_t page_size() { return static_cast<size_t>(sysconf(_SC_PAGESIZE)); }
  char* stack(size_t i) {
    while (stacks.size() <= i) {
      size_t guard = page_size();
      void* p = mmap(nullptr, kStackBytes + guard, PROT_READ | PROT_WRITE,
                     MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
      RG_CHECK(p != MAP_FAILED, "sim: cannot map a fiber stack");
      mprotect(p, guard, PROT_NONE);
      stacks.push_back(static_cast<char*>(p));
    }
    return stacks[i] + page_size();
  }
};

Worker& worker() {
  static thread_local Worker w;
  return w;
}

std::string block_str(const BlockCoords& b) {
  return str("block (", b.block_idx.x, ",", b.block_idx.y, ",", b.block_idx.z, ")");
}

const char* op_str(WarpOpKind k) {
  const char* names[] = {"__syncwarp",       "__shfl_sync",     "__shfl_up_sync",
                         "__shfl_down_sync", "__shfl_xor_sync", "__ballot_sync",
                         "__all_sync",       "__any_sync",      "warp collective (mma.sync)"};
  return names[static_cast<int>(k)];
}

void fiber_entry() {
  Worker& w = worker();
  Fiber* f = w.current;
  try {
    w.body.call(w.body.ctx);
  } catch (...) {
    f->error = std::current_exception();
  }
  f->state = FiberState::done;
  fiber_exit(f->context, w.scheduler);
}

void resume(Worker& w, Fiber& f) {
  w.current = &f;
  tls_thread = &f.coords;
  fiber_switch(w.scheduler, f.context);
  tls_thread = nullptr;
  w.current = nullptr;
  if (f.error) std::rethrow_exception(f.error);
}

// Parks the running fiber in `state` and returns to the scheduler.
void park(Worker& w, FiberState state, CallSite site) {
  Fiber* f = w.current;
  f->state = state;
  f->site = site;
  fiber_switch(f->context, w.scheduler);
}

void check_in_fiber(Worker& w, const char* what) {
  RG_CHECK(w.mode != Mode::idle, "sim: ", what, " called outside a kernel launch");
  RG_CHECK(w.mode == Mode::fibers, "sim: kernel '", w.spec->name, "' calls ", what,
           " but was launched with uses_sync = false");
}

ThreadCoords coords_of(unsigned linear, const dim3& bd) {
  ThreadCoords c;
  c.linear = linear;
  c.thread_idx.x = linear % bd.x;
  c.thread_idx.y = (linear / bd.x) % bd.y;
  c.thread_idx.z = linear / (bd.x * bd.y);
  return c;
}

// Source lane of a shuffle for `lane`, or -1 when the lane keeps its own value.
int shuffle_source(const Fiber& f, int lane) {
  int width = f.width, segment = lane & ~(width - 1), src = lane;
  switch (f.op) {
    case WarpOpKind::shfl:
      src = segment + (f.arg & (width - 1));
      break;
    case WarpOpKind::shfl_up:
      src = lane - f.arg;
      break;
    case WarpOpKind::shfl_down:
      src = lane + f.arg;
      break;
    case WarpOpKind::shfl_xor:
      src = lane ^ f.arg;
      break;
    default:
      return -1;
  }
  return (src < segment || src >= segment + width) ? -1 : src;
}

std::string where(CallSite site) { return str(site.file ? site.file : "??", ":", site.line); }

// A synchronisation error (compute-sanitizer's synccheck): reported to sim-check with the
// call site (and the other one of a pair), then thrown.
[[noreturn]] void sync_error(const std::string& message, CallSite site, CallSite other = {}) {
  check::report_sync_error("synccheck: " + message, site, other);
  RG_FAIL("sim: ", message, " at ", where(site), other.file ? " and " + where(other) : "");
}

// A shuffle's source lane must be one of the mask's (a GPU gives an undefined value
// otherwise); a source outside the lane's `width` segment keeps the lane's value (CUDA).
void check_sources(const Worker& w, const Fiber* lanes, unsigned group, unsigned warp) {
  for (int g = 0; g < 32; ++g) {
    if (!(group >> g & 1)) continue;
    int src = shuffle_source(lanes[g], g);
    if (src >= 0 && !(group >> src & 1))
      sync_error(
          str("kernel '", w.spec->name, "' ", block_str(w.block), " warp ", warp, ": lane ", g,
              " of ", op_str(lanes[g].op), " reads lane ", src, ", which is not in the mask 0x",
              std::hex, lanes[g].mask, " (undefined on a GPU)"),
          lanes[g].site);
  }
}

// A warp collective needs the whole warp: it runs once, over the lanes' data.
void run_collective(const std::string& at, Fiber* lanes, unsigned group, const Fiber& f) {
  if (group != 0xffffffffu)
    sync_error(
        str(at, ": a warp collective (mma.sync) needs all 32 lanes, not 0x", std::hex, group),
        f.site);
  void* data[kWarpSize];
  for (int g = 0; g < kWarpSize; ++g) data[g] = reinterpret_cast<void*>(lanes[g].value);
  f.collective(data);
}

// Every lane of [lo, hi) is stopped; resolves the warp ops some of them wait at.
void resolve_warp(Worker& w, unsigned lo, unsigned hi) {
  const char* name = w.spec->name;
  Fiber* lanes = &w.fibers[lo];
  int count = static_cast<int>(hi - lo);
  unsigned exists = count == 32 ? 0xffffffffu : ((1u << count) - 1);
  unsigned waiting = 0;
  for (int l = 0; l < count; ++l)
    if (lanes[l].state == FiberState::at_warp_op) waiting |= 1u << l;
  unsigned done_groups = 0;
  for (int l = 0; l < count; ++l) {
    if (!(waiting >> l & 1) || (done_groups >> l & 1)) continue;
    const Fiber& f = lanes[l];
    unsigned group = f.mask & exists;
    std::string at = str("kernel '", name, "' ", block_str(w.block), " warp ", lo / kWarpSize);
    if (!(group >> l & 1))
      sync_error(str(at, ": lane ", l, " calls ", op_str(f.op), " with mask 0x", std::hex, f.mask,
                     " that excludes itself"),
                 f.site);
    if (f.mask & ~exists)
      sync_error(
          str(at, ": ", op_str(f.op), " with mask 0x", std::hex, f.mask, " in a partial warp of ",
              std::dec, count, " lanes names lanes that do not exist (undefined on a GPU)"),
          f.site);
    if ((group & waiting) != group)
      sync_error(str(at, ": ", op_str(f.op), " with mask 0x", std::hex, f.mask,
                     " reached by lanes 0x", waiting & group,
                     " only (the others returned or wait at "
                     "__syncthreads): a GPU would hang or give undefined results"),
                 f.site);
    RG_CHECK(f.width > 0 && f.width <= kWarpSize && (f.width & (f.width - 1)) == 0, "sim: kernel '",
             name, "': ", op_str(f.op), " width ", f.width, " is not a power of two <= 32");
    for (int g = 0; g < count; ++g) {
      if (!(group >> g & 1)) continue;
      if (lanes[g].op != f.op || lanes[g].mask != f.mask || lanes[g].collective != f.collective)
        sync_error(str(at, ": lanes ", l, " and ", g, " wait at different warp ops (", op_str(f.op),
                       ", ", op_str(lanes[g].op), ") with the same lanes"),
                   lanes[g].site);
    }
    check_sources(w, lanes, group, lo / kWarpSize);
    check::on_warp_sync(lo, group);
    if (f.op == WarpOpKind::collective) run_collective(at, lanes, group, f);
    uint64_t votes = 0;
    bool all = true, any = false;
    for (int g = 0; g < count; ++g) {
      if (!(group >> g & 1)) continue;
      bool p = lanes[g].value != 0;
      votes |= uint64_t(p) << g;
      all = all && p;
      any = any || p;
    }
    for (int g = 0; g < count; ++g) {
      if (!(group >> g & 1)) continue;
      Fiber& lane = lanes[g];
      switch (f.op) {
        case WarpOpKind::sync:
          lane.result = 0;
          break;
        case WarpOpKind::ballot:
          lane.result = votes;
          break;
        case WarpOpKind::all:
          lane.result = all;
          break;
        case WarpOpKind::any:
          lane.result = any;
          break;
        default: {
          int src = shuffle_source(lane, g);
          lane.result = src >= 0 ? lanes[src].value : lane.value;
        }
      }
      lane.state = FiberState::ready;
    }
    done_groups |= group;
  }
}

// Every thread waits at a barrier: the same one, or the block diverged. The compiler may
// duplicate one source barrier (unswitching a loop), so call sites are compared by source
// line, which each barrier carries (CallSite), not by code address.
void check_same_barrier(const Worker& w, unsigned n) {
  for (unsigned i = 1; i < n; ++i)
    if (w.fibers[i].site != w.fibers[0].site)
      sync_error(str("kernel '", w.spec->name, "' ", block_str(w.block), ": threads 0 and ", i,
                     " wait at different __syncthreads() call sites (a divergent barrier: "
                     "undefined on a GPU)"),
                 w.fibers[i].site, w.fibers[0].site);
}

void run_block_fibers(Worker& w, unsigned n) {
  for (unsigned i = 0; i < n; ++i) {
    Fiber& f = w.fibers[i];
    fiber_prepare(f.context, w.stack(i), kStackBytes, fiber_entry);
    f.coords = coords_of(i, w.block.block_dim);
    f.state = FiberState::ready;
    f.error = nullptr;
  }
  for (;;) {
    for (unsigned lo = 0; lo < n; lo += kWarpSize) {
      unsigned hi = std::min(n, lo + kWarpSize);
      for (;;) {
        bool warp_op = false;
        for (unsigned i = lo; i < hi; ++i) {
          if (w.fibers[i].state == FiberState::ready) resume(w, w.fibers[i]);
          warp_op = warp_op || w.fibers[i].state == FiberState::at_warp_op;
        }
        if (!warp_op) break;
        resolve_warp(w, lo, hi);
      }
      check::on_warp_stopped();
    }
    unsigned at_barrier = 0;
    for (unsigned i = 0; i < n; ++i) at_barrier += w.fibers[i].state == FiberState::at_barrier;
    if (at_barrier == 0) return;
    if (at_barrier != n) {
      unsigned waiting = 0;  // the first thread at the barrier (there is one)
      while (w.fibers[waiting].state != FiberState::at_barrier) ++waiting;
      sync_error(str("kernel '", w.spec->name, "' ", block_str(w.block),
                     ": __syncthreads() reached by ", at_barrier, " of ", n,
                     " threads (the others returned): a GPU would hang or corrupt shared memory"),
                 w.fibers[waiting].site);
    }
    check_same_barrier(w, n);
    for (unsigned i = 0; i < n; ++i) w.fibers[i].state = FiberState::ready;
    check::on_barrier_release();
  }
}

void run_block_plain(Worker& w, unsigned n) {
  ThreadCoords coords;
  tls_thread = &coords;
  for (unsigned i = 0; i < n; ++i) {
    coords = coords_of(i, w.block.block_dim);
    w.body.call(w.body.ctx);
    if (i % kWarpSize == kWarpSize - 1 || i + 1 == n) check::on_warp_stopped();
  }
  tls_thread = nullptr;
}

void check_launch(const LaunchSpec& s) {
  const char* name = s.name ? s.name : "?";
  RG_CHECK(s.grid.x && s.grid.y && s.grid.z && s.block.x && s.block.y && s.block.z, "sim: kernel '",
           name, "' launched with an empty grid or block");
  uint64_t threads = uint64_t(s.block.x) * s.block.y * s.block.z;
  RG_CHECK(threads <= kMaxThreads && s.block.z <= 64, "sim: kernel '", name, "' launched with ",
           threads, " threads per block (", s.block.x, "x", s.block.y, "x", s.block.z,
           "); the maximum is 1024 (and blockDim.z <= 64)");
  RG_CHECK(s.grid.x < (1u << 31) && s.grid.y < 65536 && s.grid.z < 65536, "sim: kernel '", name,
           "' launched with grid ", s.grid.x, "x", s.grid.y, "x", s.grid.z,
           " (max 2^31-1 x 65535 x 65535)");
  const size_t limit = max_dynamic_shared(s.entry);
  RG_CHECK(s.shared_bytes <= limit, "sim: kernel '", name, "' asks for ", s.shared_bytes,
           " bytes of dynamic shared memory; the maximum is ", limit,
           limit < kMaxSharedBytesOptin
               ? str(" (up to ", kMaxSharedBytesOptin,
                     " after cudaFuncSetAttribute: LaunchConfig::opt_in_shared)")
               : std::string());
}

}  // namespace

void set_max_dynamic_shared(const void* entry, size_t bytes) {
  RG_CHECK(bytes <= kMaxSharedBytesOptin, "sim: cudaFuncSetAttribute(MaxDynamicSharedMemorySize, ",
           bytes, ") above the device's opt-in limit of ", kMaxSharedBytesOptin, " bytes");
  SharedAttributes& a = shared_attributes();
  std::lock_guard lock(a.mutex);
  a.bytes[entry] = bytes;
}

size_t max_dynamic_shared(const void* entry) {
  SharedAttributes& a = shared_attributes();
  std::lock_guard lock(a.mutex);
  auto it = a.bytes.find(entry);
  return it == a.bytes.end() ? max_shared_bytes() : std::max(it->second, max_shared_bytes());
}

void opt_in_dynamic_shared(const void* entry, void* stream) {
  opt_in_once(entry, device_of_token(stream), [](const void* e, int device) {
    check_sticky_error(device, "cudaFuncSetAttribute");  // fails there as on a GPU
    SharedAttributes& a = shared_attributes();
    std::lock_guard lock(a.mutex);
    a.bytes.try_emplace(e, kMaxSharedBytesOptin);
  });
}

const LaunchSpec* current_launch() { return worker().spec; }

void run_grid(const LaunchSpec& spec, KernelBody body) {
  check_sticky_error(device_of_token(spec.stream), "launch", spec.name);
  check_launch(spec);
  Worker& w = worker();
  RG_CHECK(w.mode == Mode::idle, "sim: kernel '", spec.name, "' launched from inside kernel '",
           w.spec ? w.spec->name : "?", "' (dynamic parallelism is not supported)");
  struct Reset {  // leaves the worker idle whatever happens
    Worker& w;
    ~Reset() {
      w.mode = Mode::idle;
      w.spec = nullptr;
      tls_block = nullptr;
      tls_thread = nullptr;
    }
  } reset{w};
  w.mode = spec.uses_sync ? Mode::fibers : Mode::plain;
  w.spec = &spec;
  w.body = body;
  w.block.block_dim = spec.block;
  w.block.grid_dim = spec.grid;
  if (w.dynamic_shared.size() < spec.shared_bytes + 16)
    w.dynamic_shared.resize(spec.shared_bytes + 16);
  // 16-byte aligned like CUDA's dynamic shared memory
  auto addr = reinterpret_cast<uintptr_t>(w.dynamic_shared.data());
  w.block.dynamic_shared = w.dynamic_shared.data() + ((16 - addr % 16) % 16);
  tls_block = &w.block;
  unsigned n = spec.block.x * spec.block.y * spec.block.z;
  check::on_launch_begin(spec.name, spec.entry, w.block.dynamic_shared, spec.shared_bytes, n);
  try {
    for (unsigned z = 0; z < spec.grid.z; ++z)
      for (unsigned y = 0; y < spec.grid.y; ++y)
        for (unsigned x = 0; x < spec.grid.x; ++x) {
          w.block.block_idx = uint3{x, y, z};
          // Shared memory starts as garbage on a GPU: poison it so reads before writes show.
          std::memset(w.block.dynamic_shared, 0xff, spec.shared_bytes);
          check::on_block_begin(x, y, z);
          if (w.mode == Mode::fibers)
            run_block_fibers(w, n);
          else
            run_block_plain(w, n);
        }
  } catch (...) {
    check::on_launch_abort();
    throw;
  }
  check::on_launch_end();
}

// `site` is the kernel's call (CallSite::here() in the dialect's wrappers).
void syncthreads(CallSite site) {
  Worker& w = worker();
  check_in_fiber(w, "__syncthreads()");
  park(w, FiberState::at_barrier, site);
}

uint64_t warp_op(WarpOpKind kind, unsigned mask, uint64_t value, int arg, int width,
                 CallSite site) {
  Worker& w = worker();
  check_in_fiber(w, op_str(kind));
  Fiber* f = w.current;
  f->op = kind;
  f->mask = mask;
  f->value = value;
  f->arg = arg;
  f->width = width;
  park(w, FiberState::at_warp_op, site);
  return f->result;
}

void warp_collective(void* lane_data, WarpCollectiveFn fn, CallSite site) {
  Worker& w = worker();
  check_in_fiber(w, op_str(WarpOpKind::collective));
  Fiber* f = w.current;
  f->op = WarpOpKind::collective;
  f->mask = 0xffffffffu;
  f->value = reinterpret_cast<uintptr_t>(lane_data);
  f->collective = fn;
  f->arg = 0;
  f->width = kWarpSize;
  park(w, FiberState::at_warp_op, site);
}

// The interpreter's thread_locals, which lie in the same TLS block as `__shared__`.
std::vector<std::pair<uintptr_t, uintptr_t>> check::interpreter_tls_ranges() {
  auto* w = &worker();
  auto lo = reinterpret_cast<uintptr_t>(w);
  return {{lo, lo + sizeof(Worker)}};
}

}  // namespace rg::sim

namespace rg {
void set_max_shared_bytes(size_t bytes) { sim::g_max_shared_bytes = bytes; }
size_t max_shared_bytes() { return sim::g_max_shared_bytes; }
}  // namespace rg
