// The namespace of the CPU kernels' instruction set (core/cpu_capability.h). Every file of
// kernels/cpu/ is compiled once per capability, with that capability's flags
// (kernels/cpu/meson.build), and puts its code in rg::cpu::RG_CPU_CAP:
//   rg::cpu::baseline  x86-64 (SSE2), or aarch64 (NEON)
//   rg::cpu::avx2      AVX2 + FMA
//   rg::cpu::avx512    AVX-512 F/CD/BW/DQ/VL
// so that the three builds of one function never share a symbol and the linker cannot hand
// one capability's caller another's code. Outside that build (a test including a kernel
// header, say) the namespace follows the flags the file is compiled with.
//
// Eigen is header-only and puts everything in namespace Eigen; an inline function of its
// (a GEMM driver, say) then has one name in all three builds, and the linker keeps a single
// copy: the avx512 kernels would run the baseline's SSE code, or worse the baseline the
// avx512 code. The per-capability build therefore defines the name Eigen itself as a macro
// on the command line (kernels/cpu/meson.build): Eigen_baseline, Eigen_avx2, Eigen_avx512
// (the kernels write Eigen:: as usual).
#pragma once

#if !defined(RG_CPU_CAP_LEVEL)
#if defined(__AVX512F__) && defined(__AVX512BW__) && defined(__AVX512DQ__) && \
    defined(__AVX512VL__) && defined(__AVX2__) && defined(__FMA__)
#define RG_CPU_CAP_LEVEL 2
#elif defined(__AVX2__) && defined(__FMA__)
#define RG_CPU_CAP_LEVEL 1
#else
#define RG_CPU_CAP_LEVEL 0
#endif
#endif

#if RG_CPU_CAP_LEVEL == 2
#if !defined(__AVX512F__) || !defined(__AVX512BW__) || !defined(__AVX512DQ__) || \
    !defined(__AVX512VL__) || !defined(__AVX2__) || !defined(__FMA__)
#error "the avx512 kernels need -mavx512f -mavx512bw -mavx512dq -mavx512vl -mavx2 -mfma"
#endif
#define RG_CPU_CAP avx512
#elif RG_CPU_CAP_LEVEL == 1
#if !defined(__AVX2__) || !defined(__FMA__) || defined(__AVX512F__)
#error "the avx2 kernels need -mavx2 -mfma and no AVX-512"
#endif
#define RG_CPU_CAP avx2
#else
#if defined(__AVX__)
#error "the baseline kernels need a target without AVX"
#endif
#define RG_CPU_CAP baseline
#endif
