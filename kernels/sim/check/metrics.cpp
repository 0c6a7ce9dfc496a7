// sim-check: memory-traffic metrics as Nsight Compute defines them, from the accesses of
// each warp. The lanes of a warp run one after another on sim, so a warp-level instruction
// is reconstructed as "the n-th execution of one pc" by the lanes of the warp (lanes that
// loop a different number of times simply take part in fewer instructions). When the warp
// stops (barrier or exit), each such request is summarised:
//   global: the distinct 32-byte sectors its lanes touch (a coalesced 4-byte access by 32
//           lanes: 4 sectors; a stride of 32 floats: 32);
//   shared: wavefronts = the largest number of distinct 4-byte words any of the 32 banks
//           must serve (lanes reading one word share it); ideal = distinct words / 32,
//           rounded up; bank conflicts = wavefronts - ideal.
// DRAM bytes use a simple L2 model: the first load of a sector in a launch reads it from
// DRAM, the first store writes it back once; every other access hits L2.
#include <mutex>
#include <set>

#include "kernels/sim/check/state.h"

namespace rg::sim::check {

namespace {

std::mutex g_mutex;
std::map<std::string, Metrics>& totals() {
  static auto* m = new std::map<std::string, Metrics>;
  return *m;
}
std::map<std::string, std::set<const void*>>& entries() {  // the functions of each kernel name
  static auto* m = new std::map<std::string, std::set<const void*>>;
  return *m;
}

void summarise(LaunchState& s, Space space, const Request& r, bool store) {
  if (space == Space::global) {
    std::unordered_set<uint64_t> sectors;
    for (auto [a, n] : r.accesses)
      for (uint64_t sec = a / 32; sec <= (a + n - 1) / 32; ++sec) sectors.insert(sec);
    (store ? s.metrics.store_requests : s.metrics.load_requests)++;
    (store ? s.metrics.store_sectors : s.metrics.load_sectors) += sectors.size();
    auto& dram = store ? s.sectors_stored : s.sectors_loaded;
    dram.insert(sectors.begin(), sectors.end());
    return;
  }
  std::unordered_set<uint64_t> words;
  for (auto [a, n] : r.accesses)
    for (uint64_t w = a / 4; w <= (a + n - 1) / 4; ++w) words.insert(w);
  std::array<uint32_t, 32> per_bank{};
  uint32_t wavefronts = 0;
  for (uint64_t w : words) wavefronts = std::max(wavefronts, ++per_bank[w % 32]);
  s.metrics.shared_requests++;
  s.metrics.shared_wavefronts += wavefronts;
  s.metrics.shared_ideal += (words.size() + 31) / 32;
}

}  // namespace

void record_request(LaunchState& s, Space space, uintptr_t address, uint32_t size, uintptr_t pc,
                    unsigned thread, bool store) {
  PcTrace& trace = s.traces[pc];
  trace.space = space;
  trace.store = store;
  uint32_t n = trace.executions[thread % 32]++;
  if (trace.requests.size() <= n) trace.requests.resize(n + 1);
  trace.requests[n].accesses.emplace_back(address, size);
}

void flush_requests(LaunchState& s) {
  for (auto& [pc, trace] : s.traces)
    for (const Request& r : trace.requests) summarise(s, trace.space, r, trace.store);
  s.traces.clear();
}

void add_metrics(const std::string& kernel, const void* entry, const Metrics& m) {
  std::lock_guard lock(g_mutex);
  totals()[kernel] += m;
  if (entry) entries()[kernel].insert(entry);
}

std::map<std::string, Metrics> metrics() {
  std::lock_guard lock(g_mutex);
  return totals();
}

void reset_metrics() {
  std::lock_guard lock(g_mutex);
  totals().clear();
  entries().clear();
}

std::vector<std::string> kernel_functions(const std::string& kernel) {
  std::set<const void*> launched;
  {
    std::lock_guard lock(g_mutex);
    if (auto it = entries().find(kernel); it != entries().end()) launched = it->second;
  }
  std::vector<std::string> names;
  for (const void* entry : launched) names.push_back(function_name(entry));
  return names;
}

}  // namespace rg::sim::check
