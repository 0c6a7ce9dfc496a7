// GPT shape metadata; see gpt_metadata.h.
#include "nn/gpt_metadata.h"

namespace rg::nn {

SafetensorsMetadata gpt_metadata(const GPTConfig& c) {
  return {{"n_layer", std::to_string(c.n_layer)},
          {"n_head", std::to_string(c.n_head)},
          {"n_embd", std::to_string(c.n_embd)},
          {"vocab_size", std::to_string(c.vocab_size)},
          {"block_size", std::to_string(c.block_size)}};
}

std::vector<MetadataMismatch> metadata_mismatches(const SafetensorsMetadata& file,
                                                  const SafetensorsMetadata& expected) {
  std::vector<MetadataMismatch> out;
  for (const auto& [field, value] : expected) {
    auto it = file.find(field);
    if (it != file.end() && it->second != value) out.push_back({field, it->second, value});
  }
  return out;
}

void check_gpt_metadata(const SafetensorsMetadata& file, const GPTConfig& config,
                        const std::string& source) {
  const auto bad = metadata_mismatches(file, gpt_metadata(config));
  if (bad.empty()) return;
  std::string msg = source + ": the file's metadata does not match the model:";
  for (const auto& m : bad)
    msg += " " + m.field + " is " + m.in_file + " in the file, " + m.expected + " in the model;";
  msg.pop_back();
  throw Error(msg);
}

}  // namespace rg::nn
