// The type a CPU kernel computes in for a storage type: bf16 is widened to float,
// everything else computes in itself.
#pragma once
#include <type_traits>

#include "core/dispatch.h"
#include "kernels/cpu/capability.h"

namespace rg::cpu::RG_CPU_CAP {

template <typename T>
using compute_t = std::conditional_t<std::is_same_v<T, bf16_t>, float, T>;

}  // namespace rg::cpu::RG_CPU_CAP
