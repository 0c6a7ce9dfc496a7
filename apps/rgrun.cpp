// rgrun: starts the ranks of a data-parallel job on this node, like torchrun.
//
//   rgrun --nproc-per-node N [--nnodes M --node-rank I --master-addr A --master-port P]
//         [--quiet-others] [--grace S] -- PROGRAM ARGS...
//
// Each rank runs PROGRAM with RANK, LOCAL_RANK, WORLD_SIZE, LOCAL_WORLD_SIZE, MASTER_ADDR and
// MASTER_PORT set (see dist/init.h). Output lines are prefixed "[rank N] " (--quiet-others
// shows rank 0 only). When a rank fails, the others get SIGTERM, then SIGKILL after the grace
// period (default 5 s), and rgrun exits non-zero naming the rank and how it ended. Without
// --master-port a single-node job picks a free port.
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

namespace {

struct Args {
  int nproc_per_node = 1;
  int nnodes = 1;
  int node_rank = 0;
  std::string master_addr = "127.0.0.1";
  int master_port = 0;
  bool quiet_others = false;
  double grace_seconds = 5;
  std::vector<char*> program;
};

[[noreturn]] void usage(const std::string& problem) {
  std::fprintf(stderr,
               "rgrun: %s\nusage: rgrun --nproc-per-node N [--nnodes M --node-rank I "
               "--master-addr A --master-port P] [--quiet-others] [--grace SECONDS] -- PROGRAM "
               "ARGS...\n",
               problem.c_str());
  std::exit(2);
}

int to_int(const char* s, const char* flag, int min_value) {
  char* end = nullptr;
  long v = std::strtol(s, &end, 10);
  if (end == s || *end || v < min_value || v > 1 << 20)
    usage(std::string(flag) + " expects an integer >= " + std::to_string(min_value));
  return static_cast<int>(v);
}

Args parse(int argc, char** argv) {
  Args a;
  int i = 1;
  for (; i < argc; ++i) {
    std::string flag = argv[i];
    if (flag == "--") {
      ++i;
      break;
    }
    if (flag == "--quiet-others") {
      a.quiet_others = true;
      continue;
    }
    // Accept both --flag value and --flag=value.
    std::string value;
    if (auto eq = flag.find('='); eq != std::string::npos) {
      value = flag.substr(eq + 1);
      flag = flag.substr(0, eq);
    } else {
      if (i + 1 >= argc) usage(flag + " needs a value");
      value = argv[++i];
    }
    if (flag == "--nproc-per-node" || flag == "--nproc_per_node")
      a.nproc_per_node = to_int(value.c_str(), "--nproc-per-node", 1);
    else if (flag == "--nnodes")
      a.nnodes = to_int(value.c_str(), "--nnodes", 1);
    else if (flag == "--node-rank" || flag == "--node_rank")
      a.node_rank = to_int(value.c_str(), "--node-rank", 0);
    else if (flag == "--master-addr" || flag == "--master_addr")
      a.master_addr = value;
    else if (flag == "--master-port" || flag == "--master_port")
      a.master_port = to_int(value.c_str(), "--master-port", 1);
    else if (flag == "--grace")
      a.grace_seconds = std::atof(value.c_str());
    else
      usage("unknown option " + flag);
  }
  for (; i < argc; ++i) a.program.push_back(argv[i]);
  if (a.program.empty()) usage("no program given (put it after --)");
  a.program.push_back(nullptr);
  if (a.node_rank >= a.nnodes) usage("--node-rank must be below --nnodes");
  if (a.nnodes > 1 && a.master_port == 0) usage("a multi-node job needs --master-port");
  return a;
}

// A port nobody listens on right now (the ranks' store binds it a moment later).
int free_port() {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = 0;
  socklen_t len = sizeof(addr);
  if (fd < 0 || bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0 ||
      getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) != 0) {
    std::perror("rgrun: cannot find a free port");
    std::exit(1);
  }
  close(fd);
  return ntohs(addr.sin_port);
}

struct Rank {
  int rank = 0;
  pid_t pid = -1;
  int fds[2] = {-1, -1};  // stdout, stderr pipes (read ends)
  std::string partial[2];
  bool running = true;
  int status = 0;
};

volatile sig_atomic_t g_signal = 0;
void on_signal(int sig) { g_signal = sig; }

std::string describe_end(int status) {
  if (WIFEXITED(status)) return "exited with code " + std::to_string(WEXITSTATUS(status));
  if (WIFSIGNALED(status)) {
    int sig = WTERMSIG(status);
    const char* name = sigabbrev_np(sig);
    return "was killed by signal " + std::to_string(sig) +
           (name ? std::string(" (SIG") + name + ")" : "");
  }
  return "ended with status " + std::to_string(status);
}

