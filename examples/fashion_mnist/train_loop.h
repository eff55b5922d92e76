#pragma once
// The Fashion-MNIST examples' command line and model (mlp.cc, cnn.cc, ponder.cc), trained
// by the AOT training binaries' loop: training/driver/driver.h's run_training, with the
// network JIT-compiled behind driver::Trainable (frontend/jit_trainable.h). Progress,
// evaluation, checkpoints, resuming, signals, the dashboard, the metrics CSV and the
// report are therefore the training binaries' (training/driver/README.md).
//
// The flags these examples share with the AOT training binaries (--data, --epochs,
// --max-steps, --seed, --lr, --checkpoint-in, --partial-load, --checkpoint-out,
// --metrics-csv, --report, --serve, --log-every, --check-numerics, --profile, --precision,
// --tf32, --collective-timeout, --bucket-mb, --first-bucket-mb, --help) are
// read by the driver's parser (training/driver/flags.h's FlagSet: the same values, checks
// and error messages). Their own: --batch=B, --backend=NAME, --no-cuda-graph (cuda: launch
// by launch instead of one CUDA graph per step), --resume=PATH (the same as
// --checkpoint-in), --data-parallel (under `mpirun -np N`, srun or the torchrun
// variables every rank trains on its batch/N rows of each batch, gradients averaged;
// rank 0 prints and saves) and the CNN's --bn.
// --seed also seeds the shuffle (the driver's --shuffle-seed). A bad command line prints
// one error line and exits with status 2, as a training binary does; --help lists the
// flags.

#include <cstdint>
#include <string>

#include "frontend/training.h"
#include "training/data/fashion_mnist.h"
#include "training/driver/flags.h"

namespace weft::examples {

/// An example's settings: its defaults before parse_flags, the command line's after.
struct RunConfig {
  std::string name;  ///< "mlp": the program's name; the default checkpoint is mlp.safetensors.
  ImageLayout layout = ImageLayout::flat;
  int64_t epochs = 10;  ///< The default of --epochs.
  int64_t batch = 128;  ///< --batch: the global batch (the ranks of --data-parallel share it).
  double lr = 1e-3;     ///< The default of --lr (Adam's).
  std::string backend = "cpu";
  bool cuda_graph = true;  ///< --no-cuda-graph: false.
  bool bn = false;         ///< cnn: with batch norm
  std::string resume;      ///< --resume, resolved: must agree with --checkpoint-in when both are given
  /// The flags shared with the training binaries, as parse_flags read them (--data-parallel
  /// and --resume land here too).
  driver::DriverConfig driver;
};

/// Parses the flags above (plus `--bn` when `allow_bn`) into `config`, whose values are
/// the defaults; exits with status 2 and one error line on a bad flag, and with status 0
/// after printing the list for --help.
void parse_flags(int argc, char** argv, RunConfig& config, bool allow_bn = false);

/// Trains `net` (input f32[batch, ...] in `config.layout`, 10 logits) on Fashion-MNIST
/// with Adam and cross-entropy in the training driver's loop, printing progress and the
/// test accuracy after every epoch, and saving a checkpoint at the end. Returns the
/// process exit status (training/driver/driver.h's).
int train(const FlowPtr& net, const RunConfig& config);

}  // namespace weft::examples
