// rgrun end to end: the launcher runs tests/dist/rank_helper as every rank. Paths come from
// the environment meson sets (RGRUN, RANK_HELPER); every run is killed after a time limit.
#include <doctest/doctest.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <string>
#include <thread>
#include <vector>

namespace {

struct Run {
  int exit_code = -1;  // -1: killed at the limit
  std::string output;  // stdout and stderr together
};

// Runs args[0] with its stdout and stderr in run.output; `nofile` > 0 limits its descriptors.
Run run_command(std::vector<std::string> args, std::chrono::seconds limit, rlim_t nofile = 0) {
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
    for (int fd = 3; fd < 1024; ++fd) close(fd);  // rgrun gets 0, 1 and 2 only
    const rlimit files{nofile, nofile};
    if (nofile > 0 && setrlimit(RLIMIT_NOFILE, &files) != 0) _exit(126);
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
  REQUIRE_MESSAGE(p, (std::string(variable) + " is not set (run the test through meson)"));
  return p;
}

bool contains(const std::string& s, const std::string& part) {
  return s.find(part) != std::string::npos;
}

std::vector<std::string> with(std::vector<std::string> a, const std::vector<std::string>& b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}

// A path prefix no other run uses: rank_helper's "wait" mode names its files after it, and
// the tests find its ranks by it in their command lines.
std::string unique_prefix(const std::string& name) {
  static int count = 0;
  return (std::filesystem::temp_directory_path() /
          ("rgrun-test-" + name + "-" + std::to_string(getpid()) + "-" + std::to_string(++count)))
      .string();
}

// The processes other than this one whose command line contains `marker`.
std::vector<pid_t> processes_with(const std::string& marker) {
  std::vector<pid_t> found;
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator("/proc", ec)) {
    const std::string name = entry.path().filename();
    if (name.find_first_not_of("0123456789") != std::string::npos) continue;
    std::ifstream in(entry.path() / "cmdline", std::ios::binary);
    const std::string cmdline((std::istreambuf_iterator<char>(in)),
                              std::istreambuf_iterator<char>());
    const pid_t pid = std::stoi(name);
    if (pid != getpid() && cmdline.find(marker) != std::string::npos) found.push_back(pid);
  }
  return found;
}

