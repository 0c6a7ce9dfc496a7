// CPU reductions: sum, mean, max, min, argmax, argmin over a sorted, unique dim list.
// `out` has the keepdim shape; argmax/argmin write int64 (the flat row-major index inside
// the reduced sub-space, first index on ties, first NaN wins). The input is seen as
// [A, R, B] (R = reduced elements): contiguous inputs whose reduced dims form one block are
// read in place, anything else is first permuted to [kept..., reduced...] and copied.
// Determinism: sums accumulate in double (int64 for integers) over fixed chunks of kChunk
// elements with 16 fixed lanes, and chunk partials combine in order, so the bits never
// depend on the thread count. bf16 computes in float (double for sums).
#include <cmath>
#include <limits>
#include <type_traits>

#include "core/op_table.h"
#include "core/parallel.h"
#include "kernels/cpu/capability.h"
#include "kernels/cpu/compute_type.h"
#include "kernels/cpu/tensor_utils.h"

namespace rg::cpu::RG_CPU_CAP {
namespace {

constexpr int64_t kChunk = 16384;  // fixed chunk of a long row: part of the result's definition
constexpr int kLanes = 16;
constexpr int64_t kColumnBlock = 256;  // output columns per task when reducing [A, R, B], B > 1

template <ReduceOp Op, typename T>
struct Reduction {
  using C = compute_t<T>;
  static constexpr bool kSum = Op == ReduceOp::sum || Op == ReduceOp::mean;
  static constexpr bool kMax = Op == ReduceOp::max || Op == ReduceOp::argmax;
  static constexpr bool kArg = Op == ReduceOp::argmax || Op == ReduceOp::argmin;
  using V = std::conditional_t<kSum, std::conditional_t<std::is_integral_v<T>, int64_t, double>, C>;
  struct State {
    V value;
    int64_t index;
  };

  static V identity() {
    if constexpr (kSum) return V(0);
    if constexpr (std::numeric_limits<V>::has_infinity)
      return kMax ? -std::numeric_limits<V>::infinity() : std::numeric_limits<V>::infinity();
    return kMax ? std::numeric_limits<V>::lowest() : std::numeric_limits<V>::max();
  }
  // Strictly better (so ties keep the earlier index); a NaN beats any number.
  static bool better(V v, V best) {
    if (v != v) return best == best;
    return kMax ? v > best : v < best;
  }
  // Value-only combine, branch-free so the lane loop vectorises; a NaN in a stays (b > NaN
  // and b != b are both false for a number b), a NaN in b wins.
  static V combine(V a, V b) {
    if constexpr (kSum)
      return a + b;
    else if constexpr (kMax)
      return (b > a || b != b) ? b : a;
    else
      return (b < a || b != b) ? b : a;
  }

  // Reduces x[0..n) whose first element has reduced index `base`.
  static State chunk(const T* x, int64_t n, int64_t base) {
    State s{identity(), base};
    if constexpr (kArg) {
      for (int64_t i = 0; i < n; ++i) {
        V v = V(C(x[i]));
        if (better(v, s.value)) s = {v, base + i};
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
    if constexpr (kSum)
      a.value += b.value;
    else if (better(b.value, a.value))
      a = b;
  }
  template <typename Out>
  static Out finish(const State& s, int64_t r) {
    if constexpr (kArg)
      return s.index;
    else if constexpr (Op == ReduceOp::mean)
      return Out(C(s.value / V(r)));
    else
      return Out(C(s.value));
  }
};

// out[a] = reduce(x[a, 0..R)) for contiguous rows.
template <ReduceOp Op, typename T, typename Out>
void reduce_rows(Out* out, const T* x, int64_t rows, int64_t r) {
  using Red = Reduction<Op, T>;
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
template <ReduceOp Op, typename T, typename Out>
void reduce_columns(Out* out, const T* x, int64_t outer, int64_t r, int64_t inner) {
  using Red = Reduction<Op, T>;
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
            if (Red::better(v, value[j])) value[j] = v, index[j] = i;
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

template <ReduceOp Op, typename T>
void reduce_typed(const Tensor& out, const Tensor& x, int64_t outer, int64_t r, int64_t inner) {
  using Out = std::conditional_t<Reduction<Op, T>::kArg, int64_t, T>;
  Tensor dst = out.is_contiguous() ? out : empty(out.shape(), out.dtype());
  Out* o = dst.template data<Out>();
  const T* p = x.template data<T>();
  if (inner == 1)
    reduce_rows<Op, T, Out>(o, p, outer, r);
  else
    reduce_columns<Op, T, Out>(o, p, outer, r, inner);
  if (!dst.is_same(out)) copy_into(out, dst);
}

template <typename T>
void reduce_dispatch(ReduceOp op, const Tensor& out, const Tensor& x, int64_t a, int64_t r,
                     int64_t b) {
  switch (op) {
#define RG_CASE(name)  \
  case ReduceOp::name: \
    return reduce_typed<ReduceOp::name, T>(out, x, a, r, b);
    RG_REDUCE_OPS(RG_CASE)
#undef RG_CASE
  }
}

void reduce(ReduceOp op, const Tensor& out, const Tensor& in, const std::vector<int64_t>& dims) {
  const char* name = op_name(op);
  const int64_t ndim = in.dim();
  std::vector<bool> reduced(ndim, false);
  for (size_t i = 0; i < dims.size(); ++i) {
    RG_DEBUG_ASSERT(dims[i] >= 0 && dims[i] < ndim, name, ": dim ", dims[i],
                    " out of range for shape ", shape_str(in.shape()));
    RG_DEBUG_ASSERT(i == 0 || dims[i] > dims[i - 1], name, ": dims must be sorted and unique");
    reduced[dims[i]] = true;
  }
  bool arg = op == ReduceOp::argmax || op == ReduceOp::argmin;
  DType dt = in.dtype();
  RG_DEBUG_ASSERT(dt != DType::b8, name, ": not supported for bool tensors");
  RG_DEBUG_ASSERT(op != ReduceOp::mean || is_floating(dt), name, ": needs a floating tensor, got ",
                  dt);
  RG_DEBUG_ASSERT(out.dtype() == (arg ? DType::i64 : dt), name, ": output dtype ", out.dtype(),
                  " does not match ", arg ? DType::i64 : dt);
  int64_t outer = 1, r = 1, inner = 1;
  for (int64_t d = 0; d < ndim; ++d) (reduced[d] ? r : outer) *= in.size(d);
  RG_DEBUG_ASSERT(out.numel() == outer, name, ": output has ", out.numel(), " elements, expected ",
                  outer);
  RG_DEBUG_ASSERT(r > 0 || outer == 0 || op == ReduceOp::sum || op == ReduceOp::mean, name,
                  ": cannot reduce an empty dimension of shape ", shape_str(in.shape()));
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
  dispatch_dtype<DTypes::numeric>(
      dt, name, [&]<typename T>(TypeTag<T>) { reduce_dispatch<T>(op, out, x, outer, r, inner); });
}

}  // namespace

void register_reduce_kernels(KernelTable& k) { k.reduce = reduce; }
}  // namespace rg::cpu::RG_CPU_CAP
