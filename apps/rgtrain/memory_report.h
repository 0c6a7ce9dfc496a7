// rgtrain --memory-report: the peak bytes of each memory category (parameters, gradients,
// optimizer state, buckets, activations saved for backward, other) in each phase of one
// training step: forward, backward and the optimizer step. train_step marks the phases; the
// report is printed after the first step and again after the second, the steady state (from
// then on the optimizer's state lives through forward and backward too).
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

}  // namespace rgtrain
