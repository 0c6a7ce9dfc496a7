// A GPT's shape as safetensors metadata, so a file says which model it holds:
//   n_layer, n_head, n_embd, vocab_size, block_size (nanoGPT's GPTConfig names), as decimal
//   integers. n_head is the one field the tensors' shapes cannot tell.
// A reader compares the fields a file has with its model's; a file without them (older
// rgtrain checkpoints, HuggingFace files) is checked by its tensors' shapes only.
#pragma once
#include <string>
#include <vector>

#include "nn/gpt.h"
#include "nn/safetensors.h"

namespace rg::nn {

SafetensorsMetadata gpt_metadata(const GPTConfig& config);

struct MetadataMismatch {
  std::string field, in_file, expected;
};

// The fields present in both `file` and `expected` whose values differ, in `expected`'s order.
std::vector<MetadataMismatch> metadata_mismatches(const SafetensorsMetadata& file,
                                                  const SafetensorsMetadata& expected);

// Throws one rg::Error naming `source`, each differing field and both values.
void check_gpt_metadata(const SafetensorsMetadata& file, const GPTConfig& config,
                        const std::string& source);

}  // namespace rg::nn
