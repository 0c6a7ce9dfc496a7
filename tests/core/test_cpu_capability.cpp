// The CPU capability choice: RG_CPU_CAPABILITY against what the build and the CPU have.
#include <doctest/doctest.h>

#include <string>

#include "core/cpu_capability.h"
#include "core/error.h"

using namespace rg;

namespace {
std::string error_of(const char* requested, const std::vector<CpuCapability>& supported) {
  try {
    choose_cpu_capability(requested, supported);
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}
}  // namespace

TEST_CASE("cpu_capability_listed finds a name only in its list") {
  const std::vector<CpuCapability> some{CpuCapability::baseline, CpuCapability::avx2};
  CHECK(cpu_capability_listed("baseline", some));
  CHECK(cpu_capability_listed("avx2", some));
  CHECK_FALSE(cpu_capability_listed("avx512", some));
  CHECK_FALSE(cpu_capability_listed("AVX2", some));
  CHECK_FALSE(cpu_capability_listed("", some));
  CHECK_FALSE(cpu_capability_listed(nullptr, some));
  CHECK_FALSE(cpu_capability_listed("baseline", {}));
}

TEST_CASE("unset RG_CPU_CAPABILITY takes the highest supported; a name picks it") {
  const std::vector<CpuCapability> baseline_only{CpuCapability::baseline};
  CHECK(choose_cpu_capability(nullptr, baseline_only) == CpuCapability::baseline);
  CHECK(choose_cpu_capability("", baseline_only) == CpuCapability::baseline);
  CHECK(choose_cpu_capability("baseline", baseline_only) == CpuCapability::baseline);
  const std::vector<CpuCapability> built = built_cpu_capabilities();
  CHECK(choose_cpu_capability(nullptr, built) == built.back());
  for (CpuCapability c : built) CHECK(choose_cpu_capability(cpu_capability_name(c), built) == c);
}

TEST_CASE("a capability the CPU or the build lacks is an error naming the variable and value") {
  const std::vector<CpuCapability> built = built_cpu_capabilities();
  if (built.size() > 1) {
    const char* higher = cpu_capability_name(built.back());
    const std::string e = error_of(higher, {CpuCapability::baseline});
    CHECK(e.find(std::string("RG_CPU_CAPABILITY=") + higher) != std::string::npos);
    CHECK(e.find("this CPU does not support") != std::string::npos);
  }
  const std::string unknown = error_of("sse9", built);
  CHECK(unknown.find("RG_CPU_CAPABILITY=sse9") != std::string::npos);
  CHECK(unknown.find("not a CPU capability of this build") != std::string::npos);
}
