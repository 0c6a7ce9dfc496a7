// rgrun's ranks as processes: starting them, and stopping them when rgrun cannot go on.
//
// A rank runs in a process group of its own (stopping the group stops its children too) and
// gets SIGTERM when rgrun dies (PR_SET_PDEATHSIG; a rank whose rgrun died before the prctl
// exits at once), so no rank outlives its launcher. When rank k cannot be started, ranks 0 to
// k-1 are stopped before rgrun reports the failure: none is left waiting for the missing one.
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "apps/rgrun.h"

namespace rgrun {

int free_port() {
  int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
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

namespace {

// In the child, between fork and exec: its own process group, death with rgrun, the default
// signal dispositions (rgrun's stop signals are blocked here and get delivered as they come
// unblocked), the launcher variables, then the program.
[[noreturn]] void exec_rank(const Args& a, const Rank& r, int local_rank, int port, pid_t rgrun,
                            const int out[2], const int err[2]) {
  setpgid(0, 0);
  if (prctl(PR_SET_PDEATHSIG, SIGTERM) != 0 || getppid() != rgrun) _exit(126);  // rgrun died
  for (int sig : kStopSignals) signal(sig, SIG_DFL);
  signal(SIGPIPE, SIG_DFL);
  sigset_t none;
  sigemptyset(&none);
  sigprocmask(SIG_SETMASK, &none, nullptr);
  dup2(out[1], 1);  // the pipes are O_CLOEXEC; dup2's copies are not
  dup2(err[1], 2);
  setenv("RANK", std::to_string(r.rank).c_str(), 1);
  setenv("LOCAL_RANK", std::to_string(local_rank).c_str(), 1);
  setenv("WORLD_SIZE", std::to_string(a.nnodes * a.nproc_per_node).c_str(), 1);
  setenv("LOCAL_WORLD_SIZE", std::to_string(a.nproc_per_node).c_str(), 1);
  setenv("GROUP_RANK", std::to_string(a.node_rank).c_str(), 1);
  setenv("MASTER_ADDR", a.master_addr.c_str(), 1);
  setenv("MASTER_PORT", std::to_string(port).c_str(), 1);
  if (!a.error_dir.empty())
    setenv("RG_ERROR_FILE", error_file(a.error_dir, r.rank).c_str(), 1);
  else
    unsetenv("RG_ERROR_FILE");
  execvp(a.program[0], a.program.data());
  std::fprintf(stderr, "rgrun: cannot run %s: %s\n", a.program[0], std::strerror(errno));
  _exit(127);
}

// Starts one rank; "" on success, else what failed (its descriptors are closed again).
std::string spawn(const Args& a, Rank& r, int local_rank, int port) {
  int out[2] = {-1, -1}, err[2] = {-1, -1};
  auto close_all = [&] {
    for (int fd : {out[0], out[1], err[0], err[1]})
      if (fd >= 0) close(fd);
  };
  if (pipe2(out, O_CLOEXEC) != 0 || pipe2(err, O_CLOEXEC) != 0) {
    const std::string why = std::string("pipe: ") + std::strerror(errno);
    close_all();
    return why;
  }
  sigset_t stop, old;
  sigemptyset(&stop);
  for (int sig : kStopSignals) sigaddset(&stop, sig);
  sigprocmask(SIG_BLOCK, &stop, &old);  // the child must not run rgrun's handlers
  const pid_t rgrun = getpid();
  const pid_t pid = fork();
  if (pid == 0) exec_rank(a, r, local_rank, port, rgrun, out, err);
  const int fork_errno = errno;
  sigprocmask(SIG_SETMASK, &old, nullptr);
  if (pid < 0) {
    close_all();
    return std::string("fork: ") + std::strerror(fork_errno);
  }
  setpgid(pid, pid);  // as the child does: whichever runs first, kill(-pid) reaches it
  close(out[1]);
  close(err[1]);
  r.pid = pid;
  r.running = true;
  r.fds[0] = out[0];
  r.fds[1] = err[0];
  fcntl(out[0], F_SETFL, O_NONBLOCK);
  fcntl(err[0], F_SETFL, O_NONBLOCK);
  return "";
}

}  // namespace

std::string start_ranks(const Args& a, std::vector<Rank>& ranks, int port) {
  for (Rank& r : ranks) r.running = false;
  for (size_t local = 0; local < ranks.size(); ++local) {
    const std::string why = spawn(a, ranks[local], int(local), port);
    if (why.empty()) continue;
    stop_ranks(ranks, a.grace_seconds);
    return "cannot start rank " + std::to_string(ranks[local].rank) + " (" + why +
           "); stopped the " + std::to_string(local) + " rank(s) already started";
  }
  return "";
}

void stop_ranks(std::vector<Rank>& ranks, double grace_seconds) {
  for (Rank& r : ranks)
    if (r.running) {
      kill(-r.pid, SIGTERM);
      kill(-r.pid, SIGCONT);
    }
  const auto kill_at =
      std::chrono::steady_clock::now() + std::chrono::milliseconds(int64_t(grace_seconds * 1000));
  for (bool any = true; any;) {
    any = false;
    for (Rank& r : ranks) {
      if (r.running && waitpid(r.pid, &r.status, WNOHANG) == r.pid) r.running = false;
      any |= r.running;
    }
    if (any && std::chrono::steady_clock::now() > kill_at) {
      for (Rank& r : ranks)
        if (r.running) kill(-r.pid, SIGKILL), waitpid(r.pid, &r.status, 0), r.running = false;
      any = false;
    }
    if (any) usleep(10000);
  }
  for (Rank& r : ranks)
    for (int& fd : r.fds)
      if (fd >= 0) close(fd), fd = -1;
}

}  // namespace rgrun
