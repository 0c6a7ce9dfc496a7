// bench/kernels --sim-check: the memory traffic of each kernel as sim-check measures it
// (kernels/sim/check), and the H200 time it predicts. See kernels_sim_check.cpp.
#pragma once
#include <functional>

namespace rg::bench {

// Whether this binary carries sim-check's instrumented kernels (-Dsim_check=enabled).
bool sim_check_available();
void sim_check_header();
// Runs fn once on sim and prints its row; min_bytes: what the op must move at least.
void sim_check_row(const char* name, double min_bytes, const std::function<void()>& fn);
void sim_check_footer();

}  // namespace rg::bench
