#pragma once
// The benchmark suite's command line (bench/suite.cc), parsed without side effects so
// that bench/suite_test.cc can pin its defaults and errors, and the command lines the
// suite builds from it for each side's timed runs (weft's worker, PyTorch's
// configurations on the CPU or the GPU).
//
//   StatusOr<SuiteOptions> o = parse_suite_options({"--preset=cpu", "--weft=aot"});
//   for (const PytorchConfig& c : pytorch_configs(*o, "mlp")) ... pytorch_timed_args(...)

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "ir/status.h"

namespace weft::bench {

/// The ten models, in the suite's order.
const std::vector<std::string>& suite_models();

/// The models whose AOT libraries bench/aot also builds in bf16 for `device`, which
/// `--weft=aot --precision=bf16` runs: on "cpu" the GEMM-bound ones (NAME_bf16), on
/// "cuda" all ten (NAME_cuda_bf16).
const std::vector<std::string>& suite_aot_bf16_models(const std::string& device);

/// The models with attention (softmax(q·kᵀ·scale + mask)·v, which fuse-attention finds):
/// the ones `--fuse-attention` applies to, and whose AOT libraries bench/aot also builds
/// with fuse_attention (NAME_fa, NAME_cuda_fa). bench/models_test checks the list against
/// the compiler: these models' steps, and no other's, hold an attention node with it.
const std::vector<std::string>& suite_attention_models();

/// The usage line printed under every command-line error.
extern const char* const kSuiteUsage;
/// What `--help` prints: the suite and each flag.
extern const char* const kSuiteHelp;

struct SuiteOptions {
  std::string preset;  ///< "cpu" or "paper".
  /// Where both sides train: "cpu", or "cuda" (one NVIDIA GPU: weft from the AOT CUDA
  /// libraries of bench/aot at the paper preset, PyTorch in its four GPU configurations).
  std::string device = "cpu";
  std::vector<std::string> models = suite_models();
  /// Epochs measured and warm-up epochs: 5 and 1 at the cpu preset, 20 and 3 at paper.
  int epochs = 0, warmup = 0, rounds = 2;
  std::string json_path;  ///< Relative paths are against BUILD_WORKING_DIRECTORY.
  bool pytorch_only = false, keep_tmp = false, allow_paper = false;
  std::string python = "/usr/bin/python3";
  /// weft's timed runs: "jit" (bench/weft_worker, the Trainer) or "aot"
  /// (bench/weft_aot_worker, the libraries of bench/aot; with --device=cuda,
  /// bench/weft_aot_cuda_worker, their CUDA builds). --device=cuda is "aot" only.
  std::string weft = "jit";
  /// Both sides' precision: "f32", or "bf16" (weft's TrainOptions::precision, PyTorch's
  /// torch.autocast(device, dtype=torch.bfloat16)). With --weft=aot, bf16 runs the
  /// models of suite_aot_bf16_models(device) (their default), and refuses any other.
  std::string precision = "f32";
  /// weft's side with fused attention (TrainOptions::fuse_attention; the AOT workers'
  /// fused-attention libraries): "off", "on" (every model named has attention: by default
  /// those of suite_attention_models()), or "both": the models with attention run weft's
  /// side both ways, interleaved in every round, one table row each (the same PyTorch
  /// runs), the others once.
  std::string fuse_attention = "off";
  /// `--help` or `-h` was given: print kSuiteHelp, run nothing.
  bool help = false;
};

/// The suite's flags (the arguments after the program name); an error names the first
/// bad flag or value.
StatusOr<SuiteOptions> parse_suite_options(const std::vector<std::string>& args);

/// One PyTorch configuration of a timed run: on the CPU a thread count, with the default
/// environment or "tuned"; on the GPU one of eager, fused, compile, cuda_graph.
struct PytorchConfig {
  std::string label;  ///< "1 thread tuned", "cuda_graph": the table's config column.
  int threads = 0;    ///< CPU: torch.set_num_threads; 0 on the GPU.
  bool tuned = false; ///< CPU: OMP_WAIT_POLICY=PASSIVE and glibc's malloc thresholds.
  /// What run.py takes for it (`--threads=1`; `--device=cuda --config=fused`).
  std::vector<std::string> args;
  /// Environment variables set for its process (the tuned ones).
  std::map<std::string, std::string> env;
};

/// PyTorch's configurations of `model` under `o`: on the CPU 1 and 2 threads, each default
/// and tuned; on the GPU eager, fused (Adam(fused=True)), compile (torch.compile with fused
/// Adam; only for the models of suite_compile_models(), where compiling pays) and
/// cuda_graph (the whole step as one CUDA graph).
std::vector<PytorchConfig> pytorch_configs(const SuiteOptions& o, const std::string& model);

/// The models PyTorch's GPU `compile` configuration runs (transformer, mlp): torch.compile
/// takes minutes per model and helped only the transformer (../shared/ENVIRONMENT.md).
const std::vector<std::string>& suite_compile_models();

/// The worker that names each model's parameters (--names-out): bench/weft_worker on the
/// CPU; on the GPU the CUDA AOT worker itself (its library's table), so that the GPU
/// machine needs no compiler. A path relative to the runfiles' workspace.
std::string names_worker(const SuiteOptions& o);
/// The worker of weft's timed runs: bench/weft_worker, bench/weft_aot_worker or
/// bench/weft_aot_cuda_worker (relative to the runfiles' workspace).
std::string timed_worker(const SuiteOptions& o);

/// weft's timed runs of `model` in each round, as their TrainOptions::fuse_attention:
/// {false} (off, or a model without attention), {true} (on) or {false, true} (both).
std::vector<bool> weft_fuse_attention_runs(const SuiteOptions& o, const std::string& model);

/// The command line of one of weft's timed runs of `model` from `init` (INIT.safetensors),
/// `worker` being timed_worker()'s resolved path, with fused attention or not
/// (weft_fuse_attention_runs).
std::vector<std::string> weft_timed_args(const SuiteOptions& o, const std::string& worker,
                                         const std::string& model, const std::string& init,
                                         bool fuse_attention = false);
/// The command line of one PyTorch timed run (`run_py` resolved).
std::vector<std::string> pytorch_timed_args(const SuiteOptions& o, const std::string& run_py,
                                            const std::string& model, const std::string& init,
                                            const PytorchConfig& config);

/// Why --device=cuda cannot run on this machine, or null: no NVIDIA device node under
/// `dev` ("/dev" but for tests). PyTorch's side is checked by `run.py --device=cuda
/// --check-device`.
std::optional<std::string> cuda_device_missing(const std::string& dev = "/dev");

}  // namespace weft::bench
