// sim-check internals shared by its files: shadow memory, the per-host-thread launch state
// and the report list. See check.h for what sim-check does.
#pragma once
#include <array>
#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "kernels/sim/check/check.h"
#include "kernels/sim/interpreter.h"

namespace rg::sim::check {

// The last write and up to two reads of one 4-byte granule (byte masks: two threads
// writing neighbouring bf16 values do not race), in the barrier phase `phase`
// (a phase number is never reused, so older records are simply stale).
struct Access {
  uint32_t phase = 0;
  uint16_t thread = 0;
  uint8_t bytes = 0;   // which bytes of the granule
  uint32_t clock = 0;  // the thread's own vector-clock entry at the access
  uintptr_t pc = 0;
};
struct RaceCell {
  Access write, read, read2;
};

// Shadow of a range of memory: per byte the epoch it was written in (global memory: 1 once
// written; shared memory: the block's number), per granule the race records.
struct Shadow {
  uintptr_t base = 0, end = 0;
  std::vector<uint32_t> written;
  std::vector<RaceCell> race;
  void resize(uintptr_t b, uintptr_t e) {
    base = b;
    end = e;
    written.assign(e - b, 0);
    race.assign((e - b + 3) / 4, RaceCell{});
  }
  bool contains(uintptr_t a) const { return a >= base && a < end; }
};

// One raw block of the sim allocator: [user - kRedZone, user + bytes + kRedZone).
struct Region {
  Shadow shadow;
  uintptr_t user = 0;
  size_t bytes = 0;      // capacity of the block
  size_t requested = 0;  // of the live allocation
  bool live = false;
};

enum class Space : uint8_t { global, shared };

// A warp-level memory instruction: the n-th execution of one pc by the lanes of a warp.
struct Request {
  std::vector<std::pair<uintptr_t, uint32_t>> accesses;  // address, size
};
// The requests of one pc in the running warp.
struct PcTrace {
  Space space = Space::global;
  bool store = false;
  std::array<uint32_t, 32> executions{};  // per lane
  std::vector<Request> requests;          // by execution number
};

// Where a report points: code addresses of the instrumented accesses (symbolized at the
// launch's end), or for synccheck the call sites the kernel passed (file set).
struct ReportKey {
  Kind kind;
  uintptr_t pc, other_pc;
  CallSite at{}, other{};
  bool operator==(const ReportKey&) const = default;
};
struct PendingReport {
  ReportKey key;
  std::string text;  // without source lines
  int count = 1;
};

// Everything about the launch in progress on this host thread.
struct LaunchState {
  bool active = false;
  std::string kernel;
  const void* entry = nullptr;  // the kernel function
  unsigned threads = 0;
  unsigned block[3] = {0, 0, 0};
  uint32_t block_epoch = 0;  // shared-memory initialisation tag of this block
  uint32_t phase = 0;
  std::vector<std::array<uint32_t, 32>> clocks;  // per thread, the lanes of its warp
  Shadow static_shared;                          // this thread's TLS block (see shared.cpp)
  std::vector<std::pair<uintptr_t, uintptr_t>> not_shared;  // TLS that is not __shared__
  Shadow dynamic_shared;
  // metrics
  std::unordered_map<uintptr_t, PcTrace> traces;  // of the running warp, by pc
  std::unordered_set<uint64_t> sectors_loaded, sectors_stored;
  Metrics metrics;
  std::vector<PendingReport> reports;
};

LaunchState& launch_state();
Region* find_region(uintptr_t address);  // null when not sim device memory
uint32_t next_phase();
void add_report(Kind kind, uintptr_t pc, uintptr_t other_pc, std::string text);
void add_report(const ReportKey& key, std::string text);
void record_request(LaunchState& s, Space space, uintptr_t address, uint32_t size, uintptr_t pc,
                    unsigned thread, bool store);
void flush_requests(LaunchState& s);
void add_metrics(const std::string& kernel, const void* entry, const Metrics& m);
std::string function_name(const void* entry);  // demangled, cached (reports.cpp)
void init_static_shared(LaunchState& s);

}  // namespace rg::sim::check
