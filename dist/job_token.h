// The job token: a string every rank of one job shares, so that the store and the peer links
// accept connections only from processes of the same job. Two jobs that happen to use one
// MASTER_PORT then fail cleanly ("job token mismatch") instead of pairing each other's ranks.
//
// Where it comes from, first match wins:
//   RG_JOB_TOKEN            set by rgrun (a random token per run) or by the user;
//   SLURM_JOB_ID            (+ SLURM_STEP_ID) under Slurm;
//   OMPI_MCA_ess_base_jobid or PMIX_NAMESPACE under Open MPI;
//   a fixed default         a plain run without a launcher: no isolation between jobs.
// The token is isolation between cooperating jobs, not authentication: it travels in clear.
#pragma once
#include <cstddef>
#include <functional>
#include <string>

namespace rg::dist {

// Reads a variable of the environment; tests pass a map's lookup instead of std::getenv.
using EnvLookup = std::function<const char*(const char*)>;

inline constexpr size_t kMaxJobTokenBytes = 256;
inline constexpr const char* kDefaultJobToken = "ringgrad-default-job";

// The token of this process's job; throws rg::Error naming RG_JOB_TOKEN if it is too long.
std::string job_token_from_env(const EnvLookup& getenv = nullptr);

}  // namespace rg::dist
