#include "autograd/node.h"

#include <atomic>

#include "autograd/engine.h"
#include "autograd/grad_mode.h"
#include "autograd/meta.h"
#include "core/memory_accounting.h"

namespace rg {

namespace {
std::atomic<uint64_t> g_next_sequence_nr{0};
thread_local bool t_grad_enabled = true;
}  // namespace

bool GradMode::is_enabled() { return t_grad_enabled; }
void GradMode::set_enabled(bool enabled) { t_grad_enabled = enabled; }

Node::Node(std::string name) : name_(std::move(name)), sequence_nr_(g_next_sequence_nr++) {}

std::vector<Tensor> FunctionNode::apply(Tensor grad_output) {
  RG_CHECK(fn_ != nullptr, "backward: trying to backward through the graph a second time (node '",
           name(),
           "'): its saved tensors were freed after the first backward. Pass "
           "retain_graph=true to the first backward if you need to call it twice.");
  return fn_(grad_output);
}

AccumulateGrad::AccumulateGrad(std::shared_ptr<TensorImpl> leaf)
    : Node("AccumulateGrad"), leaf_(std::move(leaf)) {}

std::vector<Tensor> AccumulateGrad::apply(Tensor grad_output) {
  Tensor leaf(leaf_);
  AutogradMeta& meta = autograd_meta(leaf);
  Tensor grad = std::move(grad_output);
  for (auto& hook : meta.hooks) {
    Tensor replaced = hook(grad);
    if (replaced.defined()) grad = replaced;
  }
  RG_CHECK(grad.shape() == leaf.shape(), "backward: gradient of shape ", shape_str(grad.shape()),
           " does not match the leaf's shape ", shape_str(leaf.shape()));
  {
    NoGradGuard no_grad;
    const GradArithmetic& math = grad_arithmetic();
    if (grad.dtype() != leaf.dtype()) grad = math.convert(grad, leaf.dtype());
    if (!meta.grad.defined()) {
      // Take ownership of a fresh contiguous gradient; copy anything that may alias.
      bool owned = grad.is_contiguous() && grad.storage().use_count() == 1 && grad.offset() == 0;
      meta.grad = owned ? grad.detach() : math.clone(grad);
    } else {
      math.add_into(meta.grad, grad);  // in place: a .grad that views a bucket stays a view
    }
    tag_memory(*meta.grad.storage(), MemoryCategory::gradients);
  }
  grad = Tensor();  // a .grad taken over is then held by the leaf alone while its hooks run
  for (auto& hook : meta.post_accumulate_hooks) hook(leaf);
  return {};
}

SavedTensor::SavedTensor(const Tensor& t, const char* op) : op_(op) {
  if (!t.defined()) return;
  tensor_ = t.detach();
  tag_memory(*t.storage(), MemoryCategory::activations);
  version_ = t.version();
}

Tensor SavedTensor::get() const {
  if (!tensor_.defined()) return tensor_;
  RG_CHECK(tensor_.version() == version_, op_,
           ": a tensor saved for backward was modified in place afterwards (version ", version_,
           " when saved, now ", tensor_.version(), "); backward would use the new values");
  return tensor_;
}

}  // namespace rg
