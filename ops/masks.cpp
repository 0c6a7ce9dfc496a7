// Ops that select, repeat or encode elements by position, composed of views, comparisons and
// where: tril/triu (a mask of the last two dims: element (i, j) is kept when j - i <= k for
// tril, >= k for triu; the gradient is masked the same way), outer, repeat (expand to
// [r0, s0, r1, s1, ...] and merge each pair), repeat_interleave (expand a new dim after
// `dim` and merge it) and one_hot (indices compared with arange(num_classes)).
#include "ops/ops.h"
#include "ops/record.h"

namespace rg {

namespace {

// bool [rows, cols]: true where (col - row) compares to `diagonal` as keep_below asks.
Tensor band_mask(int64_t rows, int64_t cols, int64_t diagonal, bool keep_below, Device device) {
  Tensor row = arange(rows, DType::i64, device).unsqueeze(1);
  Tensor col = arange(cols, DType::i64, device).unsqueeze(0);
  Tensor offset = sub(col, row);
  Tensor k = scalar_tensor(static_cast<double>(diagonal), DType::i64, device);
  return keep_below ? le(offset, k) : ge(offset, k);
}

Tensor triangle(const Tensor& x, int64_t diagonal, bool lower, const char* op) {
  check_defined(op, x, "input");
  RG_CHECK(x.dim() >= 2, op, ": expected a tensor of at least 2 dims, got shape ",
           shape_str(x.shape()));
  Tensor mask = band_mask(x.size(-2), x.size(-1), diagonal, lower, x.device());
  return where(mask, x, scalar_tensor(0, x.dtype(), x.device()));
}

}  // namespace

Tensor tril(const Tensor& x, int64_t diagonal) { return triangle(x, diagonal, true, "tril"); }

Tensor triu(const Tensor& x, int64_t diagonal) { return triangle(x, diagonal, false, "triu"); }

Tensor outer(const Tensor& a, const Tensor& b) {
  check_defined("outer", a, "input");
  check_defined("outer", b, "vec2");
  RG_CHECK(a.dim() == 1 && b.dim() == 1, "outer: expected two 1-D tensors, got shapes ",
           shape_str(a.shape()), " and ", shape_str(b.shape()));
  return mul(a.unsqueeze(1), b.unsqueeze(0));
}

Tensor repeat(const Tensor& x, const Shape& repeats) {
  check_defined("repeat", x, "input");
  const int64_t n = static_cast<int64_t>(repeats.size());
  RG_CHECK(n >= x.dim(), "repeat: ", n, " repeat counts ", shape_str(repeats), " for a tensor of ",
           x.dim(), " dims (shape ", shape_str(x.shape()), "): give at least one per dim");
  for (int64_t r : repeats)
    RG_CHECK(r >= 0, "repeat: repeat counts must be >= 0, got ", shape_str(repeats));
  Shape interleaved, expanded, merged;
  for (int64_t i = 0; i < n; ++i) {
    const int64_t size = i < n - x.dim() ? 1 : x.size(i - (n - x.dim()));
    interleaved.insert(interleaved.end(), {1, size});
    expanded.insert(expanded.end(), {repeats[i], size});
    merged.push_back(repeats[i] * size);
  }
  return reshape(expand(reshape(x, interleaved), expanded), merged);
}

Tensor repeat_interleave(const Tensor& x, int64_t repeats, std::optional<int64_t> dim) {
  check_defined("repeat_interleave", x, "input");
  RG_CHECK(repeats >= 0, "repeat_interleave: repeats must be >= 0, got ", repeats);
  if (!dim) return repeat_interleave(reshape(x, {x.numel()}), repeats, 0);
  const int64_t d = wrap_dim(*dim, x.dim(), "repeat_interleave");
  Tensor spread = x.unsqueeze(d + 1);
  Shape expanded = spread.shape(), merged = x.shape();
  expanded[d + 1] = repeats;
  merged[d] *= repeats;
  return reshape(expand(spread, expanded), merged);
}

Tensor one_hot(const Tensor& indices, int64_t num_classes) {
  check_defined("one_hot", indices, "input");
  RG_CHECK(indices.dtype() == DType::i64, "one_hot: indices must be int64, got ", indices.dtype());
  RG_CHECK(num_classes >= -1, "one_hot: num_classes must be >= -1, got ", num_classes);
  const bool empty_input = indices.numel() == 0;
  RG_CHECK(!(empty_input && num_classes == -1),
           "one_hot: cannot infer num_classes from an empty tensor; pass num_classes");
  if (!empty_input) {
    const int64_t low = static_cast<int64_t>(amin(indices).item());
    const int64_t high = static_cast<int64_t>(amax(indices).item());
    RG_CHECK(low >= 0, "one_hot: class values must be non-negative, got ", low);
    if (num_classes == -1) num_classes = high + 1;
    RG_CHECK(high < num_classes, "one_hot: class value ", high, " is out of range for ",
             num_classes, " classes");
  }
  Tensor classes = arange(num_classes, DType::i64, indices.device());
  return eq(indices.unsqueeze(-1), classes).to(DType::i64);
}

}  // namespace rg
