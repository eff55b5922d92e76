#pragma once
// The MPI communicator: MPI_Allreduce over MPI_COMM_WORLD, in place. The job is started
// by an MPI launcher, which gives every process its rank and the world size:
//
//   mpirun -np 2 ./train           # Open MPI on one machine (as root: --allow-run-as-root)
//   srun -n 8 ./train              # Slurm
//
// and every process calls mpi_world() once; the first call initializes MPI
// (MPI_Init_thread asking for MPI_THREAD_MULTIPLE: with it, a progress thread,
// mpi_progress.h, drives the reductions in flight; without it only the executor's
// calling thread talks to MPI) and registers MPI_Finalize to run at exit. Errors of MPI calls are returned
// (MPI_ERRORS_RETURN), not fatal.

#include <memory>

#include "ir/status.h"
#include "runtime/collective/communicator.h"

namespace weft::collective {

/// Whether an MPI launcher started this process: Open MPI's mpirun sets
/// OMPI_COMM_WORLD_SIZE, Slurm's srun and MPICH's mpiexec PMI_SIZE or PMIX_RANK.
bool launched_by_mpi_launcher();

/// Every process of the MPI job (MPI_COMM_WORLD), initializing MPI on the first call.
/// Error when no MPI launcher started the process (run it as `mpirun -np N PROGRAM`,
/// or use single_process() for one process) or when MPI fails to initialize.
StatusOr<std::shared_ptr<Communicator>> mpi_world();

}  // namespace weft::collective
