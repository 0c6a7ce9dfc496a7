// Reducer and DDP behaviour: bucket layout, errors that name what is wrong, the timeline.
#include <doctest/doctest.h>
#include <unistd.h>

#include <cctype>
#include <cstring>
#include <fstream>
#include <sstream>

#include "dist/threads_group.h"
#include "nn/ddp.h"
#include "nn/layers.h"
#include "ringgrad.h"

using namespace rg;

namespace {

dist::Options quick() {
  dist::Options o;
  o.timeout = std::chrono::milliseconds(5000);
  return o;
}

std::shared_ptr<nn::Module> mlp(std::vector<int64_t> widths, uint64_t seed = 1) {
  Generator gen{seed, 0};
  return std::make_shared<nn::MLP>(widths, nn::Activation::relu, true, &gen);
}

// A minimal JSON validator: enough to prove the trace parses.
struct JsonCheck {
  const std::string& s;
  size_t i = 0;
  void ws() {
    while (i < s.size() && std::isspace(static_cast<unsigned char>(s[i]))) ++i;
  }
  bool value() {
    ws();
    if (i >= s.size()) return false;
    char c = s[i];
    if (c == '{') return object();
    if (c == '[') return array();
    if (c == '"') return string();
    if (c == '-' || std::isdigit(static_cast<unsigned char>(c))) return number();
    for (const char* lit : {"true", "false", "null"})
      if (s.compare(i, std::strlen(lit), lit) == 0) return i += std::strlen(lit), true;
    return false;
  }
  bool string() {
    if (s[i] != '"') return false;
    for (++i; i < s.size(); ++i) {
      if (s[i] == '\\')
        ++i;
      else if (s[i] == '"')
        return ++i, true;
    }
    return false;
  }
  bool number() {
    size_t start = i;
    while (i < s.size() &&
           (std::isdigit(static_cast<unsigned char>(s[i])) || std::strchr("+-.eE", s[i])))
      ++i;
    return i > start;
  }
  bool array() {
    ++i;
    ws();
    if (s[i] == ']') return ++i, true;
    while (true) {
      if (!value()) return false;
      ws();
      if (s[i] == ',') {
        ++i;
        continue;
      }
      if (s[i] == ']') return ++i, true;
      return false;
    }
  }
  bool object() {
    ++i;
    ws();
    if (s[i] == '}') return ++i, true;
    while (true) {
      ws();
      if (!string()) return false;
      ws();
      if (s[i++] != ':') return false;
      if (!value()) return false;
      ws();
      if (s[i] == ',') {
        ++i;
        continue;
      }
      if (s[i] == '}') return ++i, true;
      return false;
    }
  }
  bool document() { return value() && (ws(), i == s.size()); }
};

}  // namespace

TEST_CASE(
    "buckets follow reverse registration order, first bucket small, then rebuild from ready "
    "order") {
  dist::run_threads(
      2,
      [](dist::ProcessGroup& group) {
        auto model = mlp({32, 64, 64, 8});  // 6 params: w0 8KiB, b0, w1 16KiB, b1, w2 2KiB, b2
        nn::DDPOptions o;
        o.first_bucket_cap_mb = 0.003;  // ~3 KiB
        o.bucket_cap_mb = 0.02;         // ~20 KiB
        nn::DistributedDataParallel ddp(model, group, o);
        auto layout = ddp.reducer().bucket_assignment();
        CHECK(layout.front().front() == 5);  // the last registered parameter comes first
        std::vector<size_t> flat;
        for (auto& b : layout) flat.insert(flat.end(), b.begin(), b.end());
        CHECK(flat == std::vector<size_t>{5, 4, 3, 2, 1, 0});
        CHECK(layout.size() >= 2);
        CHECK_FALSE(ddp.reducer().buckets_rebuilt());
        Tensor x = ones({4, 32});
        ddp.forward(x).sum().backward();
        CHECK(ddp.reducer().buckets_rebuilt());
        CHECK(ddp.reducer().stats().buckets_launched == layout.size());
      },
      quick());
}

