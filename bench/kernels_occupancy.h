// bench/kernels --sim-check: the occupancy column. Each kernel an op launched on sim is
// looked up in the ptxas table generated at build time (kernels_ptxas.inc, from
// scripts/cubin_resources.py) and put through sim-check's H200 occupancy model with the
// block size of its launches.
#pragma once
#include <map>
#include <string>

#include "kernels/sim/check/check.h"

namespace rg::bench {

// Whether the build had nvcc (the table has rows).
bool ptxas_table_available();
// The lowest occupancy among the kernels of one op, with its limiter ("100% W", "50% R"),
// "n/a" without a table, "?" when a kernel is missing from it.
std::string op_occupancy(const std::map<std::string, sim::check::Metrics>& kernels);

}  // namespace rg::bench
