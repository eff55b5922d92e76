#include "runtime/collective/mpi_communicator.h"

#include <mpi.h>

#include <algorithm>
#include <chrono>
#include <cstddef>
#include <cstdlib>
#include <string>
#include <vector>

#include "runtime/collective/mpi_progress.h"

namespace weft::collective {
namespace {

std::string mpi_error(int code) {
  char text[MPI_MAX_ERROR_STRING];
  int length = 0;
  MPI_Error_string(code, text, &length);
  return std::string(text, static_cast<size_t>(length));
}

StatusOr<MPI_Datatype> mpi_type(DType dtype) {
  switch (dtype) {
    case DType::f32: return MPI_FLOAT;
    case DType::f64: return MPI_DOUBLE;
    case DType::i32: return MPI_INT32_T;
    case DType::i64: return MPI_INT64_T;
    case DType::u8: return MPI_UINT8_T;
    default:
      return Error{"all_reduce over MPI: dtype " + std::string(dtype_name(dtype)) +
                   " is not supported (f32, f64, i32, i64, u8); keep gradients in f32"};
  }
}

// The mean's division and the dtype check, shared by the blocking and non-blocking paths.
Status check_reduction(DType dtype, Reduction reduction) {
  if (reduction == Reduction::mean && dtype != DType::f32 && dtype != DType::f64) {
    return Error{"all_reduce: the mean over MPI needs f32 or f64 values, got " +
                 std::string(dtype_name(dtype))};
  }
  return Status::ok_status();
}

void finish_mean(void* data, int64_t count, DType dtype, Reduction reduction, int world) {
  if (reduction == Reduction::mean) divide_by_world_size(data, count, dtype, world);
}

// MPI counts are int: a buffer goes in chunks of at most 2^30 elements.
constexpr int64_t kChunk = int64_t{1} << 30;

// The progress thread (mpi_progress.h), when MPI gave MPI_THREAD_MULTIPLE; else null and
// reductions advance only inside test() and wait().
MpiProgress* progress_thread = nullptr;

// How long the progress thread sleeps between tests, a caller waiting or not: short
// against a reduction (~1 ms for 1 MB here), long against one MPI_Testall (a few µs),
// so it costs the step's own work a few percent of a core. Shorter sleeps (5, 20 µs)
// made a rank sharing its core with another process slower, not faster. Measured in
// bench/RESULTS.md.
constexpr std::chrono::microseconds kProgressPause{50};

// An MPI_Iallreduce per chunk in flight, tested by the progress thread where there is
// one; wait() completes them and divides for the mean.
class MpiPending : public PendingReduction {
 public:
  MpiPending(void* data, int64_t count, DType dtype, Reduction reduction, int rank, int world, MpiProgress* progress)
      : data_(data), count_(count), dtype_(dtype), reduction_(reduction), rank_(rank), world_(world),
        progress_(progress) {}

  Status start(MPI_Datatype type) {
    const size_t element = dtype_size(dtype_);
    for (int64_t at = 0; at < count_; at += kChunk) {
      const int n = static_cast<int>(std::min(kChunk, count_ - at));
      requests_.push_back(MPI_REQUEST_NULL);
      const int rc = MPI_Iallreduce(MPI_IN_PLACE, static_cast<std::byte*>(data_) + at * element, n, type,
                                    MPI_SUM, MPI_COMM_WORLD, &requests_.back());
      if (rc != MPI_SUCCESS) return failure("MPI_Iallreduce", rc);
    }
    if (progress_ != nullptr) tracked_ = progress_->track(std::move(requests_));
    return Status::ok_status();
  }

  bool test() override {
    if (tracked_) return tracked_->done.load();
    int done = 0;
    const int rc = MPI_Testall(static_cast<int>(requests_.size()), requests_.data(), &done,
                               MPI_STATUSES_IGNORE);
    return rc != MPI_SUCCESS || done != 0;
  }

  Status wait() override {
    const int rc = tracked_ ? progress_->wait(*tracked_)
                            : MPI_Waitall(static_cast<int>(requests_.size()), requests_.data(), MPI_STATUSES_IGNORE);
    if (rc != MPI_SUCCESS) return failure("MPI_Iallreduce", rc);
    finish_mean(data_, count_, dtype_, reduction_, world_);
    return Status::ok_status();
  }

 private:
  Status failure(const char* call, int rc) const {
    return Error{"all_reduce: " + std::string(call) + " of " + std::to_string(count_) + " " +
                 std::string(dtype_name(dtype_)) + " values failed on rank " + std::to_string(rank_) +
                 ": " + mpi_error(rc)};
  }

  void* data_;
  int64_t count_;
  DType dtype_;
  Reduction reduction_;
  int rank_;
  int world_;
  MpiProgress* progress_;
  std::vector<MPI_Request> requests_;
  std::shared_ptr<TrackedRequests> tracked_;  // the requests, once the progress thread has them
};

class MpiWorld : public Communicator {
 public:
  MpiWorld(int rank, int size, std::string library)
      : rank_(rank), size_(size), library_(std::move(library)) {}
  int rank() const override { return rank_; }
  int world_size() const override { return size_; }

