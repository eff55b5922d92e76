// Exercises the MPI communicator on every rank of `mpirun -np N mpi_check` and prints
// one line per check and rank, for communicator_mpi_test: rank r contributes (r+1, 2r,
// -r) in every dtype, so the expected sums and means are known in closed form.
#include <cstdint>
#include <cstdio>
#include <string>

#include "runtime/collective/mpi_communicator.h"

namespace {

using namespace weft;
using namespace weft::collective;

template <typename T>
void check(Communicator& comm, DType dtype, Reduction reduction) {
  const int r = comm.rank();
  T x[3] = {static_cast<T>(r + 1), static_cast<T>(2 * r), static_cast<T>(-r)};
  Status s = comm.all_reduce(x, 3, dtype, reduction);
  std::string line = "rank " + std::to_string(r) + ": " + std::string(dtype_name(dtype)) + " " +
                     reduction_name(reduction) + ":";
  if (!s.ok()) {
    line += " " + s.error().message;
  } else {
    for (T v : x) line += " " + std::to_string(static_cast<double>(v));
  }
  std::printf("%s\n", line.c_str());
}

}  // namespace

int main() {
  StatusOr<std::shared_ptr<Communicator>> world = mpi_world();
  if (!world.ok()) {
    std::fprintf(stderr, "mpi_check: %s\n", world.error().to_string().c_str());
    return 1;
  }
  Communicator& comm = **world;
  std::printf("rank %d: %s\n", comm.rank(), comm.describe().c_str());
  check<float>(comm, DType::f32, Reduction::sum);
  check<float>(comm, DType::f32, Reduction::mean);
  check<double>(comm, DType::f64, Reduction::mean);
  check<int64_t>(comm, DType::i64, Reduction::sum);
  check<int64_t>(comm, DType::i64, Reduction::mean);
  check<uint16_t>(comm, DType::f16, Reduction::sum);
  return 0;
}
