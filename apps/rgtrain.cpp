// rgtrain: trains a GPT (or an MLP) with data-parallel SGD/AdamW, gradient accumulation,
// checkpoints that resume bit for bit, and a single-process reference check (--verify).
// Run `rgtrain --help` for the flags; under rgrun every rank runs this same program.
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <memory>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "core/error.h"
#include "core/parallel.h"
#include "data/addition_dataset.h"
#include "data/char_dataset.h"
#include "data/distributed_sampler.h"
#include "data/token_bin_dataset.h"
#include "dist/init.h"
#include "dist/trace.h"
#include "nn/ddp.h"
#include "nn/nn.h"
#include "nn/safetensors.h"
#include "ringgrad.h"

namespace {

using Clock = std::chrono::steady_clock;

struct UsageError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

template <typename... A>
[[noreturn]] void fail(const A&... parts) {
  std::ostringstream os;
  (os << ... << parts);
  throw UsageError(os.str());
}

struct Args {
  std::string model = "gpt";
  int64_t layers = 2, heads = 4, width = 64, context = 0, vocab = 0, digits = 2;
  std::string device = "cpu";
  int64_t global_batch = 64, micro_batch = 8, steps = 1200, warmup = 100;
  double lr = 3e-3, weight_decay = 0.1, clip = 1.0;
  std::string optimizer = "adamw";
  uint64_t seed = 1337;
  int64_t eval_every = 250;
  double bucket_cap_mb = 25;
  bool no_overlap = false, grad_view = false, resume = false, verify = false;
  std::string trace, checkpoint, init, metrics, data;
  int64_t checkpoint_every = 0, threads = 0, print_every = 50, stop_after = 0;
  std::vector<std::string> compare;  // --compare A B
};

const char* kHelp =
    "usage: rgtrain [flags]\n"
    "  --model gpt|mlp --layers N --heads N --width N --context N --vocab N --digits N\n"
    "  --device cpu|sim|cuda --global-batch N --micro-batch N --steps N --lr X --warmup N\n"
    "  --weight-decay X --optimizer adamw|sgd --clip X (0: off) --seed N --eval-every N\n"
    "  --print-every N --bucket-cap-mb X --no-overlap --grad-as-bucket-view --trace FILE\n"
    "  --checkpoint DIR --checkpoint-every N --resume --init FILE --threads N\n"
    "  --stop-after N (simulate an interruption: save and exit after step N)\n"
    "  --metrics FILE.jsonl --verify --data FILE.txt|FILE.bin --compare A B\n";

int64_t parse_int(const std::string& flag, const std::string& v, int64_t lo) {
  size_t pos = 0;
  long long x = 0;
  try {
    x = std::stoll(v, &pos);
  } catch (...) {
    pos = 0;
  }
  if (v.empty() || pos != v.size()) fail(flag, " expects an integer, got '", v, "'");
  if (x < lo) fail(flag, " must be >= ", lo, ", got ", x);
  return x;
}

double parse_double(const std::string& flag, const std::string& v, double lo) {
  size_t pos = 0;
  double x = 0;
  try {
    x = std::stod(v, &pos);
  } catch (...) {
    pos = 0;
  }
  if (v.empty() || pos != v.size() || !std::isfinite(x))
    fail(flag, " expects a number, got '", v, "'");
  if (x < lo) fail(flag, " must be >= ", lo, ", got ", v);
  return x;
}

Args parse_args(int argc, char** argv) {
  Args a;
  std::map<std::string, bool*> switches = {{"--no-overlap", &a.no_overlap},
                                           {"--grad-as-bucket-view", &a.grad_view},
                                           {"--resume", &a.resume},
                                           {"--verify", &a.verify}};
  std::map<std::string, int64_t*> ints = {
      {"--layers", &a.layers},         {"--heads", &a.heads},
      {"--width", &a.width},           {"--context", &a.context},
      {"--vocab", &a.vocab},           {"--digits", &a.digits},
      {"--global-batch", &a.global_batch}, {"--micro-batch", &a.micro_batch},
      {"--steps", &a.steps},           {"--warmup", &a.warmup},
      {"--eval-every", &a.eval_every}, {"--checkpoint-every", &a.checkpoint_every},
      {"--threads", &a.threads},       {"--print-every", &a.print_every},
      {"--stop-after", &a.stop_after}};
  std::map<std::string, double*> doubles = {{"--lr", &a.lr},
                                            {"--weight-decay", &a.weight_decay},
                                            {"--clip", &a.clip},
                                            {"--bucket-cap-mb", &a.bucket_cap_mb}};
  std::map<std::string, std::string*> strings = {
      {"--model", &a.model},   {"--device", &a.device},     {"--optimizer", &a.optimizer},
      {"--trace", &a.trace},   {"--checkpoint", &a.checkpoint}, {"--init", &a.init},
      {"--metrics", &a.metrics}, {"--data", &a.data}};
  for (int i = 1; i < argc; ++i) {
    std::string flag = argv[i], value;
    auto eq = flag.find('=');
    bool has_value = false;
    if (flag.rfind("--", 0) == 0 && eq != std::string::npos) {
      value = flag.substr(eq + 1);
      flag = flag.substr(0, eq);
      has_value = true;
    }
    if (flag == "--help" || flag == "-h") {
      std::cout << kHelp;
      std::exit(0);
    }
    if (flag == "--compare") {
      if (i + 2 >= argc) fail("--compare expects two files");
      a.compare = {argv[i + 1], argv[i + 2]};
      i += 2;
      continue;
    }
    if (auto s = switches.find(flag); s != switches.end()) {
      if (has_value) fail(flag, " takes no value");
      *s->second = true;
      continue;
    }
    bool known = ints.count(flag) || doubles.count(flag) || strings.count(flag) ||
                 flag == "--seed";
    if (!known) fail("unknown flag '", argv[i], "' (see --help)");
    if (!has_value) {
      if (i + 1 >= argc) fail(flag, " expects a value");
      value = argv[++i];
    }
    if (auto it = ints.find(flag); it != ints.end()) {
      *it->second = parse_int(flag, value, 0);
    } else if (auto d = doubles.find(flag); d != doubles.end()) {
      *d->second = parse_double(flag, value, 0);
    } else if (flag == "--seed") {
      a.seed = uint64_t(parse_int(flag, value, 0));
    } else {
      *strings.at(flag) = value;
    }
  }
  if (a.model != "gpt" && a.model != "mlp") fail("--model must be gpt or mlp, got '", a.model, "'");
  if (a.optimizer != "adamw" && a.optimizer != "sgd")
    fail("--optimizer must be adamw or sgd, got '", a.optimizer, "'");
  if (a.steps < 1) fail("--steps must be >= 1");
  if (a.global_batch < 1 || a.micro_batch < 1) fail("--global-batch and --micro-batch must be >= 1");
  if (a.layers < 1 || a.heads < 1 || a.width < 1) fail("--layers, --heads, --width must be >= 1");
  if (a.width % a.heads != 0) fail("--width (", a.width, ") must be a multiple of --heads (", a.heads, ")");
  if (a.digits < 1 || a.digits > 9) fail("--digits must be in 1..9");
  if (a.resume && a.checkpoint.empty()) fail("--resume needs --checkpoint DIR");
  if (a.resume && !a.init.empty()) fail("--resume and --init are exclusive");
  return a;
}

std::string shape_string(const rg::Shape& s) {
  std::string out = "[";
  for (size_t i = 0; i < s.size(); ++i) out += (i ? ", " : "") + std::to_string(s[i]);
  return out + "]";
}

// ---------------------------------------------------------------------------------- data

struct Data {
  std::unique_ptr<rg::data::Dataset> train, held_out;
  const rg::data::AdditionDataset* addition = nullptr;  // held-out addition set, if any
  const rg::data::CharDataset* chars = nullptr;
};

Data make_data(const Args& a) {
  Data d;
  if (a.data.empty()) {
    rg::data::AdditionConfig c;
    c.digits = a.digits;
    c.seed = a.seed;
    c.size = 20000;
    d.train = std::make_unique<rg::data::AdditionDataset>(c, rg::data::Split::train);
    auto h = std::make_unique<rg::data::AdditionDataset>(c, rg::data::Split::held_out);
    d.addition = h.get();
    d.held_out = std::move(h);
    return d;
  }
  namespace fs = std::filesystem;
  std::error_code ec;
  if (!fs::exists(a.data, ec)) fail("data file '", a.data, "' does not exist");
  if (fs::is_directory(a.data, ec)) fail("data file '", a.data, "' is a directory");
  if (fs::file_size(a.data, ec) == 0) fail("data file '", a.data, "' is empty");
  int64_t T = a.context > 0 ? a.context : 64;
  auto ends_with = [&](const std::string& suffix) {
    return a.data.size() >= suffix.size() &&
           a.data.compare(a.data.size() - suffix.size(), suffix.size(), suffix) == 0;
  };
  if (ends_with(".bin")) {
    int64_t vocab = a.vocab > 0 ? a.vocab : 50257;
    d.train = std::make_unique<rg::data::TokenBinDataset>(a.data, T, vocab);
    d.held_out = std::make_unique<rg::data::TokenBinDataset>(a.data, T, vocab);
  } else {
    auto tr = std::make_unique<rg::data::CharDataset>(a.data, T, 0, rg::data::TextRange{0, 0.9});
    d.held_out = std::make_unique<rg::data::CharDataset>(a.data, T, 0, rg::data::TextRange{0.9, 1});
    d.chars = tr.get();
    d.train = std::move(tr);
  }
  return d;
}

std::pair<rg::Tensor, rg::Tensor> gather(const rg::data::Dataset& ds,
                                         const std::vector<int64_t>& idx, rg::Device device) {
  int64_t T = ds.context_length(), B = int64_t(idx.size());
  std::vector<int64_t> x(size_t(B * T)), y(size_t(B * T));
  for (int64_t i = 0; i < B; ++i) {
    auto ex = ds.get(idx[size_t(i)]);
    std::copy(ex.input.begin(), ex.input.end(), x.begin() + i * T);
    std::copy(ex.target.begin(), ex.target.end(), y.begin() + i * T);
  }
  auto X = rg::from_blob(x.data(), {B, T}, rg::DType::i64).clone();
  auto Y = rg::from_blob(y.data(), {B, T}, rg::DType::i64).clone();
  if (device != rg::kCPU) {
    X = X.to(device);
    Y = Y.to(device);
  }
  return {X, Y};
}

// The data order: a pure function of (seed, step). Rank r's examples of step s are
// positions [off, off + per_rank) of its DistributedSampler shard for epoch s / per_epoch.
class Schedule {
 public:
  Schedule(int64_t n, int64_t world, int64_t per_rank, uint64_t seed)
      : world_(world), per_rank_(per_rank) {
    for (int64_t r = 0; r < world; ++r) {
      rg::data::SamplerOptions o;
      o.world_size = world;
      o.rank = r;
      o.seed = seed;
      samplers_.emplace_back(n, o);
    }
    per_epoch_ = samplers_[0].num_samples() / per_rank;
    if (per_epoch_ < 1)
      fail("the dataset has ", n, " examples, fewer than one global batch (", world * per_rank, ")");
    cache_.resize(size_t(world));
    cached_epoch_.assign(size_t(world), -1);
  }
  int64_t epoch_of(int64_t step) const { return step / per_epoch_; }
  int64_t offset_of(int64_t step) const { return (step % per_epoch_) * per_rank_; }
  // Rank r's indices of micro-batch [begin, begin+count) within its part of step `step`.
  std::vector<int64_t> indices(int64_t rank, int64_t step, int64_t begin, int64_t count) {
    int64_t e = epoch_of(step);
    auto& s = samplers_[size_t(rank)];
    if (cached_epoch_[size_t(rank)] != e) {
      s.set_epoch(e);
      cache_[size_t(rank)] = s.indices();
      cached_epoch_[size_t(rank)] = e;
    }
    auto& c = cache_[size_t(rank)];
    int64_t off = offset_of(step) + begin;
    return {c.begin() + off, c.begin() + off + count};
  }

