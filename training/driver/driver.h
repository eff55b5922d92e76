#pragma once
// The generic training driver: the `main` of every training binary that the weft_binary
// macro builds (training/driver:main), and of the JIT path's equivalents. It owns the data,
// epochs, the shuffle, the learning-rate schedule, checkpoints, evaluation, the metrics
// CSV and the progress line; the model is a Trainable (trainable.h).
//
//   // main.cc of a training binary (//training/driver:main):
//   int main(int argc, char** argv) { return weft::driver::run_driver(argc, argv); }
//
//   // Elsewhere, with any factory and streams (the driver's tests):
//   int status = run_driver({"--epochs=1", "--train=x.npy,y.npy"}, "train", factory,
//                           stdout, stderr);
//
// Step t (0-based, counted across epochs and resumptions) is batch t % P of epoch t / P,
// P the steps per epoch, in the order epoch_order(--shuffle-seed, epoch) gives; its
// learning rate is schedule.lr_at(t). A run resumed from a checkpoint at step t therefore
// repeats exactly what an uninterrupted run would have done from step t on. The README
// lists the flags, the data formats and the exit statuses.

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "ir/status.h"
#include "training/driver/data.h"
#include "training/driver/flags.h"
#include "training/driver/trainable.h"

namespace weft::driver {

/// Exit statuses of run_driver.
inline constexpr int kExitOk = 0;
inline constexpr int kExitRuntime = 1;  ///< A file, the model or a step failed.
inline constexpr int kExitUsage = 2;    ///< The command line is wrong (or does not fit the model).
// SIGINT or SIGTERM stop the run after the current step, write --checkpoint-out if given,
// and exit with 128 + the signal (130, 143).

/// Makes the model: make_compiled_model in a training binary.
using ModelFactory = std::function<StatusOr<std::unique_ptr<Trainable>>(const ModelOptions& options)>;

/// What the command line says about the model (the one place the factory's options are
/// filled from flags): --seed, --threads, --max-memory, --tf32, --bucket-mb,
/// --first-bucket-mb, and `communicator` (--data-parallel's; nullptr: one process).
ModelOptions model_options(const DriverConfig& config, std::shared_ptr<collective::Communicator> communicator);

/// What one evaluation on a test split measured.
struct Evaluation {
  int64_t samples = 0;
  /// Classification (the split has classes): argmax of the first eval output.
  std::optional<double> accuracy;
  /// Classification: the mean cross-entropy of the first eval output's rows taken as
  /// logits (the test loss for cross_entropy, and for nll on log-probabilities). Other
  /// targets: the mean squared error between the first eval output and the target.
  std::optional<double> loss;
  std::string loss_name;  ///< "cross-entropy" or "mse".

  /// `test accuracy: 0.8123, test cross-entropy: 0.4567` (what is known of it).
  std::string to_string() const;
};

/// Evaluates `model` on every sample of `test` in batches of the eval inputs' batch size;
/// the last short batch is padded with zeros and the padding's outputs are dropped.
StatusOr<Evaluation> evaluate_split(Trainable& model, const Split& test);

/// What a training binary's main() knows besides its model: the backend the model was
/// compiled for, and where --data-parallel finds its ranks. The driver itself links no
/// collectives: //training/driver:main passes runtime/collective/world.h's launcher check,
/// world (MPI or Gloo) and local rank (main.cc), and the backend makes its own
/// communicator from that world (cuda: NCCL on the local rank's GPU,
/// Backend::communicator_for); //training/driver:main_one_process (what cuda binaries
/// built without data_parallel link, so that they start on a GPU machine without Open
/// MPI) passes none, and --data-parallel is then a usage error.
struct BinaryInfo {
  /// compiled_model_backend(): "cpu", "cuda"; "" when unknown (in-process tests).
  std::string backend;
  /// compiled_model_precision(): "f32", "bf16", "f16"; "" when unknown (in-process
  /// tests: taken as f32).
  std::string precision;
  /// True when a launcher (mpirun, srun, the torchrun variables) started this process:
  /// collective::launched_by_a_launcher; null: no collectives linked.
  bool (*launched_by_a_launcher)() = nullptr;
  /// The communicator over every rank of the launch, with --collective-timeout:
  /// collective::world_from_environment.
  StatusOr<std::shared_ptr<collective::Communicator>> (*world_from_environment)(std::chrono::milliseconds timeout) =
      nullptr;
  /// This process's index among the ranks of its machine: collective::local_rank (a
  /// backend with collectives of its own, cuda, takes that GPU); null: 0.
  int (*local_rank)() = nullptr;
};

/// Runs the driver on `args` (the arguments after the program name) with the model that
/// `factory` makes; progress and results go to `out`, errors (one line each) to `err`.
/// Returns an exit status (kExitOk, kExitRuntime, kExitUsage). `--backend=NAME` is
/// accepted when it names `info.backend` (a no-op) and is a usage error otherwise: a
/// binary trains on the backend its model was compiled for. So is `--precision`: it must
/// name `info.precision` (f32 when unknown), the precision the binary was built for.
int run_driver(const std::vector<std::string>& args, const std::string& program,
               const ModelFactory& factory, std::FILE* out, std::FILE* err,
               const BinaryInfo& info = {});

/// The run of run_driver on a command line parsed already (flags.h's parse_flags; --help
/// handled): what a program with flags of its own calls after reading them with a
/// FlagSet, as the JIT examples do (examples/fashion_mnist/train_loop.h), so that they
/// train with the training binaries' loop. SIGINT and SIGTERM stop the run as in
/// run_driver. Returns the exit status.
int run_training(const DriverConfig& config, const std::string& program, const ModelFactory& factory,
                 std::FILE* out, std::FILE* err, const BinaryInfo& info = {});

/// run_driver on main()'s arguments (the program named by argv[0]'s last component),
/// with stdout and stderr.
int run_driver(int argc, char** argv, const ModelFactory& factory, const BinaryInfo& info);

/// run_driver with compiled_model_backend(), compiled_model_precision() and the binary's
/// MPI (or none). Defined by
/// //training/driver:main (main.cc) and :main_one_process, which also define main().
int run_driver(int argc, char** argv);

}  // namespace weft::driver
