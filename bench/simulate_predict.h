// bench/simulate --predict: GPT-2 124M data-parallel at 8-1024 GPUs under stated link
// figures (docs/scale.md): all-reduce per algorithm, the bucket cap that hides the most
// communication, and the step time.
#pragma once

#include <CLI/CLI.hpp>
#include <vector>

namespace rg::sim {

struct PredictConfig {
  std::vector<int> gpus{8, 16, 64, 256, 1024};
  int per_node = 8;
  double grad_bytes = 4;         // f32 gradients (bf16: 2)
  double nvlink_gbps = 450;      // GB/s per direction per GPU (NVLink4: 900 bidirectional)
  double nvlink_alpha_us = 1.0;  // per ring step within a node
  double nic_gbit = 400;         // Gbit/s per GPU between nodes (one NIC per GPU)
  double nic_alpha_us = 5.0;     // per ring step between nodes
  double gpu_reduce_gbps = 0;    // GB/s reduced; 0: fused into the copy kernel (NCCL)
  double tokens = 16 * 1024;     // per GPU per step
  double tflops = 400;           // achieved dense bf16 TFLOP/s per GPU (~40% of 989)
  double optimizer_ms = 1.2;     // AdamW over 124M f32 parameters
  double bucket_cap_mb = 25;     // PyTorch's default
  std::vector<double> caps_mb{1, 5, 10, 25, 50, 100, 200, 500};
};

void add_predict_options(CLI::App& app, PredictConfig& c);
void run_predict(const PredictConfig& c);

}  // namespace rg::sim
