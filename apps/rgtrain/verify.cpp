// --verify; see verify.h.
#include "apps/rgtrain/verify.h"

#include <cmath>
#include <iostream>

#include "apps/rgtrain/model.h"
#include "apps/rgtrain/train_step.h"
#include "apps/rgtrain/util.h"

namespace rgtrain {
namespace {

struct Difference {
  double max_abs = 0, relative = 0;
};

// The largest |a - b| over every parameter, and relative to the largest |b|.
Difference max_difference(const std::vector<rg::Tensor>& a, const std::vector<rg::Tensor>& b) {
  double max_abs = 0, scale = 0;
  for (size_t i = 0; i < b.size(); ++i) {
    auto va = a[i].to_vector<double>(), vb = b[i].to_vector<double>();
    for (size_t k = 0; k < va.size(); ++k) {
      max_abs = std::max(max_abs, std::abs(va[k] - vb[k]));
      scale = std::max(scale, std::abs(vb[k]));
    }
  }
  return {max_abs, max_abs / std::max(scale, 1e-30)};
}

std::string describe(const Difference& d) {
  return "max |param difference| = " + fmt("%.3e", d.max_abs) + " (relative " +
         fmt("%.3e", d.relative);
}

}  // namespace

void verify_against_reference(RunState& s) {
  const Args& a = s.args;
  if (s.start_step > 0) {
    std::cout << "verify: skipped (run was resumed; the reference starts from step 0)\n";
    return;
  }
  auto ref = make_model(a, s.vocab, s.context);
  ref->to(s.device);
  auto rp = ref->parameters();
  for (size_t i = 0; i < rp.size(); ++i) {
    rg::NoGradGuard ng;
    rp[i].copy_(s.initial[i]);
  }
  auto ropt = make_optimizer(a, *ref);
  StepContext c{*ref, *ropt, nullptr, *s.data.train, s.device, a.clip, nullptr, 0};
  c.autocast = a.autocast_bf16();
  auto snapshot = s.verify_snapshots.begin();
  for (int64_t step = 0; step < a.steps; ++step) {
    auto idx = s.schedule->global_indices(step);
    const double denom = std::max(1.0, count_targets(*s.data.train, idx));
    train_step(c, {idx}, denom, s.lr_of(step));
    if (snapshot == s.verify_snapshots.end() || snapshot->first != step + 1) continue;
    std::cout << "verify: after step " << step + 1 << ": "
              << describe(max_difference(snapshot->second, rp)) << ")\n";
    ++snapshot;
  }
  std::cout << "verify: " << describe(max_difference(s.model->parameters(), rp)) << ", world "
            << s.world << ", accum " << s.accum << " vs one backward of " << a.global_batch
            << ")\n";
  if (a.steps > 100)
    std::cout << "verify: the difference grows over the steps as two float summation orders "
                 "drift apart (one process accumulating micro-batches drifts from one backward "
                 "alike); the per-step lines show where it starts\n";
}

}  // namespace rgtrain
