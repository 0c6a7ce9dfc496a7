// See memory_report.h.
#include "apps/rgtrain/memory_report.h"

#include <algorithm>
#include <cstdio>

namespace rgtrain {
namespace {

std::string row(const char* label, const std::array<size_t, 3>& bytes) {
  char line[128];
  std::snprintf(line, sizeof line, "%-16s %12.2f %12.2f %12.2f\n", label, bytes[0] / 1048576.0,
                bytes[1] / 1048576.0, bytes[2] / 1048576.0);
  return line;
}

}  // namespace

void MemoryReport::end(StepPhase phase) {
  const rg::MemoryCategoryStats now = rg::memory_stats(device_).categories;
  rg::MemoryCategoryStats& seen = phases_[int(phase)];
  for (int c = 0; c < rg::kMemoryCategories; ++c)
    seen.peak[c] = std::max(seen.peak[c], now.peak[c]);
  seen.peak_total = std::max(seen.peak_total, now.peak_total);
  seen.peak_model_state = std::max(seen.peak_model_state, now.peak_model_state);
}

std::string MemoryReport::table() const {
  char head[128];
  std::snprintf(head, sizeof head, "%-16s %12s %12s %12s\n", "category", "forward", "backward",
                "optimizer");
  std::string out = "memory report (" + device_.str() + ", " + step_label_ +
                    "): peak MiB of each category in each phase\n" + head;
  for (int c = 0; c < rg::kMemoryCategories; ++c)
    out += row(rg::memory_category_name(rg::MemoryCategory(c)),
               {phases_[0].peak[c], phases_[1].peak[c], phases_[2].peak[c]});
  out += row("total (peak)", {phases_[0].peak_total, phases_[1].peak_total, phases_[2].peak_total});
  out += row("model state", {phases_[0].peak_model_state, phases_[1].peak_model_state,
                             phases_[2].peak_model_state});
  if (!device_.is_cpu()) out += allocator_line(rg::memory_stats(device_)) + "\n";
  return out;
}

std::string allocator_line(const rg::AllocatorStats& s) {
  char line[320];
  std::snprintf(line, sizeof line,
                "allocator: reserved %.2f MiB, active %.2f, allocated %.2f, inactive split %.2f, "
                "largest free block %.2f; %llu segments, %llu splits, %llu merges; "
                "fragmentation %.3f",
                s.reserved / 1048576.0, s.active / 1048576.0, s.allocated / 1048576.0,
                s.inactive_split / 1048576.0, s.largest_free_block / 1048576.0,
                static_cast<unsigned long long>(s.segments),
                static_cast<unsigned long long>(s.splits),
                static_cast<unsigned long long>(s.merges), s.fragmentation());
  return line;
}

}  // namespace rgtrain
