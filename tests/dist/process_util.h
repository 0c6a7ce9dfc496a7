// Runs test ranks as forked processes: each child runs fn(rank); an exception becomes exit
// status 1 with its message sent back through a pipe. The parent kills every child still
// running after `limit`, so a hung test fails instead of hanging, or as soon as every rank
// of `must_finish` (when given) has ended: for tests that leave a rank stopped or hung.
#pragma once
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <functional>
#include <string>
#include <thread>
#include <vector>

namespace rg::dist::test {

struct ChildResult {
  int status = -1;      // exit code, or -1 if killed
  bool killed = false;  // still running at the limit
  std::string message;  // what() of the exception that ended it, if any
  pid_t pid = 0;
};

inline std::vector<ChildResult> run_processes(int n, const std::function<void(int)>& fn,
                                              std::chrono::milliseconds limit,
                                              const std::vector<int>& must_finish = {}) {
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

}  // namespace rg::dist::test
