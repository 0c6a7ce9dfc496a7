// rgrun: starts the ranks of a data-parallel job on this node, like torchrun.
//
//   rgrun --nproc-per-node N [--nnodes M --node-rank I --master-addr A --master-port P
//         --rdzv-id ID] [--quiet-others] [--grace S] [--max-restarts N] -- PROGRAM ARGS...
//
// Each rank runs PROGRAM with RANK, LOCAL_RANK, WORLD_SIZE, LOCAL_WORLD_SIZE, MASTER_ADDR,
// MASTER_PORT and RG_JOB_TOKEN set (see dist/init.h). The job token proves to the store and
// the peer links that a connection belongs to this job: a random one per job, or, when the
// job spans nodes, one every node derives from a secret it is given (RG_JOB_TOKEN or
// RG_JOB_TOKEN_FILE, which a single-node job uses too; under Slurm or Open MPI their job
// identity will do) and from --rdzv-id when set. --rdzv-id alone is not a secret, and a
// multi-node job without one is refused.
// Output lines are prefixed "[rank N] " (--quiet-others shows rank 0 only). When a rank
// fails, the others get SIGTERM, then SIGKILL after the grace period, and rgrun names the
// rank whose failure came first by cause (see blame()): a rank killed by a signal, or one
// that was stopped (SIGSTOP) while the others waited for it, before the ranks that merely
// reported the loss; when this node's ranks lost a rank of another node, that rank. The ranks
// say whom they lost in failure records (RG_ERROR_FILE, rgrun_records.cpp), not in words. Without
// --master-port a single-node job picks a free port. No rank outlives rgrun: a rank that
// cannot be started stops the ones started before it, and rgrun's death sends its ranks
// SIGTERM (see rgrun_children.cpp).
//
// With --max-restarts N (torchrun's flag), a failed job starts again, up to N times: after
// every rank of the failed attempt has ended and a short pause, with a new port (unless
// --master-port fixes it) and a new job token, so nothing left of the failed attempt can join
// the new one. RG_RESTART_COUNT tells the ranks which attempt they are (0: the first). A
// program that resumes from its last checkpoint (rgtrain --resume auto) then carries on where
// the failure stopped it. SIGTERM, SIGINT or SIGHUP to rgrun stops the job without a restart.
#include "apps/rgrun.h"

#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <string>
#include <vector>

namespace rgrun {

[[noreturn]] void usage_error(const std::string& problem) {
  std::fprintf(stderr, "rgrun: %s (see rgrun --help)\n", problem.c_str());
  std::exit(2);
}

}  // namespace rgrun

