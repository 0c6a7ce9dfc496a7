// doctest's main for every test executable. A test run for a CPU capability this CPU lacks
// (RG_CPU_CAPABILITY=avx512 on an AVX2 machine: tests/meson.build runs some suites once per
// capability) is skipped with meson's exit code 77, before any static initialiser of a test
// file compiled for that capability could run one of its instructions.
#define DOCTEST_CONFIG_IMPLEMENT_WITH_MAIN
#include <doctest/doctest.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "core/cpu_capability.h"

namespace {

__attribute__((constructor(101))) void skip_unsupported_cpu_capability() {
  const char* wanted = std::getenv("RG_CPU_CAPABILITY");
  if (!wanted || !*wanted) return;
  for (rg::CpuCapability c : rg::supported_cpu_capabilities())
    if (std::strcmp(wanted, rg::cpu_capability_name(c)) == 0) return;
  bool built = false;  // a name the build does not know is the library's error to report
  for (rg::CpuCapability c : rg::built_cpu_capabilities())
    built = built || std::strcmp(wanted, rg::cpu_capability_name(c)) == 0;
  if (!built) return;
  std::fprintf(stderr, "skipped: RG_CPU_CAPABILITY=%s, which this CPU does not support\n", wanted);
  std::fflush(stderr);
  _exit(77);
}

}  // namespace
