// rgrun's job token: the secret a job's nodes share, and the token each attempt derives.
#include <sys/random.h>

#include <cstdio>
#include <cstdlib>

#include "apps/rgrun.h"
#include "core/error.h"
#include "dist/job_token.h"

namespace rgrun {

// The secret every node of the job shares, from the caller: RG_JOB_TOKEN, else the file
// RG_JOB_TOKEN_FILE names (readable by its owner only), else, for a multi-node job, the
// identity Slurm or Open MPI gives the job (an identifier, not a secret; see
// dist/job_token.h). "" for a single-node job without one: it gets a random token. Reading
// RG_JOB_TOKEN removes it from rgrun's own environment (/proc/<pid>/environ).
std::string callers_secret(const Args& a) {
  rg::dist::JobToken given;
  try {
    given = rg::dist::find_job_token();
  } catch (const rg::Error& e) {
    usage_error(e.what());
  }
  if (given.source == "RG_JOB_TOKEN" || given.source == "RG_JOB_TOKEN_FILE") return given.value;
  if (a.nnodes == 1) return "";
  if (given.source != "default") return given.value;
  usage_error(std::string("a multi-node job needs a secret that every node shares: set ") +
              "RG_JOB_TOKEN, or RG_JOB_TOKEN_FILE to a file only you can read, on every node " +
              "(the ranks refuse connections without it)" +
              (a.rdzv_id.empty() ? ""
                                 : "; --rdzv-id " + a.rdzv_id +
                                       " alone is not a secret: whoever knows it could join"));
}

// RG_JOB_TOKEN for the ranks of attempt `restart` (0: the first): derived from the caller's
// secret (and --rdzv-id, when given, so that jobs sharing a secret stay apart), else (one node
// only) a random one. A restart gets a new token: a new random one, or the derived one with
// "-restart-N" appended, which every node that restarts as often derives alike.
std::string job_token(const Args& a, const std::string& secret, int restart) {
  const std::string suffix = restart > 0 ? "-restart-" + std::to_string(restart) : "";
  if (!secret.empty()) {
    std::string token = secret + (a.rdzv_id.empty() ? "" : "-rdzv-" + a.rdzv_id) + suffix;
    if (token.size() > rg::dist::kMaxJobTokenBytes)
      usage_error("the job token from the secret and --rdzv-id " + a.rdzv_id + " has " +
                  std::to_string(token.size()) + " bytes; at most " +
                  std::to_string(rg::dist::kMaxJobTokenBytes));
    return token;
  }
  unsigned char bytes[16];
  if (getrandom(bytes, sizeof bytes, 0) != sizeof bytes) {
    std::perror("rgrun: getrandom");
    std::exit(1);
  }
  std::string hex;
  for (unsigned char b : bytes) {
    static const char* digits = "0123456789abcdef";
    hex += digits[b >> 4];
    hex += digits[b & 15];
  }
  return hex;
}

}  // namespace rgrun
