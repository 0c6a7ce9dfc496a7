// bench/kernels --sim-check: one row per op of the kernels bench, from sim-check's counters
// (kernels/sim/check/metrics.cpp) over one run of the op on sim:
//   bytes     DRAM bytes under sim-check's L2 model (first load and first store of each
//             32-byte sector per launch), against the minimum the op needs (its tensors);
//   sect/req  32-byte sectors per warp-level global load and store (4 = coalesced f32; the
//             elementwise kernels' 16-byte Vec loads are split in 4 by sim-check: 16);
//   bank      shared-memory bank conflicts per shared request (wavefronts - ideal);
//   threads   CUDA threads launched (too few cannot keep an H200's HBM busy);
//   H200      predicted time at the cuda bench size (2^26 elements; the traffic ratio is
//             taken as size-independent): max(bytes / 4.8 TB/s, launches x 2 us launch
//             floor), and the fraction of peak bandwidth the op's minimum bytes reach then.
//   occupancy the lowest theoretical H200 occupancy among the op's kernels, from the registers
//             and shared memory ptxas -v reported at build time (kernels_occupancy.cpp),
//             with its limiter: W warps, B blocks, R registers, S shared memory (n/a
//             in a build without nvcc).
// There is no GPU here, so no measured time stands beside the prediction: compare with
// `bench/kernels --device cuda` on a GPU machine (same row names).
#include "bench/kernels_sim_check.h"

#include <cstdio>
#include <string>

#include "bench/kernels_occupancy.h"
#include "kernels/sim/check/check.h"

namespace rg::bench {

namespace {
constexpr double kHbmBytesPerSecond = 4.8e12;  // H200 peak HBM3e bandwidth
constexpr double kLaunchFloorSeconds = 2e-6;   // per kernel launch
constexpr double kGpuElements = double(1 << 26);
constexpr double kSimElements = double(1 << 16);
double per(uint64_t a, uint64_t b) { return b ? double(a) / double(b) : 0.0; }

// "loads/stores" sectors per warp-level request, e.g. "4.00/4.00".
std::string sectors_per_request(const sim::check::Metrics& m) {
  return std::to_string(per(m.load_sectors, m.load_requests)).substr(0, 4) + "/" +
         std::to_string(per(m.store_sectors, m.store_requests)).substr(0, 4);
}

// Bank conflicts per shared request ("-" without shared accesses).
std::string bank_conflicts(const sim::check::Metrics& m) {
  if (!m.shared_requests) return "-";
  return std::to_string(per(m.shared_wavefronts - m.shared_ideal, m.shared_requests)).substr(0, 4);
}

}  // namespace

bool sim_check_available() { return sim::check::instrumented(); }

void sim_check_header() {
  std::printf("sim-check memory traffic per op (sim, 2^16 f32 elements per tensor)\n");
  std::printf("%-28s %7s %10s %10s %6s %11s %8s %5s %8s %9s %6s %9s\n", "op", "kernels", "bytes",
              "min bytes", "ratio", "sect/req", "ld req", "bank", "threads", "H200 us", "peak%",
              "occupancy");
}

void sim_check_row(const char* name, double min_bytes, const std::function<void()>& fn) {
  sim::check::reset_metrics();
  fn();
  sim::check::Metrics t;
  auto kernels = sim::check::metrics();
  for (const auto& [kernel, m] : kernels) t += m;
  std::string sectors = sectors_per_request(t), bank = bank_conflicts(t);
  double ratio = double(t.dram_bytes) / min_bytes;
  double gpu_min = min_bytes * kGpuElements / kSimElements;
  double seconds = std::max(ratio * gpu_min / kHbmBytesPerSecond, t.launches * kLaunchFloorSeconds);
  double peak = gpu_min / kHbmBytesPerSecond / seconds;
  std::printf("%-28s %7llu %10llu %10.0f %6.2f %11s %8llu %5s %8llu %9.1f %5.1f%% %9s\n", name,
              static_cast<unsigned long long>(t.launches),
              static_cast<unsigned long long>(t.dram_bytes), min_bytes, ratio, sectors.c_str(),
              static_cast<unsigned long long>(t.load_requests), bank.c_str(),
              static_cast<unsigned long long>(t.threads), seconds * 1e6, 100 * peak,
              op_occupancy(kernels).c_str());
  if (kernels.size() < 2) return;
  for (const auto& [kernel, m] : kernels)  // an op of several kernels: one line each
    std::printf("  %-26s %7llu %10llu %10s %6s %11s %8llu %5s %8llu %9s %6s %9s\n", kernel.c_str(),
                static_cast<unsigned long long>(m.launches),
                static_cast<unsigned long long>(m.dram_bytes), "", "",
                sectors_per_request(m).c_str(), static_cast<unsigned long long>(m.load_requests),
                bank_conflicts(m).c_str(), static_cast<unsigned long long>(m.threads), "", "",
                op_occupancy({{kernel, m}}).c_str());
}

void sim_check_footer() {
  std::printf(
      "sect/req: loads/stores (ideal 4 for f32, 2 for bf16 stores, 16 where sim-check splits a "
      "16-byte vector load in four); ld req: warp-level global load requests (a row read twice "
      "shows here, not in bytes, where the second read hits the L2 model); bank: conflicts per "
      "shared "
      "request; H200: predicted at 2^26 elements, 4.8 TB/s and a 2 us launch floor, assuming "
      "enough threads in flight; occupancy: lowest of the op's kernels on an H200 from ptxas -v, "
      "limited by W warps, B blocks, R registers, S shared memory%s; measured GPU time: n/a "
      "(no GPU; run bench/kernels --device cuda there)\n",
      ptxas_table_available() ? "" : " (n/a: no nvcc at build time)");
}

}  // namespace rg::bench
