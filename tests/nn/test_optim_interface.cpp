// The optimizer interface a training loop uses without knowing the optimizer (nn/optim/
// optimizer.h): grad_norm, clip_grad_norm_ and step(grad_scale) against the free functions
// of nn/optim/clip_grad.h, bit for bit, on AdamW and SGD; and on ZeroAdamW in a 2-rank
// threads group, against the same run with whole gradients; state_is_sharded and
// merge_state_dicts on all three.
#include <doctest/doctest.h>

#include <cstring>
#include <memory>

#include "dist/threads_group.h"
#include "nn/optim/zero_adamw.h"
#include "nn_test_util.h"

using namespace rg;
using namespace rg::optim;

namespace {

// Three parameters, two with gradients (k times a norm of sqrt(9 + 16 + 144) = 13), one
// without.
struct Params {
  Tensor a = tensor({1.0, 2.0}, {}, DType::f64).requires_grad_();
  Tensor b = tensor({3.0}, {}, DType::f64).requires_grad_();
  Tensor none = tensor({5.0}, {}, DType::f64).requires_grad_();
  Params() { set_grads(1.0); }
  void set_grads(double k) {
    a.set_grad(tensor({3.0 * k, 4.0 * k}, {}, DType::f64));
    b.set_grad(tensor({12.0 * k}, {}, DType::f64));
  }
  std::vector<Tensor> all() const { return {a, b, none}; }
};

std::vector<double> values(const Tensor& t) { return t.to_vector<double>(); }

std::unique_ptr<Optimizer> make(const std::string& kind, const Params& p) {
  if (kind == "sgd") return std::make_unique<SGD>(p.all(), SGDOptions{.lr = 0.1, .momentum = 0.9});
  return std::make_unique<AdamW>(p.all(), AdamWOptions{.lr = 0.1});
}

}  // namespace

TEST_CASE("AdamW and SGD: grad_norm and clip_grad_norm_ are the free functions, bit for bit") {
  for (const char* kind : {"adamw", "sgd"}) {
    INFO(kind);
    Params p, q;
    auto opt = make(kind, p);
    CHECK_FALSE(opt->state_is_sharded());
    CHECK(opt->grad_norm() == grad_norm(q.all()));
    CHECK(opt->grad_norm({p.b, p.a}) == grad_norm({q.b, q.a}));  // the caller's order
    const double norm = opt->clip_grad_norm_(6.5);
    CHECK(norm == clip_grad_norm_(q.all(), 6.5));
    CHECK(norm == doctest::Approx(13.0));
    CHECK(values(p.a.grad()) == values(q.a.grad()));
    CHECK(values(p.b.grad()) == values(q.b.grad()));
    CHECK_FALSE(p.none.grad().defined());
    CHECK(opt->clip_grad_norm_(100.0, {p.a, p.b}) == doctest::Approx(6.5).epsilon(1e-6));
    CHECK(values(p.a.grad()) == values(q.a.grad()));  // below max_norm: untouched
    CHECK_THROWS_WITH_AS(opt->clip_grad_norm_(0.0), doctest::Contains("max_norm must be positive"),
                         Error);
  }
}

TEST_CASE("AdamW and SGD: step(grad_scale) equals clip_grad_norm_ then step(), bit for bit") {
  for (const char* kind : {"adamw", "sgd"}) {
    INFO(kind);
    Params p, q;
    auto folded = make(kind, p), clipped = make(kind, q);
    for (int step = 0; step < 3; ++step) {
      p.set_grads(1.0 + step), q.set_grads(1.0 + step);  // norm 13, 26, 39: always clipped
      const double norm = folded->grad_norm();
      folded->step(clip_scale(norm, 5.0));
      CHECK(clipped->clip_grad_norm_(5.0) == norm);
      clipped->step();
      for (auto [x, y] : {std::pair{p.a, q.a}, std::pair{p.b, q.b}, std::pair{p.none, q.none}})
        CHECK(values(x) == values(y));
    }
    CHECK_THROWS_WITH_AS(folded->step(-1.0), doctest::Contains("grad_scale must be finite"), Error);
  }
}

TEST_CASE("AdamW and SGD: a whole state merges to any rank's dict") {
  for (const char* kind : {"adamw", "sgd"}) {
    INFO(kind);
    Params p;
    auto opt = make(kind, p);
    opt->step();
    const nn::StateDict dict = opt->state_dict();
    const nn::StateDict merged = opt->merge_state_dicts({dict, dict});
    CHECK(merged.size() == dict.size());
    for (const auto& [name, t] : dict) {
      REQUIRE(merged.find(name) != nullptr);
      CHECK(values(*merged.find(name)) == values(t));
    }
    CHECK_THROWS_WITH_AS(opt->merge_state_dicts({}), doctest::Contains("no state dicts"), Error);
  }
}

