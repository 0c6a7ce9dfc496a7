// Eigen's GEMM runs an OpenMP team of omp_get_max_threads() threads; inside rg::parallel_for
// tasks that team would busy-wait on cores the other tasks hold (a 2-thread GPT step took
// 25x its 1-thread time). EigenSingleThread makes the calling thread's Eigen products
// single-threaded for its scope, restoring the previous team size after.
#pragma once
#include <omp.h>

#include "kernels/cpu/capability.h"

namespace rg::cpu::RG_CPU_CAP {

class EigenSingleThread {
 public:
  EigenSingleThread() : previous_(omp_get_max_threads()) { omp_set_num_threads(1); }
  ~EigenSingleThread() { omp_set_num_threads(previous_); }
  EigenSingleThread(const EigenSingleThread&) = delete;
  EigenSingleThread& operator=(const EigenSingleThread&) = delete;

 private:
  int previous_;
};

}  // namespace rg::cpu::RG_CPU_CAP
