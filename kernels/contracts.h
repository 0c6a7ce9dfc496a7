// Kernel contracts, written once for every backend (cpu, cuda and sim compile this header):
// check_<kernel>(...) checks what a kernel of the table (core/op_table.h, RG_KERNELS)
// expects of its arguments beyond what the op layer validates for users, and throws
// rg::Error naming the op, the argument and the value. Kernels call them through
// RG_KERNEL_CONTRACT(check_<kernel>(...)): evaluated in debug builds, compiled but never
// evaluated in release builds (like RG_DEBUG_ASSERT, core/error.h); tests may call them
// directly in any build. Beside them, the helpers whose rule every backend must share:
// the statistics dtype of layer norm (also the op's, ops/layer_norm.cpp) and the
// [outer, dim, inner] geometry of softmax.
#pragma once
#include <algorithm>
#include <cstdint>
#include <type_traits>
#include <vector>

#include "core/error.h"
#include "core/op_table.h"
#include "core/tensor.h"

#ifdef NDEBUG
#define RG_KERNEL_CONTRACT(check) \
  do {                            \
    if (false) check;             \
  } while (0)
#else
#define RG_KERNEL_CONTRACT(check) check
#endif

namespace rg {

// ---- layernorm / layernorm_backward: x contiguous [N, C] (C = last dim); mean, rstd [N].

// mean/rstd are f64 for f64 x, f32 otherwise (f32 and bf16 x).
inline DType layernorm_stats_dtype(DType x) { return x == DType::f64 ? DType::f64 : DType::f32; }
// The storage type of mean/rstd for input storage type T (double for f64, else float).
template <typename T>
using layernorm_stats_t = std::conditional_t<std::is_same_v<T, double>, double, float>;

inline void check_layernorm_stats(const char* op, const Tensor& x, const Tensor& mean,
                                  const Tensor& rstd) {
  const int64_t c = x.dim() == 0 ? 1 : x.size(-1), n = c == 0 ? 0 : x.numel() / c;
  const DType stats = layernorm_stats_dtype(x.dtype());
  RG_CHECK(x.is_contiguous(), op, ": x must be contiguous");
  RG_CHECK(mean.numel() == n && rstd.numel() == n && mean.is_contiguous() && rstd.is_contiguous(),
           op, ": mean/rstd must be contiguous with ", n, " elements, got ", mean.numel(), " and ",
           rstd.numel());
  RG_CHECK(mean.dtype() == stats && rstd.dtype() == stats, op, ": mean/rstd must be ", stats,
           " for ", x.dtype(), " input, got ", mean.dtype(), " and ", rstd.dtype());
}

inline void check_layernorm(const Tensor& out, const Tensor& mean, const Tensor& rstd,
                            const Tensor& x) {
  check_layernorm_stats("layernorm", x, mean, rstd);
  RG_CHECK(out.is_contiguous() && out.shape() == x.shape() && out.dtype() == x.dtype(),
           "layernorm: output must be contiguous like x ", shape_str(x.shape()), " (", x.dtype(),
           "), got ", shape_str(out.shape()), " (", out.dtype(), ")");
}

inline void check_layernorm_backward(const Tensor& dx, const Tensor& x, const Tensor& mean,
                                     const Tensor& rstd) {
  check_layernorm_stats("layernorm_backward", x, mean, rstd);
  RG_CHECK(!dx.defined() || (dx.is_contiguous() && dx.shape() == x.shape()),
           "layernorm_backward: dx must be contiguous like x ", shape_str(x.shape()), ", got ",
           shape_str(dx.shape()));
}

// ---- softmax / softmax_backward: contiguous tensors seen as [outer, dim, inner].

struct SoftmaxGeometry {
  int64_t outer = 1, dim = 1, inner = 1;
};

// t's dims before `dim` multiply into outer, those after it into inner (a 0-d t: all 1).
inline SoftmaxGeometry softmax_geometry(const Tensor& t, int64_t dim) {
  SoftmaxGeometry g;
  for (int64_t d = 0; d < t.dim(); ++d)
    (d < dim ? g.outer : d == dim ? g.dim : g.inner) *= t.size(d);
  return g;
}

inline void check_softmax_dim(const char* op, const Tensor& t, int64_t dim) {
  RG_CHECK(dim >= 0 && dim < std::max<int64_t>(t.dim(), 1), op, ": dim ", dim,
           " out of range for shape ", shape_str(t.shape()));
}

inline void check_softmax(const Tensor& out, const Tensor& in, int64_t dim, bool log) {
  const char* op = log ? "log_softmax" : "softmax";
  RG_CHECK(in.is_contiguous() && out.is_contiguous(), op, ": kernel needs contiguous tensors");
  RG_CHECK(in.shape() == out.shape() && in.dtype() == out.dtype(), op, ": output ",
           shape_str(out.shape()), " (", out.dtype(), ") does not match the input ",
           shape_str(in.shape()), " (", in.dtype(), ")");
  check_softmax_dim(op, in, dim);
}

inline void check_softmax_backward(const Tensor& grad_in, const Tensor& grad_out, const Tensor& y,
                                   int64_t dim, bool log) {
  const char* op = log ? "log_softmax_backward" : "softmax_backward";
  RG_CHECK(grad_in.is_contiguous() && grad_out.is_contiguous() && y.is_contiguous(), op,
           ": kernel needs contiguous tensors");
  RG_CHECK(grad_in.shape() == y.shape() && grad_out.shape() == y.shape(), op,
           ": shapes differ: grad_in ", shape_str(grad_in.shape()), ", grad_out ",
           shape_str(grad_out.shape()), ", y ", shape_str(y.shape()));
  check_softmax_dim(op, y, dim);
}

// ---- reduce: out has in's shape with 1 at each reduced dim (keepdim), in's dtype (i64 for
// `index` rows); dims sorted and unique; an empty reduction only for folds.

inline void check_reduce(ReduceOp op, const Tensor& out, const Tensor& in,
                         const std::vector<int64_t>& dims) {
  const char* name = op_name(op);
  const int64_t ndim = in.dim();
  std::vector<bool> reduced(static_cast<size_t>(ndim), false);
  for (size_t i = 0; i < dims.size(); ++i) {
    RG_CHECK(dims[i] >= 0 && dims[i] < ndim, name, ": dim ", dims[i], " out of range for shape ",
             shape_str(in.shape()));
    RG_CHECK(i == 0 || dims[i] > dims[i - 1], name, ": dims must be sorted and unique");
    reduced[static_cast<size_t>(dims[i])] = true;
  }
  const ReduceInfo& row = info(op);
  const DType dt = in.dtype(), out_dt = row.rule == ReduceRule::index ? DType::i64 : dt;
  RG_CHECK(dt != DType::b8, name, ": not supported for bool tensors");
  RG_CHECK(row.rule != ReduceRule::floating || is_floating(dt), name,
           ": needs a floating tensor, got ", dt);
  RG_CHECK(out.dtype() == out_dt, name, ": output dtype ", out.dtype(), " does not match ", out_dt);
  RG_CHECK(out.dim() == ndim, name, ": out must have the keepdim shape, got ",
           shape_str(out.shape()), " for input ", shape_str(in.shape()));
  int64_t outputs = 1, r = 1;
  for (int64_t d = 0; d < ndim; ++d) (reduced[static_cast<size_t>(d)] ? r : outputs) *= in.size(d);
  RG_CHECK(out.numel() == outputs, name, ": output has ", out.numel(), " elements, expected ",
           outputs);
  RG_CHECK(r > 0 || outputs == 0 || row.allows_empty(), name,
           ": cannot reduce an empty dimension of shape ", shape_str(in.shape()));
}

// ---- matmul: out [B,M,N] contiguous = a [B,M,K] @ b [B,K,N], one dtype.

inline void check_matmul(const Tensor& out, const Tensor& a, const Tensor& b) {
  RG_CHECK(out.dim() == 3 && a.dim() == 3 && b.dim() == 3,
           "matmul: kernel expects 3-D tensors, got ", shape_str(a.shape()), " @ ",
           shape_str(b.shape()), " -> ", shape_str(out.shape()));
  RG_CHECK(a.size(0) == out.size(0) && b.size(0) == out.size(0) && a.size(1) == out.size(1) &&
               b.size(2) == out.size(2) && a.size(2) == b.size(1),
           "matmul: shapes ", shape_str(a.shape()), " and ", shape_str(b.shape()),
           " cannot be multiplied into ", shape_str(out.shape()));
  RG_CHECK(a.dtype() == out.dtype() && b.dtype() == out.dtype(), "matmul: dtypes ", a.dtype(), ", ",
           b.dtype(), " and ", out.dtype(), " differ");
  RG_CHECK(out.is_contiguous(), "matmul: output ", shape_str(out.shape()), " must be contiguous");
}

// ---- attention / attention_backward: q [B,T,D], k [B,S,D], v [B,S,Dv], contiguous.

inline void check_attention(const char* op, const Tensor& q, const Tensor& k, const Tensor& v) {
  RG_CHECK(q.dim() == 3 && k.dim() == 3 && v.dim() == 3 && q.is_contiguous() && k.is_contiguous() &&
               v.is_contiguous(),
           op, ": kernel needs contiguous [B, T, D] operands, got q ", shape_str(q.shape()), ", k ",
           shape_str(k.shape()), ", v ", shape_str(v.shape()));
}

// ---- cross_entropy / cross_entropy_backward: logits [N, C], targets N int64/int32 (their
// values are data: the kernels check their range in every build), loss/dloss N.

inline void check_cross_entropy_targets(const char* op, const Tensor& logits,
                                        const Tensor& targets) {
  RG_CHECK(logits.dim() == 2, op, ": logits must be [N, C], got ", shape_str(logits.shape()));
  RG_CHECK(targets.dtype() == DType::i64 || targets.dtype() == DType::i32, op,
           ": targets must be int64 or int32, got ", targets.dtype());
  RG_CHECK(targets.numel() == logits.size(0), op, ": ", targets.numel(), " targets for logits ",
           shape_str(logits.shape()));
}

// A per-row tensor (loss, dloss): N elements, 0-D or 1-D, logits' dtype.
inline void check_cross_entropy_rows(const char* op, const char* what, const Tensor& t,
                                     const Tensor& logits) {
  RG_CHECK(t.numel() == logits.size(0) && t.dim() <= 1 && t.dtype() == logits.dtype(), op, ": ",
           what, " ", shape_str(t.shape()), " (", t.dtype(), ") does not match logits ",
           shape_str(logits.shape()), " (", logits.dtype(), ")");
}

inline void check_cross_entropy(const Tensor& loss, const Tensor& logits, const Tensor& targets) {
  check_cross_entropy_targets("cross_entropy", logits, targets);
  check_cross_entropy_rows("cross_entropy", "loss", loss, logits);
}

inline void check_cross_entropy_backward(const Tensor& dlogits, const Tensor& logits,
                                         const Tensor& targets, const Tensor& dloss) {
  const char* op = "cross_entropy_backward";
  check_cross_entropy_targets(op, logits, targets);
  RG_CHECK(dlogits.shape() == logits.shape() && dlogits.dtype() == logits.dtype(), op, ": dlogits ",
           shape_str(dlogits.shape()), " (", dlogits.dtype(), ") does not match logits ",
           shape_str(logits.shape()), " (", logits.dtype(), ")");
  check_cross_entropy_rows(op, "dloss", dloss, logits);
}

// ---- embedding / embedding_backward: a table [V, D] (weight, grad_weight), rows [N, D]
// (out, grad_out) of its dtype, N int64/int32 indices (their values are data: the kernels
// check their range in every build).

inline void check_embedding_shapes(const char* op, const char* table_name, const Tensor& table,
                                   const char* rows_name, const Tensor& rows,
                                   const Tensor& indices) {
  RG_CHECK(table.dim() == 2 && rows.dim() == 2, op, ": ", table_name, " ", shape_str(table.shape()),
           " and ", rows_name, " ", shape_str(rows.shape()), " must be 2-D");
  RG_CHECK(indices.dtype() == DType::i64 || indices.dtype() == DType::i32, op,
           ": indices must be int64 or int32, got ", indices.dtype());
  RG_CHECK(rows.size(0) == indices.numel() && rows.size(1) == table.size(1) &&
               rows.dtype() == table.dtype(),
           op, ": ", rows_name, " ", shape_str(rows.shape()), " (", rows.dtype(),
           ") does not match ", indices.numel(), " indices and ", table_name, " ",
           shape_str(table.shape()), " (", table.dtype(), ")");
}

inline void check_embedding(const Tensor& out, const Tensor& weight, const Tensor& indices) {
  check_embedding_shapes("embedding", "weight", weight, "out", out, indices);
}

inline void check_embedding_backward(const Tensor& grad_weight, const Tensor& grad_out,
                                     const Tensor& indices) {
  check_embedding_shapes("embedding_backward", "grad_weight", grad_weight, "grad_out", grad_out,
                         indices);
}

// ---- gather / index_put / cumsum / sort: tensors of one rank indexed along `dim`
// (0 <= dim < rank), any strides; index values are data (the kernels check their range).

// The shape of the lines along `dim`: `shape` with its size at dim set to 1.
inline Shape line_shape(Shape shape, int64_t dim) {
  shape[dim] = 1;
  return shape;
}

inline void check_along_dim(const char* op, const Tensor& a, const Tensor& b, int64_t dim) {
  RG_CHECK(a.dim() == b.dim() && dim >= 0 && dim < std::max<int64_t>(a.dim(), 1), op, ": ",
           shape_str(a.shape()), " and ", shape_str(b.shape()), " must have one rank, with dim ",
           dim, " in it");
}

// index (int64) and its companion of one shape; `table`'s other dims at least index's.
inline void check_index_geometry(const char* op, const Tensor& table, const Tensor& index,
                                 const Tensor& rows, int64_t dim) {
  check_along_dim(op, table, index, dim);
  RG_CHECK(index.dtype() == DType::i64, op, ": index must be int64, got ", index.dtype());
  RG_CHECK(rows.shape() == index.shape() && rows.dtype() == table.dtype(), op, ": ",
           shape_str(rows.shape()), " (", rows.dtype(), ") does not match index ",
           shape_str(index.shape()), " and ", table.dtype());
  for (int64_t d = 0; d < index.dim(); ++d)
    RG_CHECK(d == dim || index.size(d) <= table.size(d), op, ": index ", shape_str(index.shape()),
             " larger than ", shape_str(table.shape()), " at dim ", d);
}

inline void check_gather(const Tensor& out, const Tensor& in, const Tensor& index, int64_t dim) {
  check_index_geometry("gather", in, index, out, dim);
}

inline void check_index_put(const Tensor& out, const Tensor& index, const Tensor& src, int64_t dim,
                            bool accumulate) {
  check_index_geometry("index_put", out, index, src, dim);
  RG_CHECK(!accumulate || out.dtype() != DType::b8, "index_put: cannot accumulate bool");
}

inline void check_cumsum(const Tensor& out, const Tensor& in, int64_t dim) {
  check_along_dim("cumsum", out, in, dim);
  RG_CHECK(out.shape() == in.shape() && out.dtype() == in.dtype() && in.dtype() != DType::b8,
           "cumsum: out ", shape_str(out.shape()), " (", out.dtype(), ") must match in ",
           shape_str(in.shape()), " (", in.dtype(), "), not bool");
}

inline void check_sort(const Tensor& values, const Tensor& indices, const Tensor& in, int64_t dim) {
  check_along_dim("sort", values, in, dim);
  RG_CHECK(values.shape() == in.shape() && indices.shape() == in.shape() &&
               values.dtype() == in.dtype() && indices.dtype() == DType::i64,
           "sort: values ", shape_str(values.shape()), " (", values.dtype(), ") and indices ",
           shape_str(indices.shape()), " (", indices.dtype(), ") must match in ",
           shape_str(in.shape()), " (", in.dtype(), ", int64)");
}

}  // namespace rg
