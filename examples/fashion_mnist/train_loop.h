#pragma once
// The training loop shared by the Fashion-MNIST examples (mlp.cc, cnn.cc): flags,
// data, progress, per-epoch test accuracy, checkpoints and resuming.
//
// Flags: --epochs=N --batch=B --lr=X --seed=S --backend=NAME --checkpoint-out=PATH
//        --resume=PATH (strict: the checkpoint holds exactly the model's tensors)
//        --partial-load (with --resume: load what matches, print what did not)
//        --data=DIR --max-steps=N (per epoch, for quick runs)
//        --profile (cpu backend: per-kernel times of the training step after each epoch)
//        --no-cuda-graph (cuda backend: launch by launch instead of one CUDA graph per step)
//        --check-numerics (stop at the first op producing a NaN or an infinity, naming it)
//        --metrics-csv=PATH, --report=PATH (the training monitor, runtime/monitor: a CSV
//        row per step, and an HTML report at the end)
//        --data-parallel (run under `mpirun -np N`: every rank trains on its batch/N rows of
//        each batch, gradients averaged over the ranks; rank 0 prints and saves)

#include <functional>
#include <string>

#include "frontend/training.h"
#include "runtime/data/fashion_mnist.h"

namespace weft::examples {

struct RunConfig {
  std::string name;                ///< "mlp": the default checkpoint is mlp.safetensors
  ImageLayout layout = ImageLayout::flat;
  int epochs = 10;
  int batch = 128;
  double lr = 1e-3;
  uint64_t seed = 0;
  std::string backend = "cpu";
  bool cuda_graph = true;  ///< --no-cuda-graph: false.
  std::string checkpoint_out;
  std::string resume;
  bool partial_load = false;       ///< LoadOptions::strict = false for --resume
  std::string data = kFashionMnistDirectory;
  int max_steps = 0;
  bool bn = false;                 ///< cnn: with batch norm
  bool profile = false;
  bool check_numerics = false;     ///< TrainOptions::check_numerics
  std::string metrics_csv;
  std::string report;
  int serve = -1;  ///< --serve=PORT: the live dashboard (0: a free port); -1: off.
  bool data_parallel = false;      ///< TrainOptions::communicator = collective::mpi_world()
};

/// Parses the flags above (plus `--bn` when `allow_bn`) into `config`; exits with a
/// usage message on a bad flag.
void parse_flags(int argc, char** argv, RunConfig& config, bool allow_bn = false);

/// Trains `net` (input f32[batch, ...] in `config.layout`, 10 logits) on Fashion-MNIST
/// with Adam and cross-entropy, printing progress and `test accuracy: 0.xxxx` after every
/// epoch, and saving a checkpoint at the end. Returns the process exit code.
int train(const FlowPtr& net, const RunConfig& config);

}  // namespace weft::examples
