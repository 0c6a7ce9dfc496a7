// The backward engine. From the root's node it counts, for every reachable node, how
// many edges lead into it; then it runs nodes whose inputs are all in, latest-created
// first (reverse of the forward order), summing gradients that arrive at the same node.
// Gradients thus become ready in (roughly) reverse registration order of the parameters,
// which is the order the data-parallel reducer's buckets are built for.
#include "autograd/engine.h"

#include <atomic>
#include <functional>
#include <mutex>
#include <queue>
#include <unordered_map>
#include <unordered_set>

#include "autograd/autocast_mode.h"
#include "autograd/grad_mode.h"
#include "autograd/hooks.h"
#include "autograd/meta.h"
#include "core/interrupt.h"

namespace rg {

namespace {

thread_local std::vector<std::function<void()>>* t_callbacks = nullptr;
GradArithmetic g_arithmetic;  // set once by the ops layer, then only read
std::atomic<bool> g_arithmetic_set{false};
thread_local BackwardObserver t_observer;

struct ByLatestFirst {
  bool operator()(Node* a, Node* b) const { return a->sequence_nr() < b->sequence_nr(); }
};

using ReadyQueue = std::priority_queue<Node*, std::vector<Node*>, ByLatestFirst>;

struct ReachableGraph {
  std::unordered_map<Node*, int> dependencies;  // edges leading into each node
  std::vector<std::shared_ptr<Node>> nodes;     // keeps every node alive during backward
};

ReachableGraph reachable_from(const std::shared_ptr<Node>& root) {
  ReachableGraph graph;
  graph.nodes.push_back(root);
  std::vector<Node*> stack{root.get()};
  std::unordered_set<Node*> seen{root.get()};
  while (!stack.empty()) {
    Node* node = stack.back();
    stack.pop_back();
    for (auto& next : node->next) {
      if (!next) continue;
      graph.dependencies[next.get()]++;
      if (seen.insert(next.get()).second) {
        stack.push_back(next.get());
        graph.nodes.push_back(next);
      }
    }
  }
  return graph;
}

// `from` got no gradient: its edges are consumed without running it, and so are those of
// every node below it that ends up with no gradient either; nodes that did get one become
// ready.
void skip_subgraph(Node* from, std::unordered_map<Node*, int>& dependencies,
                   const std::unordered_map<Node*, Tensor>& pending, ReadyQueue& ready) {
  std::vector<Node*> skip{from};
  while (!skip.empty()) {
    Node* s = skip.back();
    skip.pop_back();
    for (auto& n : s->next)
      if (n && --dependencies[n.get()] == 0) {
        if (pending.count(n.get()))
          ready.push(n.get());
        else
          skip.push_back(n.get());
      }
  }
}

}  // namespace

void set_grad_arithmetic(const GradArithmetic& arithmetic) {
  RG_CHECK(arithmetic.add && arithmetic.add_into && arithmetic.clone && arithmetic.convert,
           "set_grad_arithmetic: every operation must be set");
  static std::once_flag once;
  std::call_once(once, [&] {
    g_arithmetic = arithmetic;
    g_arithmetic_set.store(true, std::memory_order_release);
  });
}

const GradArithmetic& grad_arithmetic() {
  RG_CHECK(g_arithmetic_set.load(std::memory_order_acquire),
           "autograd: the ops layer has not registered the gradient arithmetic (start "
           "backward with Tensor::backward, which does)");
  return g_arithmetic;
}

void run_backward(const Tensor& root, const Tensor& root_grad, bool retain_graph) {
  const GradArithmetic& math = grad_arithmetic();
  std::shared_ptr<Node> root_node = gradient_edge(root);
  RG_CHECK(root_node != nullptr,
           "backward: the tensor does not require grad and has no grad_fn (did you call "
           "requires_grad_() on the inputs, or run the forward under NoGradGuard?)");

  ReachableGraph graph = reachable_from(root_node);
  std::unordered_map<Node*, int>& dependencies = graph.dependencies;

  // A backward started inside another (a checkpoint's recomputation) queues its callbacks
  // on the outermost one: they run once, when the whole backward is done (DDP's reducer
  // finishes there).
  std::vector<std::function<void()>> callbacks;
  auto* previous_callbacks = t_callbacks;
  const bool outermost = previous_callbacks == nullptr;
  t_callbacks = outermost ? &callbacks : previous_callbacks;
  struct Restore {
    std::vector<std::function<void()>>* previous;
    ~Restore() { t_callbacks = previous; }
  } restore{previous_callbacks};

  NoGradGuard no_grad;
  AutocastOffGuard autocast_off;  // derivatives compute in the dtypes the forward saved
  std::unordered_map<Node*, Tensor> pending;
  pending[root_node.get()] = root_grad;
  ReadyQueue ready;
  ready.push(root_node.get());
  while (!ready.empty()) {
    throw_if_interrupted("backward");  // Ctrl-C (core/interrupt.h): stop between nodes
    Node* node = ready.top();
    ready.pop();
    Tensor grad = std::move(pending[node]);
    pending.erase(node);
    for (auto& hook : node->pre_hooks) {
      Tensor replaced = hook(grad);
      if (replaced.defined()) grad = replaced;
    }
    if (auto retained = node->retained.lock()) {
      AutogradMeta& meta = autograd_meta(Tensor(retained));
      meta.grad = meta.grad.defined() ? math.add(meta.grad, grad) : math.clone(grad);
    }
    auto started = std::chrono::steady_clock::now();
    std::vector<Tensor> input_grads = node->apply(std::move(grad));
    if (t_observer) t_observer(*node, started, std::chrono::steady_clock::now());
    for (size_t i = 0; i < node->next.size(); ++i) {
      Node* next = node->next[i].get();
      if (!next) continue;
      if (i < input_grads.size() && input_grads[i].defined()) {
        Tensor& slot = pending[next];
        slot = slot.defined() ? math.add(slot, input_grads[i]) : input_grads[i];
      }
      if (--dependencies[next] == 0) {
        if (pending.count(next)) {
          ready.push(next);
        } else {  // no gradient reached it: its subgraph gets nothing either
          skip_subgraph(next, dependencies, pending, ready);
        }
      }
    }
  }
  if (!retain_graph) {
    for (auto& node : graph.nodes) node->release();
  }
  if (outermost)
    for (size_t i = 0; i < callbacks.size(); ++i) callbacks[i]();  // may queue more
}

void queue_callback(std::function<void()> callback) {
  RG_CHECK(t_callbacks != nullptr, "queue_callback: no backward is running in this thread");
  t_callbacks->push_back(std::move(callback));
}

bool in_backward() { return t_callbacks != nullptr; }

void set_backward_observer(BackwardObserver observer) { t_observer = std::move(observer); }

}  // namespace rg
