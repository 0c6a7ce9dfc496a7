// bench/allreduce_hosts: all-reduce time of one job spread over hosts, run as every rank under
// rgrun (RANK, WORLD_SIZE, ... from the launcher; tcp backend). bench/two_hosts.sh runs it on
// two network namespaces joined by a shaped veth link, alternating RG_DIST_ALLREDUCE=ring and
// two_level, and tabulates both. For each size: one warm-up call, then `calls` all-reduces
// between two barriers; the time of one is the mean. Rank 0 prints one line per size:
//   size BYTES time_us T busbw_gbs G network_bytes N
// where N is the payload bytes all ranks together sent to other hosts per all-reduce.
//
//   allreduce_hosts [--min-bytes 64K] [--max-bytes 16M] [--factor 4] [--megabytes 64]
#include <algorithm>
#include <chrono>
#include <cstdio>

#include "bench/cli.h"
#include "dist/init.h"
#include "ops/ops.h"

namespace {

struct Config {
  int64_t min_bytes = 64 << 10, max_bytes = 16 << 20, factor = 4;
  int64_t megabytes = 64;  // data all-reduced per size (bounds the time on a slow link)
};

// Network bytes all ranks sent so far (a tiny all-reduce of this rank's counter).
double network_bytes(rg::dist::ProcessGroup& pg) {
  rg::Tensor count =
      rg::full({1}, static_cast<double>(pg.transport().bytes_sent().network), rg::DType::f64);
  pg.allreduce(count)->wait();
  return count.data<double>()[0];
}

void measure(rg::dist::ProcessGroup& pg, int64_t bytes, const Config& c) {
  rg::Tensor buf = rg::ones({bytes / 4});
  const int calls = static_cast<int>(std::clamp<int64_t>((c.megabytes << 20) / bytes, 3, 200));
  pg.allreduce(buf)->wait();
  const double before = network_bytes(pg);
  pg.barrier()->wait();
  const auto start = std::chrono::steady_clock::now();
  for (int i = 0; i < calls; ++i) pg.allreduce(buf)->wait();
  pg.barrier()->wait();
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count() / calls;
  // Per all-reduce (the first count's own exchange, 8 bytes per peer, is in there too).
  const double network = (network_bytes(pg) - before) / calls;
  const int n = pg.size();
  if (pg.rank() == 0)
    std::printf("size %lld time_us %.1f busbw_gbs %.3f network_bytes %.0f\n",
                static_cast<long long>(bytes), seconds * 1e6,
                bytes / seconds * 2 * (n - 1) / n / 1e9, network);
}

}  // namespace

int main(int argc, char** argv) {
  Config c;
  CLI::App app("all-reduce time of one job over several hosts (run under rgrun)",
               "allreduce_hosts");
  rg::bench::show_defaults(app);
  app.add_option("--min-bytes", c.min_bytes, "smallest buffer")->check(CLI::Range(4, 1 << 30));
  app.add_option("--max-bytes", c.max_bytes, "largest buffer")->check(CLI::Range(4, 1 << 30));
  app.add_option("--factor", c.factor, "size step")->check(CLI::Range(2, 1024));
  app.add_option("--megabytes", c.megabytes, "data all-reduced per size")
      ->check(CLI::Range(1, 4096));
  rg::bench::parse_flags(app, argc, argv);
  try {
    auto pg = rg::dist::init_process_group("tcp");
    for (int64_t bytes = c.min_bytes; bytes <= c.max_bytes; bytes *= c.factor)
      measure(*pg, bytes, c);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "allreduce_hosts: %s\n", e.what());
    return 1;
  }
  return 0;
}
