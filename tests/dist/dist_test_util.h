// Shared helpers of the dist tests: deterministic per-rank inputs, the f64 reference of each
// reduction, per-dtype tolerances, byte-level comparison of results across ranks, and whether
// this machine lets a process read memory with process_vm_readv.
#pragma once
#include <sys/uio.h>
#include <unistd.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "core/shareable_host_memory.h"
#include "core/tensor.h"
#include "dist/process_group.h"

namespace rg::dist::test {

inline constexpr DType kAllDtypes[] = {DType::f32, DType::f64, DType::bf16, DType::i32, DType::i64};

// A reproducible pseudo-random value in [-1, 1) for (rank, index, seed).
inline double input_value(int rank, int64_t i, uint64_t seed = 0) {
  uint64_t x = (static_cast<uint64_t>(i) + 1) * 0x9E3779B97F4A7C15ull ^
               (static_cast<uint64_t>(rank) + 17) * 0xC2B2AE3D27D4EB4Full ^ seed;
  x ^= x >> 31;
  x *= 0xBF58476D1CE4E5B9ull;
  x ^= x >> 29;
  return static_cast<double>(x >> 11) / static_cast<double>(1ull << 52) - 1.0;
}

// The value as the tensor of `dtype` stores it, read back as f64.
inline double stored_value(DType dtype, double v) {
  switch (dtype) {
    case DType::f32:
      return static_cast<float>(v);
    case DType::bf16:
      return static_cast<float>(bf16_t(static_cast<float>(v)));
    case DType::i32:
    case DType::i64:
      return std::floor(v * 1000);
    default:
      return v;
  }
}

inline void set_element(const Tensor& t, int64_t i, double v) {
  void* p = t.data_ptr();
  switch (t.dtype()) {
    case DType::f32:
      static_cast<float*>(p)[i] = static_cast<float>(v);
      break;
    case DType::f64:
      static_cast<double*>(p)[i] = v;
      break;
    case DType::bf16:
      static_cast<bf16_t*>(p)[i] = bf16_t(static_cast<float>(v));
      break;
    case DType::i32:
      static_cast<int32_t*>(p)[i] = static_cast<int32_t>(v);
      break;
    case DType::i64:
      static_cast<int64_t*>(p)[i] = static_cast<int64_t>(v);
      break;
    default:
      break;
  }
}

inline double get_element(const Tensor& t, int64_t i) {
  const void* p = t.data_ptr();
  switch (t.dtype()) {
    case DType::f32:
      return static_cast<const float*>(p)[i];
    case DType::f64:
      return static_cast<const double*>(p)[i];
    case DType::bf16:
      return static_cast<float>(static_cast<const bf16_t*>(p)[i]);
    case DType::i32:
      return static_cast<const int32_t*>(p)[i];
    case DType::i64:
      return static_cast<double>(static_cast<const int64_t*>(p)[i]);
    default:
      return 0;
  }
}

// A cpu tensor of n elements holding rank's inputs.
inline Tensor make_input(DType dtype, int64_t n, int rank, uint64_t seed = 0) {
  Tensor t = empty({n}, dtype);
  for (int64_t i = 0; i < n; ++i)
    set_element(t, i, stored_value(dtype, input_value(rank, i, seed)));
  return t;
}

// make_input allocated as DDP allocates its buckets: from the shareable arena (where peers of
// this host may map it) once a group turned the arena on.
inline Tensor make_shared_input(DType dtype, int64_t n, int rank, uint64_t seed = 0) {
  ShareableAllocations shared;
  return make_input(dtype, n, rank, seed);
}

// Reference reduction over ranks 0..world-1 of element i, in f64.
inline double reference(DType dtype, CombineOp op, int world, int64_t i, uint64_t seed = 0) {
  double acc = op == CombineOp::max ? -1e300 : 0;
  for (int r = 0; r < world; ++r) {
    double v = stored_value(dtype, input_value(r, i, seed));
    acc = op == CombineOp::max ? std::max(acc, v) : acc + v;
  }
  return op == CombineOp::avg ? acc / world : acc;
}

inline bool close_enough(DType dtype, double got, double want) {
  double err = std::fabs(got - want);
  switch (dtype) {
    case DType::f64:
      return err <= 1e-12 * (1 + std::fabs(want));
    case DType::f32:
      return err <= 1e-5 * (1 + std::fabs(want));
    case DType::bf16:
      return err <= 1e-2 * std::fabs(want) + 1e-5;
    default:
      return got == want;
  }
}

// Returns "" when every element of `t` matches the reference, else a description.
inline std::string check_reduction(const Tensor& t, CombineOp op, int world, uint64_t seed = 0) {
  for (int64_t i = 0; i < t.numel(); ++i) {
    double want = reference(t.dtype(), op, world, i, seed), got = get_element(t, i);
    if (!close_enough(t.dtype(), got, want))
      return str(dtype_name(t.dtype()), " ", combine_op_name(op), " world ", world, " length ",
                 t.numel(), ": element ", i, " is ", got, ", expected ", want);
  }
  return "";
}

inline std::vector<char> bytes_of(const Tensor& t) {
  std::vector<char> b(t.nbytes());
  if (!b.empty()) std::memcpy(b.data(), t.data_ptr(), b.size());
  return b;
}

inline bool supports(DType dtype, CombineOp op) {
  return !(op == CombineOp::avg && (dtype == DType::i32 || dtype == DType::i64));
}

// Whether process_vm_readv works here at all (a seccomp filter may forbid it): read a word of
// this very process. The single-copy all-reduce must be taken exactly where it does (and,
// between processes, where Yama allows; see test_tcp.cpp).
inline bool process_reads_work() {
  const int64_t source = 0x5eed;
  int64_t seen = 0;
  iovec local{&seen, sizeof seen};
  iovec remote{const_cast<int64_t*>(&source), sizeof source};
  return process_vm_readv(getpid(), &local, 1, &remote, 1, 0) == sizeof seen && seen == source;
}

}  // namespace rg::dist::test
