// The job token from the launcher's environment (see job_token.h).
#include "dist/job_token.h"

#include <cstdlib>

#include "core/error.h"

namespace rg::dist {

std::string job_token_from_env(const EnvLookup& lookup) {
  EnvLookup env = lookup ? lookup : [](const char* name) { return std::getenv(name); };
  auto value = [&](const char* name) -> std::string {
    const char* s = env(name);
    return s ? s : "";
  };
  if (std::string token = value("RG_JOB_TOKEN"); !token.empty()) {
    RG_CHECK(token.size() <= kMaxJobTokenBytes, "RG_JOB_TOKEN: ", token.size(),
             " bytes; a job token has at most ", kMaxJobTokenBytes);
    return token;
  }
  if (std::string job = value("SLURM_JOB_ID"); !job.empty())
    return str("slurm:", job.substr(0, 64), ".", value("SLURM_STEP_ID").substr(0, 64));
  if (std::string job = value("OMPI_MCA_ess_base_jobid"); !job.empty())
    return str("ompi:", job.substr(0, 128));
  if (std::string job = value("PMIX_NAMESPACE"); !job.empty())
    return str("pmix:", job.substr(0, 128));
  return kDefaultJobToken;
}

}  // namespace rg::dist