TEST_CASE("ranks with different models get an error naming the first differing parameter") {
  CHECK_THROWS_WITH_AS(dist::run_threads(
                           2,
                           [](dist::ProcessGroup& group) {
                             auto model = group.rank() == 0 ? mlp({4, 8, 2}) : mlp({4, 9, 2});
                             nn::DistributedDataParallel ddp(model, group);
                           },
                           quick()),
                       doctest::Contains("parameter 0 is '0.weight [8,4] float32' on rank 0 but "
                                         "'0.weight [9,4] float32' on rank 1"),
                       Error);
}

TEST_CASE("a parameter without gradient is a named error unless find_unused_parameters") {
  struct TwoHeads : nn::Module {
    std::shared_ptr<nn::Linear> a, b;
    TwoHeads() {
      Generator gen{3, 0};
      a = std::make_shared<nn::Linear>(4, 2, true, &gen);
      b = std::make_shared<nn::Linear>(4, 2, true, &gen);
      register_module("used", a);
      register_module("unused", b);
    }
    Tensor forward(const Tensor& x) override { return a->forward(x); }
  };
  CHECK_THROWS_WITH_AS(
      dist::run_threads(
          2,
          [](dist::ProcessGroup& group) {
            nn::DistributedDataParallel ddp(std::make_shared<TwoHeads>(), group);
            ddp.forward(ones({3, 4})).sum().backward();
          },
          quick()),
      doctest::Contains("received no gradient in this backward: 'unused.weight', 'unused.bias'"),
      Error);

  dist::run_threads(
      2,
      [](dist::ProcessGroup& group) {
        nn::DDPOptions o;
        o.find_unused_parameters = true;
        auto model = std::make_shared<TwoHeads>();
        nn::DistributedDataParallel ddp(model, group, o);
        for (int step = 0; step < 2; ++step) {
          model->zero_grad();
          ddp.forward(full({3, 4}, group.rank() + 1.0)).sum().backward();
        }
        // Averaged over ranks: inputs 1 and 2 -> mean 1.5 per element, 3 rows.
        CHECK(model->a->weight.grad().to_vector<float>()[0] == doctest::Approx(4.5));
        CHECK(model->b->weight.grad().to_vector<float>()[0] == 0);
      },
      quick());
}

TEST_CASE("gradient_as_bucket_view makes .grad a view of the bucket and saves a copy") {
  dist::run_threads(
      2,
      [](dist::ProcessGroup& group) {
        auto model = mlp({16, 32, 4});
        nn::DDPOptions o;
        o.gradient_as_bucket_view = true;
        nn::DistributedDataParallel ddp(model, group, o);
        for (int step = 0; step < 2; ++step) {
          model->zero_grad();
          ddp.forward(ones({2, 16})).sum().backward();
        }
        auto params = model->parameters();
        auto storage = params[0].grad().storage();
        size_t grad_bytes = 0, separate = 0;
        for (auto& p : params) {
          grad_bytes += p.grad().nbytes();
          if (p.grad().storage() != storage) separate++;
        }
        MESSAGE("gradient_as_bucket_view saves " << grad_bytes
                                                 << " bytes of gradient copies per replica");
        CHECK(separate == 0);  // one bucket here, and every .grad lives in it
        CHECK(grad_bytes > 0);
      },
      quick());
}

