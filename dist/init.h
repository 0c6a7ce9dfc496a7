// Starting a process group from the launcher's environment variables:
//   torchrun / rgrun: RANK, WORLD_SIZE, LOCAL_RANK, LOCAL_WORLD_SIZE, MASTER_ADDR, MASTER_PORT
//   Slurm (srun):     SLURM_PROCID, SLURM_NTASKS, SLURM_LOCALID, SLURM_NTASKS_PER_NODE or
//                     SLURM_TASKS_PER_NODE; master = first host of SLURM_JOB_NODELIST
//   Open MPI:         OMPI_COMM_WORLD_RANK, OMPI_COMM_WORLD_SIZE, OMPI_COMM_WORLD_LOCAL_RANK,
//                     OMPI_COMM_WORLD_LOCAL_SIZE
// MASTER_ADDR / MASTER_PORT, when set, win over what Slurm implies; without them a
// single-node job uses 127.0.0.1 and port 29500 (Slurm: 20000 + job id % 20000).
// RG_DIST_TIMEOUT (seconds) sets the default timeout of every wait. RG_JOB_TOKEN (see
// job_token.h) keeps jobs that share a port apart. The store listens on MASTER_ADDR's
// interface only, unless RG_DIST_BIND_ADDR names another (0.0.0.0: every interface).
#pragma once
#include <functional>
#include <memory>
#include <string>

#include "dist/process_group.h"

namespace rg::dist {

struct LaunchInfo {
  int rank = 0;
  int world_size = 1;
  int local_rank = 0;
  int local_world_size = 1;
  std::string master_addr = "127.0.0.1";
  int master_port = 29500;
  std::string source;  // "torchrun", "slurm", "openmpi" or "default" (a single process)
};

// Reads the variables through `getenv` (std::getenv by default; tests pass a map's lookup).
// Throws rg::Error naming the variable when one is malformed or inconsistent.
LaunchInfo launch_info_from_env(const EnvLookup& getenv = nullptr);

// The first host of a Slurm node list: "gpu[03-05,9],cpu1" -> "gpu03".
std::string first_slurm_host(const std::string& nodelist);

// Creates the group of this process from the environment. backend: "tcp" ("gloo", PyTorch's
// name for its CPU backend, means tcp), "nccl", "mpi" or "auto" (nccl when built with CUDA and
// a GPU is present, else tcp). Rank 0 hosts the store.
// "mpi" (under mpirun or srun) takes the rank and size from MPI_COMM_WORLD and needs no store
// (dist/mpi_group.h); "auto" never picks it.
std::shared_ptr<ProcessGroup> init_process_group(const std::string& backend = "auto",
                                                 Options options = {});

}  // namespace rg::dist
