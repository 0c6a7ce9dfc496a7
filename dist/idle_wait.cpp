// The idle-wait policy of the message pump and the mpi transport (dist/idle_wait.h).
#include "dist/idle_wait.h"

#include <sched.h>
#include <unistd.h>

#include <cstdlib>
#include <string>

#include "core/error.h"

namespace rg::dist {
namespace {

int count_cores() {
  cpu_set_t allowed;
  if (sched_getaffinity(0, sizeof(allowed), &allowed) == 0) return CPU_COUNT(&allowed);
  const long online = sysconf(_SC_NPROCESSORS_ONLN);
  return online > 0 ? static_cast<int>(online) : 1;
}

const int g_cores_at_load = count_cores();  // at load: before main pins anything

}  // namespace

IdleWait default_idle_wait() {
  const char* s = std::getenv("RG_DIST_IDLE_WAIT");
  if (!s || !*s || std::string(s) == "auto") return IdleWait::automatic;
  if (std::string(s) == "spin") return IdleWait::spin_first;
  if (std::string(s) == "yield") return IdleWait::yield_at_once;
  RG_FAIL("RG_DIST_IDLE_WAIT='", s, "': expected auto, spin or yield");
}

int cores_at_load() { return g_cores_at_load; }

bool yields_at_once(IdleWait wait, int ranks_on_host, int cores) {
  if (wait != IdleWait::automatic) return wait == IdleWait::yield_at_once;
  return ranks_on_host > cores;
}

}  // namespace rg::dist
