// The job token: a string every rank of one job shares, so that the store and the peer links
// accept connections only from processes of the same job. Two jobs that happen to use one
// MASTER_PORT then fail cleanly ("job token mismatch") instead of pairing each other's ranks.
//
// Where it comes from, first match wins:
//   RG_JOB_TOKEN            set by rgrun (a random token per run) or by the user: a secret;
//   RG_JOB_TOKEN_FILE       a file holding the token (trailing white space dropped), readable
//                           by its owner only: a group- or world-readable file is refused;
//   SLURM_JOB_ID            (+ SLURM_STEP_ID) under Slurm;
//   OMPI_MCA_ess_base_jobid or PMIX_NAMESPACE under Open MPI;
//   a fixed default         a plain run without a launcher: no isolation between jobs.
// Slurm's and Open MPI's job ids are identifiers, not secrets: anyone who can list the jobs
// knows them. Only RG_JOB_TOKEN and RG_JOB_TOKEN_FILE keep out a process that was not given
// the token. The token is isolation between cooperating jobs, not authentication against a
// hostile process of the same user (see docs/dist.md): it travels in clear.
//
// A process that reads RG_JOB_TOKEN from its own environment wipes the value's bytes and
// removes the variable, so /proc/<pid>/environ no longer shows it; the token stays cached in
// the process, and later calls return it (a newly set RG_JOB_TOKEN wins over the cache).
#pragma once
#include <cstddef>
#include <functional>
#include <string>

namespace rg::dist {

// Reads a variable of the environment; tests pass a map's lookup instead of std::getenv.
using EnvLookup = std::function<const char*(const char*)>;

inline constexpr size_t kMaxJobTokenBytes = 256;
inline constexpr const char* kDefaultJobToken = "ringgrad-default-job";

struct JobToken {
  std::string value;
  // "RG_JOB_TOKEN", "RG_JOB_TOKEN_FILE" (secrets), "slurm", "openmpi" (identifiers) or
  // "default".
  std::string source;
};

// The token of this process's job and where it came from. Throws rg::Error naming
// RG_JOB_TOKEN or RG_JOB_TOKEN_FILE (and the file and its mode) when the token is too long,
// or the file is unreadable, empty, or readable by group or others.
JobToken find_job_token(const EnvLookup& getenv = nullptr);

// find_job_token(getenv).value.
std::string job_token_from_env(const EnvLookup& getenv = nullptr);

// The token in `path` (RG_JOB_TOKEN_FILE): see find_job_token for what is refused.
std::string job_token_from_file(const std::string& path);

}  // namespace rg::dist
