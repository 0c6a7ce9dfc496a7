// CPU reductions: every row of RG_REDUCE_OPS (core/op_table.h; its functor from
// core/reduce_scalar.h is a template parameter) over a sorted, unique dim list.
// `out` has the keepdim shape; `index` rows (argmax/argmin) write int64 (the flat row-major index
// inside the reduced sub-space, first index on ties, first NaN wins). The input is seen as [A, R,
// B] (R = reduced elements): contiguous inputs whose reduced dims form one block are read in place,
// anything else is first permuted to [kept..., reduced...] and copied. Determinism: folds (sums,
// products) accumulate in double (int64 for integers) over fixed chunks of kChunk elements with 16
// fixed lanes, and chunk partials combine in order, so the bits never depend on the thread count.
// bf16 computes in float (double for sums).
#include <cmath>
#include <limits>
#include <type_traits>

#include "core/op_table.h"
#include "core/parallel.h"
#include "core/reduce_scalar.h"
#include "kernels/contracts.h"
#include "kernels/cpu/capability.h"
#include "kernels/cpu/compute_type.h"
#include "kernels/cpu/tensor_utils.h"

namespace rg::cpu::RG_CPU_CAP {
namespace {

constexpr int64_t kChunk = 16384;  // fixed chunk of a long row: part of the result's definition
constexpr int kLanes = 16;
constexpr int64_t kColumnBlock = 256;  // output columns per task when reducing [A, R, B], B > 1

// One row of RG_REDUCE_OPS (its functor from core/reduce_scalar.h) over input type T.
template <typename Row, typename T>
struct Reduction {
  using C = compute_t<T>;
  static constexpr bool kArg = Row::rule == ReduceRule::index;
  using V = scalar::reduce_acc_t<Row, C>;
  struct State {
    V value;
    int64_t index;
  };

  static V identity() { return Row::template identity<V>(); }
  static V combine(V a, V b) { return scalar::combine<Row>(a, b); }

