// F.pad: pads (or, with negative amounts, crops) the last dims of a tensor. `pad` lists
// (before, after) pairs starting from the LAST dim: {1, 2} pads the last dim with 1 element
// before and 2 after; {1, 2, 3, 4} also pads the dim before it with 3 and 4. Each dim is
// done in turn by cat of the tensor with its border blocks, so autograd gives the gradient:
//   constant:  blocks filled with `value`;
//   replicate: the edge element expanded;
//   reflect:   the elements mirrored about the edge, the edge itself not repeated
//              (needs pad < size, as PyTorch);
//   circular:  the elements from the other end (needs pad <= size).
#include <string>

#include "ops/ops.h"
#include "ops/record.h"

namespace rg {

namespace {

// The elements x.narrow(dim, i, 1) for i in `order`, concatenated along dim.
Tensor pick(const Tensor& x, int64_t dim, const std::vector<int64_t>& order) {
  std::vector<Tensor> parts;
  for (int64_t i : order) parts.push_back(x.narrow(dim, i, 1));
  return cat(parts, dim);
}

// The border block of `amount` > 0 elements before (or after) x along dim.
Tensor border(const Tensor& x, int64_t dim, int64_t amount, bool before, const std::string& mode,
              double value) {
  const int64_t size = x.size(dim);
  Shape shape = x.shape();
  shape[dim] = amount;
  if (mode == "constant") return full(shape, value, x.dtype(), x.device());
  if (mode == "replicate") {
    RG_CHECK(size > 0, "pad: mode 'replicate' cannot pad an empty dim ", dim);
    return expand(x.narrow(dim, before ? 0 : size - 1, 1), shape);
  }
  if (mode == "circular") {
    RG_CHECK(amount <= size, "pad: mode 'circular' needs padding ", amount, " <= the size ", size,
             " of dim ", dim);
    return x.narrow(dim, before ? size - amount : 0, amount);
  }
  RG_CHECK(amount < size, "pad: mode 'reflect' needs padding ", amount, " < the size ", size,
           " of dim ", dim);
  std::vector<int64_t> order;
  for (int64_t k = amount; k >= 1; --k) order.push_back(before ? k : size - 1 - (amount + 1 - k));
  return pick(x, dim, order);
}

Tensor pad_dim(const Tensor& x, int64_t dim, int64_t before, int64_t after, const std::string& mode,
               double value) {
  Tensor out = x;
  if (before < 0 || after < 0) {  // crop first
    const int64_t start = std::max<int64_t>(0, -before);
    const int64_t length = x.size(dim) - start - std::max<int64_t>(0, -after);
    RG_CHECK(length >= 0, "pad: negative padding (", before, ", ", after,
             ") removes more than the ", x.size(dim), " elements of dim ", dim);
    out = out.narrow(dim, start, length);
  }
  std::vector<Tensor> parts;
  if (before > 0) parts.push_back(border(out, dim, before, true, mode, value));
  parts.push_back(out);
  if (after > 0) parts.push_back(border(out, dim, after, false, mode, value));
  return parts.size() == 1 ? out : cat(parts, dim);
}

}  // namespace

Tensor pad(const Tensor& x, const std::vector<int64_t>& amounts, const std::string& mode,
           double value) {
  check_defined("pad", x, "input");
  const int64_t pairs = static_cast<int64_t>(amounts.size()) / 2;
  RG_CHECK(amounts.size() % 2 == 0, "pad: padding ", shape_str(amounts),
           " must have an even length ((before, after) per dim)");
  RG_CHECK(pairs <= x.dim(), "pad: padding ", shape_str(amounts), " covers ", pairs,
           " dims, but the input has shape ", shape_str(x.shape()));
  RG_CHECK(mode == "constant" || mode == "reflect" || mode == "replicate" || mode == "circular",
           "pad: mode '", mode, "' is not one of 'constant', 'reflect', 'replicate', 'circular'");
  RG_CHECK(mode == "constant" || value == 0, "pad: a fill value (", value,
           ") is only used by mode 'constant', not '", mode, "'");
  Tensor out = x;
  for (int64_t i = 0; i < pairs; ++i)
    out = pad_dim(out, x.dim() - 1 - i, amounts[2 * i], amounts[2 * i + 1], mode, value);
  return out;
}

}  // namespace rg
