// Progress line and JSONL metrics; see metrics.h.
#include "apps/rgtrain/metrics.h"

#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <iostream>
#include <nlohmann/json.hpp>

#include "apps/rgtrain/util.h"

namespace rgtrain {

MetricsWriter::MetricsWriter(const std::string& path, bool append) : path_(path) {
  if (path.empty()) return;
  errno = 0;
  out_.open(path, append ? std::ios::app : std::ios::trunc);
  if (!out_) fail("--metrics: cannot open '", path, "': ", std::strerror(errno));
}

void MetricsWriter::write(const StepReport& r) {
  if (!out_.is_open()) return;
  nlohmann::ordered_json j = {{"step", r.step},
                              {"loss", r.loss},
                              {"lr", r.lr},
                              {"grad_norm", r.grad_norm},
                              {"ms", r.seconds * 1e3},
                              {"tokens_per_s", r.tokens / r.seconds},
                              {"comm_ms", r.comm_seconds * 1e3},
                              {"hidden_ms", r.hidden_seconds * 1e3},
                              {"peak_mib", r.peak_bytes / 1048576.0}};
  if (r.held_out_accuracy) j["held_out_acc"] = *r.held_out_accuracy;
  errno = 0;
  out_ << j.dump() << "\n" << std::flush;
  if (!out_) fail("--metrics: cannot write '", path_, "': ", std::strerror(errno));
}

void print_progress(const StepReport& r, int64_t print_every, bool tty) {
  const double comm = r.comm_seconds;
  std::string line = "step " + std::to_string(r.step) + "/" + std::to_string(r.steps) + " | loss " +
                     fmt("%.4f", r.loss) + " | lr " + fmt("%.2e", r.lr) + " | " +
                     fmt("%.0f", r.tokens / r.seconds) + " tok/s | " +
                     fmt("%.1f", r.seconds * 1e3) + " ms/step | comm " + fmt("%.1f", comm * 1e3) +
                     " ms (" + fmt("%.0f", comm > 0 ? 100 * r.hidden_seconds / comm : 0) +
                     "% hidden) | peak " + fmt("%.1f", r.peak_bytes / 1048576.0) + " MiB | ETA " +
                     hms(r.eta_seconds);
  const bool acc = r.held_out_accuracy.has_value();
  if (acc) line += " | held-out acc " + fmt("%.3f", *r.held_out_accuracy);
  const bool last = r.step == r.steps;
  if (tty) {
    std::cout << "\r" << line << "\033[K" << (acc || last ? "\n" : "") << std::flush;
  } else if (r.step % std::max<int64_t>(1, print_every) == 0 || last || acc) {
    std::cout << line << "\n" << std::flush;
  }
}

}  // namespace rgtrain
