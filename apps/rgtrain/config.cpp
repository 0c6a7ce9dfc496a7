// rgtrain's flags with CLI11; see config.h.
#include "apps/rgtrain/config.h"

#include <CLI/CLI.hpp>
#include <charconv>
#include <cmath>
#include <iostream>

#include "apps/rgtrain/util.h"
#include "core/atomic_file.h"
#include "core/error.h"
#include "dist/mpi_group.h"
#include "nn/optim/decay_groups.h"

namespace rgtrain {
namespace {

// A real number in [lo, hi]. CLI::Range alone lets "nan" through (every comparison with NaN is
// false), and "inf" where hi is infinite; this one refuses both. CLI11 puts the flag's name
// in front of the message.
CLI::Validator finite_in(double lo, double hi) {
  return CLI::Validator(
      [lo, hi](std::string& text) -> std::string {
        double v = 0;
        if (!CLI::detail::lexical_cast(text, v)) return "'" + text + "' is not a number";
        if (!std::isfinite(v) || v < lo || v > hi)
          return "'" + text + "' is not a finite number in [" + fmt("%g", lo) + ", " +
                 fmt("%g", hi) + "]";
        return "";
      },
      "FINITE in [" + fmt("%g", lo) + " - " + fmt("%g", hi) + "]");
}

// A whole decimal number in [0, 2^64 - 1]: no sign, no wrap-around of larger ones.
CLI::Validator unsigned_64() {
  return CLI::Validator(
      [](std::string& text) -> std::string {
        uint64_t v = 0;
        const char* end = text.data() + text.size();
        auto [at, ec] = std::from_chars(text.data(), end, v);
        if (text.empty() || ec != std::errc() || at != end)
          return "'" + text + "' is not a whole number in [0, 18446744073709551615]";
        return "";
      },
      "UINT64");
}

void add_model_flags(CLI::App& app, Args& a) {
  app.add_option("--model", a.model, "model: a GPT, or an MLP over single tokens")
      ->check(CLI::IsMember({"gpt", "mlp"}));
  app.add_option("--layers", a.layers, "transformer blocks (mlp: hidden layers)")
      ->check(CLI::Range(int64_t(1), int64_t(1) << 40));
  app.add_option("--heads", a.heads, "attention heads")
      ->check(CLI::Range(int64_t(1), int64_t(1) << 20));
  app.add_option("--width", a.width, "embedding width (a multiple of --heads)")
      ->check(CLI::Range(int64_t(1), int64_t(1) << 30));
  app.add_option("--context", a.context, "context length (0: the data's)")
      ->check(CLI::Range(int64_t(0), int64_t(1) << 30));
  app.add_option("--vocab", a.vocab, "vocabulary size (0: the data's)")
      ->check(CLI::Range(int64_t(0), int64_t(1) << 31));
  app.add_option("--digits", a.digits, "addition task: digits per operand")
      ->check(CLI::Range(1, 9));
  app.add_option("--device", a.device, "device: cpu, sim or cuda");
  app.add_flag("--tf32", a.tf32,
               "f32 matmuls on cuda may use TF32 tensor cores (10-bit mantissa products; "
               "PyTorch: torch.backends.cuda.matmul.allow_tf32, off by default as here); sim "
               "rounds the operands the same way; no effect on cpu");
  app.add_flag("--cuda-graphs", a.cuda_graphs,
               "sim and cuda: after 2 eager steps, capture the whole training step once as a "
               "graph and replay it each step (torch.cuda.graphs; the same bits); one process "
               "with AdamW only: refused with DDP (world > 1), --zero and --device cpu");
  app.add_flag("--checkpoint-activations", a.checkpoint_activations,
               "GPT: keep only each block's input between forward and backward and recompute "
               "the block in backward (torch.utils.checkpoint per block): less memory, about "
               "one more forward of compute, the same result");
  app.add_option("--precision", a.precision,
                 "f32; bf16 mixed precision: the weights, gradients and optimizer stay f32 "
                 "and the forward runs under autocast (matmuls in bf16; softmax, layer norm, "
                 "loss and reductions in f32; docs/nn.md has the table); or f64 throughout "
                 "(the f32 initial weights widened), for exactness checks")
      ->check(CLI::IsMember({"f32", "bf16", "f64"}));
  app.add_flag("--memory-report", a.memory_report,
               "after the first step, and after the second (the steady state), print the peak "
               "memory of each category (parameters, gradients, optimizer state, buckets, "
               "activations saved for backward, other) in each phase (forward, backward, "
               "optimizer step), and of the model state (parameters + gradients + optimizer "
               "state together); rank 0's process");
  app.add_option("--init", a.init, "start from the weights in this safetensors file");
  app.add_option("--data", a.data,
                 "train on a text file (.txt) or llm.c tokens (.bin) "
                 "instead of the addition task");
}

void add_optimizer_flags(CLI::App& app, Args& a) {
  app.add_option("--optimizer", a.optimizer, "optimizer (sgd: momentum 0.9)")
      ->check(CLI::IsMember({"adamw", "sgd"}));
  app.add_option("--beta1", a.beta1, "AdamW beta1 (PyTorch, nanoGPT: 0.9)")
      ->check(finite_in(0.0, 1.0));
  app.add_option("--beta2", a.beta2,
                 "AdamW beta2 (PyTorch 0.999; nanoGPT 0.99 for small models as here, 0.95 for "
                 "GPT-2)")
      ->check(finite_in(0.0, 1.0));
  app.add_option("--eps", a.eps, "AdamW epsilon (PyTorch: 1e-8)")->check(finite_in(0.0, 1.0));
  app.add_option("--weight-decay", a.weight_decay,
                 "weight decay (AdamW: decoupled) of every parameter not in --no-decay "
                 "(nanoGPT: 0.1; PyTorch AdamW: 0.01)")
      ->check(finite_in(0.0, 1e6));
  app.add_option("--no-decay", a.no_decay,
                 "parameters without weight decay: a comma-separated list of biases, norms "
                 "(LayerNorm), embeddings, or none (PyTorch: none; nanoGPT: biases,norms, "
                 "i.e. every tensor of >= 2 dimensions decays)");
}

void add_training_flags(CLI::App& app, Args& a) {
  const auto positive = CLI::Range(int64_t(1), int64_t(1) << 40);
  const auto non_negative = CLI::Range(int64_t(0), int64_t(1) << 40);
  app.add_option("--global-batch", a.global_batch, "examples per step, all ranks together")
      ->check(positive);
  app.add_option("--micro-batch", a.micro_batch, "examples per forward/backward on one rank")
      ->check(positive);
  app.add_option("--memory-budget", a.memory_budget,
                 "pick the largest micro-batch whose step fits this much memory per rank (e.g. "
                 "2GiB, 512MiB), measured by dry runs, and the accumulation that keeps "
                 "--global-batch (replaces --micro-batch; the same result as that --micro-batch)");
  app.add_option("--steps", a.steps, "optimizer steps")->check(positive);
  app.add_option("--warmup", a.warmup, "linear learning-rate warm-up steps")->check(non_negative);
  app.add_option("--lr", a.lr, "peak learning rate (cosine decay to lr/10)")
      ->check(finite_in(0.0, 1e6));
  app.add_option("--clip", a.clip, "gradient-norm clipping (0: off; nanoGPT: 1.0)")
      ->check(finite_in(0.0, 1e30));
  add_optimizer_flags(app, a);
  app.add_option("--seed", a.seed, "seed of the weights and the data order")->check(unsigned_64());
  app.add_option("--threads", a.threads, "CPU threads (0: all; 1 per rank under rgrun)")
      ->check(non_negative);
  app.add_flag("--allow-nonfinite", a.allow_nonfinite,
               "keep training when the loss or a weight is NaN or infinite");
  app.add_option("--max-model-memory", a.max_model_memory_gib,
                 "refuse models whose weights, gradients and optimizer state need more GiB "
                 "(0: 3/4 of the smallest of RAM, RLIMIT_AS and the cgroup's memory limit)")
      ->check(finite_in(0.0, 1e9));
}

void add_dist_flags(CLI::App& app, Args& a) {
  app.add_option("--backend", a.backend,
                 "how the ranks of a distributed run talk: tcp (rank and world from the "
                 "launcher's variables, RANK and WORLD_SIZE under rgrun or torchrun; rank 0 "
                 "hosts the store), or mpi (under mpirun or srun: rank and world from "
                 "MPI_COMM_WORLD, messages over MPI; needs a build with MPI)")
      ->check(CLI::IsMember({"tcp", "mpi"}));
  app.add_option("--bucket-cap-mb", a.bucket_cap_mb, "DDP gradient bucket size in MiB")
      ->check(finite_in(0.0, 1e6));
  app.add_option("--reduce-dtype", a.reduce_dtype,
                 "dtype of the gradients on the wire under DDP and --zero 3: f32, or bf16 (half "
                 "the bytes; PyTorch's bf16_compress_hook; the average is cast back to f32); "
                 "refused with --zero 1 and 2")
      ->check(CLI::IsMember({"f32", "bf16"}));
  app.add_flag("--no-overlap", a.no_overlap, "all-reduce after backward, not during it");
  app.add_flag("--grad-as-bucket-view", a.grad_view, "gradients are views into the buckets");
  app.add_option("--zero", a.zero,
                 "ZeRO stage: 1 shards the AdamW state across the ranks (gradients "
                 "reduce-scattered, parameters all-gathered); 2 also shards the gradients "
                 "(each .grad freed once in its bucket, each bucket kept as this rank's slice "
                 "between steps); each rank saves its optimizer shard beside the checkpoint, "
                 "and --resume reads them at any world size and either stage; 3 also shards "
                 "the parameters (PyTorch's FSDP: each GPT block's weights all-gathered for "
                 "its forward and again for its backward, gradients reduce-scattered as its "
                 "backward ends; checkpoints as stages 1 and 2: any stage resumes any)")
      ->check(CLI::Range(0, 3));
  app.add_flag("--fsdp", a.fsdp, "the same as --zero 3 (fully sharded data parallel)");
  app.add_option("--fsdp-reshard-after-forward", a.fsdp_reshard_after_forward,
                 "--zero 3: free each block's gathered weights after its forward and gather "
                 "them again for its backward (true), or keep them until its backward (false: "
                 "more memory, one all-gather fewer per block)");
  app.add_option("--trace", a.trace, "write a Chrome trace (all ranks in one file)");
}

void add_output_flags(CLI::App& app, Args& a) {
  const auto non_negative = CLI::Range(int64_t(0), int64_t(1) << 40);
  app.add_option("--checkpoint", a.checkpoint, "checkpoint directory (ckpt.safetensors)");
  app.add_option("--checkpoint-every", a.checkpoint_every, "save every N steps (0: at the end)")
      ->check(non_negative);
  app.add_flag("--resume{always}", a.resume,
               "continue from the checkpoint in --checkpoint DIR. --resume (or --resume always): "
               "it must exist; --resume auto: continue from it when it exists, else start fresh "
               "(saying so), as a job that rgrun --max-restarts starts again needs")
      ->expected(0, 1);
  app.add_flag("--reset-optimizer", a.reset_optimizer,
               "allow --resume from a checkpoint without optimizer state (fresh moments)");
  app.add_option("--stop-after", a.stop_after,
                 "simulate an interruption: save and exit after step N (0: off)")
      ->check(non_negative);
  app.add_option("--eval-every", a.eval_every, "held-out accuracy every N steps (0: off)")
      ->check(non_negative);
  app.add_option("--print-every", a.print_every, "progress line every N steps")
      ->check(non_negative);
  app.add_option("--metrics", a.metrics, "append one JSON line per step to this file");
  app.add_flag("--verify", a.verify, "compare with a single-process reference run at the end");
  app.add_option("--compare", a.compare, "compare two safetensors files bit for bit and exit")
      ->expected(2)
      ->configurable(false);
}

// At most 200 characters of `text`, each byte outside printable ASCII shown as '?' (a
// config file of random bytes must not put them on the terminal).
std::string printable(std::string text) {
  if (text.size() > 200) text = text.substr(0, 200) + "...";
  for (char& c : text)
    if (c < 0x20 || c > 0x7e) c = '?';
  return text;
}

// --resume's value; "true" and "false" are what --save-config files hold for it.
std::string resume_mode(const std::string& given) {
  if (given == "false" || given.empty()) return "";
  if (given == "true" || given == "always") return "always";
  if (given == "auto") return "auto";
  fail("--resume: '", given, "' is not a mode (always or auto; --resume alone means always)");
}

void check_together(const Args& a) {
  if (a.width % a.heads != 0)
    fail("--width (", a.width, ") must be a multiple of --heads (", a.heads, ")");
  const bool resume = !a.resume.empty();
  if (resume && a.checkpoint.empty()) fail("--resume needs --checkpoint DIR");
  if (resume && !a.init.empty()) fail("--resume and --init are exclusive");
  if (a.reset_optimizer && !resume) fail("--reset-optimizer needs --resume");
  if (a.cuda_graphs && a.device == "cpu")
    fail("--cuda-graphs needs --device sim or cuda (cpu has no streams to capture)");
  if (a.cuda_graphs && a.zero != 0)
    fail("--cuda-graphs with --zero ", a.zero, " is not supported (one process, no sharding)");
  if (a.cuda_graphs && a.optimizer != "adamw")
    fail("--cuda-graphs needs --optimizer adamw (its capturable step), got '", a.optimizer, "'");
  if (a.backend == "mpi" && !rg::dist::mpi_available())
    fail(
        "--backend mpi: this rgtrain was built without MPI (install libopenmpi-dev and "
        "openmpi-bin, then configure again; or use --backend tcp)");
  if (a.beta1 >= 1 || a.beta2 >= 1)
    fail("--beta1 (", a.beta1, ") and --beta2 (", a.beta2, ") must be below 1");
  try {
    rg::optim::parse_no_decay(a.no_decay);
  } catch (const rg::Error& e) {
    fail("--no-decay: ", e.what());
  }
}

}  // namespace

Args parse_args(int argc, char** argv) {
  Args a;
  CLI::App app{
      "rgtrain: trains a GPT (or an MLP) with data-parallel AdamW/SGD, gradient accumulation and "
      "checkpoints that resume bit for bit. Under rgrun every rank runs this program.",
      "rgtrain"};
  app.option_defaults()->always_capture_default();
  add_model_flags(app, a);
  add_training_flags(app, a);
  add_dist_flags(app, a);
  add_output_flags(app, a);
  app.set_config("--config", "", "read flags from this TOML file (as --save-config writes)");
  // A key that names no flag is an error, not ignored: a typo would silently keep the default.
  app.allow_config_extras(CLI::config_extras_mode::error);
  std::string save_config;
  app.add_option("--save-config", save_config, "write this run's flags to a TOML file and exit")
      ->configurable(false);
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp&) {
    std::cout << app.help();
    std::exit(0);
  } catch (const CLI::ConfigError& e) {
    fail("--config '", app.get_config_ptr()->as<std::string>(), "': ", printable(e.what()),
         " (not a flag of rgtrain; see --help)");
  } catch (const CLI::FileError& e) {
    fail("--config: ", e.what());
  } catch (const CLI::ParseError& e) {
    fail(e.what(), " (see --help)");
  }
  a.resume = resume_mode(a.resume);
  if (a.fsdp && a.zero != 0 && a.zero != 3)
    fail("--fsdp is --zero 3, but --zero ", a.zero, " given");
  if (a.fsdp) a.zero = 3;
  check_together(a);
  if (!save_config.empty()) {
    try {
      rg::write_file_atomically(save_config, app.config_to_str(/*default_also=*/true,
                                                               /*write_description=*/true));
    } catch (const rg::Error& e) {
      fail("--save-config: ", e.what());
    }
    std::cout << "rgtrain: flags written to " << save_config << "\n";
    std::exit(0);
  }
  return a;
}

}  // namespace rgtrain
