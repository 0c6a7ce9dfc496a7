// Random tensors from a thread-local Philox generator, and dropout built on them.
// A tensor of n elements uses counters [offset, offset + n) and advances the offset by n.
#include "core/shape_checks.h"
#include "kernels/builtin.h"
#include "ops/ops.h"
#include "ops/record.h"

namespace rg {

Generator& default_generator() {
  thread_local Generator gen{0x2545F4914F6CDD1Dull, 0};
  return gen;
}

void manual_seed(uint64_t seed) { default_generator() = Generator{seed, 0}; }

namespace {
Tensor random_tensor(const Shape& shape, DType dtype, Device device, Generator* gen,
                     RandomKind kind) {
  RG_CHECK(is_floating(dtype), kind == RandomKind::normal ? "randn" : "rand",
           ": expected a floating dtype, got ", dtype);
  checked_nbytes(shape, itemsize(dtype), kind == RandomKind::normal ? "randn" : "rand");
  Generator& g = gen ? *gen : default_generator();
  Tensor out = empty(shape, dtype, device);
  if (out.numel()) RG_KERNEL(device, random)(out, kind, g.seed, g.offset);
  g.offset += static_cast<uint64_t>(out.numel());
  return out;
}
}  // namespace

Tensor rand(const Shape& shape, DType dtype, Device device, Generator* gen) {
  return random_tensor(shape, dtype, device, gen, RandomKind::uniform);
}

Tensor randn(const Shape& shape, DType dtype, Device device, Generator* gen) {
  return random_tensor(shape, dtype, device, gen, RandomKind::normal);
}

Tensor dropout(const Tensor& x, double p, bool training, Generator* gen) {
  RG_CHECK(p >= 0 && p <= 1, "dropout: probability must be in [0, 1], got ", p);
  if (!training || p == 0) return x;
  if (p == 1) return mul(x, 0.0);
  Tensor keep =
      ge(rand(x.shape(), x.dtype(), x.device(), gen), scalar_tensor(p, x.dtype(), x.device()));
  Tensor scale = mul(keep.to(x.dtype()), 1.0 / (1.0 - p));
  return mul(x, scale);
}

}  // namespace rg