 private:
  int64_t world_, per_rank_, per_epoch_ = 0;
  std::vector<rg::data::DistributedSampler> samplers_;
  std::vector<std::vector<int64_t>> cache_;
  std::vector<int64_t> cached_epoch_;
};

// ---------------------------------------------------------------------------------- model

struct MlpLM : rg::nn::Module {
  // Minimal "mlp" language model: embedding of each token -> MLP -> logits (no context).
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

std::shared_ptr<rg::nn::Module> make_model(const Args& a, int64_t vocab, int64_t context) {
  if (a.model == "mlp") return std::make_shared<MlpLM>(vocab, a.width, a.layers, a.seed);
  rg::nn::GPTConfig c;
  c.vocab_size = vocab;
  c.block_size = context;
  c.n_layer = a.layers;
  c.n_head = a.heads;
  c.n_embd = a.width;
  c.dropout = 0;
  c.seed = a.seed;
  return std::make_shared<rg::nn::GPT>(c);
}

std::unique_ptr<rg::optim::Optimizer> make_optimizer(const Args& a, rg::nn::Module& m) {
  // nanoGPT: weight decay on matrices only.
  std::vector<rg::optim::ParamGroup> groups(2);
  for (auto& p : m.parameters()) groups[p.dim() >= 2 ? 0 : 1].params.push_back(p);
  groups[1].weight_decay = 0.0;
  if (a.optimizer == "adamw") {
    rg::optim::AdamWOptions o;
    o.lr = a.lr;
    o.beta2 = 0.99;
    o.weight_decay = a.weight_decay;
    return std::make_unique<rg::optim::AdamW>(groups, o);
  }
  rg::optim::SGDOptions o;
  o.lr = a.lr;
  o.momentum = 0.9;
  o.weight_decay = a.weight_decay;
  return std::make_unique<rg::optim::SGD>(groups, o);
}

std::string config_string(const Args& a, int64_t world, int64_t vocab, int64_t context) {
  std::ostringstream os;
  os << "model=" << a.model << " layers=" << a.layers << " heads=" << a.heads
     << " width=" << a.width << " vocab=" << vocab << " context=" << context
     << " data=" << (a.data.empty() ? "addition" + std::to_string(a.digits) : a.data)
     << " optimizer=" << a.optimizer << " global_batch=" << a.global_batch
     << " micro_batch=" << a.micro_batch << " world=" << world << " seed=" << a.seed;
  return os.str();
}

// Copies `file`'s tensors into `dict` entries of the same names; throws one line naming the
// first tensor that is missing or has another shape.
void load_into(rg::nn::Module& m, const rg::nn::SafetensorsContents& file, const std::string& path,
               const std::string& prefix = "") {
  std::map<std::string, const rg::Tensor*> by_name;
  for (auto& [n, t] : file.tensors) by_name[n] = &t;
  rg::nn::StateDict out;
  for (auto& [name, t] : m.state_dict()) {
    auto it = by_name.find(prefix + name);
    if (it == by_name.end()) fail(path, ": tensor '", prefix + name, "' is missing");
    if (it->second->shape() != t.shape())
      fail(path, ": tensor '", prefix + name, "' has shape ", shape_string(it->second->shape()),
           ", the model expects ", shape_string(t.shape()));
    out.insert(name, it->second->to(t.dtype()));
  }
  m.load_state_dict(out);
}

// ---------------------------------------------------------------------------------- main

double now_s() {
  return std::chrono::duration<double>(Clock::now().time_since_epoch()).count();
}

std::string fmt(const char* f, double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, f, v);
  return buf;
}

std::string hms(double s) {
  int t = int(std::max(0.0, s));
  char buf[32];
  std::snprintf(buf, sizeof buf, "%d:%02d", t / 60, t % 60);
  return buf;
}

int compare_files(const std::string& a, const std::string& b) {
  auto A = rg::nn::load_safetensors(a), B = rg::nn::load_safetensors(b);
  if (A.tensors.size() != B.tensors.size()) fail("compare: tensor counts differ");
  for (size_t i = 0; i < A.tensors.size(); ++i) {
    auto& [na, ta] = A.tensors[i];
    auto& [nb, tb] = B.tensors[i];
    if (na != nb) fail("compare: tensor ", i, " is '", na, "' vs '", nb, "'");
    if (ta.shape() != tb.shape() || ta.dtype() != tb.dtype() || !rg::equal(ta, tb)) {
      std::cout << "compare: tensor '" << na << "' differs\n";
      return 1;
    }
  }
  std::cout << "compare: " << A.tensors.size() << " tensors bit-identical\n";
  return 0;
}

int run(const Args& a) {
  if (!a.compare.empty()) return compare_files(a.compare[0], a.compare[1]);
  const double t_start = now_s();
  std::shared_ptr<rg::dist::ProcessGroup> group;
  int64_t world = 1, rank = 0;
  if (std::getenv("WORLD_SIZE")) {
    group = rg::dist::init_process_group("tcp");
    world = group->size();
    rank = group->rank();
  }
  if (a.threads > 0)
    rg::set_num_threads(int(a.threads));
  else if (world > 1)
    rg::set_num_threads(1);  // one thread per rank: the ranks share the cores
  const bool lead = rank == 0;
  if (a.global_batch % (world * a.micro_batch) != 0) {
    std::ostringstream ok;
    int shown = 0;
    for (int64_t m = 1; m <= a.global_batch && shown < 6; ++m)
      if (a.global_batch % (world * m) == 0) ok << (shown++ ? ", " : "") << m;
    fail("--global-batch ", a.global_batch, " is not a multiple of world (", world,
         ") x --micro-batch (", a.micro_batch, "); micro-batches that divide it: ",
         shown ? ok.str() : std::string("none (make --global-batch a multiple of ") +
                                std::to_string(world) + ")");
  }
  const int64_t accum = a.global_batch / (world * a.micro_batch);
  const int64_t per_rank = accum * a.micro_batch;
  rg::Device device(a.device);

  Data data = make_data(a);
  const int64_t T = data.train->context_length();
  int64_t vocab = data.train->vocab_size();
  if (a.vocab > 0) {
    if (a.vocab < vocab) fail("--vocab ", a.vocab, " is smaller than the data's ", vocab);
    vocab = a.vocab;
  }
  if (a.context > 0 && a.context < T) fail("--context ", a.context, " is shorter than the data's ", T);
  const int64_t context = std::max(a.context, T);

  auto model = make_model(a, vocab, context);
  model->to(device);
  const std::string config = config_string(a, world, vocab, context);
  std::string ckpt_path = a.checkpoint.empty() ? "" : a.checkpoint + "/ckpt.safetensors";
  if (!a.init.empty()) load_into(*model, rg::nn::load_safetensors(a.init), a.init);

  auto opt = make_optimizer(a, *model);
  int64_t start_step = 0;
  if (a.resume) {
    auto file = rg::nn::load_safetensors(ckpt_path);
    auto md = file.metadata;
    if (md["config"] != config)
      fail(ckpt_path, ": written with config '", md["config"], "', this run has '", config, "'");
    load_into(*model, file, ckpt_path);
    rg::nn::StateDict od;
    for (auto& [n, t] : file.tensors)
      if (n.rfind("optim.", 0) == 0) od.insert(n.substr(6), t.to(device));
    opt->load_state_dict(od);
    start_step = parse_int("checkpoint step", md["step"], 0);
    if (start_step > a.steps) fail(ckpt_path, ": at step ", start_step, ", beyond --steps ", a.steps);
  }
  // The initial weights (after DDP's broadcast they equal rank 0's) for --verify.
  std::vector<rg::Tensor> initial;

  std::unique_ptr<rg::nn::DistributedDataParallel> ddp;
  std::shared_ptr<rg::dist::TraceRecorder> trace;
  if (group) {
    rg::nn::DDPOptions o;
    o.bucket_cap_mb = a.bucket_cap_mb;
    o.overlap = !a.no_overlap;
    o.gradient_as_bucket_view = a.grad_view;
    if (!a.trace.empty()) o.trace = trace = std::make_shared<rg::dist::TraceRecorder>();
    ddp = std::make_unique<rg::nn::DistributedDataParallel>(model, *group, o);
  }
  for (auto& p : model->parameters()) initial.push_back(p.detach().clone());

  Schedule sched(data.train->size(), world, per_rank, a.seed);
  rg::optim::WarmupCosineSchedule lr_of{a.lr, a.lr / 10, std::min(a.warmup, a.steps - 1), a.steps};
  auto params = model->parameters();

  auto save = [&](int64_t step) {
    if (!lead || ckpt_path.empty()) return;
    std::filesystem::create_directories(a.checkpoint);
    rg::nn::NamedTensors ts;
    for (auto& [n, t] : model->state_dict()) ts.emplace_back(n, t);
    for (auto& [n, t] : opt->state_dict()) ts.emplace_back("optim." + n, t);
    rg::nn::SafetensorsMetadata md;
    md["step"] = std::to_string(step);
    md["config"] = config;
    md["data_epoch"] = std::to_string(sched.epoch_of(step));
    md["data_offset"] = std::to_string(sched.offset_of(step));
    md["rng"] = "seed=" + std::to_string(a.seed) + " (data order is a function of seed, step)";
    rg::nn::save_safetensors(ckpt_path, ts, md);
  };

  std::ofstream metrics;
  if (lead && !a.metrics.empty()) {
    metrics.open(a.metrics, start_step > 0 ? std::ios::app : std::ios::trunc);
    if (!metrics) fail("cannot write metrics file '", a.metrics, "'");
  }
  auto logits_fn = [&](const rg::Tensor& idx) { return model->forward(idx); };
  auto eval_accuracy = [&](int64_t n) {
    model->eval();
    double acc = rg::data::exact_match_accuracy(*data.addition, logits_fn, 256, n, device);
    model->train();
    return acc;
  };

  const bool tty = isatty(1);
  if (lead)
    std::cout << "rgtrain: " << config << " | accum " << accum << " | params "
              << model->num_parameters() << " | steps " << start_step << "->" << a.steps << "\n"
              << std::flush;
  double last_loss = 0, tokens_total = 0, train_seconds = 0;
  for (int64_t step = start_step; step < a.steps; ++step) {
    const double t0 = now_s();
    // Counted targets of the whole global batch (every rank's micro-batches).
    double global_count = 0;
    for (int64_t r = 0; r < world; ++r)
      for (int64_t i : sched.indices(r, step, 0, per_rank))
        for (int64_t t : data.train->get(i).target) global_count += t != rg::data::kIgnoreIndex;
    const double denom = std::max(1.0, global_count) / double(world);
    const double lr = lr_of(step);
    opt->set_lr(lr);
    opt->zero_grad();
    double loss_sum = 0;
    for (int64_t k = 0; k < accum; ++k) {
      auto [x, y] = gather(*data.train, sched.indices(rank, step, k * a.micro_batch, a.micro_batch),
                           device);
      bool last = k + 1 == accum;
      auto guard = (ddp && !last) ? ddp->no_sync() : rg::nn::NoSyncGuard();
      if (ddp) ddp->pre_forward();
      rg::Tensor logits = model->forward(x);
      rg::Tensor loss = rg::cross_entropy(logits.reshape({-1, logits.size(-1)}), y.reshape({-1}),
                                          rg::Reduction::sum, rg::data::kIgnoreIndex);
      loss = rg::div(loss, rg::scalar_tensor(denom, loss.dtype(), loss.device()));
      loss.backward();
      loss_sum += loss.item();
    }
    double gnorm = a.clip > 0 ? rg::optim::clip_grad_norm_(params, a.clip)
                              : rg::optim::grad_norm(params);
    opt->step();
    const double dt = now_s() - t0;
    train_seconds += dt;
    last_loss = loss_sum;  // rank 0's share, scaled to the global mean's units
    const double tokens = double(a.global_batch * T);
    tokens_total += tokens;
    double comm = 0, hidden = 0;
    if (ddp) {
      comm = ddp->reducer().stats().comm_seconds;
      hidden = ddp->reducer().stats().hidden_seconds;
    }
    const int64_t done = step + 1;
    if (!ckpt_path.empty() && a.checkpoint_every > 0 && done % a.checkpoint_every == 0 &&
        done < a.steps)
      save(done);
    std::optional<double> acc;
    if (lead && data.addition && a.eval_every > 0 && done % a.eval_every == 0 && done < a.steps)
      acc = eval_accuracy(500);
    if (!lead) continue;
    const double eta = train_seconds / double(done - start_step) * double(a.steps - done);
    std::string line = "step " + std::to_string(done) + "/" + std::to_string(a.steps) +
                       " | loss " + fmt("%.4f", loss_sum) + " | lr " + fmt("%.2e", lr) + " | " +
                       fmt("%.0f", tokens / dt) + " tok/s | " + fmt("%.1f", dt * 1e3) +
                       " ms/step | comm " + fmt("%.1f", comm * 1e3) + " ms (" +
                       fmt("%.0f", comm > 0 ? 100 * hidden / comm : 0) + "% hidden) | ETA " +
                       hms(eta);
    if (acc) line += " | held-out acc " + fmt("%.3f", *acc);
    if (tty) {
      std::cout << "\r" << line << "\033[K" << (acc || done == a.steps ? "\n" : "") << std::flush;
    } else if (done % std::max<int64_t>(1, a.print_every) == 0 || done == a.steps || acc) {
      std::cout << line << "\n" << std::flush;
    }
    if (metrics) {
      metrics << "{\"step\":" << done << ",\"loss\":" << fmt("%.6g", loss_sum)
              << ",\"lr\":" << fmt("%.6g", lr) << ",\"grad_norm\":" << fmt("%.6g", gnorm)
              << ",\"ms\":" << fmt("%.3f", dt * 1e3)
              << ",\"tokens_per_s\":" << fmt("%.1f", tokens / dt)
              << ",\"comm_ms\":" << fmt("%.3f", comm * 1e3)
              << ",\"hidden_ms\":" << fmt("%.3f", hidden * 1e3);
      if (acc) metrics << ",\"held_out_acc\":" << fmt("%.4f", *acc);
      metrics << "}\n" << std::flush;
    }
    if (a.stop_after > 0 && done == a.stop_after && done < a.steps) {
      save(done);
      std::cout << "stopped after step " << done << " (--stop-after)\n";
      return 0;
    }
  }
  if (!ckpt_path.empty()) save(a.steps);
  if (trace) trace->write(a.trace);
  if (!lead) return 0;

  const double wall = now_s() - t_start;
  std::cout << "final loss " << fmt("%.4f", last_loss) << "\n";
  if (data.addition) {
    std::cout << "held-out exact-match accuracy " << fmt("%.4f", eval_accuracy(2000))
              << " (first 2000 held-out sums)\n";
    model->eval();
    auto seqs = rg::data::greedy_complete(*data.addition, logits_fn, {0, 1, 2}, device);
    for (size_t i = 0; i < seqs.size(); ++i) {
      auto p = data.addition->problem(int64_t(i));
      std::cout << "  sample: " << data.addition->decode(seqs[i]) << "   (true sum " << p.a + p.b
                << ")\n";
    }
  }
  std::cout << "wall time " << fmt("%.1f", wall) << " s, "
            << fmt("%.0f", train_seconds > 0 ? tokens_total / train_seconds : 0) << " tokens/s\n"
            << std::flush;

  if (a.verify) {
    if (start_step > 0) {
      std::cout << "verify: skipped (run was resumed; the reference starts from step 0)\n";
      return 0;
    }
    auto ref = make_model(a, vocab, context);
    ref->to(device);
    auto rp = ref->parameters();
    for (size_t i = 0; i < rp.size(); ++i) {
      rg::NoGradGuard ng;
      rp[i].copy_(initial[i]);
    }
    auto ropt = make_optimizer(a, *ref);
    for (int64_t step = 0; step < a.steps; ++step) {
      std::vector<int64_t> idx;
      for (int64_t r = 0; r < world; ++r) {
        auto part = sched.indices(r, step, 0, per_rank);
        idx.insert(idx.end(), part.begin(), part.end());
      }
      auto [x, y] = gather(*data.train, idx, device);
      ropt->set_lr(lr_of(step));
      ropt->zero_grad();
      rg::Tensor logits = ref->forward(x);
      rg::Tensor loss = rg::cross_entropy(logits.reshape({-1, logits.size(-1)}), y.reshape({-1}),
                                          rg::Reduction::mean, rg::data::kIgnoreIndex);
      loss.backward();
      if (a.clip > 0) rg::optim::clip_grad_norm_(rp, a.clip);
      ropt->step();
    }
    double max_abs = 0, scale = 0;
    for (size_t i = 0; i < rp.size(); ++i) {
      auto va = params[i].to_vector<double>(), vb = rp[i].to_vector<double>();
      for (size_t k = 0; k < va.size(); ++k) {
        max_abs = std::max(max_abs, std::abs(va[k] - vb[k]));
        scale = std::max(scale, std::abs(vb[k]));
      }
    }
    std::cout << "verify: max |param difference| = " << fmt("%.3e", max_abs)
              << " (relative " << fmt("%.3e", max_abs / std::max(scale, 1e-30)) << ", world "
              << world << ", accum " << accum << " vs one backward of " << a.global_batch << ")\n";
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    Args a = parse_args(argc, argv);
    return run(a);
  } catch (const std::exception& e) {
    std::string msg = e.what();
    std::replace(msg.begin(), msg.end(), '\n', ' ');
    const char* r = std::getenv("RANK");
    if (!r || std::string(r) == "0") std::cerr << "rgtrain: error: " << msg << "\n";
    return 2;
  }
}
