#pragma once
// The training loop shared by the Fashion-MNIST examples (mlp.cc, cnn.cc): flags,
// data, progress, per-epoch test accuracy, checkpoints and resuming.
//
// The flags these examples share with the AOT training binaries (--data, --epochs,
// --max-steps, --seed, --lr, --checkpoint-in, --partial-load, --checkpoint-out,
// --metrics-csv, --report, --serve, --log-every, --check-numerics, --profile, --help) are
// read by the driver's parser (runtime/driver/flags.h's FlagSet: the same values, checks
// and error messages). Their own: --batch=B, --backend=NAME, --no-cuda-graph (cuda: launch
// by launch instead of one CUDA graph per step), --resume=PATH (the same as
// --checkpoint-in), --data-parallel (under `mpirun -np N` every rank trains on its batch/N
// rows of each batch, gradients averaged; rank 0 prints and saves) and the CNN's --bn. A
// bad command line prints one error line and exits with status 2, as a training binary
// does; --help lists the flags.

#include <cstdint>
#include <functional>
#include <string>

#include "frontend/training.h"
#include "runtime/data/fashion_mnist.h"

namespace weft::examples {

struct RunConfig {
  std::string name;                ///< "mlp": the default checkpoint is mlp.safetensors
  ImageLayout layout = ImageLayout::flat;
  int64_t epochs = 10;
  int64_t batch = 128;
  double lr = 1e-3;
  uint64_t seed = 0;
  std::string backend = "cpu";
  bool cuda_graph = true;  ///< --no-cuda-graph: false.
  std::string checkpoint_out;
  std::string resume;
  bool partial_load = false;       ///< LoadOptions::strict = false for --resume
  std::string data = kFashionMnistDirectory;
  int64_t max_steps = 0;
  bool bn = false;                 ///< cnn: with batch norm
  bool profile = false;
  bool check_numerics = false;     ///< TrainOptions::check_numerics
  std::string metrics_csv;
  std::string report;
  int64_t log_every = 100;         ///< A progress line every N steps when stdout is not a terminal.
  int serve = -1;  ///< --serve=PORT: the live dashboard (0: a free port); -1: off.
  bool data_parallel = false;      ///< TrainOptions::communicator = collective::mpi_world()
};

/// Parses the flags above (plus `--bn` when `allow_bn`) into `config`, whose values are
/// the defaults; exits with status 2 and one error line on a bad flag, and with status 0
/// after printing the list for --help.
void parse_flags(int argc, char** argv, RunConfig& config, bool allow_bn = false);

/// Trains `net` (input f32[batch, ...] in `config.layout`, 10 logits) on Fashion-MNIST
/// with Adam and cross-entropy, printing progress and `test accuracy: 0.xxxx` after every
/// epoch, and saving a checkpoint at the end. Returns the process exit code.
int train(const FlowPtr& net, const RunConfig& config);

}  // namespace weft::examples
