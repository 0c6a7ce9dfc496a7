// Runs test ranks as forked processes: each child runs fn(rank); an exception becomes exit
// status 1 with its message sent back through a pipe. The parent kills every child still
// running after `limit`, so a hung test fails instead of hanging, or as soon as every rank
// of `must_finish` (when given) has ended: for tests that leave a rank stopped or hung.
//
// fork() copies only the calling thread. A lock that another thread holds at that moment
// (the allocator's, under AddressSanitizer) stays locked forever in the child, which then
// hangs on its first malloc. So ranks are forked only while no ringgrad thread (they are
// named "rg-…") runs in this process, and a test's store server runs in a process of its
// own (StoreProcess) rather than as threads of the test.
#pragma once
#include <dirent.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <fstream>
#include <functional>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "dist/store.h"

namespace rg::dist::test {

// The names of this process's ringgrad threads (store server, communication thread: named
// "rg-…"), comma-separated; empty when there are none.
inline std::string ringgrad_threads() {
  DIR* tasks = opendir("/proc/self/task");
  if (!tasks) return "";
  std::string found;
  while (dirent* e = readdir(tasks)) {
    if (e->d_name[0] == '.') continue;
    std::ifstream comm(std::string("/proc/self/task/") + e->d_name + "/comm");
    std::string name;
    std::getline(comm, name);
    if (name.rfind("rg-", 0) == 0) found += (found.empty() ? "" : ", ") + name;
  }
  closedir(tasks);
  return found;
}

// Throws if a ringgrad thread runs in this process, since forking now could leave the child
// with a lock it can never take. A thread just joined can still be listed for a moment (the
// kernel finishes its exit after waking the joiner), so a finding is confirmed for up to
// 200 ms before it counts.
inline void check_safe_to_fork(const char* who) {
  std::string found = ringgrad_threads();
  for (int i = 0; i < 100 && !found.empty(); ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
    found = ringgrad_threads();
  }
  if (!found.empty())
    throw std::runtime_error(std::string(who) + ": this process runs ringgrad threads (" + found +
                             "); forking now can hang the child on a lock one of them holds. "
                             "Host the store with StoreProcess and destroy groups before forking.");
}

struct ChildResult {
  int status = -1;      // exit code, or -1 if killed
  bool killed = false;  // still running at the limit
  std::string message;  // what() of the exception that ended it, if any
  pid_t pid = 0;
};

inline std::vector<ChildResult> run_processes(int n, const std::function<void(int)>& fn,
                                              std::chrono::milliseconds limit,
                                              const std::vector<int>& must_finish = {}) {
  check_safe_to_fork("run_processes");
  std::vector<pid_t> pids(n);
  std::vector<int> pipes(n);
  for (int r = 0; r < n; ++r) {
    int fds[2];
    if (pipe(fds) != 0) throw std::runtime_error("pipe failed");
    pid_t pid = fork();
    if (pid == 0) {
      prctl(PR_SET_PDEATHSIG, SIGKILL);  // a stopped rank must not outlive a killed test
      close(fds[0]);
      int code = 0;
      try {
        fn(r);
      } catch (const std::exception& e) {
        std::string what = e.what();
        (void)!write(fds[1], what.data(), what.size());
        code = 1;
      }
      _exit(code);
    }
    close(fds[1]);
    fcntl(fds[0], F_SETFL, O_NONBLOCK);
    pids[r] = pid;
    pipes[r] = fds[0];
  }
  std::vector<ChildResult> results(n);
  for (int r = 0; r < n; ++r) results[r].pid = pids[r];
  std::vector<bool> done(n, false);
  auto finished = [&] {
    if (must_finish.empty()) return false;
    for (int r : must_finish)
      if (!done[r]) return false;
    return true;
  };
  auto drain = [&](int r) {
    char buf[4096];
    ssize_t k;
    while ((k = read(pipes[r], buf, sizeof(buf))) > 0) results[r].message.append(buf, k);
  };
  auto deadline = std::chrono::steady_clock::now() + limit;
  int remaining = n;
  while (remaining > 0) {
    for (int r = 0; r < n; ++r) {
      if (done[r]) continue;
      drain(r);
      int status = 0;
      if (waitpid(pids[r], &status, WNOHANG) == pids[r]) {
        drain(r);
        results[r].status = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
        done[r] = true;
        --remaining;
      }
    }
    if (remaining == 0) break;
    if (std::chrono::steady_clock::now() > deadline || finished()) {
      for (int r = 0; r < n; ++r) {
        if (done[r]) continue;
        kill(pids[r], SIGKILL);
        waitpid(pids[r], nullptr, 0);
        drain(r);
        results[r].killed = true;
      }
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  for (int fd : pipes) close(fd);
  return results;
}

// A TcpStore server in a forked process of its own, so that the test process has no server
// threads when it forks the ranks. Killed (and reaped) on destruction.
class StoreProcess {
 public:
  explicit StoreProcess(Milliseconds timeout = Milliseconds(10'000),
                        std::string job_token = job_token_from_env()) {
    check_safe_to_fork("StoreProcess");
    int fds[2];
    if (pipe(fds) != 0) throw std::runtime_error("StoreProcess: pipe failed");
    pid_ = fork();
    if (pid_ < 0) throw std::runtime_error("StoreProcess: fork failed");
    if (pid_ == 0) {
      prctl(PR_SET_PDEATHSIG, SIGKILL);
      close(fds[0]);
      int port = -1;
      try {
        TcpStore server("127.0.0.1", 0, true, timeout, job_token);
        port = server.port();
        (void)!write(fds[1], &port, sizeof(port));
        for (;;) pause();  // serves from its threads until killed
      } catch (...) {
        (void)!write(fds[1], &port, sizeof(port));
      }
      _exit(1);
    }
    close(fds[1]);
    if (read(fds[0], &port_, sizeof(port_)) != static_cast<ssize_t>(sizeof(port_))) port_ = -1;
    close(fds[0]);
    if (port_ <= 0) {
      stop();
      throw std::runtime_error("StoreProcess: the store server did not start");
    }
  }
  StoreProcess(const StoreProcess&) = delete;
  StoreProcess& operator=(const StoreProcess&) = delete;
  ~StoreProcess() { stop(); }

  int port() const { return port_; }

 private:
  void stop() {
    if (pid_ <= 0) return;
    kill(pid_, SIGKILL);
    waitpid(pid_, nullptr, 0);
    pid_ = -1;
  }

  pid_t pid_ = -1;
  int port_ = -1;
};

}  // namespace rg::dist::test
