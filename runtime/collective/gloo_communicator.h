#pragma once
// The Gloo communicator: gloo's allreduce and broadcast over its TCP transport, for jobs
// launched torchrun-style (world.h reads RANK, WORLD_SIZE, MASTER_ADDR, MASTER_PORT):
//
//   RANK=0 WORLD_SIZE=2 MASTER_ADDR=127.0.0.1 MASTER_PORT=29500 ./train --data-parallel &
//   RANK=1 WORLD_SIZE=2 MASTER_ADDR=127.0.0.1 MASTER_PORT=29500 ./train --data-parallel
//
// The rendezvous is PyTorch's: rank 0 serves a TcpStore at MASTER_ADDR:MASTER_PORT, and
// gloo's rendezvous::Context::connectFullMesh connects every pair of ranks through it.
// Each rank's transport listens on the interface named by $GLOO_SOCKET_IFNAME (as in
// PyTorch), else on 127.0.0.1 when MASTER_ADDR is a loopback address (one machine), else
// on the address its host name resolves to.
//
// Semantics are the MPI communicator's: the mean is the sum divided by the world size;
// gloo's ring allreduce leaves identical bytes on every rank. Every collective has the
// timeout: a peer that died fails it at once, one that hangs after the timeout, with
// watchdog.h's line naming the collective. Collectives run on a thread of the
// communicator's own, one at a time in the order the caller started them (the same on
// every rank): start_all_reduce returns at once, and its PendingReduction's test() and
// wait() look at that thread's result, so a reduction goes on while the step computes;
// all_reduce and broadcast wait for theirs.

#include <chrono>
#include <memory>
#include <string>

#include "ir/status.h"
#include "runtime/collective/communicator.h"

namespace weft::collective {

struct GlooOptions {
  int rank = 0;
  int world_size = 1;
  std::string master_addr;  ///< Where rank 0 serves the rendezvous.
  int master_port = 0;
  /// Of the rendezvous and of every collective (--collective-timeout).
  std::chrono::milliseconds timeout = std::chrono::seconds(300);
  /// The network interface the transport listens on ($GLOO_SOCKET_IFNAME); "": as above.
  std::string interface;
};

/// Joins the job: the rendezvous (every rank must call it), then a full mesh of TCP
/// pairs. Error when the rendezvous or a connection fails or times out.
StatusOr<std::shared_ptr<Communicator>> gloo_world(const GlooOptions& options);

}  // namespace weft::collective
