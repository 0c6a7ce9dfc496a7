// Activation checkpointing; see checkpoint.h.
#include "nn/checkpoint.h"

#include "autograd/autocast_mode.h"
#include "autograd/grad_mode.h"
#include "nn/layers.h"
#include "ops/record.h"

namespace rg {

namespace {

// The generators' states swapped for those of the forward, for a scope.
class ReplayGenerators {
 public:
  ReplayGenerators(const std::vector<Generator*>& generators, const std::vector<Generator>& saved)
      : generators_(generators) {
    for (size_t i = 0; i < generators_.size(); ++i) {
      now_.push_back(*generators_[i]);
      *generators_[i] = saved[i];
    }
  }
  ~ReplayGenerators() {
    for (size_t i = 0; i < generators_.size(); ++i) *generators_[i] = now_[i];
  }
  ReplayGenerators(const ReplayGenerators&) = delete;
  ReplayGenerators& operator=(const ReplayGenerators&) = delete;

 private:
  const std::vector<Generator*>& generators_;
  std::vector<Generator> now_;
};

// d(checkpoint): recompute fn from the saved inputs with the graph on, then backpropagate the
// output's gradient through it; the detached inputs' gradients are the inputs' gradients.
struct CheckpointDerivative {
  CheckpointFn fn;
  std::vector<SavedTensor> inputs;
  std::vector<bool> input_needs_grad;
  std::vector<Generator*> generators;
  std::vector<Generator> states;  // at forward time
  bool autocast = false;          // the forward's autocast state, restored to recompute
  DType autocast_dtype = DType::bf16;

  std::vector<Tensor> operator()(const Tensor& grad) const {
    std::vector<Tensor> detached;
    for (size_t i = 0; i < inputs.size(); ++i) {
      detached.push_back(inputs[i].get().detach());
      if (input_needs_grad[i]) detached.back().requires_grad_(true);
    }
    Tensor out;
    {
      GradModeGuard enable(true);  // backward runs with it off
      AutocastGuard same_precision(autocast_dtype, autocast);
      ReplayGenerators replay(generators, states);
      out = fn(detached);
    }
    RG_CHECK(out.requires_grad(),
             "checkpoint: the recomputed output does not require grad (does fn use its inputs?)");
    out.backward(grad);
    std::vector<Tensor> grads;
    for (const Tensor& d : detached) grads.push_back(d.requires_grad() ? d.grad() : Tensor());
    return grads;
  }
};

}  // namespace

Tensor checkpoint(CheckpointFn fn, const std::vector<Tensor>& inputs,
                  std::vector<Generator*> generators) {
  if (!GradMode::is_enabled() || !needs_grad(inputs)) return fn(inputs);
  CheckpointDerivative d;
  for (Generator* g : generators) d.states.push_back(*g);
  d.autocast = AutocastMode::is_enabled();
  d.autocast_dtype = AutocastMode::lower_dtype();
  Tensor out;
  {
    NoGradGuard no_graph;
    out = fn(inputs);
  }
  for (const Tensor& t : inputs) {
    d.inputs.emplace_back(t, "checkpoint");
    d.input_needs_grad.push_back(t.requires_grad());
  }
  d.fn = std::move(fn);
  d.generators = std::move(generators);
  record("checkpoint", out, inputs, std::move(d));
  return out;
}

std::vector<Generator*> dropout_generators(nn::Module& module) {
  std::vector<Generator*> out;
  if (auto* dropout = dynamic_cast<nn::Dropout*>(&module)) out.push_back(&dropout->generator());
  for (auto& [name, child] : module.named_children())
    for (Generator* g : dropout_generators(*child)) out.push_back(g);
  return out;
}

}  // namespace rg
