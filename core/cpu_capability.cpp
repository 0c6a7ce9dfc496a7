// Choosing the CPU kernels' instruction set (see cpu_capability.h): cpuid through GCC's
// __builtin_cpu_supports, which also checks that the operating system saves the AVX and
// AVX-512 registers (XGETBV), then RG_CPU_CAPABILITY.
#include "core/cpu_capability.h"

#include <cstdlib>
#include <cstring>
#include <mutex>

#include "core/error.h"

namespace rg {
namespace {

#if defined(__x86_64__)
bool cpu_has_avx2() {
  __builtin_cpu_init();
  return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") &&
         __builtin_cpu_supports("f16c") && __builtin_cpu_supports("bmi") &&
         __builtin_cpu_supports("bmi2") && __builtin_cpu_supports("movbe");
}

bool cpu_has_avx512() {
  __builtin_cpu_init();
  return cpu_has_avx2() && __builtin_cpu_supports("avx512f") &&
         __builtin_cpu_supports("avx512cd") && __builtin_cpu_supports("avx512bw") &&
         __builtin_cpu_supports("avx512dq") && __builtin_cpu_supports("avx512vl");
}
#endif

std::string names(const std::vector<CpuCapability>& list) {
  std::string out;
  for (CpuCapability c : list)
    out += (out.empty() ? "" : ", ") + std::string(cpu_capability_name(c));
  return out;
}

}  // namespace

const char* cpu_capability_name(CpuCapability capability) {
  switch (capability) {
    case CpuCapability::baseline:
      return "baseline";
    case CpuCapability::avx2:
      return "avx2";
    case CpuCapability::avx512:
      return "avx512";
  }
  return "unknown";
}

std::vector<CpuCapability> built_cpu_capabilities() {
#if defined(__x86_64__)
  return {CpuCapability::baseline, CpuCapability::avx2, CpuCapability::avx512};
#else
  return {CpuCapability::baseline};
#endif
}

std::vector<CpuCapability> supported_cpu_capabilities() {
  std::vector<CpuCapability> out{CpuCapability::baseline};
#if defined(__x86_64__)
  if (cpu_has_avx2()) out.push_back(CpuCapability::avx2);
  if (cpu_has_avx512()) out.push_back(CpuCapability::avx512);
#endif
  return out;
}

bool cpu_capability_listed(const char* name, const std::vector<CpuCapability>& list) {
  for (CpuCapability c : list)
    if (name && std::strcmp(name, cpu_capability_name(c)) == 0) return true;
  return false;
}

CpuCapability choose_cpu_capability(const char* requested,
                                    const std::vector<CpuCapability>& supported) {
  if (!requested || !*requested) return supported.back();
  for (CpuCapability c : built_cpu_capabilities()) {
    if (std::strcmp(requested, cpu_capability_name(c)) != 0) continue;
    for (CpuCapability s : supported)
      if (s == c) return c;
    RG_FAIL("RG_CPU_CAPABILITY=", requested, ": this CPU does not support ", requested,
            " (it supports ", names(supported), ")");
  }
  RG_FAIL("RG_CPU_CAPABILITY=", requested, ": not a CPU capability of this build (one of ",
          names(built_cpu_capabilities()), ")");
}

CpuCapability cpu_capability() {
  static const CpuCapability chosen =
      choose_cpu_capability(std::getenv("RG_CPU_CAPABILITY"), supported_cpu_capabilities());
  return chosen;
}

std::string cpu_capability_description() {
  return str(cpu_capability_name(cpu_capability()), " (cpu supports ",
             names(supported_cpu_capabilities()), ")");
}

}  // namespace rg
