// rgrun end to end: the launcher runs tests/dist/rank_helper as every rank. Paths come from
// the environment meson sets (RGRUN, RANK_HELPER); every run is killed after a time limit.
#include <doctest/doctest.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <string>
#include <vector>

namespace {

struct Run {
  int exit_code = -1;  // -1: killed at the limit
  std::string output;  // stdout and stderr together
};

Run run_command(std::vector<std::string> args, std::chrono::seconds limit) {
  int fds[2];
  REQUIRE(pipe(fds) == 0);
  std::vector<char*> argv;  // built before the fork: the child only calls async-signal-safe code
  for (auto& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  pid_t pid = fork();
  if (pid == 0) {
    dup2(fds[1], 1);
    dup2(fds[1], 2);
    close(fds[0]);
    close(fds[1]);
    execv(argv[0], argv.data());
    _exit(127);
  }
  close(fds[1]);
  Run run;
  auto deadline = std::chrono::steady_clock::now() + limit;
  for (;;) {
    pollfd p{fds[0], POLLIN, 0};
    poll(&p, 1, 100);
    char buf[4096];
    ssize_t k = p.revents ? read(fds[0], buf, sizeof(buf)) : 0;
    if (k > 0) run.output.append(buf, k);
    if (p.revents && k <= 0) break;  // EOF: rgrun and its ranks are done
    if (std::chrono::steady_clock::now() > deadline) {
      kill(pid, SIGKILL);
      break;
    }
  }
  close(fds[0]);
  int status = 0;
  waitpid(pid, &status, 0);
  if (WIFEXITED(status)) run.exit_code = WEXITSTATUS(status);
  return run;
}

std::string path_of(const char* variable) {
  const char* p = std::getenv(variable);
  REQUIRE_MESSAGE(p, variable, " is not set (run the test through meson)");
  return p;
}

bool contains(const std::string& s, const std::string& part) {
  return s.find(part) != std::string::npos;
}

}  // namespace

TEST_CASE("rgrun sets the launcher variables and prefixes each rank's lines") {
  Run run =
      run_command({path_of("RGRUN"), "--nproc-per-node", "3", "--", path_of("RANK_HELPER"), "env"},
                  std::chrono::seconds(30));
  INFO(run.output);
  CHECK(run.exit_code == 0);
  for (int r = 0; r < 3; ++r) {
    CHECK(contains(run.output, "[rank " + std::to_string(r) + "] rank " + std::to_string(r) +
                                   " of 3, local " + std::to_string(r) +
                                   " of 3, master 127.0.0.1:"));
    // A last line without a newline is still printed, with its prefix.
    CHECK(contains(run.output, "[rank " + std::to_string(r) + "] second line without newline"));
  }
}

TEST_CASE("rgrun --quiet-others shows rank 0 only") {
  Run run = run_command({path_of("RGRUN"), "--nproc-per-node", "2", "--quiet-others", "--",
                         path_of("RANK_HELPER"), "env"},
                        std::chrono::seconds(30));
  INFO(run.output);
  CHECK(run.exit_code == 0);
  CHECK(contains(run.output, "[rank 0] rank 0 of 2"));
  CHECK(!contains(run.output, "[rank 1]"));
}

TEST_CASE("rgrun stops the other ranks and exits with the failing rank's code, naming it") {
  auto start = std::chrono::steady_clock::now();
  Run run = run_command(
      {path_of("RGRUN"), "--nproc-per-node", "3", "--", path_of("RANK_HELPER"), "fail", "1", "3"},
      std::chrono::seconds(40));
  INFO(run.output);
  CHECK(run.exit_code == 3);
  CHECK(contains(run.output, "[rank 1] rank 1 failing now"));
  CHECK(contains(run.output, "rgrun: rank 1 exited with code 3"));
  // The sleeping ranks were stopped, not waited for.
  CHECK(std::chrono::steady_clock::now() - start < std::chrono::seconds(20));
}

TEST_CASE("rgrun reports a rank killed by a signal") {
  Run run = run_command(
      {path_of("RGRUN"), "--nproc-per-node", "2", "--", path_of("RANK_HELPER"), "crash", "0"},
      std::chrono::seconds(40));
  INFO(run.output);
  CHECK(run.exit_code == 128 + SIGKILL);
  CHECK(contains(run.output, "rgrun: rank 0 was killed by signal 9 (SIGKILL)"));
}

TEST_CASE("ranks started by rgrun join a tcp group from the environment and all-reduce") {
  Run run = run_command(
      {path_of("RGRUN"), "--nproc-per-node", "3", "--", path_of("RANK_HELPER"), "allreduce"},
      std::chrono::seconds(60));
  INFO(run.output);
  CHECK(run.exit_code == 0);
  for (int r = 0; r < 3; ++r) CHECK(contains(run.output, "[rank " + std::to_string(r) + "] ok"));
}

TEST_CASE("rgrun rejects bad arguments, naming the flag and the value") {
  Run run = run_command({path_of("RGRUN"), "--nproc-per-node", "0", "--", "/bin/true"},
                        std::chrono::seconds(10));
  CHECK(run.exit_code == 2);
  CHECK(contains(run.output, "--nproc-per-node: Value 0 not in range"));
  for (const char* grace : {"abc", "-1"}) {
    run = run_command({path_of("RGRUN"), "--grace", grace, "--", "/bin/true"},
                      std::chrono::seconds(10));
    INFO(run.output);
    CHECK(run.exit_code == 2);
    CHECK(contains(run.output, std::string("--grace: Value ") + grace));
  }
  run = run_command({path_of("RGRUN"), "--nproc-per-node", "1"}, std::chrono::seconds(10));
  CHECK(run.exit_code == 2);
  CHECK(contains(run.output, "no program given"));
  run =
      run_command({path_of("RGRUN"), "--nnodes", "2", "--", "/bin/true"}, std::chrono::seconds(10));
  CHECK(run.exit_code == 2);
  CHECK(contains(run.output, "multi-node job needs --master-port"));
}

TEST_CASE("rgrun --help describes every flag with its default") {
  Run run = run_command({path_of("RGRUN"), "--help"}, std::chrono::seconds(10));
  INFO(run.output);
  CHECK(run.exit_code == 0);
  for (const char* flag :
       {"--nproc-per-node", "--nnodes", "--node-rank", "--master-addr", "--master-port",
        "--rdzv-id", "--quiet-others", "--grace", "--max-restarts"})
    CHECK(contains(run.output, flag));
  CHECK(contains(run.output, "=5"));  // --grace's default
}

TEST_CASE("rgrun gives every rank one job token, a new one per job unless RG_JOB_TOKEN is set") {
  auto token_lines = [](const std::vector<std::string>& prefix) {
    std::vector<std::string> args = prefix;
    for (const char* a :
         {"--nproc-per-node", "3", "--", "/bin/sh", "-c", "echo token=$RG_JOB_TOKEN"})
      args.push_back(a);
    Run run = run_command(args, std::chrono::seconds(30));
    INFO(run.output);
    CHECK(run.exit_code == 0);
    std::vector<std::string> tokens;
    for (size_t at = run.output.find("token="); at != std::string::npos;
         at = run.output.find("token=", at + 1))
      tokens.push_back(run.output.substr(at + 6, run.output.find('\n', at) - at - 6));
    return tokens;
  };
  auto first = token_lines({path_of("RGRUN")});
  REQUIRE(first.size() == 3);
  CHECK(first[0].size() == 32);
  CHECK(first[1] == first[0]);
  CHECK(first[2] == first[0]);
  auto second = token_lines({path_of("RGRUN")});
  REQUIRE(second.size() == 3);
  CHECK(second[0] != first[0]);
  auto given = token_lines({"/usr/bin/env", "RG_JOB_TOKEN=from-the-caller", path_of("RGRUN")});
  REQUIRE(given.size() == 3);
  CHECK(given[0] == "from-the-caller");
  auto rdzv = token_lines({path_of("RGRUN"), "--rdzv-id", "job42"});
  REQUIRE(rdzv.size() == 3);
  CHECK(rdzv[0] == "rdzv-job42");
}

TEST_CASE("a multi-node rgrun needs --rdzv-id or RG_JOB_TOKEN, the same on every node") {
  Run run = run_command({"/usr/bin/env", "-u", "RG_JOB_TOKEN", path_of("RGRUN"), "--nnodes", "2",
                         "--master-port", "29999", "--", "/bin/true"},
                        std::chrono::seconds(10));
  INFO(run.output);
  CHECK(run.exit_code == 2);
  CHECK(contains(run.output, "needs --rdzv-id ID or RG_JOB_TOKEN"));
}

TEST_CASE("rgrun names a stopped rank, not the ranks that gave up waiting for it") {
  // Rank 0 stops itself; ranks 1 and 2 fail soon after (as survivors of a silent peer do),
  // rank 2 first, naming rank 0.
  Run run = run_command(
      {path_of("RGRUN"), "--nproc-per-node", "3", "--grace", "1", "--", "/bin/sh", "-c",
       "case $RANK in 0) kill -STOP $$;; 1) sleep 2; echo 'error: timed out waiting for rank 0' "
       ">&2; exit 2;;"
       " 2) sleep 1; echo 'error: rank 2: timed out waiting for rank 0' >&2; exit 2;; esac"},
      std::chrono::seconds(30));
  INFO(run.output);
  CHECK(run.exit_code == 128 + SIGSTOP);
  CHECK(contains(run.output, "rgrun: rank 0 is stopped (SIGSTOP)"));
  CHECK(contains(run.output, "rgrun: rank 0 was stopped (SIGSTOP)"));
  CHECK(!contains(run.output, "rgrun: rank 2 exited"));
}

TEST_CASE("rgrun names the rank killed by a signal even when a survivor exits first") {
  // Rank 1 is killed; rank 0 reports the loss and exits first.
  Run run = run_command({path_of("RGRUN"), "--nproc-per-node", "2", "--", "/bin/sh", "-c",
                         "if [ $RANK = 1 ]; then sleep 1; kill -KILL $$; fi; "
                         "sleep 1; echo 'error: rank 1 has gone' >&2; exit 2"},
                        std::chrono::seconds(30));
  INFO(run.output);
  CHECK(run.exit_code == 128 + SIGKILL);
  CHECK(contains(run.output, "rgrun: rank 1 was killed by signal 9 (SIGKILL)"));
}
