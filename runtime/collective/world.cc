#include "runtime/collective/world.h"

#include <charconv>
#include <cstdlib>
#include <optional>
#include <vector>

#include "runtime/collective/gloo_communicator.h"
#include "runtime/collective/mpi_communicator.h"
#include "runtime/collective/watchdog.h"

namespace weft::collective {
namespace {

constexpr const char* kTorchrunVariables[] = {"RANK", "WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT"};

const char* env(const char* name) { return std::getenv(name); }

bool any_torchrun_variable() {
  for (const char* name : kTorchrunVariables) {
    if (env(name) != nullptr) return true;
  }
  return env("LOCAL_RANK") != nullptr;
}

// $name as a whole number in [low, high], or an error naming the variable.
StatusOr<int> whole_number(const char* name, int low, int high, const std::string& range) {
  const std::string text = env(name);
  int value = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc() || end != text.data() + text.size() || value < low || value > high) {
    return Error{"torchrun-style launch: " + std::string(name) + "=" + text + " is not " + range};
  }
  return value;
}

Error no_launcher() {
  return Error{
      "data parallelism needs a launcher, and none started this process. Under MPI: `mpirun -np N PROGRAM "
      "--data-parallel` or `srun -n N --mpi=pmix PROGRAM --data-parallel` (they set OMPI_COMM_WORLD_SIZE, "
      "PMI_SIZE or PMIX_RANK); torchrun-style (Gloo over TCP): set RANK, WORLD_SIZE, MASTER_ADDR and "
      "MASTER_PORT in every process, e.g. `RANK=0 WORLD_SIZE=2 MASTER_ADDR=127.0.0.1 MASTER_PORT=29500 "
      "PROGRAM --data-parallel` and the same with RANK=1. Or drop --data-parallel to train in one process"};
}

// srun without an MPI plugin sets Slurm's task variables but no PMI: MPI_Init would make
// every task a world of one.
std::optional<Error> srun_without_pmi() {
  const char* tasks = env("SLURM_NTASKS");
  if (tasks == nullptr || env("SLURM_PROCID") == nullptr || std::string(tasks) == "1") return std::nullopt;
  return Error{"data parallelism: Slurm started this task (SLURM_PROCID=" + std::string(env("SLURM_PROCID")) +
               " of SLURM_NTASKS=" + tasks +
               ") without PMI, so MPI cannot find the other tasks: launch with `srun --mpi=pmix -n N PROGRAM "
               "--data-parallel` (`srun --mpi=list` names this Slurm's plugins)"};
}

StatusOr<GlooOptions> torchrun_options(std::chrono::milliseconds timeout) {
  std::vector<std::string> missing;
  for (const char* name : kTorchrunVariables) {
    if (env(name) == nullptr) missing.push_back(name);
  }
  if (!missing.empty()) {
    std::string names;
    for (const std::string& m : missing) names += (names.empty() ? "" : ", ") + m;
    return Error{"torchrun-style launch: " + names + (missing.size() == 1 ? " is" : " are") +
                 " not set; every process needs RANK, WORLD_SIZE, MASTER_ADDR and MASTER_PORT (LOCAL_RANK "
                 "optional), e.g. `RANK=1 WORLD_SIZE=2 MASTER_ADDR=127.0.0.1 MASTER_PORT=29500 PROGRAM "
                 "--data-parallel`"};
  }
  GlooOptions gloo;
  WEFT_ASSIGN_OR_RETURN(gloo.world_size, whole_number("WORLD_SIZE", 1, 1 << 20, "a world size of 1 or more"));
  WEFT_ASSIGN_OR_RETURN(gloo.rank, whole_number("RANK", 0, gloo.world_size - 1,
                                                "a rank in [0, WORLD_SIZE=" + std::to_string(gloo.world_size) + ")"));
  WEFT_ASSIGN_OR_RETURN(gloo.master_port, whole_number("MASTER_PORT", 1, 65535, "a TCP port (1 to 65535)"));
  gloo.master_addr = env("MASTER_ADDR");
  if (gloo.master_addr.find_first_not_of(" \t") == std::string::npos) {
    return Error{"torchrun-style launch: MASTER_ADDR is empty; set it to rank 0's address as every rank "
                 "reaches it (127.0.0.1 on one machine)"};
  }
  gloo.timeout = timeout;
  if (const char* iface = env("GLOO_SOCKET_IFNAME")) gloo.interface = iface;
  return gloo;
}

}  // namespace

Launcher detect_launcher() {
  if (launched_by_mpi_launcher()) return Launcher::mpi;
  if (any_torchrun_variable()) return Launcher::torchrun;
  return Launcher::none;
}

bool launched_by_a_launcher() { return detect_launcher() != Launcher::none; }

StatusOr<std::shared_ptr<Communicator>> world_from_environment(std::chrono::milliseconds timeout) {
  switch (detect_launcher()) {
    case Launcher::mpi: {
      WEFT_ASSIGN_OR_RETURN(std::shared_ptr<Communicator> mpi, mpi_world());
      return watched(std::move(mpi), "MPI", timeout);
    }
    case Launcher::torchrun: {
      WEFT_ASSIGN_OR_RETURN(GlooOptions gloo, torchrun_options(timeout));
      return gloo_world(gloo);
    }
    case Launcher::none:
      break;
  }
  if (std::optional<Error> e = srun_without_pmi()) return *e;
  return no_launcher();
}

int local_rank() {
  for (const char* name : {"LOCAL_RANK", "OMPI_COMM_WORLD_LOCAL_RANK", "SLURM_LOCALID"}) {
    if (const char* v = env(name)) return std::atoi(v);
  }
  return 0;
}

}  // namespace weft::collective
