// Parameter initialisers, written in place under NoGradGuard. Each draws from the Generator
// it is given (the thread's default generator when null), so a model built from the same
// seed is identical on every rank and every rerun, independent of thread count.
#pragma once
#include "ops/ops.h"

namespace rg::nn::init {

void normal_(const Tensor& t, double mean = 0.0, double std = 1.0, Generator* gen = nullptr);
void uniform_(const Tensor& t, double low, double high, Generator* gen = nullptr);
void constant_(const Tensor& t, double value);
inline void zeros_(const Tensor& t) { constant_(t, 0.0); }
inline void ones_(const Tensor& t) { constant_(t, 1.0); }

}  // namespace rg::nn::init
