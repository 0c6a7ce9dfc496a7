#include "equivalence.h"

#include <algorithm>
#include <cmath>

#include "autograd/grad_mode.h"
#include "dist/threads_group.h"
#include "nn/ddp.h"
#include "nn/gpt.h"
#include "nn/layers.h"
#include "nn/optim/adamw.h"
#include "nn/optim/clip_grad.h"
#include "nn/optim/sgd.h"
#include "nn/optim/zero_adamw.h"

namespace rg::testing {

namespace {
constexpr int64_t kIgnore = -100;
constexpr int64_t kClasses = 5, kFeatures = 6, kVocab = 11, kContext = 6;
}  // namespace

std::shared_ptr<nn::Module> make_model(const Setup& s, uint64_t seed) {
  std::shared_ptr<nn::Module> model;
  if (s.model == "gpt") {
    nn::GPTConfig c;
    c.vocab_size = kVocab;
    c.block_size = kContext;
    c.n_layer = 2;
    c.n_head = 2;
    c.n_embd = 16;
    c.dropout = 0;
    c.bias = s.bias;
    c.seed = seed;
    model = std::make_shared<nn::GPT>(c);
  } else {
    Generator gen{seed, 0};
    model = std::make_shared<nn::MLP>(std::vector<int64_t>{kFeatures, 16, 16, kClasses},
                                      nn::Activation::gelu, true, &gen);
  }
  model->to(s.dtype);
  return model;
}

std::pair<Tensor, Tensor> random_batch(const Setup& s, int64_t n, uint64_t seed) {
  Generator gen{seed, 0};
  if (s.model == "gpt") {
    Tensor idx = mul(rand({n, kContext}, DType::f64, kCPU, &gen), double(kVocab)).to(DType::i64);
    Tensor tgt = mul(rand({n, kContext}, DType::f64, kCPU, &gen), double(kVocab)).to(DType::i64);
    Tensor drop = lt(rand({n, kContext}, DType::f64, kCPU, &gen), scalar_tensor(0.2, DType::f64));
    return {idx, where(drop, scalar_tensor(double(kIgnore), DType::i64), tgt)};
  }
  Tensor x = randn({n, kFeatures}, s.dtype, kCPU, &gen);
  Tensor tgt = mul(rand({n}, DType::f64, kCPU, &gen), double(kClasses)).to(DType::i64);
  Tensor drop = lt(rand({n}, DType::f64, kCPU, &gen), scalar_tensor(0.2, DType::f64));
  return {x, where(drop, scalar_tensor(double(kIgnore), DType::i64), tgt)};
}

namespace {
// The global batch of step `step`: world*accum*micro examples.
std::pair<Tensor, Tensor> global_batch(const Setup& s, int step) {
  return random_batch(s, int64_t(s.world) * s.accum * s.micro, 1000 + uint64_t(step));
}
}  // namespace

Tensor loss_of(const Setup& s, nn::Module& model, const Tensor& x, const Tensor& y,
               double denominator) {
  Tensor logits = model.forward(x);
  Tensor loss = cross_entropy(logits.reshape({-1, logits.size(-1)}), y.reshape({-1}),
                              Reduction::sum, kIgnore);
  (void)s;
  return div(loss, scalar_tensor(denominator, loss.dtype()));
}

double counted(const Tensor& targets) {
  return sum(ne(targets, scalar_tensor(double(kIgnore), DType::i64))).item();
}

optim::AdamWOptions adamw_options() {
  optim::AdamWOptions o;
  o.lr = 1e-2;
  o.weight_decay = 0.1;
  return o;
}

std::unique_ptr<optim::Optimizer> make_optimizer(const Setup& s, std::vector<Tensor> params) {
  if (s.optimizer == "adamw") return std::make_unique<optim::AdamW>(params, adamw_options());
  optim::SGDOptions o;
  o.lr = 0.1;
  o.momentum = 0.9;
  o.weight_decay = 0.01;
  return std::make_unique<optim::SGD>(params, o);
}

namespace {

// Starts from s.initial_params and s.optimizer_state when given (the same on every rank).
void resume_if_asked(const Setup& s, nn::Module& model, optim::Optimizer& opt) {
  if (!s.initial_params.empty()) {
    NoGradGuard no_grad;
    std::vector<Tensor> params = model.parameters();
    for (size_t i = 0; i < params.size(); ++i) params[i].detach().copy_(s.initial_params[i]);
  }
  if (!s.optimizer_state.empty()) opt.load_state_dict(s.optimizer_state);
}

nn::StateDict copy_of(const nn::StateDict& dict) {
  nn::StateDict out;
  for (const auto& [name, tensor] : dict) out.insert(name, tensor.detach().clone());
  return out;
}

// ZeroAdamW needs the DDP (its buckets).
std::unique_ptr<optim::Optimizer> make_ddp_optimizer(const Setup& s,
                                                     nn::DistributedDataParallel& ddp) {
  if (!s.zero) return make_optimizer(s, ddp.module().parameters());
  RG_CHECK(s.optimizer == "adamw", "Setup: zero needs the adamw optimizer");
  return std::make_unique<optim::ZeroAdamW>(ddp, adamw_options());
}

// Plain runs clip .grad, ZeRO runs the shards (Optimizer::clip_grad_norm_).
void clip_if_asked(const Setup& s, optim::Optimizer& opt) {
  if (s.clip > 0) opt.clip_grad_norm_(s.clip);
}

// Per moment: ZeroAdamW's slices of the buckets, or (AdamW, SGD) one per parameter element.
int64_t state_elements(const optim::Optimizer& opt) {
  if (auto* zero = dynamic_cast<const optim::ZeroAdamW*>(&opt)) return zero->shard_numel();
  int64_t elements = 0;
  for (const Tensor& p : opt.parameters()) elements += p.numel();
  return elements;
}

int64_t grads_defined(nn::Module& model) {
  int64_t n = 0;
  for (const Tensor& p : model.parameters()) n += p.grad().defined();
  return n;
}

int64_t full_buckets(const dist::BucketTransport& transport) {
  int64_t n = 0;
  for (size_t b = 0; b < transport.bucket_count(); ++b) n += transport.has_buffer(b);
  return n;
}

void note_min(int64_t& least, int64_t value) { least = least < 0 ? value : std::min(least, value); }

}  // namespace

std::vector<Tensor> train_single_process(const Setup& s) {
  auto model = make_model(s, 100);
  auto opt = make_optimizer(s, model->parameters());
  for (int step = 0; step < s.steps; ++step) {
    auto [x, y] = global_batch(s, step);
    opt->zero_grad();
    loss_of(s, *model, x, y, counted(y)).backward();
    clip_if_asked(s, *opt);
    opt->step();
  }
  return model->parameters();
}

RankResult train_ddp_rank(const Setup& s, dist::ProcessGroup& group,
                          const std::function<void(dist::ProcessGroup&)>& at_end) {
  int rank = group.rank();
  // Different initial weights per rank: DDP must broadcast rank 0's.
  auto model = make_model(s, 100 + uint64_t(rank) * 7);
  if (s.checkpoint) std::dynamic_pointer_cast<nn::GPT>(model)->checkpoint_activations = true;
  nn::DDPOptions o;
  o.bucket_cap_mb = s.bucket_cap_mb;
  o.first_bucket_cap_mb = s.first_bucket_cap_mb;
  o.gradient_as_bucket_view = s.grad_view;
  o.overlap = s.overlap;
  o.zero_stage = s.zero;
  nn::DistributedDataParallel ddp(model, group, o);
  auto opt = make_ddp_optimizer(s, ddp);
  resume_if_asked(s, *model, *opt);
  // ZeRO reduce-scatters where plain DDP all-reduces: count the gradient collective.
  dist::Collective reduction =
      s.zero ? dist::Collective::reduce_scatter : dist::Collective::allreduce;
  RankResult result;
  for (int step = s.first_step; step < s.first_step + s.steps; ++step) {
    auto [x, y] = global_batch(s, step);
    double denominator = counted(y) / s.world;  // DDP averages over ranks
    int64_t per_rank = int64_t(s.accum) * s.micro;
    opt->zero_grad();
    int64_t before = int64_t(group.collectives_issued(reduction));
    int64_t buckets = int64_t(ddp.reducer().bucket_count());
    for (int k = 0; k < s.accum; ++k) {
      int64_t start = rank * per_rank + k * s.micro;
      Tensor xm = x.narrow(0, start, s.micro), ym = y.narrow(0, start, s.micro);
      bool last = k + 1 == s.accum;
      auto guard = last ? nn::NoSyncGuard() : ddp.no_sync();
      int64_t before_micro = int64_t(group.collectives_issued(reduction));
      ddp.pre_forward();
      loss_of(s, ddp.module(), xm, ym, denominator).backward();
      if (!last) {
        result.allreduces_inside_no_sync +=
            int64_t(group.collectives_issued(reduction)) - before_micro;
        note_min(result.fewest_grads_after_no_sync, grads_defined(*model));
      }
    }
    result.allreduces_per_step.push_back(int64_t(group.collectives_issued(reduction)) - before);
    result.buckets_per_step.push_back(buckets);
    result.most_grads_after_sync = std::max(result.most_grads_after_sync, grads_defined(*model));
    if (s.before_step) s.before_step(ddp);
    clip_if_asked(s, *opt);
    opt->step();
    result.most_full_buckets_after_step =
        std::max(result.most_full_buckets_after_step, full_buckets(ddp.reducer().transport()));
  }
  result.state_elements = state_elements(*opt);
  result.optimizer_state = copy_of(opt->state_dict());
  for (size_t b = 0; b < ddp.reducer().bucket_count(); ++b)
    result.largest_bucket_elements =
        std::max(result.largest_bucket_elements, ddp.reducer().transport().bucket_numel(b));
  if (at_end) at_end(group);
  for (auto& p : model->parameters()) result.params.push_back(p.detach().clone());
  return result;
}

std::vector<RankResult> train_ddp_threads(const Setup& s,
                                          const std::function<void(dist::ProcessGroup&)>& at_end) {
  std::vector<RankResult> results(s.world);
  dist::Options options;
  options.timeout = std::chrono::milliseconds(20000);
  dist::run_threads(
      s.world,
      [&](dist::ProcessGroup& group) { results[group.rank()] = train_ddp_rank(s, group, at_end); },
      options);
  return results;
}

double max_relative_difference(const std::vector<Tensor>& a, const std::vector<Tensor>& b) {
  double worst = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    auto va = a[i].to_vector<double>(), vb = b[i].to_vector<double>();
    double scale = 0;
    for (double v : vb) scale = std::max(scale, std::abs(v));
    for (size_t k = 0; k < va.size(); ++k)
      worst = std::max(worst, std::abs(va[k] - vb[k]) / std::max(scale, 1e-30));
  }
  return worst;
}

bool bit_identical(const std::vector<Tensor>& a, const std::vector<Tensor>& b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i)
    if (!equal(a[i], b[i])) return false;
  return true;
}

}  // namespace rg::testing
