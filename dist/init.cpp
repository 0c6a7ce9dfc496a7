// Launcher environment parsing and init_process_group (see init.h).
#include "dist/init.h"

#include <cstdlib>

#include "core/device_interface.h"
#include "dist/mpi_group.h"
#include "dist/nccl_group.h"
#include "dist/store.h"
#include "dist/tcp_group.h"

namespace rg::dist {
namespace {

int parse_int(const EnvLookup& env, const char* name, int min_value) {
  const char* s = env(name);
  RG_CHECK(s && *s, "init_process_group: ", name, " is not set");
  char* end = nullptr;
  long v = std::strtol(s, &end, 10);
  RG_CHECK(end != s && *end == '\0' && v >= min_value && v < (1L << 30),
           "init_process_group: ", name, "='", s, "' is not an integer >= ", min_value);
  return static_cast<int>(v);
}

int parse_optional(const EnvLookup& env, const char* name, int fallback, int min_value) {
  const char* s = env(name);
  return s && *s ? parse_int(env, name, min_value) : fallback;
}

// SLURM_TASKS_PER_NODE looks like "4(x2),3": the count of the first node.
int first_tasks_per_node(const std::string& s) {
  size_t digits = 0;
  while (digits < s.size() && std::isdigit(static_cast<unsigned char>(s[digits]))) ++digits;
  RG_CHECK(digits > 0, "init_process_group: SLURM_TASKS_PER_NODE='", s, "' is malformed");
  return std::stoi(s.substr(0, digits));
}

}  // namespace

std::string first_slurm_host(const std::string& nodelist) {
  // The first entry ends at a comma outside brackets.
  std::string entry;
  int depth = 0;
  for (char c : nodelist) {
    if (c == ',' && depth == 0) break;
    depth += c == '[' ? 1 : c == ']' ? -1 : 0;
    entry.push_back(c);
  }
  size_t open = entry.find('[');
  if (open == std::string::npos) return entry;
  std::string prefix = entry.substr(0, open), range = entry.substr(open + 1);
  size_t stop = range.find_first_of(",-]");
  return prefix + range.substr(0, stop);
}

namespace {

// The names of the rank and world-size variables of a launcher, for error messages.
struct RankVariables {
  const char* rank;
  const char* world_size;
};

RankVariables rank_variables(const std::string& source) {
  if (source == "slurm") return {"SLURM_PROCID", "SLURM_NTASKS"};
  if (source == "openmpi") return {"OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE"};
  return {"RANK", "WORLD_SIZE"};
}

// RANK and WORLD_SIZE come together: one without the other is a launch mistake (a process
// that would silently run alone).
void check_rank_pair(const EnvLookup& env) {
  const char* rank = env("RANK");
  const char* size = env("WORLD_SIZE");
  const bool has_rank = rank && *rank, has_size = size && *size;
  RG_CHECK(has_rank || !has_size, "init_process_group: WORLD_SIZE=", has_size ? size : "",
           " is set but RANK is not; set both (or neither, for a single process)");
  RG_CHECK(has_size || !has_rank, "init_process_group: RANK=", has_rank ? rank : "",
           " is set but WORLD_SIZE is not; set both (or neither, for a single process)");
}

void check_consistent(const LaunchInfo& info) {
  RG_CHECK(info.master_port < 65536, "init_process_group: MASTER_PORT=", info.master_port,
           " is not a port");
  const RankVariables vars = rank_variables(info.source);
  RG_CHECK(info.rank < info.world_size, "init_process_group: ", vars.rank, "=", info.rank,
           " is outside the world of ", vars.world_size, "=", info.world_size, " (ranks 0 to ",
           info.world_size - 1, ")");
  RG_CHECK(info.local_rank < info.local_world_size, "init_process_group: local rank ",
           info.local_rank, " is outside the local world of size ", info.local_world_size);
  RG_CHECK(info.local_world_size <= info.world_size, "init_process_group: local world size ",
           info.local_world_size, " exceeds the world size ", info.world_size);
}

}  // namespace

LaunchInfo launch_info_from_env(const EnvLookup& lookup) {
  EnvLookup env = lookup ? lookup : [](const char* name) { return std::getenv(name); };
  auto has = [&](const char* name) { return env(name) && *env(name); };
  LaunchInfo info;
  if (has("RANK") || has("WORLD_SIZE")) {
    check_rank_pair(env);
    info.source = "torchrun";
    info.rank = parse_int(env, "RANK", 0);
    info.world_size = parse_int(env, "WORLD_SIZE", 1);
    info.local_rank = parse_optional(env, "LOCAL_RANK", info.rank, 0);
    info.local_world_size = parse_optional(env, "LOCAL_WORLD_SIZE", info.world_size, 1);
  } else if (has("SLURM_PROCID")) {
    info.source = "slurm";
    info.rank = parse_int(env, "SLURM_PROCID", 0);
    info.world_size = parse_int(env, "SLURM_NTASKS", 1);
    info.local_rank = parse_optional(env, "SLURM_LOCALID", 0, 0);
    info.local_world_size =
        has("SLURM_NTASKS_PER_NODE")  ? parse_int(env, "SLURM_NTASKS_PER_NODE", 1)
        : has("SLURM_TASKS_PER_NODE") ? first_tasks_per_node(env("SLURM_TASKS_PER_NODE"))
                                      : info.world_size;
    if (has("SLURM_JOB_NODELIST")) info.master_addr = first_slurm_host(env("SLURM_JOB_NODELIST"));
    if (has("SLURM_JOB_ID")) info.master_port = 20000 + parse_int(env, "SLURM_JOB_ID", 0) % 20000;
  } else if (has("OMPI_COMM_WORLD_RANK")) {
    info.source = "openmpi";
    info.rank = parse_int(env, "OMPI_COMM_WORLD_RANK", 0);
    info.world_size = parse_int(env, "OMPI_COMM_WORLD_SIZE", 1);
    info.local_rank = parse_optional(env, "OMPI_COMM_WORLD_LOCAL_RANK", 0, 0);
    info.local_world_size = parse_optional(env, "OMPI_COMM_WORLD_LOCAL_SIZE", info.world_size, 1);
  } else {
    info.source = "default";
  }
  if (has("MASTER_ADDR")) info.master_addr = env("MASTER_ADDR");
  if (has("MASTER_PORT")) info.master_port = parse_int(env, "MASTER_PORT", 1);
  check_consistent(info);
  return info;
}

std::shared_ptr<ProcessGroup> init_process_group(const std::string& backend, Options options) {
  // mpi: the rank and size are MPI's (MPI_COMM_WORLD), not the environment's; no store.
  if (backend == "mpi") return make_mpi_group(options);
  LaunchInfo info = launch_info_from_env();
  std::string chosen = backend;
  if (chosen == "auto") chosen = nccl_available() ? "nccl" : "tcp";
  if (chosen == "gloo") chosen = "tcp";  // PyTorch's CPU backend: its scripts name it
  RG_CHECK(chosen == "tcp" || chosen == "nccl", "init_process_group: unknown backend '", backend,
           "' (expected tcp, gloo, nccl, mpi or auto)");
  auto store = std::make_shared<TcpStore>(info.master_addr, info.master_port, info.rank == 0,
                                          options.timeout, options.job_token);
  if (chosen == "nccl")
    return make_nccl_group(store, info.rank, info.world_size, info.local_rank, options);
  return make_tcp_group(store, info.rank, info.world_size, options);
}

}  // namespace rg::dist