namespace {

// What one rank of a 2-rank ZeRO-1 run (or plain DDP with AdamW) saw after one backward.
struct RankView {
  double norm = 0, clipped_norm = 0, after_clip = 0;
  bool sharded = false;
  std::vector<Tensor> params;  // after `steps` steps
  nn::StateDict state;
};

std::shared_ptr<nn::Module> mlp() {
  Generator gen{5, 0};
  auto m =
      std::make_shared<nn::MLP>(std::vector<int64_t>{4, 8, 2}, nn::Activation::relu, true, &gen);
  m->to(DType::f64);
  return m;
}

// Each step: one backward on this rank's inputs; with max_norm > 0, clipped either by
// clip_grad_norm_ then step() or folded into step(scale).
RankView run_rank(dist::ProcessGroup& group, bool zero, double max_norm, bool folded) {
  nn::DDPOptions o;
  o.bucket_cap_mb = 0.25 / 1024;  // 256 B: several buckets, parameters cut across shards
  o.zero_stage = zero ? 1 : 0;
  auto model = mlp();
  nn::DistributedDataParallel ddp(model, group, o);
  std::unique_ptr<Optimizer> opt;
  if (zero)
    opt = std::make_unique<ZeroAdamW>(ddp, AdamWOptions{.lr = 0.01});
  else
    opt = std::make_unique<AdamW>(model->parameters(), AdamWOptions{.lr = 0.01});
  RankView v;
  v.sharded = opt->state_is_sharded();
  for (int step = 0; step < 2; ++step) {
    Generator gen{uint64_t(10 + 2 * step + group.rank()), 0};
    Tensor x = randn({3, 4}, DType::f64, kCPU, &gen);
    opt->zero_grad();
    Tensor y = ddp.forward(x);
    sum(mul(y, y)).backward();
    v.norm = opt->grad_norm(model->parameters());
    if (folded) {
      opt->step(clip_scale(v.norm, max_norm));
      continue;
    }
    v.clipped_norm = opt->clip_grad_norm_(max_norm);
    v.after_clip = opt->grad_norm();
    opt->step();
  }
  v.params = model->parameters();
  v.state = opt->state_dict();
  return v;
}

std::vector<RankView> run(bool zero, double max_norm, bool folded) {
  std::vector<RankView> views(2);
  dist::run_threads(2, [&](dist::ProcessGroup& group) {
    views[size_t(group.rank())] = run_rank(group, zero, max_norm, folded);
  });
  return views;
}

}  // namespace

TEST_CASE("ZeroAdamW (2 ranks): the norm over the shards, clipping and step(scale)") {
  const std::vector<RankView> zero = run(true, 0.5, false), ddp = run(false, 0.5, false);
  for (int r = 0; r < 2; ++r) {
    INFO("rank " << r);
    CHECK(zero[r].sharded);
    CHECK_FALSE(ddp[r].sharded);
    CHECK(zero[r].norm == zero[0].norm);  // all-reduced: the same bits on every rank
    CHECK(zero[r].norm > 0.5);            // so the test clips
    CHECK(zero[r].norm == doctest::Approx(ddp[r].norm).epsilon(1e-12));
    CHECK(zero[r].clipped_norm == zero[r].norm);
    CHECK(zero[r].after_clip == doctest::Approx(0.5).epsilon(1e-5));
    for (size_t i = 0; i < zero[r].params.size(); ++i)
      CHECK(nn_test::rel_err(zero[r].params[i], ddp[r].params[i]) <= 1e-10);
  }
  const std::vector<RankView> folded = run(true, 0.5, true);
  for (int r = 0; r < 2; ++r)
    for (size_t i = 0; i < folded[r].params.size(); ++i)
      CHECK(values(folded[r].params[i]) == values(zero[r].params[i]));
}

// Runs fn with a ZeroAdamW of one rank (its state loaded from the 2 ranks' dicts by fn).
template <class Fn>
void with_one_rank_zero_adamw(Fn&& fn) {
  dist::run_threads(1, [&](dist::ProcessGroup& group) {
    nn::DDPOptions o;
    o.zero_stage = 1;
    nn::DistributedDataParallel ddp(mlp(), group, o);
    ZeroAdamW opt(ddp);
    fn(opt);
  });
}

TEST_CASE("ZeroAdamW (2 ranks): merge_state_dicts is the union of the ranks' pieces") {
  const std::vector<RankView> zero = run(true, 0.5, true);
  with_one_rank_zero_adamw([&](ZeroAdamW& opt) {
    const nn::StateDict merged = opt.merge_state_dicts({zero[0].state, zero[1].state});
    CHECK(merged.size() + 1 == zero[0].state.size() + zero[1].state.size());  // one "step"
    for (const RankView& v : zero)
      for (const auto& [name, t] : v.state) CHECK(values(*merged.find(name)) == values(t));
    opt.load_state_dict(merged);  // at world 1 the pieces cover every element
    CHECK(opt.state_dict().find("step") != nullptr);
    CHECK(opt.state_is_sharded());
  });
}

TEST_CASE("ZeroAdamW: a state whose exp_avg_sq (or exp_avg) piece is missing is refused") {
  const std::vector<RankView> zero = run(true, 0.5, true);
  with_one_rank_zero_adamw([&](ZeroAdamW& opt) {
    for (const char* moment : {".exp_avg_sq", ".exp_avg"}) {
      CAPTURE(moment);
      nn::StateDict merged = opt.merge_state_dicts({zero[0].state, zero[1].state});
      std::string dropped;
      for (const std::string& name : merged.keys())
        if (name.size() > std::strlen(moment) &&
            name.compare(name.size() - std::strlen(moment), std::string::npos, moment) == 0)
          dropped = name;
      REQUIRE(!dropped.empty());
      merged.erase(dropped);  // as if the piece had been renamed
      const std::string expected = std::string("the saved ") + (moment + 1) + " pieces cover";
      CHECK_THROWS_WITH_AS(opt.load_state_dict(merged), doctest::Contains(expected.c_str()), Error);
    }
  });
}
