// sim-check: what compute-sanitizer and Nsight Compute would say about a kernel, without a
// GPU. In a build with -Dsim_check=enabled the sim kernel files are compiled by clang with
// SanitizerCoverage's load/store tracing, so every load and store of a CUDA thread calls
// hooks.cpp with its address and size. The interpreter tells this runtime which thread runs
// and where barriers and warp ops are; the sim device registers its allocations. From that:
//   memcheck   an access outside a live allocation (red zones around each) or past its size
//   racecheck  two threads of a block touch one byte between two barriers, one writes, and
//              no warp op of a common warp orders them (vector clocks per lane)
//   initcheck  a read of shared memory no thread of the block wrote, or of global memory
//              never written since its allocation
//   synccheck  (in interpreter.cpp) divergent barriers, warp ops naming absent lanes
//   metrics    sectors per request, DRAM bytes (first touch per sector), bank conflicts
// Reports of a launch are thrown as one rg::Error at its end (or only kept, see
// set_throw_on_report); see docs/sim.md ("sim-check").
#pragma once
#include <cstddef>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace rg::sim {
struct CallSite;  // interpreter.h
}

namespace rg::sim::check {

enum class Kind : uint8_t { memcheck, racecheck, initcheck, synccheck };
const char* kind_name(Kind kind);

struct Report {
  Kind kind;
  std::string kernel;
  std::string message;  // the whole report, lines included
  std::string file;     // source of the (second) access, e.g. ".../softmax.cu"
  int line = 0;
  std::string other_file;  // racecheck: the earlier access of the pair
  int other_line = 0;
  int count = 1;  // how many accesses gave this same report
};

// True when instrumented kernel objects are linked in (their module constructor ran).
bool instrumented();
// The reports of the last launch on this host thread that had any (cleared by take).
std::vector<Report> take_reports();
// true (default): a launch with reports throws rg::Error listing them.
void set_throw_on_report(bool on);

// Memory-traffic counters of one kernel (summed over its launches), as Nsight Compute
// defines them; see metrics.cpp for the model.
struct Metrics {
  uint64_t launches = 0;
  uint64_t threads = 0;  // launched: blocks x threads per block
  uint64_t blocks = 0;
  uint64_t load_requests = 0;   // warp-level load instructions from global memory
  uint64_t load_sectors = 0;    // 32-byte sectors those requests touch
  uint64_t store_requests = 0;  // the same for stores
  uint64_t store_sectors = 0;
  uint64_t dram_bytes = 0;  // 32 x distinct sectors loaded + stored, per launch
  uint64_t shared_requests = 0;
  uint64_t shared_wavefronts = 0;  // passes the 32 banks need
  uint64_t shared_ideal = 0;       // passes without conflicts
  Metrics& operator+=(const Metrics& m) {
    launches += m.launches;
    threads += m.threads;
    blocks += m.blocks;
    load_requests += m.load_requests;
    load_sectors += m.load_sectors;
    store_requests += m.store_requests;
    store_sectors += m.store_sectors;
    dram_bytes += m.dram_bytes;
    shared_requests += m.shared_requests;
    shared_wavefronts += m.shared_wavefronts;
    shared_ideal += m.shared_ideal;
    return *this;
  }
};
std::map<std::string, Metrics> metrics();  // by kernel name
void reset_metrics();
// The functions launched under a kernel name since reset_metrics(), demangled by addr2line
// ("void rg::sim::(anonymous namespace)::softmax_rows_kernel<float, 8, rg::sim::WarpGroup>(float*,
// ...)").
std::vector<std::string> kernel_functions(const std::string& kernel);

// ---- called by the sim device and the interpreter (no-ops unless instrumented)
void on_raw_alloc(void* user, size_t bytes);  // a block of the allocator, red zones around it
void on_raw_free(void* user);
void on_alloc(void* ptr, size_t requested);  // handed out: uninitialised, live
void on_free(void* ptr);
void mark_written(const void* ptr, size_t bytes);  // by the host, a copy or cuBLAS
constexpr size_t kRedZone = 1024;                  // bytes before and after each raw block

void on_launch_begin(const char* name, const void* entry, void* dynamic_shared, size_t shared_bytes,
                     unsigned threads);
void on_launch_end();  // throws the reports (when set to)
void on_launch_abort();
void on_block_begin(unsigned bx, unsigned by, unsigned bz);
void on_barrier_release();
void on_warp_sync(unsigned first_thread, unsigned lanes);  // a warp op resolved for `lanes`
void on_warp_stopped();  // the running warp stopped (barrier, exit): flush its requests
// A synccheck report at the kernel's call `at` (and `other`, e.g. the other barrier).
void report_sync_error(const std::string& message, const CallSite& at, const CallSite& other);
// The interpreter's own thread_locals (they share a TLS block with `__shared__` variables).
std::vector<std::pair<uintptr_t, uintptr_t>> interpreter_tls_ranges();

}  // namespace rg::sim::check
