// rgtrain's model, optimizer, memory estimate and weight loading; see model.h.
#include "apps/rgtrain/model.h"

#include <unistd.h>

#include <map>

#include "apps/rgtrain/util.h"
#include "core/memory_limits.h"
#include "data/read_file.h"
#include "nn/gpt_metadata.h"
#include "nn/optim/fsdp_adamw.h"
#include "nn/optim/zero_adamw.h"

namespace rgtrain {
namespace {

// Minimal "mlp" language model: embedding of each token -> MLP -> logits (no context).
struct MlpLM : rg::nn::Module {
  MlpLM(int64_t vocab, int64_t width, int64_t layers, uint64_t seed) {
    rg::Generator gen{seed, 0};
    wte = std::make_shared<rg::nn::Embedding>(vocab, width, &gen);
    std::vector<int64_t> widths(size_t(layers) + 1, width);
    widths.push_back(vocab);
    mlp = std::make_shared<rg::nn::MLP>(widths, rg::nn::Activation::gelu, true, &gen);
    register_module("wte", wte);
    register_module("mlp", mlp);
  }
  rg::Tensor forward(const rg::Tensor& idx) override { return mlp->forward(wte->forward(idx)); }
  std::shared_ptr<rg::nn::Embedding> wte;
  std::shared_ptr<rg::nn::MLP> mlp;
};

std::string shape_string(const rg::Shape& s) {
  std::string out = "[";
  for (size_t i = 0; i < s.size(); ++i) out += (i ? ", " : "") + std::to_string(s[i]);
  return out + "]";
}

// The rgtrain flag behind each metadata field, for error messages.
std::string flag_of(const std::string& field) {
  static const std::map<std::string, std::string> flags = {
      {"model", "--model"},  {"n_layer", "--layers"},   {"n_head", "--heads"},
      {"n_embd", "--width"}, {"vocab_size", "--vocab"}, {"block_size", "--context"}};
  auto it = flags.find(field);
  return it == flags.end() ? field : it->second;
}

void check_metadata(const rg::nn::SafetensorsMetadata& expected,
                    const rg::nn::SafetensorsMetadata& file, const std::string& path) {
  const auto bad = rg::nn::metadata_mismatches(file, expected);
  if (bad.empty()) return;
  std::string what;
  for (const auto& b : bad)
    what += (what.empty() ? "" : "; ") + b.field + " is " + b.in_file + " in the file, " +
            b.expected + " in this run (" + flag_of(b.field) + ")";
  fail(path, ": the file's metadata does not match the model: ", what);
}

rg::nn::GPTConfig gpt_config(const Args& a, int64_t vocab, int64_t context) {
  rg::nn::GPTConfig c;
  c.vocab_size = vocab;
  c.block_size = context;
  c.n_layer = a.layers;
  c.n_head = a.heads;
  c.n_embd = a.width;
  c.dropout = 0;
  c.seed = a.seed;
  return c;
}

// The model in f32, as every precision initialises it.
std::shared_ptr<rg::nn::Module> make_f32_model(const Args& a, int64_t vocab, int64_t context) {
  if (a.model == "mlp") return std::make_shared<MlpLM>(vocab, a.width, a.layers, a.seed);
  auto gpt = std::make_shared<rg::nn::GPT>(gpt_config(a, vocab, context));
  gpt->checkpoint_activations = a.checkpoint_activations;
  return gpt;
}

}  // namespace

std::shared_ptr<rg::nn::Module> make_model(const Args& a, int64_t vocab, int64_t context) {
  auto model = make_f32_model(a, vocab, context);
  if (a.precision == "f64") model->to(rg::DType::f64);  // the same initial values, widened
  return model;
}

namespace {
rg::optim::AdamWOptions adamw_options(const Args& a) {
  rg::optim::AdamWOptions o;
  o.lr = a.lr;
  o.beta1 = a.beta1;
  o.beta2 = a.beta2;
  o.eps = a.eps;
  o.weight_decay = a.weight_decay;
  return o;
}
}  // namespace

std::unique_ptr<rg::optim::Optimizer> make_optimizer(const Args& a, rg::nn::Module& m) {
  auto groups = rg::optim::decay_groups(m, rg::optim::parse_no_decay(a.no_decay));
  if (a.optimizer == "adamw") return std::make_unique<rg::optim::AdamW>(groups, adamw_options(a));
  rg::optim::SGDOptions o;
  o.lr = a.lr;
  o.momentum = 0.9;
  o.weight_decay = a.weight_decay;
  return std::make_unique<rg::optim::SGD>(groups, o);
}

std::unique_ptr<rg::optim::Optimizer> make_zero_optimizer(const Args& a,
                                                          rg::nn::DistributedDataParallel& ddp) {
  auto groups = rg::optim::decay_groups(ddp.module(), rg::optim::parse_no_decay(a.no_decay));
  return std::make_unique<rg::optim::ZeroAdamW>(ddp, groups, adamw_options(a));
}

std::unique_ptr<rg::optim::Optimizer> make_fsdp_optimizer(const Args& a,
                                                          rg::nn::FullyShardedDataParallel& fsdp) {
  auto groups = rg::optim::decay_groups(fsdp.module(), rg::optim::parse_no_decay(a.no_decay));
  return std::make_unique<rg::optim::FsdpAdamW>(fsdp, groups, adamw_options(a));
}

void check_zero_flags(const Args& a) {
  if (a.zero == 0) return;
  if (a.optimizer != "adamw")
    fail("--zero ", a.zero, " needs --optimizer adamw, got '", a.optimizer, "'");
  if (a.grad_view) fail("--zero ", a.zero, " cannot be combined with --grad-as-bucket-view");
}

double estimate_parameters(const Args& a, int64_t vocab, int64_t context) {
  const double C = double(a.width), V = double(vocab), L = double(a.layers);
  if (a.model == "mlp") return V * C + L * (C * C + C) + C * V + V;
  // Per block: attention qkv 3C^2+3C and projection C^2+C, MLP 4C^2+4C and 4C^2+C, two
  // LayerNorms 4C. Plus token and position embeddings and the final LayerNorm; the output
  // layer shares the token embedding.
  const double block = 12 * C * C + 13 * C;
  return L * block + V * C + double(context) * C + 2 * C;
}

namespace {
// Per-rank copies of every parameter: weights, gradients, optimizer state, DDP buckets. Under
// --zero 3 (at world > 1) the shards of the first three (1/N each) plus one block's
// transient buffers times four (two gathered blocks with prefetch, one block's .grad and its
// flat gradient), or, while the model is built whole before it is sharded, one whole copy
// and one block.
double parameter_copies(const Args& a, int64_t world, double parameters) {
  const double optimizer = a.optimizer == "adamw" ? 2 : 1;
  if (a.zero < 3 || world == 1) return 2 + optimizer + (world > 1 ? 1 : 0);
  const double C = double(a.width);
  // An MLP has no Block: all of it is the root unit.
  const double block = a.model == "mlp" ? parameters : 12 * C * C + 13 * C;
  const double block_share = std::min(1.0, block / std::max(parameters, 1.0));
  return std::max(1 + block_share, (2 + optimizer) / double(world) + 4 * block_share);
}
}  // namespace

// The cap, default 3/4 of the smallest memory limit in force (RAM, RLIMIT_AS, the cgroup's:
// core/memory_limits.h), named when it was not given.
void check_model_memory(const Args& a, int64_t vocab, int64_t context, int64_t world) {
  const double copies = parameter_copies(a, world, estimate_parameters(a, vocab, context));
  const double element = a.precision == "f64" ? 8 : 4;
  const double bytes = estimate_parameters(a, vocab, context) * element * copies;
  const double gib = double(1ull << 30);
  const std::string needs = "the model (" + fmt("%.4g", estimate_parameters(a, vocab, context)) +
                            " parameters) needs " + fmt("%.3g", bytes / gib) +
                            " GiB for weights, gradients and optimizer state, more than ";
  if (a.max_model_memory_gib > 0) {
    if (bytes > a.max_model_memory_gib * gib)
      fail(needs, "--max-model-memory ", fmt("%.3g", a.max_model_memory_gib), " GiB");
    return;
  }
  const std::vector<rg::MemoryLimit> limits = rg::memory_limits();  // smallest first
  if (bytes <= 0.75 * double(limits[0].bytes)) return;
  std::string all;
  for (const rg::MemoryLimit& l : limits)
    all += (all.empty() ? "" : ", ") + l.source + " " + rg::bytes_str(l.bytes);
  fail(needs, "3/4 of ", limits[0].source, " ", rg::bytes_str(limits[0].bytes),
       ", the smallest of this process's memory limits (", all,
       "); --max-model-memory GIB sets another cap");
}

rg::nn::SafetensorsContents load_checked(const std::string& path, const char* flag) {
  try {
    return rg::nn::parse_safetensors(rg::data::read_file(path, flag), path);
  } catch (const rg::Error& e) {
    fail(e.what());
  }
}

rg::nn::SafetensorsMetadata model_metadata(const Args& a, int64_t vocab, int64_t context) {
  if (a.model == "mlp")
    return {{"n_layer", std::to_string(a.layers)},
            {"n_embd", std::to_string(a.width)},
            {"vocab_size", std::to_string(vocab)},
            {"model", "mlp"}};
  auto md = rg::nn::gpt_metadata(gpt_config(a, vocab, context));
  md["model"] = "gpt";
  return md;
}

void load_into(rg::nn::Module& m, const rg::nn::SafetensorsMetadata& expected,
               const rg::nn::SafetensorsContents& file, const std::string& path) {
  check_metadata(expected, file.metadata, path);
  const rg::nn::StateDict own = m.state_dict();
  rg::nn::StateDict out;  // the file's entries the model has (a checkpoint's optim.* stay out)
  for (auto& [name, src] : file.tensors) {
    const rg::Tensor* t = own.find(name);
    if (!t) continue;
    if (src.shape() != t->shape())
      fail(path, ": tensor '", name, "' has shape ", shape_string(src.shape()),
           ", the model expects ", shape_string(t->shape()));
    const bool both_floating = rg::is_floating(src.dtype()) && rg::is_floating(t->dtype());
    if (src.dtype() != t->dtype() && !both_floating)
      fail(path, ": tensor '", name, "' has dtype ", rg::dtype_name(src.dtype()),
           ", the model expects ", rg::dtype_name(t->dtype()));
    out.insert(name, src.to(t->dtype()));
  }
  // Strict: a tied weight may be stored under one of its names; a missing tensor, or tied
  // copies that differ, is an error naming the keys.
  try {
    m.load_state_dict(out);
  } catch (const rg::Error& e) {
    fail(path, ": ", e.what());
  }
}

}  // namespace rgtrain
