#pragma once
// Collectives for data parallelism (DESIGN.md, decision 11): the communicator through
// which every rank of a data-parallel job reduces its gradients. The training step holds
// `all_reduce` ops (ir/ops.def); the CPU executor (runtime/cpu/executor.h) runs each one
// in place on its arena buffer through the communicator it was given.
//
//   // Every process of `mpirun -np 2 ./train` (runtime/collective/mpi_communicator.h):
//   StatusOr<std::shared_ptr<Communicator>> world = mpi_world();
//   float grad[4] = {...};
//   Status s = (*world)->all_reduce(grad, 4, DType::f32, Reduction::mean);
//   // grad now holds the mean over both ranks of their grad, on both ranks.
//
// Two implementations: `single_process()` (world size 1: the sum and the mean of one
// tensor are that tensor, so all_reduce leaves the bytes alone — a step with all_reduce
// ops is bitwise the step without them) and `mpi_world()` (MPI_Allreduce over
// MPI_COMM_WORLD). Both are called from one thread at a time (the executor's caller).
//
// Semantics every implementation keeps: `mean` is the float sum over the ranks divided
// by the world size, in the dtype (f32 or f64); `sum` is the sum in the dtype (integers
// wrap). The summation order across ranks is the implementation's (MPI's), the same on
// every rank, so every rank ends up with identical bytes.

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "ir/dtype.h"
#include "ir/status.h"
#include "runtime/tensor.h"

namespace weft::collective {

enum class Reduction { sum, mean };

/// A reduction begun by Communicator::start_all_reduce. Its buffer belongs to the
/// transport until wait() returns; then it holds the result on this rank.
class PendingReduction {
 public:
  virtual ~PendingReduction() = default;
  /// Blocks until the reduction has completed (or failed). Called once.
  virtual Status wait() = 0;
  /// Lets the transport advance the reduction without blocking, and says whether it has
  /// completed (a failure is reported by wait()). Open MPI progresses a non-blocking
  /// collective only inside MPI calls, so the executor calls this between invocations
  /// while a reduction is in flight (where MPI's progress thread runs, it only reads
  /// what that thread found). The default: true (completed when it started).
  virtual bool test() { return true; }
};

/// "sum" or "mean" (the `reduction` attribute of all_reduce); anything else is an error.
StatusOr<Reduction> parse_reduction(std::string_view name);
const char* reduction_name(Reduction r);

class Communicator {
 public:
  virtual ~Communicator() = default;
  /// This process's index in [0, world_size()).
  virtual int rank() const = 0;
  virtual int world_size() const = 0;
  /// Replaces `count` elements of `dtype` at `data`, on every rank, by their sum or mean
  /// over the ranks. Every rank must call it with the same count, dtype and reduction, in
  /// the same order (the training step's program order guarantees it). Errors: a dtype
  /// the implementation cannot reduce (mean of an integer dtype; f16/bf16 over MPI), or
  /// the transport's failure.
  virtual Status all_reduce(void* data, int64_t count, DType dtype, Reduction reduction) = 0;
  /// Begins the same reduction and returns without waiting for it where the transport can
  /// (MPI_Iallreduce, a communication stream), so the caller computes meanwhile; every
  /// rank begins its reductions in the same order. The default runs all_reduce now and
  /// returns one that has completed.
  virtual StatusOr<std::unique_ptr<PendingReduction>> start_all_reduce(void* data, int64_t count,
                                                                       DType dtype,
                                                                       Reduction reduction);
  /// Replaces the `bytes` bytes at `data`, on every rank, by rank `root`'s (parameters
  /// sent from rank 0 at the start, a bootstrap id). Every rank calls it.
  virtual Status broadcast(void* data, int64_t bytes, int root) = 0;
  /// "single process", "MPI rank 0 of 2 (Open MPI v4.1.4, ...)".
  virtual std::string describe() const = 0;
};

/// The mean from the sum: divides `count` f32 or f64 values at `data` by `world_size`
/// (what every transport does after its sum).
void divide_by_world_size(void* data, int64_t count, DType dtype, int world_size);

/// World size 1: all_reduce leaves the data as it is.
std::shared_ptr<Communicator> single_process();

/// This rank's share of a global batch: rows [rank·B/N, (rank+1)·B/N) of `global`'s first
/// axis, B = global.shape[0], N = world_size. Error when B is not a multiple of N (every
/// rank must compute its mean loss over the same number of examples for the mean of the
/// ranks' means to be the global mean).
StatusOr<Tensor> shard_batch(const Tensor& global, int rank, int world_size);

/// Whether every rank passed the same `fingerprint` (a hash of what must agree across
/// the ranks: the training step each compiled or was built with), checked with one sum
/// all_reduce. Data parallelism needs it: ranks running different steps would disagree
/// on the sizes of their all_reduce calls and hang or mix unrelated buffers. Error:
/// `mismatch` (which says what differs and how to fix it). Every rank must call it.
Status check_same_on_every_rank(Communicator& comm, uint64_t fingerprint,
                                const std::string& mismatch);

}  // namespace weft::collective
