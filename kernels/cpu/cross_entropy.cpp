// CPU fused softmax + cross-entropy. logits [N, C] (any strides), targets [N] (int64 or
// int32), loss [N] and dloss [N] in logits' dtype, dlogits [N, C].
//   forward:  loss[n] = logsumexp(logits[n]) - logits[n, target[n]]
//   backward: dlogits[n] = (softmax(logits[n]) - onehot(target[n])) * dloss[n]
// Rows whose target equals ignore_index get loss 0 and a zero gradient row. Targets are
// checked before any parallel region. Sums of exp accumulate in double; bf16 computes in
// float; contiguous f32 rows take SIMD passes (kernels/cpu/row_math.h).
#include <cmath>
#include <limits>

#include "core/op_table.h"
#include "core/parallel.h"
#include "kernels/contracts.h"
#include "kernels/cpu/capability.h"
#include "kernels/cpu/compute_type.h"
#include "kernels/cpu/row_math.h"
#include "kernels/cpu/tensor_utils.h"

namespace rg::cpu::RG_CPU_CAP {
namespace {

std::vector<int64_t> checked_targets(const Tensor& logits, const Tensor& targets,
                                     int64_t ignore_index, const char* op) {
  std::vector<int64_t> t = read_indices(targets, op);
  const int64_t classes = logits.size(1);
  for (int64_t v : t)
    RG_CHECK(v == ignore_index || (v >= 0 && v < classes), op, ": target ", v, " out of range for ",
             classes, " classes");
  return t;
}

// max and log(sum(exp(x - max))) of one strided row (kept apart: x - max rounds exactly
// for nearby x, max + log_sum would not). next_row: the row the caller computes next, or null
// (contiguous f32 rows prefetch it meanwhile).
template <typename T>
void row_logsumexp(const T* x, int64_t c, int64_t s, const T* next_row, compute_t<T>* mx,
                   compute_t<T>* log_sum) {
  using C = compute_t<T>;
  if constexpr (std::is_same_v<T, float>) {
    if (s == 1) {
      float m = row::max(x, c);
      if (m == -std::numeric_limits<float>::infinity()) m = 0;
      *mx = m;
      *log_sum = float(std::log(row::exp_sum(nullptr, x, c, m, next_row)));
      return;
    }
  }
  C m = -std::numeric_limits<C>::infinity();
  for (int64_t j = 0; j < c; ++j) m = std::max(m, C(x[j * s]));
  if (m == -std::numeric_limits<C>::infinity()) m = 0;
  double sum = 0;
  if (s == 1) {
    for (int64_t j = 0; j < c; ++j) sum += double(std::exp(C(x[j]) - m));
  } else {
    for (int64_t j = 0; j < c; ++j) sum += double(std::exp(C(x[j * s]) - m));
  }
  *mx = m;
  *log_sum = C(std::log(sum));
}

template <typename T>
void cross_entropy_typed(const Tensor& loss, const Tensor& logits, const std::vector<int64_t>& t,
                         int64_t ignore_index) {
  using C = compute_t<T>;
  const int64_t n = logits.size(0), c = logits.size(1);
  const int64_t s0 = logits.stride(0), s1 = logits.stride(1);
  const T* x = logits.data<T>();
  T* out = loss.data<T>();
  const int64_t ls = loss.dim() == 0 ? 0 : loss.stride(0);
  parallel_for(n, grain_rows(c), [&](int64_t b, int64_t e) {
    for (int64_t r = b; r < e; ++r) {
      if (t[r] == ignore_index) {
        out[r * ls] = T(0);
        continue;
      }
      C mx, log_sum;
      row_logsumexp(x + r * s0, c, s1, r + 1 < e ? x + (r + 1) * s0 : nullptr, &mx, &log_sum);
      out[r * ls] = T(log_sum - (C(x[r * s0 + t[r] * s1]) - mx));
    }
  });
}

template <typename T>
void cross_entropy_backward_typed(const Tensor& dlogits, const Tensor& logits,
                                  const std::vector<int64_t>& t, const Tensor& dloss,
                                  int64_t ignore_index) {
  using C = compute_t<T>;
  const int64_t n = logits.size(0), c = logits.size(1);
  const int64_t s0 = logits.stride(0), s1 = logits.stride(1);
  const int64_t d0 = dlogits.stride(0), d1 = dlogits.stride(1);
  const int64_t ls = dloss.dim() == 0 ? 0 : dloss.stride(0);
  const T* x = logits.data<T>();
  const T* dl = dloss.data<T>();
  T* dx = dlogits.data<T>();
  parallel_for(n, grain_rows(c), [&](int64_t b, int64_t e) {
    for (int64_t r = b; r < e; ++r) {
      T* drow = dx + r * d0;
      if (t[r] == ignore_index) {
        for (int64_t j = 0; j < c; ++j) drow[j * d1] = T(0);
        continue;
      }
      const T* xrow = x + r * s0;
      C mx, log_sum;
      row_logsumexp(xrow, c, s1, r + 1 < e ? xrow + s0 : nullptr, &mx, &log_sum);
      C g = C(dl[r * ls]);
      if constexpr (std::is_same_v<T, float>) {
        if (s1 == 1 && d1 == 1) {
          row::scaled_exp(drow, xrow, c, mx, log_sum, g);
          drow[t[r]] -= g;
          continue;
        }
      }
      for (int64_t j = 0; j < c; ++j)
        drow[j * d1] = T(std::exp((C(xrow[j * s1]) - mx) - log_sum) * g);
      drow[t[r] * d1] = T(C(drow[t[r] * d1]) - g);
    }
  });
}

void cross_entropy(const Tensor& loss, const Tensor& logits, const Tensor& targets,
                   int64_t ignore_index) {
  RG_KERNEL_CONTRACT(check_cross_entropy(loss, logits, targets));
  std::vector<int64_t> t = checked_targets(logits, targets, ignore_index, "cross_entropy");
  dispatch_dtype<DTypes::floating>(logits.dtype(), "cross_entropy", [&]<typename T>(TypeTag<T>) {
    cross_entropy_typed<T>(loss, logits, t, ignore_index);
  });
}

void cross_entropy_backward(const Tensor& dlogits, const Tensor& logits, const Tensor& targets,
                            const Tensor& dloss, int64_t ignore_index) {
  const char* op = "cross_entropy_backward";
  RG_KERNEL_CONTRACT(check_cross_entropy_backward(dlogits, logits, targets, dloss));
  std::vector<int64_t> t = checked_targets(logits, targets, ignore_index, op);
  dispatch_dtype<DTypes::floating>(logits.dtype(), op, [&]<typename T>(TypeTag<T>) {
    cross_entropy_backward_typed<T>(dlogits, logits, t, dloss, ignore_index);
  });
}

}  // namespace

void register_cross_entropy_kernels(KernelTable& k) {
  k.cross_entropy = cross_entropy;
  k.cross_entropy_backward = cross_entropy_backward;
}
}  // namespace rg::cpu::RG_CPU_CAP
