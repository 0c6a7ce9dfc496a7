// Thread-local grad mode: when off, ops record no graph (like torch.no_grad()).
// Thread-local because ranks may run as threads of one process.
#pragma once

namespace rg {

struct GradMode {
  static bool is_enabled();
  static void set_enabled(bool enabled);
};

// RAII: sets gradient recording in this thread for its lifetime (torch.set_grad_enabled).
class GradModeGuard {
 public:
  explicit GradModeGuard(bool enabled) : previous_(GradMode::is_enabled()) {
    GradMode::set_enabled(enabled);
  }
  ~GradModeGuard() { GradMode::set_enabled(previous_); }
  GradModeGuard(const GradModeGuard&) = delete;
  GradModeGuard& operator=(const GradModeGuard&) = delete;

 private:
  bool previous_;
};

// RAII: no gradient recording in this thread for its lifetime (torch.no_grad()).
class NoGradGuard : public GradModeGuard {
 public:
  NoGradGuard() : GradModeGuard(false) {}
};

}  // namespace rg
