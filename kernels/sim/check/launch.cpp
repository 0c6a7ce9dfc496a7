// sim-check: the interpreter's events (launch, block, barrier, warp op) and the state they
// drive: the barrier phase, the per-lane vector clocks of racecheck, and where this host
// thread's static shared memory is (its TLS blocks, found with dl_iterate_phdr).
#include <link.h>

#include <algorithm>

#include "kernels/sim/check/state.h"
#include "kernels/sim/interpreter.h"

namespace rg::sim::check {

namespace {

std::atomic<uint32_t> g_phase{1};
std::atomic<uint32_t> g_block_epoch{2};  // 0: never written, 1: global memory written

// This thread's TLS blocks of every loaded module (the library's, and the program's when it
// has kernels of its own, as the tests do).
int add_tls_block(dl_phdr_info* info, size_t, void* data) {
  auto* blocks = static_cast<std::vector<std::pair<uintptr_t, uintptr_t>>*>(data);
  if (!info->dlpi_tls_data) return 0;
  for (int i = 0; i < info->dlpi_phnum; ++i)
    if (info->dlpi_phdr[i].p_type == PT_TLS && info->dlpi_phdr[i].p_memsz) {
      auto lo = reinterpret_cast<uintptr_t>(info->dlpi_tls_data);
      blocks->emplace_back(lo, lo + info->dlpi_phdr[i].p_memsz);
    }
  return 0;
}

}  // namespace

LaunchState& launch_state() {
  static thread_local LaunchState s;
  return s;
}

uint32_t next_phase() { return g_phase.fetch_add(1, std::memory_order_relaxed); }

// The kernels' `__shared__` variables are static thread_locals, so they lie in a TLS block
// (the only thread_locals instrumented code touches besides the interpreter's own, which
// are excluded). One shadow spans all blocks: static TLS is one area below the thread
// pointer, so the span is small.
void init_static_shared(LaunchState& s) {
  if (s.static_shared.end) return;
  std::vector<std::pair<uintptr_t, uintptr_t>> blocks;
  dl_iterate_phdr(add_tls_block, &blocks);
  if (blocks.empty()) return;  // no TLS: static shared memory is not checked
  uintptr_t lo = blocks[0].first, hi = blocks[0].second;
  for (auto [l, h] : blocks) {
    lo = std::min(lo, l);
    hi = std::max(hi, h);
  }
  if (hi - lo > (size_t(64) << 20)) return;  // not one static area: not checked
  s.static_shared.resize(lo, hi);
  auto range = [](const void* p, size_t n) {
    auto a = reinterpret_cast<uintptr_t>(p);
    return std::pair<uintptr_t, uintptr_t>(a, a + n);
  };
  s.not_shared = {range(&tls_thread, sizeof tls_thread), range(&tls_block, sizeof tls_block),
                  range(&s, sizeof s)};
  for (auto r : interpreter_tls_ranges()) s.not_shared.push_back(r);
}

void on_launch_begin(const char* name, const void* entry, void* dynamic_shared, size_t shared_bytes,
                     unsigned threads) {
  if (!instrumented()) return;
  LaunchState& s = launch_state();
  init_static_shared(s);
  s.active = true;
  s.kernel = name ? name : "?";
  s.entry = entry;
  s.threads = threads;
  s.clocks.resize(threads);
  auto d = reinterpret_cast<uintptr_t>(dynamic_shared);
  if (s.dynamic_shared.base != d || s.dynamic_shared.end != d + shared_bytes)
    s.dynamic_shared.resize(d, d + shared_bytes);
  s.reports.clear();
  s.sectors_loaded.clear();
  s.sectors_stored.clear();
  s.metrics = Metrics{};
  s.metrics.launches = 1;
}

void on_block_begin(unsigned bx, unsigned by, unsigned bz) {
  LaunchState& s = launch_state();
  if (!s.active) return;
  s.block[0] = bx;
  s.block[1] = by;
  s.block[2] = bz;
  s.block_epoch = g_block_epoch.fetch_add(1, std::memory_order_relaxed);
  s.metrics.threads += s.threads;
  s.metrics.blocks++;
  on_barrier_release();
}

// A new phase: no access before it races with one after it; vector clocks restart.
void on_barrier_release() {
  LaunchState& s = launch_state();
  if (!s.active) return;
  s.phase = next_phase();
  for (unsigned t = 0; t < s.threads; ++t) {
    s.clocks[t].fill(0);
    s.clocks[t][t % 32] = 1;
  }
}

// The lanes of `lanes` (bits relative to first_thread) exchanged values: each now knows
// everything the others did before, and starts a new epoch of its own.
void on_warp_sync(unsigned first_thread, unsigned lanes) {
  LaunchState& s = launch_state();
  if (!s.active) return;
  std::array<uint32_t, 32> joined{};
  for (unsigned l = 0; l < 32; ++l)
    if (lanes >> l & 1)
      for (unsigned k = 0; k < 32; ++k)
        joined[k] = std::max(joined[k], s.clocks[first_thread + l][k]);
  for (unsigned l = 0; l < 32; ++l)
    if (lanes >> l & 1) {
      s.clocks[first_thread + l] = joined;
      s.clocks[first_thread + l][l]++;
    }
}

void on_warp_stopped() {
  LaunchState& s = launch_state();
  if (s.active) flush_requests(s);
}

}  // namespace rg::sim::check
