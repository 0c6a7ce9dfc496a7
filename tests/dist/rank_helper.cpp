// A tiny program the rgrun tests launch as every rank. Behaviour by argv[1]:
//   env                  prints the launcher variables it received
//   fail RANK CODE       rank RANK prints a line and exits with CODE; the others sleep
//   crash RANK           rank RANK kills itself with SIGKILL; the others sleep
//   allreduce [RANK]     joins the tcp process group from the environment, all-reduces and
//                        checks the result, prints "ok"; rank RANK, when given, sleeps 60 s
//                        instead of all-reducing. An error is written to RG_ERROR_FILE too
//                        (rg::dist::record_failure)
//   tiers COUNT          the same with COUNT floats and no sleeper; prints "tiers: within_host=W
//                        network=N", the payload bytes this rank sent during it by link tier
//   wait PREFIX          creates PREFIX.RANK.ready once it handles SIGTERM, then sleeps up to
//                        60 s; on SIGTERM it creates PREFIX.RANK.term and exits 0
//                        (the tests find these ranks by PREFIX in their command line)
//   environ              joins the tcp group like allreduce, then prints "token=TOKEN" and
//                        "environ clean" when neither its /proc/self/environ nor its parent's
//                        (rgrun's) holds the token's bytes any more
#include <fcntl.h>
#include <signal.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iterator>
#include <string>

#include "dist/dist_error.h"
#include "dist/init.h"

namespace {

char g_term_file[4096];

void on_term(int) {
  const int fd = open(g_term_file, O_WRONLY | O_CREAT | O_TRUNC, 0600);
  if (fd >= 0) close(fd);
  _exit(0);
}

// Whether a /proc/PID/environ holds the token (an unreadable one counts as holding it).
bool holds(const std::string& proc_file, const std::string& token) {
  std::ifstream in(proc_file, std::ios::binary);
  if (!in) return true;
  const std::string all((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  return all.find(token) != std::string::npos;
}

int check_environ() {
  try {
    auto pg = rg::dist::init_process_group("tcp");
    pg->barrier()->wait();
    const std::string token = rg::dist::job_token_from_env();
    std::printf("token=%s\n", token.c_str());
    if (std::getenv("RG_JOB_TOKEN")) std::printf("RG_JOB_TOKEN is still set\n");
    if (rg::dist::job_token_from_env() != token) std::printf("a second read differs\n");
    const bool mine = holds("/proc/self/environ", token);
    const bool rgruns = holds("/proc/" + std::to_string(getppid()) + "/environ", token);
    std::printf("%s\n", mine     ? "environ holds the token"
                        : rgruns ? "rgrun's environ holds the token"
                                 : "environ clean");
    return 0;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "error: %s\n", e.what());
    return 1;
  }
}

// Joins the tcp group from the environment and all-reduces `count` floats (rank `sleeper`
// sleeps 60 s first); checks the sums. `tiers`: prints the payload bytes this rank sent by
// link tier during the all-reduce.
int join_and_allreduce(int64_t count, int sleeper, bool tiers) {
  try {
    auto pg = rg::dist::init_process_group("tcp");
    if (pg->rank() == sleeper) sleep(60);
    rg::Tensor t = rg::empty({count});
    // Small whole numbers: every order of summation gives the same exact sums.
    for (int64_t i = 0; i < count; ++i)
      t.data<float>()[i] = static_cast<float>(pg->rank() + i % 1000);
    const rg::dist::LinkTierBytes before = pg->transport().bytes_sent();
    pg->allreduce(t)->wait();
    const rg::dist::LinkTierBytes after = pg->transport().bytes_sent();
    const int n = pg->size();
    for (int64_t i = 0; i < count; ++i) {
      if (t.data<float>()[i] != static_cast<float>(n * (n - 1) / 2 + n * (i % 1000))) {
        std::printf("wrong element %lld\n", static_cast<long long>(i));
        return 1;
      }
    }
    if (tiers)
      std::printf("tiers: within_host=%llu network=%llu\n",
                  static_cast<unsigned long long>(after.within_host - before.within_host),
                  static_cast<unsigned long long>(after.network - before.network));
    std::printf("ok\n");
    return 0;
  } catch (const std::exception& e) {
    rg::dist::record_failure(e);
    std::fprintf(stderr, "error: %s\n", e.what());
    return 1;
  }
}

}  // namespace

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
    sleep(600);  // must be stopped by rgrun (test_rgrun.cpp gives it 40 s)
    return 0;
  }
  if (mode == "wait" && argc > 2) {
    std::snprintf(g_term_file, sizeof g_term_file, "%s.%d.term", argv[2], info.rank);
    signal(SIGTERM, on_term);
    const std::string ready = std::string(argv[2]) + "." + std::to_string(info.rank) + ".ready";
    std::ofstream{ready};
    sleep(60);
    return 0;
  }
  if (mode == "environ") return check_environ();
  if (mode == "allreduce")
    return join_and_allreduce(1000, argc > 2 ? std::atoi(argv[2]) : -1, false);
  if (mode == "tiers" && argc > 2) return join_and_allreduce(std::atoll(argv[2]), -1, true);
  std::fprintf(stderr, "rank_helper: unknown mode %s\n", mode.c_str());
  return 2;
}