namespace {

using rgrun::Args;
using rgrun::Rank;
using rgrun::usage_error;

const CLI::Validator kNotNan(
    [](std::string& s) {
      return std::isnan(std::strtod(s.c_str(), nullptr)) ? "Value " + s + " is not a number"
                                                         : std::string();
    },
    "", "NOT_NAN");

void add_flags(CLI::App& app, Args& a) {
  app.option_defaults()->always_capture_default();
  app.add_option("--nproc-per-node,--nproc_per_node", a.nproc_per_node, "ranks on this node")
      ->check(CLI::Range(1, 1 << 16));
  app.add_option("--nnodes", a.nnodes, "nodes in the job")->check(CLI::Range(1, 1 << 16));
  app.add_option("--node-rank,--node_rank", a.node_rank, "index of this node, below --nnodes")
      ->check(CLI::Range(0, 1 << 16));
  app.add_option("--master-addr,--master_addr", a.master_addr, "host of rank 0's store");
  app.add_option("--master-port,--master_port", a.master_port,
                 "port of rank 0's store (0: a free one; single node only)")
      ->check(CLI::Range(0, 65535));
  app.add_option("--rdzv-id,--rdzv_id", a.rdzv_id,
                 "job id, the same on every node; the job token derives from it and from "
                 "the secret RG_JOB_TOKEN or RG_JOB_TOKEN_FILE gives (a multi-node job needs one)");
  app.add_flag("--quiet-others", a.quiet_others, "print rank 0's output only");
  app.add_option("--grace", a.grace_seconds,
                 "seconds between SIGTERM and SIGKILL when the ranks are stopped")
      ->check(kNotNan)  // CLI11's Range lets nan through
      ->check(CLI::Range(0.0, 3600.0));
  app.add_option("--max-restarts,--max_restarts", a.max_restarts,
                 "start the whole job again up to N times when a rank fails, with a new store "
                 "and job token; the ranks see RG_RESTART_COUNT (0 on the first attempt). "
                 "SIGTERM/SIGINT/SIGHUP to rgrun never restarts")
      ->check(CLI::Range(0, 1000000));
}

// Flags before "--", the program after it.
Args parse(int argc, char** argv) {
  Args a;
  int split = 1;
  while (split < argc && std::strcmp(argv[split], "--") != 0) ++split;
  CLI::App app{
      "rgrun: starts the ranks of a data-parallel job on this node, like torchrun. "
      "Usage: rgrun [flags] -- PROGRAM ARGS...",
      "rgrun"};
  add_flags(app, a);
  std::vector<std::string> flags(argv + 1, argv + split);
  std::reverse(flags.begin(), flags.end());  // CLI11 takes a vector in reverse order
  try {
    app.parse(flags);
  } catch (const CLI::CallForHelp&) {
    std::printf("%s", app.help().c_str());
    std::exit(0);
  } catch (const CLI::ParseError& e) {
    usage_error(e.what());
  }
  for (int i = split + 1; i < argc; ++i) a.program.push_back(argv[i]);
  if (a.program.empty()) usage_error("no program given (put it after --)");
  a.program.push_back(nullptr);
  if (a.node_rank >= a.nnodes)
    usage_error("--node-rank " + std::to_string(a.node_rank) + " must be below --nnodes " +
                std::to_string(a.nnodes));
  if (a.nnodes > 1 && a.master_port == 0) usage_error("a multi-node job needs --master-port");
  if (int64_t(a.nnodes) * a.nproc_per_node >= (int64_t(1) << 30))
    usage_error("--nnodes " + std::to_string(a.nnodes) + " times --nproc-per-node " +
                std::to_string(a.nproc_per_node) + " ranks is more than a job may have (2^30 - 1)");
  return a;
}

volatile sig_atomic_t g_signal = 0;
void on_signal(int sig) { g_signal = sig; }

std::string signal_name(int sig) {
  const char* name = sigabbrev_np(sig);
  return name ? std::string("SIG") + name : "signal " + std::to_string(sig);
}

std::string describe_end(int status) {
  if (WIFEXITED(status)) return "exited with code " + std::to_string(WEXITSTATUS(status));
  if (WIFSIGNALED(status))
    return "was killed by signal " + std::to_string(WTERMSIG(status)) + " (" +
           signal_name(WTERMSIG(status)) + ")";
  return "ended with status " + std::to_string(status);
}

void emit(Rank& r, int stream, const std::string& line, bool quiet_others) {
  if (quiet_others && r.rank != 0) return;
  std::string out = "[rank " + std::to_string(r.rank) + "] " + line + "\n";
  FILE* f = stream == 0 ? stdout : stderr;
  std::fwrite(out.data(), 1, out.size(), f);
  std::fflush(f);
}

// Reads what is available on one pipe and prints the complete lines.
bool drain(Rank& r, int stream, bool quiet_others) {
  char buf[65536];
  ssize_t k = read(r.fds[stream], buf, sizeof(buf));
  if (k <= 0) {
    if (k < 0 && (errno == EAGAIN || errno == EINTR)) return true;
    if (!r.partial[stream].empty()) emit(r, stream, r.partial[stream], quiet_others);
    r.partial[stream].clear();
    close(r.fds[stream]);
    r.fds[stream] = -1;
    return false;
  }
  std::string& acc = r.partial[stream];
  acc.append(buf, k);
  size_t start = 0, nl;
  while ((nl = acc.find('\n', start)) != std::string::npos) {
    emit(r, stream, acc.substr(start, nl - start), quiet_others);
    start = nl + 1;
  }
  acc.erase(0, start);
  return true;
}

// The ranks of this node and what rgrun did to them.
class Supervisor {
 public:
  Supervisor(const Args& a, std::vector<Rank>& ranks) : a_(a), ranks_(ranks) {}

  // Runs until every rank has ended (and its output is drained).
  void run() {
    for (;;) {
      pump_output(50);
      const bool any_running = reap();
      if (g_signal && !stopping_) {
        std::fprintf(stderr, "rgrun: got %s, stopping the ranks\n", signal_name(g_signal).c_str());
        stop_all();
      }
      // The others get a moment to end by themselves (and print their own errors) before
      // they are stopped.
      if (first_failure_ >= 0 && !stopping_ && Clock::now() > settle_until_) stop_all();
      if (stopping_ && any_running && Clock::now() > kill_at_) send_all(SIGKILL);
      bool pipes_open = false;
      for (auto& r : ranks_) pipes_open |= r.fds[0] >= 0 || r.fds[1] >= 0;
      if (!any_running && (!pipes_open || stopping_)) break;
    }
    drain_leftovers();
  }

  bool failed() const { return first_failure_ >= 0; }
  // Ranks stopped (SIGSTOP) when the first failure came.
  const std::vector<int>& stopped_at_failure() const { return stopped_at_failure_; }

 private:
  using Clock = std::chrono::steady_clock;

