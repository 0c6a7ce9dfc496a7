// Which instruction set the CPU kernels run with: PyTorch's "CPU capability".
//
// The CPU kernels (kernels/cpu/) are compiled once per capability into namespaces of their
// own (rg::cpu::baseline, rg::cpu::avx2, rg::cpu::avx512 on x86-64; rg::cpu::baseline, which
// has NEON, on aarch64). At first use the best one the CPU supports is chosen (cpuid), unless
// the environment variable RG_CPU_CAPABILITY names a lower one:
//   RG_CPU_CAPABILITY=baseline|avx2|avx512
// Naming one the CPU lacks, or one this build has no kernels for, is an rg::Error naming the
// variable, the value and what the CPU offers. The choice holds for the process's lifetime.
#pragma once
#include <string>
#include <vector>

namespace rg {

// Ordered: each includes the ones before it.
//   baseline: x86-64 (SSE2), or aarch64 (NEON)
//   avx2:     AVX2 + FMA (+ F16C, BMI1/2, LZCNT, MOVBE: x86-64-v3)
//   avx512:   AVX-512 F, CD, BW, DQ, VL (x86-64-v4)
enum class CpuCapability { baseline = 0, avx2 = 1, avx512 = 2 };

const char* cpu_capability_name(CpuCapability capability);

// The capabilities this build compiled kernels for, lowest first.
std::vector<CpuCapability> built_cpu_capabilities();

// Those of the build that this CPU (and its operating system) can run, lowest first.
std::vector<CpuCapability> supported_cpu_capabilities();

// Whether `name` ("avx2", say) is the name of a capability in `list`.
bool cpu_capability_listed(const char* name, const std::vector<CpuCapability>& list);

// The one the CPU kernels run with (decided at the first call, then fixed).
CpuCapability cpu_capability();

// "avx2", say, and what the CPU could run: "avx2 (cpu supports baseline, avx2)".
std::string cpu_capability_description();

// RG_CPU_CAPABILITY's value (or null when unset) -> the capability to run, given what the CPU
// supports. Throws rg::Error naming the variable and the value when it is not a capability
// name or names one not in `supported`. Exposed for tests.
CpuCapability choose_cpu_capability(const char* requested,
                                    const std::vector<CpuCapability>& supported);

}  // namespace rg
