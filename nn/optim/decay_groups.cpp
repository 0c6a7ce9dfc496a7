// Splitting parameters into decayed and undecayed groups; see decay_groups.h.
#include "nn/optim/decay_groups.h"

#include <sstream>
#include <unordered_set>

namespace rg::optim {
namespace {

// Depth first in registration order, as Module::parameters(), so a tied tensor is classified
// by its first owner (GPT's wte, not lm_head).
void classify(const nn::Module& m, const NoDecay& skip, std::unordered_set<const TensorImpl*>& seen,
              std::vector<ParamGroup>& groups) {
  const bool norm = m.type_name() == "LayerNorm", embedding = m.type_name() == "Embedding";
  for (const auto& [name, p] : m.named_parameters(/*recurse=*/false)) {
    if (!seen.insert(p.impl()).second) continue;
    const bool undecayed =
        (skip.norms && norm) || (skip.embeddings && embedding) || (skip.biases && name == "bias");
    groups[undecayed ? 1 : 0].params.push_back(p);
  }
  for (const auto& [name, child] : m.named_children()) classify(*child, skip, seen, groups);
}

}  // namespace

NoDecay parse_no_decay(const std::string& list) {
  NoDecay skip{false, false, false};
  if (list == "none") return skip;
  std::istringstream in(list);
  std::string word;
  while (std::getline(in, word, ',')) {
    if (word == "biases")
      skip.biases = true;
    else if (word == "norms")
      skip.norms = true;
    else if (word == "embeddings")
      skip.embeddings = true;
    else
      RG_FAIL("no-decay list '", list, "': unknown kind '", word,
              "' (expected a comma-separated list of biases, norms, embeddings, or none)");
  }
  return skip;
}

std::string to_string(const NoDecay& skip) {
  std::string out;
  if (skip.biases) out += "biases";
  if (skip.norms) out += std::string(out.empty() ? "" : ",") + "norms";
  if (skip.embeddings) out += std::string(out.empty() ? "" : ",") + "embeddings";
  return out.empty() ? "none" : out;
}

std::vector<ParamGroup> decay_groups(const nn::Module& model, const NoDecay& skip) {
  std::vector<ParamGroup> groups(2);
  groups[1].weight_decay = 0.0;
  std::unordered_set<const TensorImpl*> seen;
  classify(model, skip, seen, groups);
  return groups;
}

}  // namespace rg::optim
