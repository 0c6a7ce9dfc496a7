// The tensor-core attention (kernels/cuda/attention_mma.cuh) against the cpu kernels: bf16,
// and f32 with TF32 allowed, forward and backward, causal or not, T and S off the 64-row
// tiles, heads of 64 and 128 (the latter past 48 KiB of shared memory). Errors are measured
// against the largest value of each result: bf16 rounds P and dS to 8 bits before their
// products, TF32 to 11.
#include <algorithm>
#include <cmath>
#include <string>

#include "kernels/cuda/stream.h"
#include "tests/kernels/helpers.h"

using namespace rg;
using namespace rg::test;

namespace {

// max |got - want| / max |want|.
double relative_error(const Tensor& got, const Tensor& want) {
  const std::vector<double> g = values(got), w = values(want);
  double diff = 0, scale = 0;
  for (size_t i = 0; i < w.size(); ++i) {
    diff = std::max(diff, std::abs(g[i] - w[i]));
    scale = std::max(scale, std::abs(w[i]));
  }
  return diff / scale;
}

struct Case {
  int64_t B, T, S, D;
  bool causal;
};

// Checks out, lse, dq, dk, dv on `device` against the cpu within `tol` (relative to each
// result's largest value); returns the largest error.
double check_against_cpu(Device device, DType dtype, Case c, double tol) {
  const int64_t D = c.D;
  Tensor q = random_tensor({c.B, c.T, D}, dtype, 1), k = random_tensor({c.B, c.S, D}, dtype, 2);
  Tensor v = random_tensor({c.B, c.S, D}, dtype, 3), dout = random_tensor({c.B, c.T, D}, dtype, 4);
  const double scale = 1.0 / std::sqrt(double(D));
  Tensor out = empty({c.B, c.T, D}, dtype), lse = empty({c.B, c.T}, DType::f32);
  cpu_kernels().attention(out, lse, q, k, v, c.causal, scale);
  Tensor gq = mirror(q, device), gk = mirror(k, device), gv = mirror(v, device);
  Tensor gout = empty(out.shape(), dtype, device), glse = empty(lse.shape(), DType::f32, device);
  kernels_of(device).attention(gout, glse, gq, gk, gv, c.causal, scale);
  Tensor dq = empty(q.shape(), dtype), dk = empty(k.shape(), dtype), dv = empty(v.shape(), dtype);
  cpu_kernels().attention_backward(dq, dk, dv, dout, q, k, v, out, lse, c.causal, scale);
  Tensor gdq = empty(q.shape(), dtype, device), gdk = empty(k.shape(), dtype, device),
         gdv = empty(v.shape(), dtype, device);
  kernels_of(device).attention_backward(gdq, gdk, gdv, mirror(dout, device), gq, gk, gv,
                                        mirror(out, device), mirror(lse, device), c.causal, scale);
  double worst = 0;
  const char* names[] = {"out", "lse", "dq", "dk", "dv"};
  const Tensor got[] = {gout, glse, gdq, gdk, gdv}, want[] = {out, lse, dq, dk, dv};
  for (int i = 0; i < 5; ++i) {
    const double e = relative_error(got[i], want[i]);
    INFO(std::string(names[i]));
    CHECK(e < tol);
    worst = std::max(worst, e);
  }
  return worst;
}

const Case kCases[] = {{2, 80, 80, 64, true},    // two query and key tiles, the second partial
                       {1, 70, 100, 64, false},  // T != S
                       {2, 100, 70, 64, true},   // causal with T > S
                       {1, 64, 64, 64, true},    // exactly one tile
                       {1, 1, 65, 64, false},    // one query row
                       {1, 20, 33, 128, true}};  // a wide head: over 48 KiB of shared memory

// Restores the TF32 switch whatever the test does.
struct Tf32 {
  bool before = allow_tf32();
  explicit Tf32(bool allow) { set_allow_tf32(allow); }
  ~Tf32() { set_allow_tf32(before); }
};

}  // namespace

GPU_KERNEL_TEST(tensor_core_attention_bf16_matches_cpu) {
  for (Case c : kCases) {
    INFO("B ", c.B, " T ", c.T, " S ", c.S, " D ", c.D, std::string(c.causal ? " causal" : ""));
    check_against_cpu(device, DType::bf16, c, 2e-2);
  }
}

GPU_KERNEL_TEST(tensor_core_attention_tf32_matches_cpu_and_only_when_allowed) {
  for (Case c : kCases) {
    INFO("B ", c.B, " T ", c.T, " S ", c.S, " D ", c.D, std::string(c.causal ? " causal" : ""));
    {
      Tf32 on(true);
      // TF32's rounding shows: the tensor-core kernel ran
      CHECK(check_against_cpu(device, DType::f32, c, 5e-3) > 1e-6);
    }
    Tf32 off(false);
    check_against_cpu(device, DType::f32, c, 1e-5);  // today's f32 kernel
  }
}

// cp.async copies 16-byte chunks: q, k, v or dout at an address off 16 bytes (a view one
// element into its storage) takes the kernels above instead (sim would trap on the copy).
GPU_KERNEL_TEST(tensor_core_attention_declines_views_off_16_bytes) {
  const int64_t T = 70, D = 64;
  for (DType dtype : {DType::bf16, DType::f32}) {
    Tf32 on(true);
    auto shifted = [&](uint64_t seed) {
      Tensor whole = random_tensor({T * D + 1}, dtype, seed);
      return make_view(whole, {1, T, D}, {T * D, D, 1}, 1);
    };
    Tensor q = shifted(1), k = shifted(2), v = shifted(3);
    Tensor out = empty({1, T, D}, dtype), lse = empty({1, T}, DType::f32);
    cpu_kernels().attention(out, lse, q, k, v, true, 0.125);
    Tensor gout = empty(out.shape(), dtype, device), glse = empty(lse.shape(), DType::f32, device);
    kernels_of(device).attention(gout, glse, mirror(q, device), mirror(k, device),
                                 mirror(v, device), true, 0.125);
    INFO((dtype == DType::bf16 ? "bf16" : "f32"));
    CHECK(relative_error(gout, out) < (dtype == DType::bf16 ? 2e-2 : 1e-5));  // f32: no TF32
    CHECK(relative_error(glse, lse) < 1e-5);
  }
}
