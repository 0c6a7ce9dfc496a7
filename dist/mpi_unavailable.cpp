// The mpi backend's entry points in a build without MPI: they explain why they cannot run.
#include "dist/mpi_group.h"

namespace rg::dist {

bool mpi_available() { return false; }

void abort_mpi_job(int) {}

std::shared_ptr<ProcessGroup> make_mpi_group(Options) {
  RG_FAIL("mpi backend: ringgrad was built without MPI (install libopenmpi-dev)");
}

}  // namespace rg::dist
