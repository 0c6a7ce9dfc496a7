// What rgtrain reports per step: the progress line on stdout (rewritten in place on a
// terminal) and, with --metrics, one JSON object per line (written with nlohmann-json).
#pragma once
#include <fstream>
#include <optional>
#include <string>

namespace rgtrain {

struct StepReport {
  int64_t step = 0, steps = 0;  // step just done (1-based), of steps
  double loss = 0, lr = 0, grad_norm = 0, seconds = 0, tokens = 0;
  double comm_seconds = 0, hidden_seconds = 0, eta_seconds = 0;
  size_t peak_bytes = 0;  // the device allocator's high-water mark so far
  std::optional<double> held_out_accuracy;
};

class MetricsWriter {
 public:
  // Empty path: no file. A resumed run appends, a fresh one truncates.
  MetricsWriter(const std::string& path, bool append);
  void write(const StepReport& r);

 private:
  std::string path_;
  std::ofstream out_;
};

// Prints the progress line of step r.step when it is due (every `print_every`, the last
// step, or a step with an accuracy).
void print_progress(const StepReport& r, int64_t print_every, bool tty);

}  // namespace rgtrain
