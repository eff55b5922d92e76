#pragma once
// The training driver's command line: one table of flags (name, placeholder, default,
// help) from which parsing, `--help` and the README's list all follow.
//
//   StatusOr<DriverConfig> config = parse_flags({"--epochs=3", "--schedule=cosine"});
//   if (!config.ok()) { /* one line naming the flag and the problem; exit status 2 */ }
//   StatusOr<std::unique_ptr<LrSchedule>> lr = make_schedule(*config, base_lr, total_steps);
//
// Another program that trains (the JIT examples) takes part of the table as a FlagSet:
//
//   StatusOr<DriverConfig> c = parse_flags(args, {.shared = {"epochs", "lr", "serve"},
//                                                 .own = {whole_number_flag("batch", ...)},
//                                                 .defaults = {{"epochs", "10"}}});
//
// Flags are `--name=value` or `--name value`; a flag given twice keeps its last value.
// Numbers are checked whole: `--epochs=1.5`, `--lr=1e` and `--seed=-1` are errors, not
// truncations.

#include <cstdint>
#include <functional>
#include <limits>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "ir/dtype.h"
#include "ir/status.h"
#include "training/flag_values.h"
#include "training/schedule.h"

namespace weft::driver {

/// Everything the command line sets. Defaults are the flags' defaults.
struct DriverConfig {
  // Data.
  std::string data_dir = "/usr/share/datasets/fashion-mnist";  ///< IDX files (Fashion-MNIST).
  std::vector<std::string> train_files;  ///< .npy arrays, step_inputs() order; empty: --data.
  std::vector<std::string> test_files;   ///< .npy arrays of the test split; may be empty.
  // The run.
  int64_t epochs = 1;
  int64_t max_steps = 0;  ///< Per epoch; 0: every full batch.
  uint64_t seed = 0;
  uint64_t shuffle_seed = 0;
  int64_t threads = 0;
  /// Bytes the model's compiled step may need (its arena and inputs), checked when the
  /// model is made, before anything is allocated; 0: the memory the machine has available.
  int64_t max_memory = 0;
  /// --precision: f32, or the mixed precision bf16 / f16 (TrainOptions::precision). A
  /// program that compiles its model at startup (the JIT examples) passes it on; a
  /// training binary accepts only the precision its model was compiled for (weft_binary's
  /// `precision`), which it takes when the flag is not given.
  DType precision = DType::f32;
  /// --tf32: a cuda model's f32 GEMMs and convolutions on TF32 tensor cores
  /// (ModelOptions::bind.tf32, BindOptions::tf32); a cpu model ignores it.
  bool tf32 = false;
  // The learning rate.
  std::optional<double> lr;  ///< Unset: the model's own (its compiled optimizer's).
  std::string schedule = "constant";
  int64_t lr_step_size = 0;
  double lr_gamma = 0.1;
  std::vector<int64_t> milestones;
  int64_t warmup_steps = 0;
  /// -1: not given (warmup-cosine starts at 0; a warmup in front of another schedule at
  /// 1/3, PyTorch's LinearLR default).
  double warmup_start_factor = -1;
  double min_lr = 0;
  double pct_start = 0.3;
  double div_factor = 25;
  double final_div_factor = 1e4;
  double max_lr = 0;                     ///< cyclic (required).
  int64_t step_size_up = 2000;           ///< cyclic.
  int64_t step_size_down = -1;           ///< cyclic; -1: step_size_up.
  std::string cyclic_mode = "triangular";
  double cyclic_gamma = 1.0;             ///< cyclic, exp_range.
  /// onecycle, cyclic: the momentum (β1) bounds of PyTorch's cycle_momentum; -1: the
  /// schedule's default (0.85 and 0.95 for onecycle, 0.8 and 0.9 for cyclic).
  double base_momentum = -1;
  double max_momentum = -1;
  bool no_cycle_momentum = false;        ///< onecycle, cyclic: cycle_momentum=False.
  // Checkpoints, evaluation, reporting.
  std::string checkpoint_in;
  bool partial_load = false;
  std::string checkpoint_out;
  std::string export_onnx;  ///< --export-onnx=PATH: the trained model as ONNX at the end.
  int64_t checkpoint_every = 0;
  int64_t eval_every = 0;
  std::string metrics_csv;
  std::string epoch_csv;  ///< One row per epoch (monitor::Metrics' epoch CSV).
  std::string report;
  int64_t serve = -1;  ///< --serve=PORT: the live dashboard's port (0: a free one); -1: off.
  int64_t log_every = 100;
  bool check_numerics = false;
  bool profile = false;
  /// Under a launcher (mpirun, srun, the torchrun variables): every rank trains on its rows
  /// of each global batch (collective::world_from_environment()).
  bool data_parallel = false;
  /// --collective-timeout: how long a rank waits for its peers in one collective.
  int64_t collective_timeout = 300;
  /// --bucket-mb: with more than one rank the gradients' all_reduce calls share buckets of
  /// up to this many bytes (ModelOptions::bind.all_reduce_bucket_bytes); 0: one per gradient.
  int64_t bucket_bytes = int64_t{25} << 20;
  /// --first-bucket-mb: the first bucket's limit (ModelOptions::bind.first_all_reduce_bucket_bytes).
  int64_t first_bucket_bytes = int64_t{1} << 20;
  bool help = false;
};

/// Parses the arguments after the program name. Errors are one line naming the flag.
StatusOr<DriverConfig> parse_flags(const std::vector<std::string>& args);

/// `--help`'s text: usage, then every flag with its placeholder, default and meaning.
std::string help_text(const std::string& program);

/// A flag of one program beside the driver's: the JIT examples' `--batch` and `--backend`,
/// which a training binary compiles in. It is parsed, refused and listed by --help as the
/// driver's own flags are.
struct ProgramFlag {
  std::string name;         ///< Without dashes.
  std::string placeholder;  ///< `N`, `NAME`; empty for a flag without a value.
  std::string default_text;
  std::string help;
  /// Stores the value (empty for a flag without one) where the program keeps it; the
  /// config is the driver flags' (an alias sets a field there).
  std::function<Status(DriverConfig&, const std::string& value)> set;
};

/// `--NAME=N`: a whole number in [low, high] stored in `*into`, refused with the driver's
/// messages ("--batch=0: must be >= 1", "--batch=1e3: not a whole number"); --help shows
/// `*into` as it is now as the default.
ProgramFlag whole_number_flag(const std::string& name, const std::string& help, int64_t* into,
                              int64_t low, int64_t high = std::numeric_limits<int64_t>::max());

/// A program's command line made from the driver's table: the driver flags it takes (any
/// other driver flag is unknown to it), its own flags, and its defaults for driver flags.
/// The JIT examples (examples/fashion_mnist/train_loop.h) and the training binaries thus
/// read the flags they share with one parser, one set of checks and the same messages.
struct FlagSet {
  std::vector<std::string> shared;  ///< Names of driver flags, listed in the table's order.
  std::vector<ProgramFlag> own;     ///< Listed after the shared ones (and before --help).
  /// A shared flag's default as the text a user would give (`{"epochs", "10"}`): set
  /// through the flag before the arguments are read, and shown by --help.
  std::map<std::string, std::string> defaults;
};

/// Parses `args` with the flags of `set`; a shared flag's value and its errors are the
/// driver's, as are the whole-command-line checks.
StatusOr<DriverConfig> parse_flags(const std::vector<std::string>& args, const FlagSet& set);

/// `--help`'s text for `set`: usage, `about` (a paragraph ending in a newline), then each
/// flag of the set.
std::string help_text(const std::string& program, const std::string& about, const FlagSet& set);

/// The names of every flag, without dashes, in --help order.
std::vector<std::string> flag_names();

/// The schedule that `config` chooses for a run of `total_steps` steps whose base
/// learning rate is `base_lr`. Errors (exit status 2) name the flag at fault.
StatusOr<std::unique_ptr<LrSchedule>> make_schedule(const DriverConfig& config, double base_lr,
                                                    int64_t total_steps);

/// training/flag_values.h's: relative paths against $BUILD_WORKING_DIRECTORY.
using ::weft::resolve_path;

}  // namespace weft::driver
