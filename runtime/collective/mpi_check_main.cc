// Exercises the MPI communicator on every rank of `mpirun -np N mpi_check` and prints
// one line per check and rank, for communicator_mpi_test: rank r contributes (r+1, 2r,
// -r) in every dtype, so the expected sums and means are known in closed form.
#include <sched.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <thread>
#include <vector>

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

// Binds this thread, and so the threads started after it (the MPI progress thread), to
// one CPU: rank r's is CPU r modulo the CPUs there are, as mpirun binds a rank to a core.
void bind_to_one_cpu() {
  const char* rank = std::getenv("OMPI_COMM_WORLD_RANK");
  cpu_set_t cpus;
  CPU_ZERO(&cpus);
  CPU_SET((rank != nullptr ? std::atoi(rank) : 0) % static_cast<int>(std::thread::hardware_concurrency()), &cpus);
  sched_setaffinity(0, sizeof cpus, &cpus);
}

// Started-and-waited 1 MiB reductions while another thread of this rank spins on the
// rank's CPU (another process's work on a loaded machine): the seconds they took. The
// waiter sleeps, so the progress thread shares the CPU with the spinning thread; one
// that polled by sched_yield while waited for got the CPU only when the spinner's time
// slice ended (Linux's EEVDF pushes a yielding thread a whole slice back), so each
// round between the ranks cost milliseconds: 8-14 ms per reduction, against ~1.1 ms.
StatusOr<double> busy_core_reductions(Communicator& comm, int count) {
  std::atomic<bool> stop{false};
  std::thread spinner([&] {
    while (!stop.load(std::memory_order_relaxed)) {
    }
  });
  std::vector<float> big(int64_t{1} << 18, 1.0f);
  const auto start = std::chrono::steady_clock::now();
  Status s = Status::ok_status();
  for (int i = 0; i < count && s.ok(); ++i) {
    StatusOr<std::unique_ptr<PendingReduction>> pending =
        comm.start_all_reduce(big.data(), static_cast<int64_t>(big.size()), DType::f32, Reduction::mean);
    s = pending.ok() ? (*pending)->wait() : pending.error();
  }
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  stop.store(true);
  spinner.join();
  if (!s.ok()) return s.error();
  return seconds;
}

}  // namespace

int main() {
  bind_to_one_cpu();
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
  // start_all_reduce: rank r contributes r+1; the mean over 2 ranks is 1.5.
  float y = static_cast<float>(comm.rank() + 1);
  StatusOr<std::unique_ptr<PendingReduction>> pending =
      comm.start_all_reduce(&y, 1, DType::f32, Reduction::mean);
  // Polled to completion first, the way the executor progresses a bucket in flight.
  while (pending.ok() && !(*pending)->test()) {
  }
  Status waited = pending.ok() ? (*pending)->wait() : pending.error();
  std::printf("rank %d: started f32 mean: %s\n", comm.rank(),
              waited.ok() ? std::to_string(y).c_str() : waited.error().message.c_str());
  // A 1 MiB reduction left alone for a second: test() makes no MPI call where the
  // progress thread runs, so the reduction has completed by then only if that thread
  // drove it (without one, a single MPI_Testall cannot finish both ranks' rounds).
  std::vector<float> big(int64_t{1} << 18, static_cast<float>(comm.rank() + 1));
  pending = comm.start_all_reduce(big.data(), static_cast<int64_t>(big.size()), DType::f32, Reduction::sum);
  std::this_thread::sleep_for(std::chrono::seconds(1));
  const bool completed = pending.ok() && (*pending)->test();
  waited = pending.ok() ? (*pending)->wait() : pending.error();
  std::printf("rank %d: started 1 MiB sum, completed during a 1 s sleep: %s, %s\n", comm.rank(),
              completed ? "yes" : "no",
              waited.ok() ? std::to_string(big.front() + big.back()).c_str() : waited.error().message.c_str());
  // 150 reductions beside a spinning thread: 0.16 s where the progress thread sleeps
  // between its tests, 1.2-2.1 s where it yielded (load 2.5-8 from other jobs).
  const StatusOr<double> busy = busy_core_reductions(comm, 150);
  std::printf("rank %d: 150 waited 1 MiB reductions beside a busy thread on the rank's CPU: %s\n", comm.rank(),
              !busy.ok()    ? busy.error().message.c_str()
              : *busy < 0.6 ? "under 0.6 s"
                            : (std::to_string(*busy) + " s").c_str());
  // broadcast: every rank ends with rank 1's bytes.
  char text[8] = "rank 0";
  text[5] = static_cast<char>('0' + comm.rank());
  Status sent = comm.broadcast(text, sizeof text, 1);
  std::printf("rank %d: broadcast from rank 1: %s\n", comm.rank(),
              sent.ok() ? text : sent.error().message.c_str());
  Status bad = comm.broadcast(text, sizeof text, 7);
  std::printf("rank %d: broadcast from rank 7: %s\n", comm.rank(), bad.error().message.c_str());
  return 0;
}
