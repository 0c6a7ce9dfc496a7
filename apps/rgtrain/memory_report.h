// rgtrain --memory-report: the peak bytes of each memory category (parameters, gradients,
// optimizer state, buckets, activations saved for backward, other) in each phase of one
// training step: forward, backward and the optimizer step. train_step marks the phases; the
// report is printed after the first step and again after the second, the steady state (from
// then on the optimizer's state lives through forward and backward too). On a device (sim,
// cuda) a last line gives the caching allocator's state after the step: reserved, active and
// allocated bytes, the free pieces of split segments, the largest free block, segments,
// splits, merges, and fragmentation (AllocatorStats::fragmentation, core/device_interface.h).
#pragma once
#include <array>
#include <string>
#include <utility>

#include "ringgrad.h"

namespace rgtrain {

enum class StepPhase { forward, backward, optimizer, count };

class MemoryReport {
 public:
  MemoryReport(rg::Device device, std::string step_label)
      : device_(device), step_label_(std::move(step_label)) {}
  // Starts a phase: the device's peaks restart from what is allocated now.
  void begin() { rg::reset_peak_memory_stats(device_); }
  // Ends a phase: its peaks join those of the phase's earlier runs (one per micro-batch).
  void end(StepPhase phase);
  // A table of MiB: a row per category and the total, a column per phase.
  std::string table() const;
  const rg::MemoryCategoryStats& phase(StepPhase p) const { return phases_[int(p)]; }

 private:
  rg::Device device_;
  std::string step_label_;  // "first step", "second step"
  std::array<rg::MemoryCategoryStats, int(StepPhase::count)> phases_{};
};

// "allocator: reserved 22.00 MiB, active ...; 3 segments, ...; fragmentation 0.071"
std::string allocator_line(const rg::AllocatorStats& stats);

}  // namespace rgtrain
