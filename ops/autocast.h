// THE autocast policy table (torch.autocast with bf16): what an op does with its floating
// inputs while an AutocastGuard (autograd/autocast_mode.h) is on in this thread.
//   lower    f32 inputs are cast to the lower dtype (bf16) and the op computes in it: GEMMs,
//            whose bf16 products accumulate in f32, and so halve the activations they save
//   float32  bf16 inputs are cast to f32: ops whose accuracy needs it in what they return
//            (log-probabilities and losses, normalisation, reductions)
//   compute_float32  the input is left as it is: a bf16 input is computed in f32 inside the
//            kernel (max, exp and their sum) and only the result is rounded to bf16 (softmax:
//            its probabilities feed a bf16 matmul next, so an f32 copy would only double the
//            bytes saved for backward)
// Every op not listed runs in the promoted dtype of its inputs, as without autocast: a bf16
// GEMM output stays bf16 through GELU and dropout, and a residual add of bf16 to the f32
// stream gives f32. f64 inputs are never changed (autocast trades only f32 for bf16), nor
// are integer inputs. The casts are ordinary `to` ops, so their gradients flow back in the
// input's dtype: an f32 parameter gets an f32 gradient. docs/nn.md has the table for users.
#pragma once
#include "core/tensor.h"

namespace rg {

// clang-format off
#define RG_AUTOCAST_OPS(X)                          \
  /* op                           policy */         \
  X(matmul,                        lower)           \
  X(linear,                        lower)           \
  X(scaled_dot_product_attention,  lower)           \
  X(softmax,                       compute_float32) \
  X(log_softmax,                   float32)         \
  X(layer_norm,                    float32)         \
  X(cross_entropy,                 float32)         \
  X(sum,                           float32)         \
  X(mean,                          float32)
// clang-format on

enum class AutocastOp : uint8_t {
#define RG_AUTOCAST_ENUM(name, policy) name,
  RG_AUTOCAST_OPS(RG_AUTOCAST_ENUM)
#undef RG_AUTOCAST_ENUM
};

enum class AutocastPolicy : uint8_t { lower, float32, compute_float32 };
AutocastPolicy autocast_policy(AutocastOp op);
const char* autocast_op_name(AutocastOp op);

// x as `op` takes it: cast by the op's policy while autocast is on, else x itself. An
// undefined tensor stays undefined (an absent bias).
Tensor autocast(AutocastOp op, const Tensor& x);

}  // namespace rg
