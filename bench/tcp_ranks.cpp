// Forked tcp ranks of the benches; see tcp_ranks.h.
#include "bench/tcp_ranks.h"

#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <exception>
#include <memory>
#include <vector>

#include "dist/store.h"
#include "dist/tcp_group.h"

namespace rg::bench {

bool run_forked_tcp_ranks(int nproc, const char* who, const std::function<void(int)>& before_group,
                          const std::function<void(dist::ProcessGroup&)>& body,
                          const GroupMaker& make_group) {
  std::fflush(stdout);  // else the children would print what is buffered again
  auto server = std::make_shared<dist::TcpStore>("127.0.0.1", 0, true);
  const int port = server->port();
  std::vector<pid_t> pids;
  for (int rank = 0; rank < nproc; ++rank) {
    pid_t pid = fork();
    if (pid < 0) return false;
    if (pid == 0) {
      int code = 0;
      try {
        if (before_group) before_group(rank);
        auto store = std::make_shared<dist::TcpStore>("127.0.0.1", port, false);
        auto group =
            make_group ? make_group(store, rank, nproc) : dist::make_tcp_group(store, rank, nproc);
        body(*group);
      } catch (const std::exception& e) {
        std::fprintf(stderr, "%s: rank %d: %s\n", who, rank, e.what());
        code = 1;
      }
      std::fflush(stdout);
      std::fflush(stderr);
      _exit(code);
    }
    pids.push_back(pid);
  }
  bool ok = true;
  for (pid_t pid : pids) {
    int status = 0;
    waitpid(pid, &status, 0);
    ok = ok && WIFEXITED(status) && WEXITSTATUS(status) == 0;
  }
  return ok;
}

}  // namespace rg::bench
