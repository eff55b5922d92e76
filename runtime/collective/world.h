#pragma once
// The one choice of communicator for data parallelism: world_from_environment() reads
// how the process was launched and joins the job with the matching transport.
//
//   mpirun -np 2 ./train --data-parallel                 # MPI (Open MPI)
//   srun -n 2 --mpi=pmix ./train --data-parallel         # MPI under Slurm (PMI/PMIx)
//   RANK=0 WORLD_SIZE=2 MASTER_ADDR=127.0.0.1 MASTER_PORT=29500 ./train --data-parallel
//   RANK=1 WORLD_SIZE=2 MASTER_ADDR=127.0.0.1 MASTER_PORT=29500 ./train --data-parallel
//                                                        # torchrun-style: Gloo over TCP
//
// MPI when an MPI launcher started the process (mpi_communicator.h's
// launched_by_mpi_launcher: OMPI_COMM_WORLD_SIZE, PMI_SIZE or PMIX_RANK), else Gloo when
// any of the torchrun variables is set (then RANK, WORLD_SIZE, MASTER_ADDR and
// MASTER_PORT must all be), else an error naming the variables and the commands. The
// driver, the JIT examples and the Trainer (TrainOptions::data_parallel) all come here;
// TrainOptions::bind.communicator stays the injection point for a communicator made elsewhere.
// Both transports give up on a collective after the timeout (watchdog.h).

#include <chrono>
#include <memory>
#include <string>

#include "ir/status.h"
#include "runtime/collective/communicator.h"

namespace weft::collective {

enum class Launcher {
  none,      ///< No launcher: one process.
  mpi,       ///< mpirun, or srun with PMI/PMIx.
  torchrun,  ///< The torchrun variables (RANK, WORLD_SIZE, MASTER_ADDR, MASTER_PORT).
};

/// How the process was launched, from its environment alone (joins nothing).
Launcher detect_launcher();

/// Whether mpirun, srun (with PMI) or the torchrun variables started this process.
bool launched_by_a_launcher();

/// Every rank of the launch: MPI's world or Gloo's. `timeout` (--collective-timeout) is
/// how long a rank waits for its peers in one collective (and in the rendezvous) before
/// it gives up naming them (watchdog.h).
/// Errors: no launcher (the message shows the commands above), a torchrun variable
/// missing or malformed, srun without PMI, or the transport failing to join.
StatusOr<std::shared_ptr<Communicator>> world_from_environment(
    std::chrono::milliseconds timeout = std::chrono::seconds(300));

/// This process's index among the ranks on its machine (a GPU's index for NCCL):
/// LOCAL_RANK (torchrun), OMPI_COMM_WORLD_LOCAL_RANK (Open MPI) or SLURM_LOCALID (srun),
/// the first one set; 0 when none is.
int local_rank();

}  // namespace weft::collective
