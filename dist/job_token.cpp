// The job token from the launcher's environment (see job_token.h).
#include "dist/job_token.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>

#include "core/error.h"

namespace rg::dist {
namespace {

void check_length(const std::string& token, const char* name) {
  RG_CHECK(token.size() <= kMaxJobTokenBytes, name, ": ", token.size(),
           " bytes; a job token has at most ", kMaxJobTokenBytes);
}

// The token this process took out of its environment, for later calls.
std::mutex g_mutex;
std::string g_cached;

// Whether `p` lies in the environment block this process started with: the memory that
// /proc/<pid>/environ shows (fields 50 and 51 of /proc/self/stat bound it). Only that needs
// wiping; a value set later lives elsewhere (putenv's may even be read-only).
bool in_initial_environment(const char* p) {
  char line[4096] = {};
  FILE* f = std::fopen("/proc/self/stat", "r");
  if (!f) return false;
  const size_t n = std::fread(line, 1, sizeof line - 1, f);
  std::fclose(f);
  const char* after_name = std::strrchr(line, ')');  // the command name may hold spaces
  if (n == 0 || !after_name) return false;
  unsigned long long start = 0, end = 0;
  int field = 2;  // ")" ends field 2
  for (const char* c = after_name + 1; *c && field < 51; ++c) {
    if (*c != ' ') continue;
    ++field;
    if (field == 50) start = std::strtoull(c + 1, nullptr, 10);
    if (field == 51) end = std::strtoull(c + 1, nullptr, 10);
  }
  const auto at = reinterpret_cast<uintptr_t>(p);
  return start < end && at >= start && at < end;
}

// RG_JOB_TOKEN of the real environment: read, wiped and removed (so /proc/<pid>/environ,
// which shows the environment block the process started with, no longer holds it), cached.
std::string take_token_from_environment() {
  std::lock_guard lock(g_mutex);
  if (char* s = std::getenv("RG_JOB_TOKEN"); s && *s) {
    g_cached = s;
    if (in_initial_environment(s)) explicit_bzero(s, std::strlen(s));
    unsetenv("RG_JOB_TOKEN");
  }
  return g_cached;
}

}  // namespace

std::string job_token_from_file(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  RG_CHECK(fd >= 0, "RG_JOB_TOKEN_FILE '", path, "': cannot open it: ", std::strerror(errno));
  struct stat st {};
  std::string token(kMaxJobTokenBytes + 64, '\0');
  const bool statted = fstat(fd, &st) == 0;
  const ssize_t got = statted && (st.st_mode & (S_IRGRP | S_IROTH)) == 0
                          ? ::read(fd, token.data(), token.size())
                          : 0;
  ::close(fd);
  char mode[8];
  std::snprintf(mode, sizeof mode, "%04o", unsigned(st.st_mode & 07777));
  RG_CHECK(statted && (st.st_mode & (S_IRGRP | S_IROTH)) == 0, "RG_JOB_TOKEN_FILE '", path,
           "': mode ", mode,
           " lets group or others read it; the job token is a secret, make the file readable "
           "by you only (chmod 600)");
  RG_CHECK(got >= 0, "RG_JOB_TOKEN_FILE '", path, "': cannot read it");
  token.resize(size_t(got));
  while (!token.empty() && std::strchr(" \t\r\n", token.back())) token.pop_back();
  RG_CHECK(!token.empty(), "RG_JOB_TOKEN_FILE '", path, "': the file is empty");
  check_length(token, "RG_JOB_TOKEN_FILE");
  return token;
}

JobToken find_job_token(const EnvLookup& lookup) {
  EnvLookup env = lookup ? lookup : [](const char* name) { return std::getenv(name); };
  auto value = [&](const char* name) -> std::string {
    const char* s = env(name);
    return s ? s : "";
  };
  std::string token = lookup ? value("RG_JOB_TOKEN") : take_token_from_environment();
  if (!token.empty()) {
    check_length(token, "RG_JOB_TOKEN");
    return {token, "RG_JOB_TOKEN"};
  }
  if (std::string path = value("RG_JOB_TOKEN_FILE"); !path.empty())
    return {job_token_from_file(path), "RG_JOB_TOKEN_FILE"};
  if (std::string job = value("SLURM_JOB_ID"); !job.empty())
    return {str("slurm:", job.substr(0, 64), ".", value("SLURM_STEP_ID").substr(0, 64)), "slurm"};
  if (std::string job = value("OMPI_MCA_ess_base_jobid"); !job.empty())
    return {str("ompi:", job.substr(0, 128)), "openmpi"};
  if (std::string job = value("PMIX_NAMESPACE"); !job.empty())
    return {str("pmix:", job.substr(0, 128)), "openmpi"};
  return {kDefaultJobToken, "default"};
}

std::string job_token_from_env(const EnvLookup& lookup) { return find_job_token(lookup).value; }

}  // namespace rg::dist