  Status all_reduce(void* data, int64_t count, DType dtype, Reduction reduction) override {
    WEFT_RETURN_IF_ERROR(check_reduction(dtype, reduction));
    WEFT_ASSIGN_OR_RETURN(MPI_Datatype type, mpi_type(dtype));
    const size_t element = dtype_size(dtype);
    for (int64_t at = 0; at < count; at += kChunk) {
      const int n = static_cast<int>(std::min(kChunk, count - at));
      const int rc = MPI_Allreduce(MPI_IN_PLACE, static_cast<std::byte*>(data) + at * element, n,
                                   type, MPI_SUM, MPI_COMM_WORLD);
      if (rc != MPI_SUCCESS) {
        return Error{"all_reduce: MPI_Allreduce of " + std::to_string(n) + " " +
                     std::string(dtype_name(dtype)) + " values failed on rank " +
                     std::to_string(rank_) + ": " + mpi_error(rc)};
      }
    }
    finish_mean(data, count, dtype, reduction, size_);
    return Status::ok_status();
  }

  /// MPI_Iallreduce: the reduction advances inside later MPI calls (PendingReduction::test).
  StatusOr<std::unique_ptr<PendingReduction>> start_all_reduce(void* data, int64_t count, DType dtype,
                                                               Reduction reduction) override {
    WEFT_RETURN_IF_ERROR(check_reduction(dtype, reduction));
    WEFT_ASSIGN_OR_RETURN(MPI_Datatype type, mpi_type(dtype));
    auto pending = std::make_unique<MpiPending>(data, count, dtype, reduction, rank_, size_, progress_thread);
    WEFT_RETURN_IF_ERROR(pending->start(type));
    return std::unique_ptr<PendingReduction>(std::move(pending));
  }

  Status broadcast(void* data, int64_t bytes, int root) override {
    if (root < 0 || root >= size_) {
      return Error{"broadcast: root rank " + std::to_string(root) + " outside the " +
                   std::to_string(size_) + " ranks"};
    }
    for (int64_t at = 0; at < bytes; at += kChunk) {
      const int n = static_cast<int>(std::min(kChunk, bytes - at));
      const int rc = MPI_Bcast(static_cast<std::byte*>(data) + at, n, MPI_BYTE, root, MPI_COMM_WORLD);
      if (rc != MPI_SUCCESS) {
        return Error{"broadcast: MPI_Bcast of " + std::to_string(n) + " bytes from rank " +
                     std::to_string(root) + " failed on rank " + std::to_string(rank_) + ": " +
                     mpi_error(rc)};
      }
    }
    return Status::ok_status();
  }

  std::string describe() const override {
    return "MPI rank " + std::to_string(rank_) + " of " + std::to_string(size_) + " (" + library_ +
           (progress_thread != nullptr ? ", progress thread" : ", progressed at the executor's polls") + ")";
  }

 private:
  int rank_;
  int size_;
  std::string library_;
};

void finalize_mpi() {
  if (progress_thread != nullptr) progress_thread->stop();
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (!finalized) MPI_Finalize();
}

}  // namespace

bool launched_by_mpi_launcher() {
  for (const char* name : {"OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "PMIX_RANK"}) {
    if (std::getenv(name) != nullptr) return true;
  }
  return false;
}

StatusOr<std::shared_ptr<Communicator>> mpi_world() {
  static std::shared_ptr<Communicator> world;
  if (world) return world;
  if (!launched_by_mpi_launcher()) {
    return Error{"data parallelism over MPI: this process was not started by an MPI "
                 "launcher (none of OMPI_COMM_WORLD_SIZE, PMI_SIZE, PMIX_RANK is set); run it "
                 "as `mpirun -np N PROGRAM` (or `srun -n N PROGRAM`), or train in one process "
                 "with collective::single_process()"};
  }
  int initialized = 0;
  MPI_Initialized(&initialized);
  int provided = MPI_THREAD_SINGLE;
  if (!initialized) {
    const int rc = MPI_Init_thread(nullptr, nullptr, MPI_THREAD_MULTIPLE, &provided);
    if (rc != MPI_SUCCESS) return Error{"MPI_Init_thread failed: " + mpi_error(rc)};
    std::atexit(finalize_mpi);
  } else {
    MPI_Query_thread(&provided);
  }
  // Without MPI_THREAD_MULTIPLE (an MPI built without it, or initialized by someone else
  // at a lower level) no other thread may call MPI: reductions then advance at the
  // executor's polls, and describe() says so.
  if (provided >= MPI_THREAD_MULTIPLE) progress_thread = new MpiProgress(kProgressPause);
  MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
  int rank = 0, size = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  char version[MPI_MAX_LIBRARY_VERSION_STRING];
  int length = 0;
  MPI_Get_library_version(version, &length);
  std::string library(version, static_cast<size_t>(length));
  if (const size_t comma = library.find(','); comma != std::string::npos) library.resize(comma);
  world = std::make_shared<MpiWorld>(rank, size, library);
  return world;
}

}  // namespace weft::collective