void emit(const Rank& r, int stream, const std::string& line, bool quiet_others) {
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

pid_t spawn(const Args& a, Rank& r, int local_rank, int world_size, int port) {
  int out[2], err[2];
  if (pipe(out) != 0 || pipe(err) != 0) {
    std::perror("rgrun: pipe");
    std::exit(1);
  }
  pid_t pid = fork();
  if (pid < 0) {
    std::perror("rgrun: fork");
    std::exit(1);
  }
  if (pid == 0) {
    setpgid(0, 0);                     // its own process group: stopping it stops its children
    prctl(PR_SET_PDEATHSIG, SIGKILL);  // and it dies if rgrun does
    dup2(out[1], 1);
    dup2(err[1], 2);
    close(out[0]);
    close(out[1]);
    close(err[0]);
    close(err[1]);
    setenv("RANK", std::to_string(r.rank).c_str(), 1);
    setenv("LOCAL_RANK", std::to_string(local_rank).c_str(), 1);
    setenv("WORLD_SIZE", std::to_string(world_size).c_str(), 1);
    setenv("LOCAL_WORLD_SIZE", std::to_string(a.nproc_per_node).c_str(), 1);
    setenv("GROUP_RANK", std::to_string(a.node_rank).c_str(), 1);
    setenv("MASTER_ADDR", a.master_addr.c_str(), 1);
    setenv("MASTER_PORT", std::to_string(port).c_str(), 1);
    execvp(a.program[0], a.program.data());
    std::fprintf(stderr, "rgrun: cannot run %s: %s\n", a.program[0], std::strerror(errno));
    _exit(127);
  }
  close(out[1]);
  close(err[1]);
  r.fds[0] = out[0];
  r.fds[1] = err[0];
  fcntl(out[0], F_SETFL, O_NONBLOCK);
  fcntl(err[0], F_SETFL, O_NONBLOCK);
  return pid;
}

}  // namespace

int main(int argc, char** argv) {
  Args a = parse(argc, argv);
  const int port = a.master_port ? a.master_port : free_port();
  const int world_size = a.nnodes * a.nproc_per_node;
  signal(SIGINT, on_signal);
  signal(SIGTERM, on_signal);
  signal(SIGPIPE, SIG_IGN);

  std::vector<Rank> ranks(a.nproc_per_node);
  for (int local = 0; local < a.nproc_per_node; ++local) {
    ranks[local].rank = a.node_rank * a.nproc_per_node + local;
    ranks[local].pid = spawn(a, ranks[local], local, world_size, port);
  }

  using Clock = std::chrono::steady_clock;
  int failed = -1;  // index of the first rank that failed
  bool stopping = false;
  Clock::time_point kill_at;
  auto stop_all = [&](int sig) {
    for (auto& r : ranks)
      if (r.running) kill(-r.pid, sig);
  };

  for (;;) {
    std::vector<pollfd> fds;
    std::vector<std::pair<int, int>> which;
    for (int i = 0; i < a.nproc_per_node; ++i) {
      for (int s = 0; s < 2; ++s) {
        if (ranks[i].fds[s] < 0) continue;
        fds.push_back({ranks[i].fds[s], POLLIN, 0});
        which.push_back({i, s});
      }
    }
    if (!fds.empty()) poll(fds.data(), fds.size(), 50);
    for (size_t k = 0; k < fds.size(); ++k)
      if (fds[k].revents) drain(ranks[which[k].first], which[k].second, a.quiet_others);

    bool any_running = false;
    for (int i = 0; i < a.nproc_per_node; ++i) {
      Rank& r = ranks[i];
      if (!r.running) continue;
      if (waitpid(r.pid, &r.status, WNOHANG) == r.pid) {
        r.running = false;
        bool ok = WIFEXITED(r.status) && WEXITSTATUS(r.status) == 0;
        if (!ok && failed < 0 && !stopping) failed = i;
      } else {
        any_running = true;
      }
    }
    if (g_signal && !stopping) {
      std::fprintf(stderr, "rgrun: got signal %d, stopping the ranks\n", int(g_signal));
      stopping = true;
      stop_all(SIGTERM);
      kill_at = Clock::now() + std::chrono::milliseconds(int(a.grace_seconds * 1000));
    }
    if (failed >= 0 && !stopping) {
      stopping = true;
      stop_all(SIGTERM);
      kill_at = Clock::now() + std::chrono::milliseconds(int(a.grace_seconds * 1000));
    }
    if (stopping && any_running && Clock::now() > kill_at) stop_all(SIGKILL);
    bool pipes_open = false;
    for (auto& r : ranks) pipes_open |= r.fds[0] >= 0 || r.fds[1] >= 0;
    if (!any_running && (!pipes_open || stopping)) break;
  }
  for (auto& r : ranks) {  // what is left in the pipes (a grandchild may still hold them)
    for (int s = 0; s < 2; ++s) {
      if (r.fds[s] < 0) continue;
      pollfd p{r.fds[s], POLLIN, 0};
      while (r.fds[s] >= 0 && poll(&p, 1, 0) > 0 && drain(r, s, a.quiet_others)) {
      }
      if (!r.partial[s].empty()) emit(r, s, r.partial[s], a.quiet_others);
    }
  }

  if (failed >= 0) {
    const Rank& r = ranks[failed];
    std::fprintf(stderr, "rgrun: rank %d %s; the other ranks were stopped\n", r.rank,
                 describe_end(r.status).c_str());
    if (WIFEXITED(r.status)) return WEXITSTATUS(r.status);
    return 128 + (WIFSIGNALED(r.status) ? WTERMSIG(r.status) : 0);
  }
  if (g_signal) return 128 + g_signal;
  return 0;
}
