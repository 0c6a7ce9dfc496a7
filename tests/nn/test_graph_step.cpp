// A training step captured as a graph (kernels/cuda/graph.h) on sim: zero_grad, a GPT's
// forward and backward, the gradient norm and clip scale on the device, and AdamW's
// capturable step, replayed with new inputs copied into the captured ones, equal eager steps
// (zero_grad, backward, grad_norm on the host, step(clip_scale)) bit for bit, and a replayed
// step launches no kernel from the host: one graph launch.
#include <doctest/doctest.h>

#include <cstring>
#include <random>

#include "kernels/cuda/graph.h"
#include "kernels/sim/stream_queue.h"
#include "nn/optim/clip_grad.h"
#include "nn_test_util.h"

using namespace rg;
using namespace rg::optim;

namespace {

const Device kSim(DeviceType::sim);
constexpr int64_t kVocab = 11;
constexpr double kClip = 0.5;  // below the norms: the scale is applied

// Step s's tokens and targets [2, 8] (int64, on the host).
std::pair<Tensor, Tensor> batch(int s) {
  std::mt19937 rng(static_cast<uint32_t>(100 + s));
  std::vector<int64_t> x(16), y(16);
  for (size_t i = 0; i < 16; ++i) x[i] = int64_t(rng() % kVocab), y[i] = int64_t(rng() % kVocab);
  return {tensor(x, {2, 8}), tensor(y, {2, 8})};
}

Tensor loss_of(nn::GPT& model, const Tensor& x, const Tensor& y) {
  Tensor logits = model.forward(x);
  return cross_entropy(logits.reshape({-1, kVocab}), y.reshape({-1}));
}

struct Run {
  std::shared_ptr<nn::GPT> model = std::make_shared<nn::GPT>(nn_test::small_gpt_config(kVocab, 3));
  std::unique_ptr<AdamW> opt;
  Run() {
    model->to(kSim);
    opt = std::make_unique<AdamW>(model->parameters(), AdamWOptions{.lr = 1e-2});
  }
  double eager_step(int s) {
    auto [x, y] = batch(s);
    opt->zero_grad();
    Tensor loss = loss_of(*model, x.to(kSim), y.to(kSim));
    loss.backward();
    opt->step(clip_scale(opt->grad_norm(model->parameters()), kClip));
    return loss.item();
  }
};

bool same_bits(const Tensor& a, const Tensor& b) {
  const Tensor x = a.detach().to(kCPU), y = b.detach().to(kCPU);
  return x.nbytes() == y.nbytes() && std::memcmp(x.data_ptr(), y.data_ptr(), x.nbytes()) == 0;
}

}  // namespace

TEST_CASE("sim graph: replayed training steps equal eager steps bit for bit, one launch each") {
  Run eager, graphed;
  CHECK(eager.eager_step(0) == graphed.eager_step(0));  // the optimizer state exists now
  auto [x0, y0] = batch(1);
  Tensor x = x0.to(kSim), y = y0.to(kSim);  // static inputs
  const Tensor scalars = graphed.opt->capturable_scalars(kSim);
  gpu::Graph graph;
  Tensor loss;
  for (int s = 1; s <= 4; ++s) {
    const double eager_loss = eager.eager_step(s);
    const uint64_t launches = sim::launches(), replays = gpu::graph_replays();
    auto [xs, ys] = batch(s);
    x.copy_(xs);
    y.copy_(ys);
    graphed.opt->prepare_capturable_step(scalars);
    if (!graph.captured()) {
      gpu::GraphCapture capture(graph, kSim);
      graphed.opt->zero_grad();
      loss = loss_of(*graphed.model, x, y);
      loss.backward();
      const Tensor norm = grad_norm_on_device(graphed.model->parameters());
      graphed.opt->set_capturable_grad_scale(scalars, clip_scale_on_device(norm, kClip));
      graphed.opt->step_capturable(scalars);
    }
    const uint64_t launched_before_replay = sim::launches() - launches;
    graph.replay();
    CAPTURE(s);
    CHECK(loss.item() == eager_loss);
    if (s > 1) CHECK(sim::launches() == launches);  // a replayed step: no kernel launch
    if (s == 1) CHECK(launched_before_replay > 0);  // the capture step recorded launches
    CHECK(gpu::graph_replays() == replays + 1);
    const auto a = eager.model->parameters(), b = graphed.model->parameters();
    bool all_same = true;
    for (size_t i = 0; i < a.size(); ++i) all_same = all_same && same_bits(a[i], b[i]);
    CHECK(all_same);
    CHECK(graphed.opt->state(0).step == eager.opt->state(0).step);
  }
}