  void pump_output(int timeout_ms) {
    std::vector<pollfd> fds;
    std::vector<std::pair<int, int>> which;
    for (size_t i = 0; i < ranks_.size(); ++i)
      for (int s = 0; s < 2; ++s)
        if (ranks_[i].fds[s] >= 0) {
          fds.push_back({ranks_[i].fds[s], POLLIN, 0});
          which.push_back({int(i), s});
        }
    if (!fds.empty()) poll(fds.data(), fds.size(), timeout_ms);
    for (size_t k = 0; k < fds.size(); ++k)
      if (fds[k].revents) drain(ranks_[which[k].first], which[k].second, a_.quiet_others);
  }

  // Collects ended, stopped and continued ranks; true while any is still running.
  bool reap() {
    bool any_running = false;
    for (size_t i = 0; i < ranks_.size(); ++i) {
      Rank& r = ranks_[i];
      if (!r.running) continue;
      int status = 0;
      const pid_t got = waitpid(r.pid, &status, WNOHANG | WUNTRACED | WCONTINUED);
      if (got == r.pid && WIFSTOPPED(status)) {
        r.stopped = true;
        r.stop_signal = WSTOPSIG(status);
        std::fprintf(stderr,
                     "rgrun: rank %d is stopped (%s); the job cannot go on until it "
                     "continues\n",
                     r.rank, signal_name(r.stop_signal).c_str());
      } else if (got == r.pid && WIFCONTINUED(status)) {
        r.stopped = false;
      } else if (got == r.pid) {
        r.running = false;
        r.status = status;
        r.end_order = ended_++;
        r.ended_after_our_signal = stopping_;
        const bool ok = WIFEXITED(status) && WEXITSTATUS(status) == 0;
        if (!ok && first_failure_ < 0 && !stopping_) note_first_failure(int(i));
        continue;
      }
      any_running = true;
    }
    return any_running;
  }

  void note_first_failure(int i) {
    first_failure_ = i;
    settle_until_ = Clock::now() + kSettle;
    for (const Rank& r : ranks_)
      if (r.running && r.stopped) stopped_at_failure_.push_back(r.rank);
  }

  void send_all(int sig) {
    for (auto& r : ranks_)
      if (r.running) kill(-r.pid, sig);
  }

  // SIGTERM, and SIGCONT so a stopped rank handles it (removing its temp files) too.
  void stop_all() {
    stopping_ = true;
    send_all(SIGTERM);
    send_all(SIGCONT);
    kill_at_ = Clock::now() + std::chrono::milliseconds(int64_t(a_.grace_seconds * 1000));
  }

  // What is left in the pipes (a grandchild may still hold them).
  void drain_leftovers() {
    for (auto& r : ranks_) {
      for (int s = 0; s < 2; ++s) {
        if (r.fds[s] < 0) continue;
        pollfd p{r.fds[s], POLLIN, 0};
        while (r.fds[s] >= 0 && poll(&p, 1, 0) > 0 && drain(r, s, a_.quiet_others)) {
        }
        if (!r.partial[s].empty()) emit(r, s, r.partial[s], a_.quiet_others);
      }
    }
  }

