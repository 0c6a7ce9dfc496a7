// rgrun's parts that more than one file of it uses (see rgrun.cpp for the launcher itself).
#pragma once
#include <signal.h>
#include <sys/types.h>

#include <string>
#include <vector>

namespace rgrun {

struct Args {
  int nproc_per_node = 1;
  int nnodes = 1;
  int node_rank = 0;
  std::string master_addr = "127.0.0.1";
  int master_port = 0;
  std::string rdzv_id;
  bool quiet_others = false;
  double grace_seconds = 5;
  int max_restarts = 0;
  std::vector<char*> program;
  std::string error_dir;  // where the ranks write their failure records ("": nowhere)
};

struct Rank {
  int rank = 0;
  pid_t pid = -1;
  int fds[2] = {-1, -1};  // stdout, stderr pipes (read ends)
  std::string partial[2];
  bool running = true;
  bool stopped = false;  // stopped by a signal (SIGSTOP, SIGTSTP) and not continued
  int stop_signal = 0;
  int status = 0;
  int end_order = -1;  // 0 for the first rank to end, 1 for the next, ...
  bool ended_after_our_signal = false;
  int blames = -1;      // the rank this rank's failure record blames, or -1
  std::string message;  // its failure record's message (cut at 500 bytes), or empty
};

// The signals rgrun stops its job on (SIGINT, SIGTERM, SIGHUP), blocked while it forks.
inline constexpr int kStopSignals[] = {SIGINT, SIGTERM, SIGHUP};

// Prints "rgrun: PROBLEM (see rgrun --help)" and exits with code 2.
[[noreturn]] void usage_error(const std::string& problem);

// The caller's secret for the job token (rgrun_token.cpp): RG_JOB_TOKEN, RG_JOB_TOKEN_FILE or,
// for a multi-node job, Slurm's or Open MPI's job identity; "" for a single-node job without
// one. A multi-node job without one is a usage error.
std::string callers_secret(const Args& a);

// RG_JOB_TOKEN for the ranks of attempt `restart` (0: the first) of the job.
std::string job_token(const Args& a, const std::string& secret, int restart);

// Failure records (rgrun_records.cpp): a private directory for them ("" when none can be
// made), its removal, the file of one rank (RG_ERROR_FILE), and reading them into the ranks'
// `blames` (removing them).
std::string make_error_dir();
void remove_error_dir(const std::string& dir);
std::string error_file(const std::string& dir, int rank);
void read_failure_records(const std::string& dir, std::vector<Rank>& ranks);

// A port nobody listens on right now (the ranks' store binds it a moment later).
int free_port();

// Starts this node's ranks (ranks[i] for local rank i; their .rank set by the caller), each in
// a process group of its own that rgrun's death ends too. When one cannot be started (no
// descriptor for its pipes, no process), the ones already started are stopped as
// stop_ranks() does, and the error is returned, naming the rank; "" when all started.
std::string start_ranks(const Args& a, std::vector<Rank>& ranks, int port);

// SIGTERM (and SIGCONT) to each running rank's process group, SIGKILL to those left after
// `grace_seconds`; reaps them and closes their pipes.
void stop_ranks(std::vector<Rank>& ranks, double grace_seconds);

}  // namespace rgrun