// True once done() is, false if it is not within `limit`.
bool eventually(const std::function<bool()>& done, std::chrono::seconds limit) {
  const auto deadline = std::chrono::steady_clock::now() + limit;
  while (!done()) {
    if (std::chrono::steady_clock::now() > deadline) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  return true;
}

// Whether PREFIX.RANK.SUFFIX exists for every rank below n.
bool files_exist(const std::string& prefix, const char* suffix, int n) {
  for (int r = 0; r < n; ++r)
    if (!std::filesystem::exists(prefix + "." + std::to_string(r) + "." + suffix)) return false;
  return true;
}

// Kills what a failed check left running, and the files of `prefix`.
void clean_up(const std::string& prefix, int n) {
  for (pid_t pid : processes_with(prefix)) kill(pid, SIGKILL);
  for (int r = 0; r < n; ++r)
    for (const char* suffix : {".ready", ".term"})
      std::filesystem::remove(prefix + "." + std::to_string(r) + suffix);
}

// Starts args[0] in the background, its output discarded.
pid_t start_command(std::vector<std::string> args) {
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  const pid_t pid = fork();
  if (pid == 0) {
    const int null = open("/dev/null", O_WRONLY);
    dup2(null, 1);
    dup2(null, 2);
    execv(argv[0], argv.data());
    _exit(127);
  }
  return pid;
}

// rgrun running `rank_helper wait PREFIX` as 3 ranks, once every rank is ready for SIGTERM.
pid_t start_waiting_job(const std::string& prefix) {
  const pid_t rgrun = start_command(
      {path_of("RGRUN"), "--nproc-per-node", "3", "--", path_of("RANK_HELPER"), "wait", prefix});
  REQUIRE(rgrun > 0);
  REQUIRE(eventually([&] { return files_exist(prefix, "ready", 3); }, std::chrono::seconds(30)));
  return rgrun;
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
  // The other ranks sleep 600 s (rank_helper), run_command kills rgrun at 40 s: only an rgrun
  // that stops them exits with code 3. Nothing is timed.
  Run run = run_command(
      {path_of("RGRUN"), "--nproc-per-node", "3", "--", path_of("RANK_HELPER"), "fail", "1", "3"},
      std::chrono::seconds(40));
  INFO(run.output);
  CHECK(run.exit_code == 3);
  CHECK(contains(run.output, "[rank 1] rank 1 failing now"));
  CHECK(contains(run.output, "rgrun: rank 1 exited with code 3"));
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
  for (const char* grace : {"abc", "-1", "nan", "inf", "-inf", "1e400"}) {
    run = run_command({path_of("RGRUN"), "--grace", grace, "--", "/bin/true"},
                      std::chrono::seconds(10));
    INFO(run.output);
    CHECK(run.exit_code == 2);
    CHECK(contains(run.output, std::string("--grace: Value ") + grace));
  }
  const std::vector<std::pair<std::vector<std::string>, std::string>> out_of_range = {
      {{"--nproc-per-node", "2.5"}, "--nproc-per-node: Value 2.5"},
      {{"--nnodes", "0"}, "--nnodes: Value 0"},
      {{"--node-rank", "-1"}, "--node-rank: Value -1"},
      {{"--max-restarts", "-1"}, "--max-restarts: Value -1"},
      {{"--master-port", "65536"}, "--master-port: Value 65536"},
      {{"--nnodes", "2", "--node-rank", "2", "--master-port", "1"}, "--node-rank 2 must be below"},
      {{"--nnodes", "65536", "--nproc-per-node", "65536", "--master-port", "1"},
       "--nnodes 65536 times --nproc-per-node 65536 ranks is more than a job may have"}};
  for (const auto& [flags, message] : out_of_range) {
    std::vector<std::string> args = {path_of("RGRUN")};
    args.insert(args.end(), flags.begin(), flags.end());
    run = run_command(with(args, {"--", "/bin/true"}), std::chrono::seconds(10));
    INFO(run.output);
    CHECK(run.exit_code == 2);
    CHECK(contains(run.output, message));
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
  // --rdzv-id is no secret: alone, a single-node job still gets a random token.
  auto rdzv =
      token_lines({"/usr/bin/env", "-u", "RG_JOB_TOKEN", path_of("RGRUN"), "--rdzv-id", "job42"});
  REQUIRE(rdzv.size() == 3);
  CHECK(rdzv[0].size() == 32);
  CHECK(rdzv[0].find("job42") == std::string::npos);
  auto both =
      token_lines({"/usr/bin/env", "RG_JOB_TOKEN=s3cret", path_of("RGRUN"), "--rdzv-id", "job42"});
  REQUIRE(both.size() == 3);
  CHECK(both[0] == "s3cret-rdzv-job42");
}

// The environment of a caller without a job token or job identity.
const std::vector<std::string> kNoToken = {
    "/usr/bin/env", "-u", "RG_JOB_TOKEN",   "-u", "RG_JOB_TOKEN_FILE",      "-u",
    "SLURM_JOB_ID", "-u", "PMIX_NAMESPACE", "-u", "OMPI_MCA_ess_base_jobid"};

TEST_CASE("a multi-node rgrun needs a secret: --rdzv-id alone is refused") {
  const std::vector<std::string> node1 = {
      path_of("RGRUN"), "--nnodes", "2",  "--node-rank", "1",  "--master-port",           "29999",
      "--rdzv-id",      "job7",     "--", "/bin/sh",     "-c", "echo token=$RG_JOB_TOKEN"};
  Run run = run_command(with(kNoToken, node1), std::chrono::seconds(10));
  INFO(run.output);
  CHECK(run.exit_code == 2);
  CHECK(contains(run.output, "a multi-node job needs a secret"));
  CHECK(contains(run.output, "RG_JOB_TOKEN_FILE"));
  CHECK(contains(run.output, "--rdzv-id job7 alone is not a secret"));
  run = run_command(with(with(kNoToken, {"RG_JOB_TOKEN=s3cret"}), node1), std::chrono::seconds(20));
  CHECK(run.exit_code == 0);
  CHECK(contains(run.output, "[rank 1] token=s3cret-rdzv-job7\n"));
}

TEST_CASE("rgrun refuses a job token file that group or others can read") {
  const std::string path = unique_prefix("token");
  std::ofstream(path) << "file-secret\n";
  const std::vector<std::string> job = {
      path_of("RGRUN"), "--nproc-per-node", "1", "--", "/bin/sh", "-c", "echo token=$RG_JOB_TOKEN"};
  REQUIRE(chmod(path.c_str(), 0640) == 0);
  Run run = run_command(with(with(kNoToken, {"RG_JOB_TOKEN_FILE=" + path}), job),
                        std::chrono::seconds(10));
  INFO(run.output);
  CHECK(run.exit_code == 2);
  CHECK(contains(run.output, "RG_JOB_TOKEN_FILE '" + path + "': mode 0640"));
  REQUIRE(chmod(path.c_str(), 0600) == 0);
  run = run_command(with(with(kNoToken, {"RG_JOB_TOKEN_FILE=" + path}), job),
                    std::chrono::seconds(10));
  CHECK(run.exit_code == 0);
  CHECK(contains(run.output, "[rank 0] token=file-secret\n"));
  std::filesystem::remove(path);
}

TEST_CASE("after init, neither a rank's nor rgrun's /proc/<pid>/environ holds the job token") {
  const std::string token = "secret-" + std::to_string(getpid()) + "-e7c1";
  Run run = run_command({"/usr/bin/env", "RG_JOB_TOKEN=" + token, path_of("RGRUN"),
                         "--nproc-per-node", "2", "--", path_of("RANK_HELPER"), "environ"},
                        std::chrono::seconds(60));
  INFO(run.output);
  CHECK(run.exit_code == 0);
  for (int r = 0; r < 2; ++r) {
    const std::string prefix = "[rank " + std::to_string(r) + "] ";
    CHECK(contains(run.output, prefix + "token=" + token + "\n"));  // read, and read again
    CHECK(contains(run.output, prefix + "environ clean\n"));
  }
}

TEST_CASE("rgrun that cannot start a rank stops the ranks it started, and says so") {
  // 12 descriptors: ranks 0 to 2 get their pipes, rank 3 does not.
  const std::string prefix = unique_prefix("nofile");
  Run run = run_command({path_of("RGRUN"), "--nproc-per-node", "4", "--grace", "2", "--",
                         path_of("RANK_HELPER"), "wait", prefix},
                        std::chrono::seconds(30), 12);
  INFO(run.output);
  CHECK(run.exit_code == 1);
  CHECK(contains(run.output, "rgrun: cannot start rank "));
  CHECK(contains(run.output, "Too many open files"));
  CHECK(contains(run.output, "rank(s) already started"));
  CHECK(!contains(run.output, "stopped the 0 rank"));
  CHECK(eventually([&] { return processes_with(prefix).empty(); }, std::chrono::seconds(5)));
  clean_up(prefix, 4);
}

TEST_CASE("the ranks get SIGTERM and end when rgrun is killed with SIGKILL") {
  const std::string prefix = unique_prefix("killed");
  const pid_t rgrun = start_waiting_job(prefix);
  kill(rgrun, SIGKILL);
  waitpid(rgrun, nullptr, 0);
  CHECK(eventually([&] { return processes_with(prefix).empty(); }, std::chrono::seconds(5)));
  CHECK(files_exist(prefix, "term", 3));
  clean_up(prefix, 3);
}

TEST_CASE("SIGHUP to rgrun stops the ranks with SIGTERM, like SIGTERM to rgrun") {
  const std::string prefix = unique_prefix("hangup");
  const pid_t rgrun = start_waiting_job(prefix);
  kill(rgrun, SIGHUP);
  int status = 0;
  const bool ended = eventually([&] { return waitpid(rgrun, &status, WNOHANG) == rgrun; },
                                std::chrono::seconds(20));
  CHECK(ended);
  if (!ended) kill(rgrun, SIGKILL), waitpid(rgrun, &status, 0);
  CHECK(WIFEXITED(status));
  CHECK(WEXITSTATUS(status) == 128 + SIGHUP);
  CHECK(files_exist(prefix, "term", 3));
  CHECK(eventually([&] { return processes_with(prefix).empty(); }, std::chrono::seconds(5)));
  clean_up(prefix, 3);
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

// Failure records (RG_ERROR_FILE, dist/dist_error.h): rgrun blames from them, never from the
// ranks' words, which RG_TEST_REWORD_ERRORS=1 rewords here.
const std::vector<std::string> kReworded = {"/usr/bin/env", "RG_TEST_REWORD_ERRORS=1",
                                            "RG_DIST_TIMEOUT=2"};

TEST_CASE("rgrun names the rank the failure records blame, however the errors are worded") {
  // Rank 2 never joins the all-reduce; ranks 0 and 1 time out and record that they waited for
  // it. Rank 2 ends by rgrun's SIGTERM, after the others failed.
  Run run = run_command(with(kReworded, {path_of("RGRUN"), "--nproc-per-node", "3", "--grace", "1",
                                         "--", path_of("RANK_HELPER"), "allreduce", "2"}),
                        std::chrono::seconds(40));
  INFO(run.output);
  CHECK(contains(run.output, "] error: [reworded] "));
  CHECK(contains(run.output, "rgrun: rank 2 was killed by signal 15 (SIGTERM)"));
}

TEST_CASE("rgrun names a rank of another node from this node's failure records") {
  // Node 0 of two: rank 1 (node 1) never joins; rank 0 records that it did not.
  const std::string port = std::to_string(20000 + getpid() % 20000);
  Run run = run_command(with(with(kReworded, {"RG_JOB_TOKEN=s3cret"}),
                             {path_of("RGRUN"), "--nnodes", "2", "--node-rank", "0",
                              "--nproc-per-node", "1", "--master-port", port, "--rdzv-id",
                              "records", "--", path_of("RANK_HELPER"), "allreduce"}),
                        std::chrono::seconds(40));
  INFO(run.output);
  CHECK(run.exit_code == 1);
  CHECK(contains(run.output, "] error: [reworded] "));
  CHECK(contains(run.output, "rgrun: rank 1 failed on another node (the ranks here lost it)"));
}

TEST_CASE("rgrun's last line shows the failing rank's own message from its record") {
  Run run =
      run_command({path_of("RGRUN"), "--nproc-per-node", "2", "--grace", "1", "--", "/bin/sh", "-c",
                   "if [ \"$RANK\" = 1 ]; then printf '{\"kind\":\"local\",\"blamed_rank\":-1,"
                   "\"message\":\"could not start a thread\\\\nnamed here\"}' >\"$RG_ERROR_FILE\"; "
                   "exit 3; fi; sleep 30"},
                  std::chrono::seconds(40));
  INFO(run.output);
  CHECK(run.exit_code == 3);
  CHECK(contains(run.output,
                 "rgrun: rank 1 exited with code 3 (its error: could not start a "
                 "thread named here); the other ranks were stopped"));
}

TEST_CASE("each rank gets its own RG_ERROR_FILE in a directory rgrun removes at exit") {
  Run run = run_command({path_of("RGRUN"), "--nproc-per-node", "2", "--", "/bin/sh", "-c",
                         "echo file=$RG_ERROR_FILE"},
                        std::chrono::seconds(20));
  INFO(run.output);
  REQUIRE(run.exit_code == 0);
  const size_t at = run.output.find("[rank 1] file=");
  REQUIRE(at != std::string::npos);
  const std::string file = run.output.substr(at + 14, run.output.find('\n', at) - at - 14);
  CHECK(file.ends_with("/rank-1.json"));
  CHECK(contains(run.output, std::filesystem::path(file).parent_path().string() + "/rank-0.json"));
  CHECK(!std::filesystem::exists(std::filesystem::path(file).parent_path()));
}
