// CPU embedding lookup and its backward. weight [V, D] (any strides), indices [N] (any
// shape with N elements, int64 or int32, any strides), out [N, D] / grad_out [N, D].
//   forward:  out[n] = weight[indices[n]]
//   backward: grad_weight[v] += sum of grad_out[n] over the n with indices[n] == v
// Indices are checked before any parallel region. The backward groups positions by vocab
// row (stable counting sort) and gives each row to one thread: no atomics, no races, and
// the sum order (ascending n) does not depend on the thread count.
#include <cstring>

#include "core/op_table.h"
#include "core/parallel.h"
#include "kernels/contracts.h"
#include "kernels/cpu/capability.h"
#include "kernels/cpu/compute_type.h"
#include "kernels/cpu/tensor_utils.h"

namespace rg::cpu::RG_CPU_CAP {
namespace {

std::vector<int64_t> checked_indices(const Tensor& indices, int64_t vocab, const char* op) {
  std::vector<int64_t> idx = read_indices(indices, op);
  for (int64_t i : idx)
    RG_CHECK(i >= 0 && i < vocab, op, ": index ", i, " out of range for vocab size ", vocab);
  return idx;
}

void embedding(const Tensor& out, const Tensor& weight, const Tensor& indices) {
  RG_KERNEL_CONTRACT(check_embedding(out, weight, indices));
  const int64_t vocab = weight.size(0), d = weight.size(1);
  std::vector<int64_t> idx = checked_indices(indices, vocab, "embedding");
  const int64_t n = static_cast<int64_t>(idx.size());
  const size_t item = itemsize(weight.dtype());
  const char* w = static_cast<const char*>(weight.data_ptr());
  char* o = static_cast<char*>(out.data_ptr());
  const int64_t ws0 = weight.stride(0), ws1 = weight.stride(1);
  const int64_t os0 = out.stride(0), os1 = out.stride(1);
  parallel_for(n, grain_rows(d), [&](int64_t begin, int64_t end) {
    for (int64_t r = begin; r < end; ++r) {
      const char* src = w + idx[r] * ws0 * item;
      char* dst = o + r * os0 * item;
      if (ws1 == 1 && os1 == 1) {
        std::memcpy(dst, src, d * item);
      } else {
        for (int64_t j = 0; j < d; ++j)
          std::memcpy(dst + j * os1 * item, src + j * ws1 * item, item);
      }
    }
  });
}

template <typename T>
void embedding_backward_typed(const Tensor& grad_weight, const Tensor& grad_out,
                              const std::vector<int64_t>& idx) {
  using C = compute_t<T>;
  const int64_t vocab = grad_weight.size(0), d = grad_weight.size(1);
  const int64_t n = static_cast<int64_t>(idx.size());
  // Stable counting sort of positions by vocab row: rows[start[v] .. start[v+1]).
  std::vector<int64_t> start(vocab + 1, 0), order(n);
  for (int64_t i : idx) ++start[i + 1];
  for (int64_t v = 0; v < vocab; ++v) start[v + 1] += start[v];
  std::vector<int64_t> fill(start.begin(), start.end() - 1);
  for (int64_t r = 0; r < n; ++r) order[fill[idx[r]]++] = r;
  std::vector<int64_t> used;  // vocab rows that occur, in ascending order
  for (int64_t v = 0; v < vocab; ++v)
    if (start[v + 1] > start[v]) used.push_back(v);
  T* gw = grad_weight.data<T>();
  const T* go = grad_out.data<T>();
  const int64_t gs0 = grad_weight.stride(0), gs1 = grad_weight.stride(1);
  const int64_t os0 = grad_out.stride(0), os1 = grad_out.stride(1);
  parallel_for(static_cast<int64_t>(used.size()), grain_rows(d), [&](int64_t begin, int64_t end) {
    std::vector<C> acc(d);
    for (int64_t u = begin; u < end; ++u) {
      int64_t v = used[u];
      std::fill(acc.begin(), acc.end(), C(0));
      for (int64_t k = start[v]; k < start[v + 1]; ++k) {
        const T* row = go + order[k] * os0;
        for (int64_t j = 0; j < d; ++j) acc[j] += C(row[j * os1]);
      }
      T* dst = gw + v * gs0;
      for (int64_t j = 0; j < d; ++j) dst[j * gs1] = T(C(dst[j * gs1]) + acc[j]);
    }
  });
}

void embedding_backward(const Tensor& grad_weight, const Tensor& grad_out, const Tensor& indices) {
  RG_KERNEL_CONTRACT(check_embedding_backward(grad_weight, grad_out, indices));
  std::vector<int64_t> idx = checked_indices(indices, grad_weight.size(0), "embedding_backward");
  dispatch_dtype<DTypes::floating>(
      grad_weight.dtype(), "embedding_backward",
      [&]<typename T>(TypeTag<T>) { embedding_backward_typed<T>(grad_weight, grad_out, idx); });
}

}  // namespace

void register_embedding_kernels(KernelTable& k) {
  k.embedding = embedding;
  k.embedding_backward = embedding_backward;
}
}  // namespace rg::cpu::RG_CPU_CAP
