// doctest's main for every test executable. A test run for a CPU capability this CPU lacks
// (RG_CPU_CAPABILITY=avx512 on an AVX2 machine: tests/meson.build runs some suites once per
// capability) is skipped with meson's exit code 77, before any static initialiser of a test
// file compiled for that capability could run one of its instructions.
#define DOCTEST_CONFIG_IMPLEMENT_WITH_MAIN
#include <doctest/doctest.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>

#include "core/cpu_capability.h"

namespace {

__attribute__((constructor(101))) void skip_unsupported_cpu_capability() {
  const char* wanted = std::getenv("RG_CPU_CAPABILITY");
  if (!wanted || !*wanted) return;
  if (rg::cpu_capability_listed(wanted, rg::supported_cpu_capabilities())) return;
  // A name the build does not know is the library's error to report.
  if (!rg::cpu_capability_listed(wanted, rg::built_cpu_capabilities())) return;
  std::fprintf(stderr, "skipped: RG_CPU_CAPABILITY=%s, which this CPU does not support\n", wanted);
  std::fflush(stderr);
  _exit(77);
}

}  // namespace
