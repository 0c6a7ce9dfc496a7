// The cuBLASLt plan cache of linear (matmul.cu): building a matmul descriptor, three layouts
// and a preference, then asking cuBLASLt's heuristic for an algorithm, costs microseconds of
// host time per call, as much as a small GEMM itself. A plan keeps those descriptors and the
// algorithm found (or the fact that none was) for one key: device, shape, dtype, compute type
// (TF32 included), transposes, leading dimensions, the alignment of each pointer, the
// epilogue and the workspace size. The cache is bounded (least recently used plans go) and
// thread-safe; a plan is shared, so one evicted while another thread launches it lives on
// until that launch ends. The bias pointer is the one per-call attribute of the descriptor:
// it is set under the plan's own lock, right before the launch that reads it.
// Never destroyed: descriptors must not outlive the cuBLASLt library at exit.
#pragma once
#include <cstdint>
#include <list>
#include <memory>
#include <mutex>
#include <unordered_map>
#include <utility>

#include "core/hash.h"
#if RG_SIM
#include "kernels/sim/cublas_shim.h"
#else
#include <cublasLt.h>
#endif

namespace rg::RG_BACKEND {

// The descriptors of one cublasLtMatmul, destroyed with it.
struct LtCall {
  cublasLtMatmulDesc_t desc = nullptr;
  cublasLtMatrixLayout_t a = nullptr, b = nullptr, d = nullptr;
  cublasLtMatmulPreference_t pref = nullptr;
  LtCall() = default;
  LtCall(const LtCall&) = delete;
  LtCall& operator=(const LtCall&) = delete;
  ~LtCall() {
    if (pref) cublasLtMatmulPreferenceDestroy(pref);
    for (cublasLtMatrixLayout_t l : {a, b, d})
      if (l) cublasLtMatrixLayoutDestroy(l);
    if (desc) cublasLtMatmulDescDestroy(desc);
  }
};

// Everything the descriptors and the heuristic's answer depend on. All int64_t, so that
// the struct has no padding and hashes as bytes.
struct LtPlanKey {
  int64_t device, m, n, k, data_type, compute_type, transa, transb, lda, ldb, epilogue;
  int64_t align_a, align_b, align_d, align_bias, workspace_bytes;
  bool operator==(const LtPlanKey&) const = default;
};
struct LtPlanKeyHash {
  size_t operator()(const LtPlanKey& key) const { return size_t(fnv1a(&key, sizeof(key))); }
};

struct LtPlan {
  LtCall call;
  bool has_algorithm = false;  // false: cuBLASLt offered none; the caller falls back
  cublasLtMatmulAlgo_t algo{};
  std::mutex launch;  // held while the bias pointer is set and the matmul enqueued
};

class LtPlanCache {
 public:
  explicit LtPlanCache(size_t capacity) : capacity_(capacity) {}

  // The plan of `key`, built by `build()` (returning a shared_ptr<LtPlan>) on a miss. The
  // build runs outside the lock: two threads missing at once both build, one plan stays.
  template <typename Build>
  std::shared_ptr<LtPlan> get(const LtPlanKey& key, Build&& build) {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      auto it = index_.find(key);
      if (it != index_.end()) {
        order_.splice(order_.begin(), order_, it->second);  // most recently used first
        return it->second->second;
      }
    }
    std::shared_ptr<LtPlan> plan = build();
    std::lock_guard<std::mutex> lock(mutex_);
    auto it = index_.find(key);
    if (it != index_.end()) return it->second->second;
    order_.emplace_front(key, plan);
    index_.emplace(key, order_.begin());
    if (order_.size() > capacity_) {
      index_.erase(order_.back().first);
      order_.pop_back();
    }
    return plan;
  }

 private:
  using Entry = std::pair<LtPlanKey, std::shared_ptr<LtPlan>>;
  size_t capacity_;
  std::mutex mutex_;
  std::list<Entry> order_;
  std::unordered_map<LtPlanKey, std::list<Entry>::iterator, LtPlanKeyHash> index_;
};

}  // namespace rg::RG_BACKEND
