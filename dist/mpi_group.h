// The mpi backend: ranks are the processes of MPI_COMM_WORLD (started by mpirun or srun), and
// messages are MPI_Isend/MPI_Irecv on a communicator of the group's own. The ring collectives
// run over them like over any backend (dist/mpi_transport.cpp; docs/adding-a-transport.md).
// Built only when MPI is found at configure time; without it these functions explain why.
#pragma once
#include <memory>

#include "dist/process_group.h"

namespace rg::dist {

// True when ringgrad was built with MPI.
bool mpi_available();

// The group of every rank of MPI_COMM_WORLD: initializes MPI if nobody has (with
// MPI_THREAD_MULTIPLE; finalized at exit only then), and duplicates MPI_COMM_WORLD, so it is
// collective: every rank calls it, in the same order as its other calls on MPI_COMM_WORLD.
std::shared_ptr<ProcessGroup> make_mpi_group(Options options = {});

}  // namespace rg::dist
