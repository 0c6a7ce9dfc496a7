// rgtrain's model and optimizer: construction, the memory check that runs before any
// allocation, and loading weights from a safetensors file with shape and dtype checks.
#pragma once
#include <memory>
#include <string>

#include "apps/rgtrain/config.h"
#include "nn/ddp.h"
#include "nn/fsdp.h"
#include "nn/nn.h"
#include "nn/safetensors.h"
#include "ringgrad.h"

namespace rgtrain {

std::shared_ptr<rg::nn::Module> make_model(const Args& a, int64_t vocab, int64_t context);
std::unique_ptr<rg::optim::Optimizer> make_optimizer(const Args& a, rg::nn::Module& m);
// --zero 1: ZeroAdamW over the DDP's buckets, with make_optimizer's groups and options.
std::unique_ptr<rg::optim::Optimizer> make_zero_optimizer(const Args& a,
                                                          rg::nn::DistributedDataParallel& ddp);
// --zero 3: FsdpAdamW over the FSDP's shards, with make_optimizer's groups and options.
std::unique_ptr<rg::optim::Optimizer> make_fsdp_optimizer(const Args& a,
                                                          rg::nn::FullyShardedDataParallel& fsdp);
// UsageError unless --zero's flags fit together (adamw, no bucket views).
void check_zero_flags(const Args& a);

// Parameters of make_model(a, vocab, context), counted from the shapes without building it.
double estimate_parameters(const Args& a, int64_t vocab, int64_t context);
// Throws UsageError "... needs X GiB ..." when weights, gradients, optimizer state (and,
// with world > 1, the DDP buckets) would exceed --max-model-memory, or without it 3/4 of the
// smallest memory limit in force (RAM, RLIMIT_AS, the cgroup's), which the error names.
void check_model_memory(const Args& a, int64_t vocab, int64_t context, int64_t world);

// Reads a safetensors file named by `flag` (--init, --resume), checking its kind and size
// first; errors name the flag and the file.
rg::nn::SafetensorsContents load_checked(const std::string& path, const char* flag);
// The shape of make_model(a, vocab, context) as safetensors metadata (model=gpt|mlp and
// nanoGPT's GPTConfig names, see nn/gpt_metadata.h), written into every checkpoint.
rg::nn::SafetensorsMetadata model_metadata(const Args& a, int64_t vocab, int64_t context);
// Checks the file's metadata against `expected`, m's model_metadata (a field that differs is an
// error naming it, both values and the flag), then copies the file's tensors into the model's
// entries of the same names (strictly; a tied weight may be stored under one of its names).
// Errors name the file and the tensor, and the shape or dtype that does not fit (integer data
// never becomes floating-point weights).
void load_into(rg::nn::Module& m, const rg::nn::SafetensorsMetadata& expected,
               const rg::nn::SafetensorsContents& file, const std::string& path);

}  // namespace rgtrain
