// Reading the launcher's environment: torchrun/rgrun, Slurm and Open MPI variables.
#include <doctest/doctest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <string>

#include "dist/init.h"
#include "tests/dist/process_util.h"

using namespace rg;
using namespace rg::dist;

namespace {
LaunchInfo parse(const std::map<std::string, std::string>& vars) {
  return launch_info_from_env([&](const char* name) -> const char* {
    auto it = vars.find(name);
    return it == vars.end() ? nullptr : it->second.c_str();
  });
}
}  // namespace

TEST_CASE("torchrun variables give rank, world, local rank and master") {
  auto info = parse({{"RANK", "5"},
                     {"WORLD_SIZE", "8"},
                     {"LOCAL_RANK", "1"},
                     {"LOCAL_WORLD_SIZE", "4"},
                     {"MASTER_ADDR", "node7"},
                     {"MASTER_PORT", "1234"}});
  CHECK(info.source == "torchrun");
  CHECK(info.rank == 5);
  CHECK(info.world_size == 8);
  CHECK(info.local_rank == 1);
  CHECK(info.local_world_size == 4);
  CHECK(info.master_addr == "node7");
  CHECK(info.master_port == 1234);
}

TEST_CASE("Slurm variables: first node of the list is the master, port from the job id") {
  auto info = parse({{"SLURM_PROCID", "6"},
                     {"SLURM_NTASKS", "8"},
                     {"SLURM_LOCALID", "2"},
                     {"SLURM_TASKS_PER_NODE", "4(x2)"},
                     {"SLURM_JOB_NODELIST", "gpu[07-08,10],cpu1"},
                     {"SLURM_JOB_ID", "123456"}});
  CHECK(info.source == "slurm");
  CHECK(info.rank == 6);
  CHECK(info.world_size == 8);
  CHECK(info.local_rank == 2);
  CHECK(info.local_world_size == 4);
  CHECK(info.master_addr == "gpu07");
  CHECK(info.master_port == 20000 + 123456 % 20000);
  // MASTER_ADDR / MASTER_PORT win.
  auto explicit_master = parse({{"SLURM_PROCID", "0"},
                                {"SLURM_NTASKS", "2"},
                                {"SLURM_JOB_NODELIST", "a1"},
                                {"MASTER_ADDR", "10.0.0.1"},
                                {"MASTER_PORT", "4000"}});
  CHECK(explicit_master.master_addr == "10.0.0.1");
  CHECK(explicit_master.master_port == 4000);
}

TEST_CASE("the first host of Slurm node lists") {
  CHECK(first_slurm_host("node1") == "node1");
  CHECK(first_slurm_host("node1,node2") == "node1");
  CHECK(first_slurm_host("gpu[03-05,9],cpu1") == "gpu03");
  CHECK(first_slurm_host("a[1,2]") == "a1");
}

TEST_CASE("Open MPI variables") {
  auto info = parse({{"OMPI_COMM_WORLD_RANK", "3"},
                     {"OMPI_COMM_WORLD_SIZE", "4"},
                     {"OMPI_COMM_WORLD_LOCAL_RANK", "1"},
                     {"OMPI_COMM_WORLD_LOCAL_SIZE", "2"}});
  CHECK(info.source == "openmpi");
  CHECK(info.rank == 3);
  CHECK(info.world_size == 4);
  CHECK(info.local_rank == 1);
  CHECK(info.local_world_size == 2);
  CHECK(info.master_addr == "127.0.0.1");
  CHECK(info.master_port == 29500);
}

TEST_CASE("no launcher: a world of one") {
  auto info = parse({});
  CHECK(info.source == "default");
  CHECK(info.rank == 0);
  CHECK(info.world_size == 1);
}

TEST_CASE("malformed or inconsistent variables are errors naming the variable") {
  CHECK_THROWS_WITH_AS(parse({{"RANK", "x"}, {"WORLD_SIZE", "2"}}), doctest::Contains("RANK='x'"),
                       Error);
  CHECK_THROWS_WITH_AS(parse({{"RANK", "2"}, {"WORLD_SIZE", "2"}}),
                       doctest::Contains("RANK=2 is outside the world of WORLD_SIZE=2"), Error);
  CHECK_THROWS_WITH_AS(parse({{"SLURM_PROCID", "4"}, {"SLURM_NTASKS", "4"}}),
                       doctest::Contains("SLURM_PROCID=4 is outside the world of SLURM_NTASKS=4"),
                       Error);
  CHECK_THROWS_WITH_AS(parse({{"RANK", "0"}}),
                       doctest::Contains("RANK=0 is set but WORLD_SIZE is not"), Error);
  CHECK_THROWS_WITH_AS(parse({{"RANK", "0"}, {"WORLD_SIZE", "1"}, {"MASTER_PORT", "99999"}}),
                       doctest::Contains("MASTER_PORT"), Error);
}

