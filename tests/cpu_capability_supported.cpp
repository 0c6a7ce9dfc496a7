// Exits 0 when this CPU supports the capability named by RG_CPU_CAPABILITY (or it is unset),
// else 77, meson's code for a skipped test, after saying why: shell tests that tests/meson.build
// runs once per CPU capability call it first.
#include <cstdio>
#include <cstdlib>

#include "core/cpu_capability.h"

int main() {
  const char* wanted = std::getenv("RG_CPU_CAPABILITY");
  if (!wanted || !*wanted) return 0;
  if (rg::cpu_capability_listed(wanted, rg::supported_cpu_capabilities())) return 0;
  std::printf("skipped: RG_CPU_CAPABILITY=%s, which this CPU does not support\n", wanted);
  return 77;
}
