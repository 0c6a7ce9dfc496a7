// sim-check's shared-memory counters (kernels/sim/check/metrics.cpp) on the tensor-core
// attention kernels (kernels/cuda/attention_mma.cuh): forward, dq and dkdv, bf16 and TF32,
// heads of 64 and 128. Their tiles are padded (bf16) or swizzled (TF32) and fragments come
// by ldmatrix, so no shared-memory request needs more wavefronts than its words need: zero
// bank conflicts (before: 4 to 6 times the ideal wavefronts). The counters only exist in the
// instrumented run (suite sim_check: kernels_sim_check); the plain run of this file says so and
// checks nothing more. The table it prints is the one in docs/kernels.md ("Tensor-core attention:
// shared memory").
#include <cstdio>
#include <string>

#include "kernels/cuda/stream.h"
#include "kernels/sim/check/check.h"
#include "tests/kernels/helpers.h"

using namespace rg;
using namespace rg::test;

namespace {

// Restores the TF32 switch whatever the test does.
struct AllowTf32 {
  bool before = allow_tf32();
  AllowTf32() { set_allow_tf32(true); }
  ~AllowTf32() { set_allow_tf32(before); }
};

// Forward and backward of one attention on sim: B 1, T = S = 128 (two tiles), not causal.
void run_attention(DType dtype, int64_t D) {
  const Device sim(DeviceType::sim);
  const int64_t T = 128;
  auto input = [&](uint64_t seed) { return mirror(random_tensor({1, T, D}, dtype, seed), sim); };
  Tensor q = input(1), k = input(2), v = input(3), dout = input(4);
  Tensor out = empty({1, T, D}, dtype, sim), lse = empty({1, T}, DType::f32, sim);
  const KernelTable& kt = kernels_of(sim);
  kt.attention(out, lse, q, k, v, false, 0.125);
  Tensor dq = empty(q.shape(), dtype, sim), dk = empty(q.shape(), dtype, sim),
         dv = empty(q.shape(), dtype, sim);
  kt.attention_backward(dq, dk, dv, dout, q, k, v, out, lse, false, 0.125);
}

}  // namespace

TEST_CASE("sim-check: the tensor-core attention kernels have no shared-memory bank conflicts") {
  if (!sim::check::instrumented()) {
    MESSAGE("no sim-check counters in this build: run the sim_check suite (kernels_sim_check)");
    return;
  }
  AllowTf32 tf32;
  std::printf("%-32s %-5s %4s %9s %11s %9s %10s\n", "kernel", "type", "D", "requests", "wavefronts",
              "ideal", "conflicts");
  for (DType dtype : {DType::bf16, DType::f32})
    for (int64_t D : {64, 128}) {
      sim::check::reset_metrics();
      run_attention(dtype, D);
      int kernels = 0;
      for (const auto& [name, m] : sim::check::metrics()) {
        if (name.find("(mma)") == std::string::npos) continue;
        ++kernels;
        std::printf("%-32s %-5s %4lld %9llu %11llu %9llu %10llu\n", name.c_str(),
                    dtype == DType::bf16 ? "bf16" : "tf32", static_cast<long long>(D),
                    static_cast<unsigned long long>(m.shared_requests),
                    static_cast<unsigned long long>(m.shared_wavefronts),
                    static_cast<unsigned long long>(m.shared_ideal),
                    static_cast<unsigned long long>(m.shared_wavefronts - m.shared_ideal));
        INFO(name, " ", dtype == DType::bf16 ? "bf16" : "tf32", " D ", D);
        CHECK(m.shared_requests > 0);
        CHECK(m.shared_wavefronts == m.shared_ideal);
      }
      CHECK(kernels == 3);  // forward, dq, dkdv
    }
}
