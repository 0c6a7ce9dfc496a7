// Loading HuggingFace GPT-2-layout files; see gpt2_loader.h.
#include "nn/gpt2_loader.h"

#include <algorithm>
#include <cstdlib>

#include "nn/gpt_metadata.h"

namespace rg::nn {
namespace {

bool ends_with(const std::string& s, const std::string& tail) {
  return s.size() >= tail.size() && s.compare(s.size() - tail.size(), tail.size(), tail) == 0;
}

bool is_conv1d_weight(const std::string& name) {
  return ends_with(name, ".c_attn.weight") || ends_with(name, ".c_proj.weight") ||
         ends_with(name, ".c_fc.weight");
}

// HF names -> ringgrad's, Conv1D weights transposed, mask buffers dropped.
StateDict map_names(const SafetensorsContents& file, const std::string& source) {
  StateDict out;
  for (const auto& [hf_name, t] : file.tensors) {
    std::string name = hf_name.rfind("transformer.", 0) == 0 ? hf_name.substr(12) : hf_name;
    if (ends_with(name, ".attn.bias") || ends_with(name, ".attn.masked_bias")) continue;
    if (name != "lm_head.weight") name = "transformer." + name;
    if (!is_conv1d_weight(name)) {
      out.insert(name, t);
      continue;
    }
    RG_CHECK(t.dim() == 2, source, ": Conv1D weight '", hf_name, "' has shape ",
             shape_str(t.shape()), ", expected 2 dimensions [in, out]");
    out.insert(name, t.t().contiguous());
  }
  return out;
}

int64_t layer_count(const StateDict& dict) {
  int64_t n = 0;
  const std::string prefix = "transformer.h.";
  for (const auto& [name, t] : dict)
    if (name.rfind(prefix, 0) == 0)
      n = std::max<int64_t>(n, std::atoll(name.c_str() + prefix.size()) + 1);
  return n;
}

int64_t head_count(const SafetensorsContents& file, int64_t n_head, const std::string& source) {
  if (n_head > 0) return n_head;
  auto it = file.metadata.find("n_head");
  RG_CHECK(it != file.metadata.end(), source,
           ": the number of attention heads is not in the file's metadata (no 'n_head'); pass "
           "it to load_gpt2 (it is in the model's config.json; GPT-2 124M has 12)");
  char* end = nullptr;
  const long long v = std::strtoll(it->second.c_str(), &end, 10);
  RG_CHECK(!it->second.empty() && *end == '\0' && v > 0, source, ": metadata n_head is '",
           it->second, "', not a positive integer");
  return v;
}

GPTConfig infer_config(const SafetensorsContents& file, const StateDict& dict, int64_t n_head,
                       const std::string& source) {
  for (const char* name : {"transformer.wte.weight", "transformer.wpe.weight"})
    RG_CHECK(dict.contains(name) && dict.at(name).dim() == 2, source, ": no 2-D tensor '",
             std::string(name).substr(12), "' (is this a GPT-2-layout file?)");
  GPTConfig c;
  c.vocab_size = dict.at("transformer.wte.weight").size(0);
  c.n_embd = dict.at("transformer.wte.weight").size(1);
  c.block_size = dict.at("transformer.wpe.weight").size(0);
  c.n_layer = layer_count(dict);
  c.n_head = head_count(file, n_head, source);
  c.bias = dict.contains("transformer.ln_f.bias");
  c.dropout = 0;
  c.gelu_approximate = "tanh";
  RG_CHECK(c.n_layer > 0, source, ": no blocks (no 'h.0.' tensors)");
  RG_CHECK(c.n_embd % c.n_head == 0, source, ": width ", c.n_embd, " (wte) is not a multiple of ",
           c.n_head, " heads");
  return c;
}

}  // namespace

std::shared_ptr<GPT> gpt2_from_safetensors(const SafetensorsContents& file, int64_t n_head,
                                           const std::string& source) {
  const StateDict dict = map_names(file, source);
  const GPTConfig config = infer_config(file, dict, n_head, source);
  check_gpt_metadata(file.metadata, config, source);
  auto model = std::make_shared<GPT>(config);
  try {
    model->load_state_dict(dict);
  } catch (const Error& e) {
    throw Error(source + ": " + e.what());
  }
  return model;
}

std::shared_ptr<GPT> load_gpt2(const std::string& path, int64_t n_head) {
  return gpt2_from_safetensors(load_safetensors(path), n_head, path);
}

}  // namespace rg::nn
