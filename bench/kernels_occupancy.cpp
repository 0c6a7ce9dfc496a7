// The occupancy column of bench/kernels --sim-check; see kernels_occupancy.h.
#include "bench/kernels_occupancy.h"

#include <cstdio>
#include <cstring>

#include "kernels/sim/check/occupancy.h"

namespace rg::bench {

namespace {

struct PtxasRow {
  const char* function;  // demangled, without the backend namespace
  int registers;
  int shared_bytes;
};

constexpr PtxasRow kPtxas[] = {
#include "kernels_ptxas.inc"
    {nullptr, 0, 0},
};

// sim's name of a kernel function in the table's spelling (rg::sim:: becomes rg::).
std::string table_key(std::string name) {
  const std::string backend = "rg::sim::";
  for (size_t at; (at = name.find(backend)) != std::string::npos;)
    name.replace(at, backend.size(), "rg::");
  return name;
}

const PtxasRow* find_row(const std::string& function) {
  std::string key = table_key(function);
  for (const PtxasRow& row : kPtxas)
    if (row.function && key == row.function) return &row;
  return nullptr;
}

}  // namespace

bool ptxas_table_available() { return kPtxas[0].function != nullptr; }

std::string op_occupancy(const std::map<std::string, sim::check::Metrics>& kernels) {
  if (!ptxas_table_available()) return "n/a";
  bool any = false;
  sim::check::Occupancy lowest;
  for (const auto& [kernel, m] : kernels) {
    if (m.blocks == 0) continue;
    auto threads_per_block = static_cast<unsigned>(m.threads / m.blocks);
    for (const std::string& function : sim::check::kernel_functions(kernel)) {
      const PtxasRow* row = find_row(function);
      if (!row) return "?";
      auto o =
          sim::check::h200_occupancy(row->registers, size_t(row->shared_bytes), threads_per_block);
      if (!any || o.fraction < lowest.fraction) lowest = o;
      any = true;
    }
  }
  if (!any) return "-";
  char text[32];
  std::snprintf(text, sizeof text, "%.0f%% %c", 100 * lowest.fraction,
                static_cast<char>(lowest.limit));
  return text;
}

}  // namespace rg::bench
