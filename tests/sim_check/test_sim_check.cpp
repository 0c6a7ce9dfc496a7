// sim-check catches each kind of kernel bug with the right kind and source line, stays
// quiet on the correct twin of each, and gives the known memory-traffic answers.
#include <doctest/doctest.h>

#include <fstream>
#include <string>
#include <vector>

#include "core/device_interface.h"
#include "core/op_table.h"
#include "core/tensor.h"
#include "kernels/builtin.h"
#include "kernels/sim/check/check.h"
#include "tests/sim_check/broken_kernels.h"

namespace check = rg::sim::check;
namespace kt = rg::sim_check_test;
using rg::DType;
using rg::Tensor;

namespace {

const rg::Device kSim(rg::DeviceType::sim);

// The line of broken_kernels.cpp marked `// LINE: <name>`.
int line_of(const std::string& name) {
  std::ifstream in(RG_BROKEN_KERNELS_SOURCE);
  std::string text;
  for (int line = 1; std::getline(in, text); ++line)
    if (text.find("// LINE: " + name) != std::string::npos) return line;
  FAIL("no `// LINE: ", name, "` in ", RG_BROKEN_KERNELS_SOURCE);
  return 0;
}

Tensor filled(int64_t n, DType dtype, double value) {
  Tensor t = rg::empty({n}, dtype, kSim);
  rg::kernel_table(rg::DeviceType::sim).fill(t, value);
  return t;
}
float* f32(const Tensor& t) { return static_cast<float*>(t.data_ptr()); }
int* i32(const Tensor& t) { return static_cast<int*>(t.data_ptr()); }

// Runs a launch that must be reported: it throws, and the reports are returned.
template <typename F>
std::vector<check::Report> reports_of(F&& launch) {
  CHECK_THROWS_AS(launch(), rg::Error);
  return check::take_reports();
}

// The report of `kind` at `line` of broken_kernels.cpp (and `other_line` for a pair).
bool has_report(const std::vector<check::Report>& reports, check::Kind kind, int line,
                int other_line = 0) {
  for (const check::Report& r : reports) {
    bool at = r.line == line && r.file.find("broken_kernels.cpp") != std::string::npos;
    bool pair = !other_line || (r.other_line == other_line) ||
                (r.line == other_line && r.other_line == line);
    if (r.kind == kind && (at || (other_line && r.other_line == line)) && pair) return true;
  }
  std::string all;
  for (const check::Report& r : reports) all += r.message + "\n";
  MESSAGE("reports:\n", all);
  return false;
}

// The twin must run clean: no throw, no reports.
template <typename F>
void clean(F&& launch) {
  CHECK_NOTHROW(launch());
  CHECK(check::take_reports().empty());
}

}  // namespace

TEST_CASE("sim-check: instrumented kernels are linked in") { CHECK(check::instrumented()); }

TEST_CASE("memcheck: an off-by-one overrun names the line and the allocation") {
  Tensor in = filled(100, DType::f32, 1), out = filled(100, DType::f32, 0);
  auto reports = reports_of([&] { kt::copy_n(f32(out), f32(in), 100, true); });
  REQUIRE(has_report(reports, check::Kind::memcheck, line_of("overrun")));
  CHECK(reports[0].message.find("past the end of an allocation of 400 bytes") != std::string::npos);
  clean([&] { kt::copy_n(f32(out), f32(in), 100, false); });
}

TEST_CASE("memcheck: a freed allocation is reported") {
  Tensor out = filled(64, DType::f32, 0);
  float* stale;
  {
    Tensor in = filled(64, DType::f32, 1);
    stale = f32(in);
  }
  auto reports = reports_of([&] { kt::copy_n(f32(out), stale, 64, false); });
  REQUIRE(has_report(reports, check::Kind::memcheck, line_of("overrun")));
  CHECK(reports[0].message.find("freed") != std::string::npos);
}

TEST_CASE("racecheck: a shared-memory race without __syncthreads names both lines") {
  Tensor out = filled(64, DType::i32, 0);
  auto reports = reports_of([&] { kt::rotate_shared(i32(out), true); });
  CHECK(
      has_report(reports, check::Kind::racecheck, line_of("rotate write"), line_of("rotate read")));
  clean([&] { kt::rotate_shared(i32(out), false); });
}