namespace {

// The average over 2 ranks of the local gradients of mlp({16, 32, 4}) for input
// ones * (1 + step) on rank 0 and ones * (2 + step) on rank 1.
std::vector<Tensor> average_of_ranks(int step) {
  std::vector<Tensor> sum;
  for (int r = 0; r < 2; ++r) {
    auto m = mlp({16, 32, 4});
    m->forward(mul(ones({2, 16}), double(r + 1 + step))).sum().backward();
    auto params = m->parameters();
    for (size_t k = 0; k < params.size(); ++k) {
      if (r == 0)
        sum.push_back(params[k].grad().clone());
      else
        sum[k] = add(sum[k], params[k].grad());
    }
  }
  for (auto& g : sum) g = mul(g, 0.5);
  return sum;
}

// Step s of rank r in the tests below: input ones * (r + 1 + s), after zero_grad if `zero`.
void train_step(nn::Module& model, nn::DistributedDataParallel& ddp, int rank, int s, bool zero) {
  if (zero) model.zero_grad();
  ddp.forward(mul(ones({2, 16}), double(rank + 1 + s))).sum().backward();
}

double largest_difference(const Tensor& a, const Tensor& b) { return amax(abs(sub(a, b))).item(); }

}  // namespace

TEST_CASE("without gradient_as_bucket_view, a gradient only its parameter holds takes its slot") {
  // zero_grad(set_to_none) then backward: no one else holds the new gradients, so the
  // averages are handed over as the buckets' slots (no copy back). A gradient held
  // elsewhere keeps its identity and receives the average in place.
  dist::run_threads(
      2,
      [](dist::ProcessGroup& group) {
        auto model = mlp({16, 32, 4});
        nn::DistributedDataParallel ddp(model, group);
        auto params = model->parameters();
        auto step = [&](int s, bool zero) { train_step(*model, ddp, group.rank(), s, zero); };
        step(0, true);
        auto want = average_of_ranks(0);
        size_t in_first = 0;
        for (size_t k = 0; k < params.size(); ++k) {
          CHECK(largest_difference(params[k].grad(), want[k]) < 1e-6);
          in_first += params[k].grad().storage() == params[0].grad().storage();
        }
        CHECK(in_first == params.size());  // one bucket: every gradient is one of its slots
        Tensor kept = params[0].grad(), kept_values = kept.clone();
        step(1, true);  // the buffer `kept` lives in is no bucket's any more
        CHECK(largest_difference(kept, kept_values) == 0);
        CHECK(params[0].grad().storage() != kept.storage());
        want = average_of_ranks(1);
        for (size_t k = 0; k < params.size(); ++k)
          CHECK(largest_difference(params[k].grad(), want[k]) < 1e-6);
        Tensor held = params[0].grad();
        step(2, false);  // accumulates into the held gradient, then averages in place
        CHECK(params[0].grad().is_same(held));
        auto more = average_of_ranks(2);
        CHECK(largest_difference(held, add(want[0], more[0])) < 1e-5);
      },
      quick());
}

TEST_CASE("a gradient alone in its bucket and held only by its parameter is averaged in place") {
  // bucket_cap_mb 0.003 (3145 bytes): a member of half of it or more gets a bucket of its
  // own, here the first layer's 32 x 16 weight (2048 bytes); its fresh gradient is lent to
  // that bucket and reduced where it lies (no copy in, no hand-over).
  dist::run_threads(
      2,
      [](dist::ProcessGroup& group) {
        auto model = mlp({16, 32, 4});
        nn::DDPOptions o;
        o.bucket_cap_mb = 0.003;
        nn::DistributedDataParallel ddp(model, group, o);
        auto params = model->parameters();
        const void* produced = nullptr;  // the weight gradient's memory as backward made it
        register_post_accumulate_grad_hook(
            params[0], [&](const Tensor& p) { produced = p.grad().data_ptr(); });
        auto layout = ddp.reducer().bucket_assignment();
        size_t alone = 0;
        for (auto& b : layout) alone += b == std::vector<size_t>{0};
        CHECK(alone == 1);
        auto step = [&](int s, bool zero) { train_step(*model, ddp, group.rank(), s, zero); };
        step(0, true);
        auto want = average_of_ranks(0);
        for (size_t k = 0; k < params.size(); ++k)
          CHECK(largest_difference(params[k].grad(), want[k]) < 1e-6);
        CHECK(params[0].grad().data_ptr() == produced);  // averaged where backward left it
        CHECK(ddp.reducer().stats().buffers_lent == 1);
        Tensor kept = params[0].grad(), kept_values = kept.clone();
        step(1, false);  // `kept` holds it too: the average is copied back into it instead
        CHECK(ddp.reducer().stats().buffers_lent == 0);
        CHECK(params[0].grad().is_same(kept));
        auto more = average_of_ranks(1);
        CHECK(largest_difference(kept, add(kept_values, more[0])) < 1e-5);
        Tensor old = kept.clone();
        step(2, true);  // the next fresh gradient is lent again; `kept` is left alone
        CHECK(ddp.reducer().stats().buffers_lent == 1);
        CHECK(largest_difference(kept, old) == 0);
        CHECK(largest_difference(params[0].grad(), average_of_ranks(2)[0]) < 1e-6);
      },
      quick());
}

