// rgtrain's configuration: every flag, parsed and range-checked with CLI11 (`rgtrain --help`
// lists each with its description and default), plus the checks between flags.
#pragma once
#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

namespace rgtrain {

// A mistake of the user's (a flag, a file, a disagreement between ranks): printed as one
// "rgtrain: error:" line, exit code 2.
struct UsageError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

struct Args {
  std::string model = "gpt";
  int64_t layers = 2, heads = 4, width = 64, context = 0, vocab = 0, digits = 2;
  std::string device = "cpu";
  int64_t global_batch = 64, micro_batch = 8, steps = 1200, warmup = 100;
  std::string memory_budget;  // empty: --micro-batch as given
  double lr = 3e-3, weight_decay = 0.1, clip = 1.0;
  // AdamW's betas and eps: PyTorch's defaults, but beta2 0.99 as nanoGPT's small
  // (shakespeare_char) configs; nanoGPT's GPT-2 runs use 0.95.
  double beta1 = 0.9, beta2 = 0.99, eps = 1e-8;
  std::string no_decay = "biases,norms";  // nanoGPT: embeddings decay (rg::optim::NoDecay)
  std::string optimizer = "adamw";
  uint64_t seed = 1337;
  int64_t eval_every = 250;
  double bucket_cap_mb = 25;
  std::string backend = "tcp";  // --backend: how the ranks talk (tcp: a store; mpi: mpirun's)
  int zero = 0;  // --zero: ZeRO stage (1: AdamW state sharded; 2: gradients too; 3: parameters
                 // too, nn/fsdp.h); --fsdp is --zero 3
  bool fsdp = false;
  bool fsdp_reshard_after_forward = true;  // --zero 3: free each block's weights after forward
  bool no_overlap = false, grad_view = false, verify = false;
  // --resume: "" (off), "always" (the checkpoint must exist) or "auto" (resume when one
  // exists, else start fresh: for rgrun --max-restarts).
  std::string resume;
  bool reset_optimizer = false, allow_nonfinite = false;
  bool tf32 = false;                    // TF32 tensor cores in f32 matmuls on cuda
  bool cuda_graphs = false;             // capture the step once, replay it (graph_step.h)
  bool checkpoint_activations = false;  // GPT: recompute each block in backward
  std::string precision = "f32";        // bf16: forward under autocast (ops/autocast.h); f64
  std::string reduce_dtype = "f32";     // bf16: DDP all-reduces gradients as bf16
  bool memory_report = false;           // print peak memory by category after steps 1 and 2
  double max_model_memory_gib = 0;      // 0: 3/4 of the smallest memory limit
  std::string trace, checkpoint, init, metrics, data;
  int64_t checkpoint_every = 0, threads = 0, print_every = 50, stop_after = 0;
  std::vector<std::string> compare;                           // --compare A B
  bool autocast_bf16() const { return precision == "bf16"; }  // forwards under AutocastGuard
};

// Parses argv. --help prints the help and exits 0; a bad flag throws UsageError.
Args parse_args(int argc, char** argv);

}  // namespace rgtrain