TEST_CASE("racecheck: a missing __syncwarp is a race even when the higher lanes read last") {
  Tensor out = filled(32, DType::i32, 0);
  auto reports = reports_of([&] { kt::half_warp_exchange(i32(out), true); });
  CHECK(has_report(reports, check::Kind::racecheck, line_of("exchange read"),
                   line_of("exchange write")));
  clean([&] { kt::half_warp_exchange(i32(out), false); });
}

TEST_CASE("racecheck: cp.async's copy is another thread's only after wait_group and a barrier") {
  Tensor in = filled(256, DType::i32, 7), out = filled(64, DType::i32, 0);
  auto reports = reports_of([&] { kt::async_copy_neighbour(i32(out), i32(in), true); });
  CHECK(has_report(reports, check::Kind::racecheck, line_of("async read")));
  clean([&] { kt::async_copy_neighbour(i32(out), i32(in), false); });
}

TEST_CASE("initcheck: shared memory no thread of the block wrote") {
  Tensor out = filled(64, DType::i32, 0);
  auto reports = reports_of([&] { kt::read_shared(i32(out), true); });
  CHECK(has_report(reports, check::Kind::initcheck, line_of("uninit read")));
  clean([&] { kt::read_shared(i32(out), false); });
}

TEST_CASE("initcheck: global memory never written since its allocation") {
  Tensor out = filled(32, DType::i32, 0);
  Tensor fresh = rg::empty({32}, DType::i32, kSim);
  auto reports = reports_of([&] { kt::read_global(i32(out), i32(fresh), 32); });
  CHECK(has_report(reports, check::Kind::initcheck, line_of("global read")));
  Tensor written = filled(32, DType::i32, 7);
  clean([&] { kt::read_global(i32(out), i32(written), 32); });
}

TEST_CASE("synccheck: a divergent barrier names its line") {
  Tensor out = filled(64, DType::i32, 0);
  auto reports = reports_of([&] { kt::divergent_barrier(i32(out), true); });
  CHECK(has_report(reports, check::Kind::synccheck, line_of("divergent")));
  clean([&] { kt::divergent_barrier(i32(out), false); });
}

TEST_CASE("synccheck: a full-mask shuffle in a partial warp") {
  Tensor out = filled(48, DType::i32, 0);
  auto reports = reports_of([&] { kt::partial_warp_shuffle(i32(out), true); });
  CHECK(has_report(reports, check::Kind::synccheck, line_of("partial shuffle")));
  clean([&] { kt::partial_warp_shuffle(i32(out), false); });
}

TEST_CASE("synccheck: a shuffle reading a lane outside its mask") {
  Tensor out = filled(32, DType::i32, 0);
  auto reports = reports_of([&] { kt::shuffle_outside_mask(i32(out), true); });
  CHECK(has_report(reports, check::Kind::synccheck, line_of("outside mask")));
  clean([&] { kt::shuffle_outside_mask(i32(out), false); });
}

// The wrappers out of line (an unoptimised kernel): a report named by the return address
// into the wrapper said kernels/sim/interpreter.h:90 (the inlining of __shfl_xor_sync differs
// between instruction sets). The call site each wrapper takes names the kernel's line.
TEST_CASE("synccheck: the kernel's line when the wrappers are not inlined") {
  Tensor out = filled(64, DType::i32, 0);
  auto reports = reports_of([&] { kt::unoptimised_partial_shuffle(i32(out)); });
  CHECK(has_report(reports, check::Kind::synccheck, line_of("unoptimised shuffle")));
  reports = reports_of([&] { kt::unoptimised_divergent_barrier(i32(out)); });
  CHECK(has_report(reports, check::Kind::synccheck, line_of("unoptimised divergent"),
                   line_of("unoptimised barrier")));
}

