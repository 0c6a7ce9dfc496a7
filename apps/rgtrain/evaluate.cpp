// Evaluation and the final report; see evaluate.h.
#include "apps/rgtrain/evaluate.h"

#include <iostream>

#include "apps/rgtrain/util.h"
#include "nn/greedy_eval.h"

namespace rgtrain {
namespace {

auto logits_of(RunState& s) {
  return [&s](const rg::Tensor& idx) {
    rg::AutocastGuard autocast(rg::DType::bf16, s.args.autocast_bf16());
    return s.model->forward(idx);
  };
}

}  // namespace

double held_out_accuracy(RunState& s, int64_t n) {
  s.model->eval();
  const double acc = rg::nn::exact_match_accuracy(*s.data.addition, logits_of(s), 256, n, s.device);
  s.model->train();
  return acc;
}

void print_final_report(RunState& s, double final_loss, double wall_seconds,
                        double tokens_per_second) {
  std::cout << "final loss " << fmt("%.4f", final_loss) << "\n";
  if (s.data.addition) {
    std::cout << "held-out exact-match accuracy " << fmt("%.4f", held_out_accuracy(s, 2000))
              << " (first 2000 held-out sums)\n";
    s.model->eval();
    auto seqs = rg::nn::greedy_complete(*s.data.addition, logits_of(s), {0, 1, 2}, s.device);
    for (size_t i = 0; i < seqs.size(); ++i) {
      auto p = s.data.addition->problem(int64_t(i));
      std::cout << "  sample: " << s.data.addition->decode(seqs[i]) << "   (true sum " << p.a + p.b
                << ")\n";
    }
    s.model->train();
  }
  std::cout << "wall time " << fmt("%.1f", wall_seconds) << " s, " << fmt("%.0f", tokens_per_second)
            << " tokens/s\n"
            << std::flush;
}

}  // namespace rgtrain