  // Reduces x[0..n) whose first element has reduced index `base`.
  static State chunk(const T* x, int64_t n, int64_t base) {
    State s{identity(), base};
    if constexpr (kArg) {
      for (int64_t i = 0; i < n; ++i) {
        V v = V(C(x[i]));
        if (scalar::beats<Row>(s.value, v)) s = {v, base + i};
      }
    } else {
      V lanes[kLanes];
      for (V& l : lanes) l = identity();
      int64_t i = 0;
      for (; i + kLanes <= n; i += kLanes)
        for (int l = 0; l < kLanes; ++l) lanes[l] = combine(lanes[l], V(C(x[i + l])));
      for (; i < n; ++i) lanes[0] = combine(lanes[0], V(C(x[i])));
      for (int width = kLanes / 2; width >= 1; width /= 2)  // fixed pairwise tree
        for (int l = 0; l < width; ++l) lanes[l] = combine(lanes[l], lanes[l + width]);
      s.value = lanes[0];
    }
    return s;
  }
  static void merge(State& a, const State& b) {
    if constexpr (!kArg)
      a.value = combine(a.value, b.value);
    else if (scalar::beats<Row>(a.value, b.value))
      a = b;
  }
  template <typename Out>
  static Out finish(const State& s, int64_t r) {
    if constexpr (kArg)
      return Row::finish(s.value, s.index, r);
    else
      return Out(C(Row::finish(s.value, s.index, r)));
  }
};

// out[a] = reduce(x[a, 0..R)) for contiguous rows.
template <typename Row, typename T, typename Out>
void reduce_rows(Out* out, const T* x, int64_t rows, int64_t r) {
  using Red = Reduction<Row, T>;
  if (r <= kChunk) {
    parallel_for(rows, grain_rows(r), [&](int64_t b, int64_t e) {
      for (int64_t a = b; a < e; ++a)
        out[a] = Red::template finish<Out>(Red::chunk(x + a * r, r, 0), r);
    });
    return;
  }
  int64_t chunks = (r + kChunk - 1) / kChunk;
  std::vector<typename Red::State> partial(rows * chunks);
  parallel_for(rows * chunks, grain_rows(kChunk), [&](int64_t b, int64_t e) {
    for (int64_t t = b; t < e; ++t) {
      int64_t a = t / chunks, start = (t % chunks) * kChunk;
      partial[t] = Red::chunk(x + a * r + start, std::min(kChunk, r - start), start);
    }
  });
  for (int64_t a = 0; a < rows; ++a) {
    typename Red::State s = partial[a * chunks];
    for (int64_t c = 1; c < chunks; ++c) Red::merge(s, partial[a * chunks + c]);
    out[a] = Red::template finish<Out>(s, r);
  }
}

// out[a, j] = reduce_i x[a, i, j] for contiguous [A, R, B]; vectorised along j.
template <typename Row, typename T, typename Out>
void reduce_columns(Out* out, const T* x, int64_t outer, int64_t r, int64_t inner) {
  using Red = Reduction<Row, T>;
  using V = typename Red::V;
  int64_t blocks = (inner + kColumnBlock - 1) / kColumnBlock;
  int64_t grain = grain_rows(r * kColumnBlock);
  parallel_for(outer * blocks, grain, [&](int64_t b, int64_t e) {
    V value[kColumnBlock];
    int64_t index[kColumnBlock];
    for (int64_t t = b; t < e; ++t) {
      int64_t a = t / blocks, j0 = (t % blocks) * kColumnBlock;
      int64_t width = std::min(kColumnBlock, inner - j0);
      for (int64_t j = 0; j < width; ++j) value[j] = Red::identity(), index[j] = 0;
      const T* base = x + a * r * inner + j0;
      for (int64_t i = 0; i < r; ++i) {
        const T* row = base + i * inner;
        if constexpr (Red::kArg) {
          for (int64_t j = 0; j < width; ++j) {
            V v = V(typename Red::C(row[j]));
            if (scalar::beats<Row>(value[j], v)) value[j] = v, index[j] = i;
          }
        } else {
          for (int64_t j = 0; j < width; ++j)
            value[j] = Red::combine(value[j], V(typename Red::C(row[j])));
        }
      }
      Out* o = out + a * inner + j0;
      for (int64_t j = 0; j < width; ++j) o[j] = Red::template finish<Out>({value[j], index[j]}, r);
    }
  });
}

template <typename Row, typename T>
void reduce_typed(const Tensor& out, const Tensor& x, int64_t outer, int64_t r, int64_t inner) {
  using Out = std::conditional_t<Reduction<Row, T>::kArg, int64_t, T>;
  Tensor dst = out.is_contiguous() ? out : empty(out.shape(), out.dtype());
  Out* o = dst.template data<Out>();
  const T* p = x.template data<T>();
  if (inner == 1)
    reduce_rows<Row, T, Out>(o, p, outer, r);
  else
    reduce_columns<Row, T, Out>(o, p, outer, r, inner);
  if (!dst.is_same(out)) copy_into(out, dst);
}

void reduce(ReduceOp op, const Tensor& out, const Tensor& in, const std::vector<int64_t>& dims) {
  const char* name = op_name(op);
  RG_KERNEL_CONTRACT(check_reduce(op, out, in, dims));
  const int64_t ndim = in.dim();
  std::vector<bool> reduced(ndim, false);
  for (int64_t d : dims) reduced[d] = true;
  const DType dt = in.dtype();
  int64_t outer = 1, r = 1, inner = 1;
  for (int64_t d = 0; d < ndim; ++d) (reduced[d] ? r : outer) *= in.size(d);
  if (outer == 0) return;

  // Contiguous input whose non-trivial reduced dims form one block: [A, R, B] in place.
  int64_t first = -1, last = -1;
  bool one_block = true, block_ended = false;
  for (int64_t d = 0; d < ndim; ++d) {
    if (in.size(d) == 1) continue;
    if (!reduced[d]) {
      block_ended = first >= 0;
    } else {
      one_block &= !block_ended;
      if (first < 0) first = d;
      last = d;
    }
  }
  Tensor x = in;
  if (in.is_contiguous() && one_block) {
    outer = 1, inner = 1;
    if (first < 0) outer = in.numel();  // nothing (but size-1 dims) reduced
    for (int64_t d = 0; d < first; ++d) outer *= in.size(d);
    for (int64_t d = last + 1; first >= 0 && d < ndim; ++d) inner *= in.size(d);
  } else {  // permute to [kept..., reduced...] and copy: then B == 1
    Shape shape;
    Strides strides;
    for (int pass = 0; pass < 2; ++pass)
      for (int64_t d = 0; d < ndim; ++d)
        if (reduced[d] == (pass == 1)) shape.push_back(in.size(d)), strides.push_back(in.stride(d));
    x = contiguous_as(make_view(in, shape, strides, in.offset()), dt);
  }
  dispatch_dtype<DTypes::numeric>(dt, name, [&]<typename T>(TypeTag<T>) {
    scalar::with_reduction(
        op, [&]<typename Row>(Row) { reduce_typed<Row, T>(out, x, outer, r, inner); });
  });
}

}  // namespace

void register_reduce_kernels(KernelTable& k) { k.reduce = reduce; }
}  // namespace rg::cpu::RG_CPU_CAP