TEST_CASE("the bf16 compression hook gives the average to bf16 precision") {
  dist::run_threads(
      2,
      [](dist::ProcessGroup& group) {
        auto model = mlp({8, 8, 2});
        nn::DDPOptions o;
        o.comm_hook = dist::bf16_compress_hook;
        nn::DistributedDataParallel ddp(model, group, o);
        ddp.forward(full({4, 8}, 0.5 + group.rank())).sum().backward();
        Tensor g = model->parameters()[0].grad();
        auto reference_model = mlp({8, 8, 2});
        reference_model->forward(full({4, 8}, 0.5)).sum().backward();
        reference_model->forward(full({4, 8}, 1.5)).sum().backward();
        Tensor expected = reference_model->parameters()[0].grad() / 2.0;
        CHECK(allclose(g, expected, 1e-2, 1e-2));
      },
      quick());
}

TEST_CASE("the consistency check names a parameter that diverged") {
  CHECK_THROWS_WITH_AS(dist::run_threads(
                           2,
                           [](dist::ProcessGroup& group) {
                             auto model = mlp({4, 4, 2});
                             nn::DistributedDataParallel ddp(model, group);
                             if (group.rank() == 1) {
                               NoGradGuard g;
                               model->parameters()[1].add_(ones({4}));
                             }
                             ddp.check_parameters_consistent();
                           },
                           quick()),
                       doctest::Contains("parameter '0.bias' differs between rank 0 and rank 1"),
                       Error);
}

TEST_CASE("a trace from a real run is valid Chrome Trace JSON with backward and all-reduce lanes") {
  auto trace = std::make_shared<dist::TraceRecorder>();
  dist::run_threads(
      2,
      [&](dist::ProcessGroup& group) {
        auto model = mlp({32, 64, 64, 8});
        nn::DDPOptions o;
        o.trace = trace;
        o.bucket_cap_mb = 0.01;
        o.first_bucket_cap_mb = 0.001;
        nn::DistributedDataParallel ddp(model, group, o);
        set_backward_observer([&](const Node& node, auto start, auto end) {
          trace->span(group.rank(), "backward", node.name(), start, end);
        });
        for (int step = 0; step < 2; ++step) {
          model->zero_grad();
          ddp.forward(ones({4, 32})).sum().backward();
        }
        set_backward_observer(nullptr);
      },
      quick());
  std::string path = "/tmp/rg_trace_test_" + std::to_string(::getpid()) + ".json";
  trace->write(path);
  std::ifstream in(path);
  std::stringstream buf;
  buf << in.rdbuf();
  std::string json = buf.str();
  std::remove(path.c_str());
  JsonCheck check{json};
  CHECK(check.document());
  CHECK(json.find("\"traceEvents\"") != std::string::npos);
  CHECK(json.find("allreduce bucket 0") != std::string::npos);
  CHECK(json.find("grad ready: 0.weight") != std::string::npos);
  CHECK(json.find("\"name\": \"AddmmBackward\"") == std::string::npos);
  CHECK(json.find("\"name\": \"linear\"") != std::string::npos);  // the op's own node name
  CHECK(json.find("\"pid\": 1") != std::string::npos);
}
