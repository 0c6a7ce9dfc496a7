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

// Ends the MPI job of a process that is failing: when MPI is initialized and not finalized,
// calls MPI_Abort(MPI_COMM_WORLD, exit_code), and mpirun (or srun) then kills every rank, a
// stopped one included. Without it the failing rank would wait at exit in MPI_Finalize
// (which this backend calls at exit) for peers that may never come. Does nothing where MPI
// is not running (or not built). Call it where the program reports its fatal error, after
// record_failure (dist/dist_error.h) and the message.
void abort_mpi_job(int exit_code);

}  // namespace rg::dist
