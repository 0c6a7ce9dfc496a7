// StateDict: an ordered name -> tensor map, the currency of checkpoints (module weights and
// optimizer state). Insertion order is kept, so files and diffs list names as the model
// registered them. Lookups are linear: dicts hold hundreds of entries, not millions.
#pragma once
#include <string>
#include <utility>
#include <vector>

#include "core/tensor.h"

namespace rg::nn {

class StateDict {
 public:
  using Item = std::pair<std::string, Tensor>;

  // Adds or replaces `name` (a replaced entry keeps its position).
  void insert(const std::string& name, const Tensor& tensor) {
    for (auto& item : items_)
      if (item.first == name) {
        item.second = tensor;
        return;
      }
    items_.emplace_back(name, tensor);
  }
  bool contains(const std::string& name) const { return find(name) != nullptr; }
  const Tensor* find(const std::string& name) const {
    for (const auto& item : items_)
      if (item.first == name) return &item.second;
    return nullptr;
  }
  const Tensor& at(const std::string& name) const {
    const Tensor* t = find(name);
    RG_CHECK(t != nullptr, "StateDict: no entry named '", name, "'");
    return *t;
  }
  bool erase(const std::string& name) {
    for (auto it = items_.begin(); it != items_.end(); ++it)
      if (it->first == name) {
        items_.erase(it);
        return true;
      }
    return false;
  }
  std::vector<std::string> keys() const {
    std::vector<std::string> out;
    for (const auto& item : items_) out.push_back(item.first);
    return out;
  }
  size_t size() const { return items_.size(); }
  bool empty() const { return items_.empty(); }
  auto begin() const { return items_.begin(); }
  auto end() const { return items_.end(); }

 private:
  std::vector<Item> items_;
};

}  // namespace rg::nn