TEST_CASE("RANK without WORLD_SIZE (or the reverse) is an error, not a silent single process") {
  CHECK_THROWS_WITH_AS(parse({{"RANK", "1"}}),
                       doctest::Contains("RANK=1 is set but WORLD_SIZE is not"), Error);
  CHECK_THROWS_WITH_AS(parse({{"WORLD_SIZE", "3"}}),
                       doctest::Contains("WORLD_SIZE=3 is set but RANK is not"), Error);
}

TEST_CASE("the job token comes from RG_JOB_TOKEN, else Slurm's or Open MPI's job id") {
  auto token = [](const std::map<std::string, std::string>& vars) {
    return job_token_from_env([&](const char* name) -> const char* {
      auto it = vars.find(name);
      return it == vars.end() ? nullptr : it->second.c_str();
    });
  };
  CHECK(token({{"RG_JOB_TOKEN", "abc"}, {"SLURM_JOB_ID", "7"}}) == "abc");
  CHECK(token({{"SLURM_JOB_ID", "7"}, {"SLURM_STEP_ID", "2"}}) == "slurm:7.2");
  CHECK(token({{"SLURM_JOB_ID", "7"}, {"SLURM_STEP_ID", "3"}}) !=
        token({{"SLURM_JOB_ID", "7"}, {"SLURM_STEP_ID", "2"}}));
  CHECK(token({{"OMPI_MCA_ess_base_jobid", "123"}}) == "ompi:123");
  CHECK(token({{"PMIX_NAMESPACE", "prterun-x-1@1"}}) == "pmix:prterun-x-1@1");
  CHECK(token({}) == kDefaultJobToken);
  CHECK_THROWS_WITH_AS(token({{"RG_JOB_TOKEN", std::string(300, 'x')}}),
                       doctest::Contains("RG_JOB_TOKEN"), Error);
}

TEST_CASE("RG_JOB_TOKEN_FILE gives the token; a file group or others can read is refused") {
  const std::string path =
      (std::filesystem::temp_directory_path() / ("rg-token-" + std::to_string(getpid()))).string();
  auto write = [&](const std::string& text, mode_t mode) {
    std::ofstream(path, std::ios::trunc) << text;
    REQUIRE(chmod(path.c_str(), mode) == 0);
  };
  auto token = [&](const std::map<std::string, std::string>& vars) {
    return job_token_from_env([&](const char* name) -> const char* {
      auto it = vars.find(name);
      return it == vars.end() ? nullptr : it->second.c_str();
    });
  };
  write("s3cret\n", 0600);
  CHECK(token({{"RG_JOB_TOKEN_FILE", path}, {"SLURM_JOB_ID", "7"}}) == "s3cret");
  CHECK(token({{"RG_JOB_TOKEN", "abc"}, {"RG_JOB_TOKEN_FILE", path}}) == "abc");
  CHECK(find_job_token([&](const char* name) -> const char* {
          return std::string(name) == "RG_JOB_TOKEN_FILE" ? path.c_str() : nullptr;
        }).source == "RG_JOB_TOKEN_FILE");
  for (mode_t mode : {0640, 0604, 0644}) {
    CAPTURE(mode);
    write("s3cret\n", mode);
    char octal[8];
    std::snprintf(octal, sizeof octal, "%04o", unsigned(mode));
    CHECK_THROWS_WITH_AS(
        token({{"RG_JOB_TOKEN_FILE", path}}),
        doctest::Contains(str("RG_JOB_TOKEN_FILE '", path, "': mode ", octal).c_str()), Error);
  }
  write("\n", 0600);
  CHECK_THROWS_WITH_AS(token({{"RG_JOB_TOKEN_FILE", path}}), doctest::Contains("empty"), Error);
  write(std::string(300, 'x'), 0600);
  CHECK_THROWS_WITH_AS(token({{"RG_JOB_TOKEN_FILE", path}}),
                       doctest::Contains("RG_JOB_TOKEN_FILE: 300 bytes"), Error);
  std::filesystem::remove(path);
  CHECK_THROWS_WITH_AS(
      token({{"RG_JOB_TOKEN_FILE", path}}),
      doctest::Contains(str("RG_JOB_TOKEN_FILE '", path, "': cannot open").c_str()), Error);
}

TEST_CASE("a process that reads RG_JOB_TOKEN removes it from its environment and keeps it") {
  // In a child of its own: the token stays cached in the process that read it.
  auto results = test::run_processes(
      1,
      [](int) {
        setenv("RG_JOB_TOKEN", "first-token", 1);
        RG_CHECK(job_token_from_env() == "first-token", "first read");
        RG_CHECK(std::getenv("RG_JOB_TOKEN") == nullptr, "RG_JOB_TOKEN is still set");
        RG_CHECK(job_token_from_env() == "first-token", "second read: ", job_token_from_env());
        setenv("RG_JOB_TOKEN", "second-token", 1);  // a newly set one wins over the cache
        RG_CHECK(job_token_from_env() == "second-token", "after setenv");
        RG_CHECK(job_token_from_env() == "second-token", "after setenv, again");
      },
      std::chrono::seconds(20));
  REQUIRE(results.size() == 1);
  INFO(results[0].message);
  CHECK(results[0].status == 0);
}