  const Args& a_;
  std::vector<Rank>& ranks_;
  int first_failure_ = -1;  // index of the first rank that failed
  int ended_ = 0;
  bool stopping_ = false;
  Clock::time_point kill_at_, settle_until_;
  std::vector<int> stopped_at_failure_;
  static constexpr std::chrono::milliseconds kSettle{1000};
};

bool failed(const Rank& r) { return !(WIFEXITED(r.status) && WEXITSTATUS(r.status) == 0); }

const Rank* by_rank(const std::vector<Rank>& ranks, int rank) {
  for (const Rank& r : ranks)
    if (r.rank == rank) return &r;
  return nullptr;
}

struct Blame {
  int rank = -1;    // on this node, or on another one that this node's ranks name
  std::string why;  // how it ended, as a sentence fragment
  int exit_code = 1;
};

// The rank that the failed ranks' records blame most, each blame followed along this node's
// ranks to the end of its chain (rank 1 blamed where rank 1 blames rank 3: rank 3, which may
// run on another node); -1 when no record blames one.
int most_named_rank(const std::vector<Rank>& ranks) {
  std::map<int, int> votes;
  for (const Rank& r : ranks) {
    if (!failed(r) || r.ended_after_our_signal || r.blames < 0) continue;
    int root = r.blames;
    for (size_t hops = 0; hops < ranks.size(); ++hops) {
      const Rank* next = by_rank(ranks, root);
      if (!next || next->blames < 0) break;
      root = next->blames;
    }
    ++votes[root];
  }
  int named = -1, best = 0;
  for (auto& [k, n] : votes)
    if (n > best) best = n, named = k;
  return named;
}

// The rank whose failure came first by cause, in this order: a rank killed by a signal rgrun
// did not send (a crash, an OOM kill, kill -9); a rank that was stopped while the others
// failed waiting for it; the rank that the others' records blame most; the first to fail.
Blame blame(const std::vector<Rank>& ranks, const std::vector<int>& stopped) {
  const Rank* signaled = nullptr;
  for (const Rank& r : ranks)
    if (!r.ended_after_our_signal && r.end_order >= 0 && WIFSIGNALED(r.status) &&
        (!signaled || r.end_order < signaled->end_order))
      signaled = &r;
  if (signaled)
    return {signaled->rank, describe_end(signaled->status), 128 + WTERMSIG(signaled->status)};
  if (!stopped.empty()) {
    const Rank* r = by_rank(ranks, stopped.front());
    return {r->rank,
            "was stopped (" + signal_name(r->stop_signal) +
                ") while the other ranks waited for it, and was then ended",
            128 + r->stop_signal};
  }
  const Rank* first = nullptr;
  for (const Rank& r : ranks)
    if (failed(r) && r.end_order >= 0 && (!first || r.end_order < first->end_order)) first = &r;
  const auto code = [](const Rank& r) {
    return WIFEXITED(r.status) ? WEXITSTATUS(r.status) : 128 + WTERMSIG(r.status);
  };
  const int named = most_named_rank(ranks);
  const Rank* local = by_rank(ranks, named);
  if (named >= 0 && !local)  // a rank of another node, which that node's rgrun reports
    return {named, "failed on another node (the ranks here lost it)", code(*first)};
  const Rank* cause = local && failed(*local) ? local : first;
  // Its own words too: the first line a reader needs ("could not start a thread ...: the
  // limit in force: RLIMIT_AS 64 MiB"), not only its exit code.
  const std::string words = cause->message.empty() ? "" : " (its error: " + cause->message + ")";
  return {cause->rank, describe_end(cause->status) + words, code(*cause)};
}

// How one attempt at the job ended.
struct Outcome {
  bool failed = false;
  int rank = -1;    // the rank blame() names
  std::string why;  // how it ended, as a sentence fragment
  int exit_code = 0;
};

// Starts this node's ranks once and supervises them until every one has ended.
Outcome run_attempt(const Args& a, const std::string& token, int restart) {
  setenv("RG_JOB_TOKEN", token.c_str(), 1);
  setenv("RG_RESTART_COUNT", std::to_string(restart).c_str(), 1);
  const int port = a.master_port ? a.master_port : rgrun::free_port();
  std::vector<Rank> ranks(a.nproc_per_node);
  for (int local = 0; local < a.nproc_per_node; ++local)
    ranks[local].rank = a.node_rank * a.nproc_per_node + local;
  if (const std::string problem = rgrun::start_ranks(a, ranks, port); !problem.empty()) {
    std::fprintf(stderr, "rgrun: %s\n", problem.c_str());
    std::exit(1);
  }
  Supervisor supervisor(a, ranks);
  supervisor.run();
  rgrun::read_failure_records(a.error_dir, ranks);
  if (!supervisor.failed()) return {};
  const Blame b = blame(ranks, supervisor.stopped_at_failure());
  return {true, b.rank, b.why, b.exit_code};
}

// Waits `seconds` before a restart, or less when SIGTERM, SIGINT or SIGHUP comes.
void pause_before_restart(double seconds) {
  const auto until = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
  while (!g_signal && std::chrono::steady_clock::now() < until) usleep(20000);
}

}  // namespace

int main(int argc, char** argv) {
  Args a = parse(argc, argv);
  const std::string secret = rgrun::callers_secret(a);
  static std::string error_dir = rgrun::make_error_dir();
  a.error_dir = error_dir;
  std::atexit([] { rgrun::remove_error_dir(error_dir); });
  for (int sig : rgrun::kStopSignals) signal(sig, on_signal);
  signal(SIGPIPE, SIG_IGN);
  for (int restart = 0;; ++restart) {
    const Outcome o = run_attempt(a, rgrun::job_token(a, secret, restart), restart);
    if (!o.failed) return g_signal ? 128 + g_signal : 0;
    if (g_signal || restart == a.max_restarts) {
      const std::string used = a.max_restarts > 0
                                   ? "; no restart left (" + std::to_string(restart) + " of " +
                                         std::to_string(a.max_restarts) + " used)"
                                   : "";
      std::fprintf(stderr, "rgrun: rank %d %s; the other ranks were stopped%s\n", o.rank,
                   o.why.c_str(), used.c_str());
      return o.exit_code;
    }
    std::fprintf(stderr, "rgrun: rank %d failed (%s); restart %d of %d\n", o.rank, o.why.c_str(),
                 restart + 1, a.max_restarts);
    pause_before_restart(1.0);
    if (g_signal) return 128 + g_signal;
  }
}
