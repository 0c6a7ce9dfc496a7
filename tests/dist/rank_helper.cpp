// A tiny program the rgrun tests launch as every rank. Behaviour by argv[1]:
//   env                  prints the launcher variables it received
//   fail RANK CODE       rank RANK prints a line and exits with CODE; the others sleep
//   crash RANK           rank RANK kills itself with SIGKILL; the others sleep
//   allreduce            joins the tcp process group from the environment, all-reduces and
//                        checks the result, prints "ok"
#include <signal.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <string>

#include "dist/init.h"

int main(int argc, char** argv) {
  std::string mode = argc > 1 ? argv[1] : "env";
  auto info = rg::dist::launch_info_from_env();
  if (mode == "env") {
    std::printf("rank %d of %d, local %d of %d, master %s:%d\n", info.rank, info.world_size,
                info.local_rank, info.local_world_size, info.master_addr.c_str(), info.master_port);
    std::printf("second line without newline");
    return 0;
  }
  if (mode == "fail" || mode == "crash") {
    if (info.rank == std::atoi(argv[2])) {
      std::printf("rank %d failing now\n", info.rank);
      std::fflush(stdout);
      if (mode == "crash") raise(SIGKILL);
      return std::atoi(argv[3]);
    }
    sleep(60);  // must be stopped by rgrun
    return 0;
  }
  if (mode == "allreduce") {
    try {
      auto pg = rg::dist::init_process_group("tcp");
      rg::Tensor t = rg::empty({1000});
      for (int i = 0; i < 1000; ++i) t.data<float>()[i] = static_cast<float>(pg->rank() + i);
      pg->allreduce(t)->wait();
      const int n = pg->size();
      for (int i = 0; i < 1000; ++i) {
        if (t.data<float>()[i] != static_cast<float>(n * (n - 1) / 2 + n * i)) {
          std::printf("wrong element %d\n", i);
          return 1;
        }
      }
      std::printf("ok\n");
      return 0;
    } catch (const std::exception& e) {
      std::fprintf(stderr, "error: %s\n", e.what());
      return 1;
    }
  }
  std::fprintf(stderr, "rank_helper: unknown mode %s\n", mode.c_str());
  return 2;
}
