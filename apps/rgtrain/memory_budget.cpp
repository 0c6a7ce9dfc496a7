// See memory_budget.h.
#include "apps/rgtrain/memory_budget.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstring>
#include <iostream>
#include <numeric>

#include "apps/rgtrain/agreement.h"
#include "apps/rgtrain/data.h"
#include "apps/rgtrain/model.h"
#include "apps/rgtrain/util.h"

namespace rgtrain {
namespace {

double mib(double bytes) { return bytes / 1048576.0; }

// Peak bytes above what is allocated now while `model` runs forward and backward on the
// first m training examples; the gradients are dropped afterwards.
double dry_run_peak(RunState& s, rg::nn::Module& model, int64_t m) {
  std::vector<int64_t> idx(m);
  std::iota(idx.begin(), idx.end(), 0);
  auto [x, y] = gather(*s.data.train, idx, s.device);
  const size_t base = rg::memory_stats(s.device).allocated;
  rg::reset_peak_memory_stats(s.device);
  {
    rg::AutocastGuard autocast(rg::DType::bf16, s.args.autocast_bf16());
    rg::Tensor logits = model.forward(x);
    rg::cross_entropy(logits.reshape({-1, logits.size(-1)}), y.reshape({-1}), rg::Reduction::sum,
                      rg::data::kIgnoreIndex)
        .backward();
  }
  const size_t peak = rg::memory_stats(s.device).categories.peak_total;
  model.zero_grad();
  return double(peak) - double(base);
}

struct Cost {
  double fixed = 0;      // weights, optimizer state, buckets
  double intercept = 0;  // the dry runs' line at m = 0
  double slope = 0;      // per example
  double at(int64_t m) const { return fixed + intercept + double(m) * slope; }
};

double parameter_bytes(const RunState& s, const rg::nn::Module& model) {
  double bytes = 0;
  for (const rg::Tensor& p : model.parameters())
    bytes += double(rg::device_interface(s.device.type).block_bytes(p.storage()->nbytes));
  return bytes;
}

// Weights, optimizer state and buckets. Under --zero 3 the shards of weights, gradients and
// state (1/N each) and two gathered blocks (the one computing and the one prefetched); the
// dry runs' unsharded gradients then overcount (a few blocks' worth is what ZeRO-3 holds).
double fixed_bytes(const RunState& s, rg::nn::Module& model, double state) {
  const Args& a = s.args;
  const double weights = parameter_bytes(s, model);
  if (a.zero == 3 && s.world > 1) {
    auto* gpt = dynamic_cast<rg::nn::GPT*>(&model);
    const double block = gpt && !gpt->h.empty() ? parameter_bytes(s, *gpt->h[0]) : weights;
    return weights * (2 + state) / double(s.world) + 2 * block;
  }
  const double buckets = s.world > 1 && !a.grad_view ? 1 : 0;
  return weights * (1 + state + buckets);
}

Cost measure(RunState& s) {
  const Args& a = s.args;
  auto model = make_model(a, s.vocab, s.context);
  model->to(s.device);
  const double state = a.optimizer == "adamw" ? 2 : (a.optimizer == "sgd" ? 1 : 0);
  const double one = dry_run_peak(s, *model, 1), two = dry_run_peak(s, *model, 2);
  Cost c;
  c.fixed = fixed_bytes(s, *model, state);
  c.slope = std::max(0.0, two - one);
  c.intercept = one - c.slope;
  return c;
}

// The smallest of the ranks' picks, so that every rank fits and they agree.
int64_t agree_on_minimum(RunState& s, int64_t mine) {
  if (!s.group) return mine;
  std::string bytes(sizeof mine, '\0');
  std::memcpy(bytes.data(), &mine, sizeof mine);
  int64_t least = mine;
  for (const std::string& theirs : allgather_bytes(*s.group, bytes)) {
    int64_t m = 0;
    std::memcpy(&m, theirs.data(), sizeof m);
    least = std::min(least, m);
  }
  return least;
}

}  // namespace

uint64_t parse_memory_budget(const std::string& text) {
  static const std::pair<const char*, double> units[] = {
      {"", 1.0},   {"B", 1.0},      {"KB", 1e3},        {"MB", 1e6},
      {"GB", 1e9}, {"KiB", 1024.0}, {"MiB", 1048576.0}, {"GiB", 1073741824.0}};
  size_t digits = 0;
  while (digits < text.size() && (std::isdigit(static_cast<unsigned char>(text[digits])) ||
                                  (text[digits] == '.' && digits > 0)))
    ++digits;
  const std::string number = text.substr(0, digits), unit = text.substr(digits);
  double scale = 0;
  for (const auto& [name, factor] : units)
    if (unit == name) scale = factor;
  if (digits == 0 || scale == 0 || std::count(number.begin(), number.end(), '.') > 1)
    fail("--memory-budget: '", text, "' is not a size (examples: 2GiB, 512MiB, 1.5GB, 65536)");
  const double bytes = std::stod(number) * scale;
  if (!(bytes >= 1 && bytes < 1.8e19)) fail("--memory-budget: '", text, "' is out of range");
  return uint64_t(bytes);
}

void choose_micro_batch(RunState& s) {
  const uint64_t budget = parse_memory_budget(s.args.memory_budget);
  const Cost cost = measure(s);
  int64_t pick = 0;
  for (int64_t m = 1; m <= s.per_rank; ++m)
    if (s.per_rank % m == 0 && cost.at(m) <= double(budget)) pick = m;
  pick = agree_on_minimum(s, pick);
  if (pick == 0)
    fail("--memory-budget ", s.args.memory_budget, " (", fmt("%.2f", mib(budget)),
         " MiB) is too small: a micro-batch of 1 needs ", fmt("%.2f", mib(cost.at(1))), " MiB");
  s.args.micro_batch = pick;
  if (!s.lead) return;
  std::cout << "rgtrain: --memory-budget " << s.args.memory_budget << ": weights, optimizer "
            << "state and buckets " << fmt("%.2f", mib(cost.fixed)) << " MiB; forward+backward "
            << fmt("%.2f", mib(cost.intercept)) << " MiB + " << fmt("%.3f", mib(cost.slope))
            << " MiB per example (dry runs of 1 and 2 examples) -> micro-batch " << pick << " of "
            << s.per_rank << " per rank (needs " << fmt("%.2f", mib(cost.at(pick)))
            << " MiB), accumulation " << s.per_rank / pick << "\n"
            << std::flush;
}

}  // namespace rgtrain