TEST_CASE("metrics: coalesced and stride-32 accesses, and a transpose's bank conflicts") {
  const int n = 1024;
  Tensor in = filled(32 * n, DType::f32, 1), out = filled(n, DType::f32, 0);
  check::reset_metrics();
  kt::coalesced_copy(f32(out), f32(in), n);
  kt::strided_load(f32(out), f32(in), n);
  kt::transpose_32(f32(out), f32(in), false);
  kt::transpose_32(f32(out), f32(in), true);
  auto m = check::metrics();
  const check::Metrics& copy = m["coalesced_copy"];
  CHECK(copy.load_requests == n / 32);
  CHECK(copy.load_sectors == 4 * copy.load_requests);  // 32 lanes x 4 bytes = 4 sectors
  CHECK(copy.store_sectors == 4 * copy.store_requests);
  CHECK(copy.dram_bytes == 2 * n * 4);  // read once, written once: the minimum
  const check::Metrics& strided = m["strided_load"];
  CHECK(strided.load_requests == n / 32);
  CHECK(strided.load_sectors == 32 * strided.load_requests);  // a sector per lane
  CHECK(strided.store_sectors == 4 * strided.store_requests);
  const check::Metrics& plain = m["transpose"];
  const check::Metrics& padded = m["transpose_padded"];
  CHECK(plain.shared_requests == 64);  // 32 warps: a store and a load each
  CHECK(plain.shared_ideal == 64);
  CHECK(plain.shared_wavefronts == 32 + 32 * 32);  // column reads: 32-way conflicts
  CHECK(padded.shared_requests == 64);
  CHECK(padded.shared_wavefronts == padded.shared_ideal);  // padding: no conflicts
}

TEST_CASE("sim-check sees the library's kernels: softmax's global accesses") {
  Tensor in = filled(8 * 256, DType::f32, 0.5), out = filled(8 * 256, DType::f32, 0);
  check::reset_metrics();
  rg::kernel_table(rg::DeviceType::sim)
      .softmax(rg::make_view(out, {8, 256}, {256, 1}, 0), rg::make_view(in, {8, 256}, {256, 1}, 0),
               1, false);
  CHECK(check::take_reports().empty());
  check::Metrics m = check::metrics()["softmax"];
  CHECK(m.launches == 1);
  CHECK(m.load_requests > 0);
  CHECK(m.load_sectors == 4 * m.load_requests);  // rows read coalesced
  CHECK(m.shared_requests == 0);                 // a warp per row: shuffles, no shared memory
  CHECK(m.dram_bytes >= 2 * 8 * 256 * 4);
  CHECK(m.blocks == 2);  // a warp per row, 4 rows per block
  // the launched function, named for the occupancy table (bench/kernels_occupancy.cpp)
  auto functions = check::kernel_functions("softmax");
  REQUIRE(functions.size() == 1);
  CHECK(functions[0].find("rg::sim::") != std::string::npos);
  CHECK(functions[0].find("softmax_rows_kernel<float, 8, rg::sim::WarpGroup>(float*") !=
        std::string::npos);
  CHECK(check::kernel_functions("no such kernel").empty());
}

// GPT-2's vocabulary: the cross-entropy backward keeps the row in opt-in dynamic shared
// memory (kernels/cuda/row_group.cuh), so the logits are read once (one request per 32), with
// no bank conflicts and no report; 60000 f32 classes are past the 227 KiB and read twice.
TEST_CASE("sim-check: the cross-entropy backward reads a 50257-class row once") {
  for (int64_t c : {50257, 60000}) {
    INFO("C ", c);
    Tensor logits = filled(c, DType::f32, 0.5), dlogits = filled(c, DType::f32, 0);
    Tensor targets = filled(1, DType::i64, 3), dloss = filled(1, DType::f32, 1);
    check::reset_metrics();
    rg::kernel_table(rg::DeviceType::sim)
        .cross_entropy_backward(rg::make_view(dlogits, {1, c}, {c, 1}, 0),
                                rg::make_view(logits, {1, c}, {c, 1}, 0), targets, dloss, -100);
    CHECK(check::take_reports().empty());
    check::Metrics m = check::metrics()["cross_entropy_backward"];
    const uint64_t row_requests = uint64_t((c + 31) / 32);
    CHECK(m.launches == 1);
    CHECK(m.store_requests == row_requests);
    if (c == 50257) {
      CHECK(m.load_requests >= row_requests);
      CHECK(m.load_requests < row_requests + 100);   // + the target and dloss, per warp
      CHECK(m.shared_requests >= 2 * row_requests);  // the row stored, then read once
      CHECK(m.shared_wavefronts == m.shared_ideal);
      auto functions = check::kernel_functions("cross_entropy_backward");
      REQUIRE(functions.size() == 1);
      CHECK(functions[0].find("cross_entropy_backward_kernel<float, -1, rg::sim::BlockGroup>") !=
            std::string::npos);
    } else {
      CHECK(m.load_requests >= 2 * row_requests);
      CHECK(m.shared_requests < row_requests);  // block_allreduce's scratch only
    }
  }
}
