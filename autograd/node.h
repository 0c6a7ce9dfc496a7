// The autograd graph. Every differentiable op records one Node for its (single) output;
// the node's edges point at the nodes of its inputs (null for inputs that need no
// gradient). Leaves that require grad end in an AccumulateGrad node, which adds the
// incoming gradient into `.grad` (+=, so gradients accumulate across backward calls) and
// then fires the parameter's post-accumulate-grad hooks — the data-parallel reducer
// listens there.
#pragma once
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "core/tensor.h"

namespace rg {

using TensorHook = std::function<Tensor(const Tensor& grad)>;  // may return a new grad
using PostAccumulateHook = std::function<void(const Tensor& param)>;

class Node {
 public:
  explicit Node(std::string name);
  virtual ~Node() = default;
  const std::string& name() const { return name_; }
  uint64_t sequence_nr() const { return sequence_nr_; }

  // Gradients for each input edge, from the gradient of the output (the engine moves it in:
  // a leaf's sink may keep its memory without another holder).
  virtual std::vector<Tensor> apply(Tensor grad_output) = 0;
  // Drops saved tensors after a backward without retain_graph.
  virtual void release() {}

  std::vector<std::shared_ptr<Node>> next;  // one per input; null = no gradient needed
  std::vector<TensorHook> pre_hooks;        // hooks of the (non-leaf) output tensor
  std::weak_ptr<TensorImpl> retained;       // non-leaf output with retain_grad()

 private:
  std::string name_;
  uint64_t sequence_nr_;
};

using BackwardFn = std::function<std::vector<Tensor>(const Tensor& grad_output)>;

// A node whose backward is a closure (the op's derivative, written next to its forward).
class FunctionNode : public Node {
 public:
  FunctionNode(std::string name, BackwardFn fn) : Node(std::move(name)), fn_(std::move(fn)) {}
  std::vector<Tensor> apply(Tensor grad_output) override;
  void release() override { fn_ = nullptr; }

 private:
  BackwardFn fn_;
};

// The sink for a leaf tensor that requires grad.
class AccumulateGrad : public Node {
 public:
  explicit AccumulateGrad(std::shared_ptr<TensorImpl> leaf);
  std::vector<Tensor> apply(Tensor grad_output) override;
  Tensor leaf() const { return Tensor(leaf_); }

 private:
  std::shared_ptr<TensorImpl> leaf_;
};

// Saved for backward: a detached alias plus the version it had when saved, so that an
// in-place write afterwards makes backward throw instead of silently using new values.
class SavedTensor {
 public:
  SavedTensor() = default;
  SavedTensor(const Tensor& t, const char* op);
  Tensor get() const;

 private:
  Tensor tensor_;
  uint64_t version_ = 0;
  const char* op_ = "";
};

}  // namespace rg
