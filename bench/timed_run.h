#pragma once
// What bench/weft_worker (the JIT Trainer) and bench/weft_aot_worker (the AOT libraries of
// bench/aot) share in a timed run (bench/PROTOCOL.md): the flags, loading INIT.safetensors,
// the epoch loop and the JSON line's common fields. Runtime-only (no frontend), so that
// the AOT worker links no compiler.
//
//   TimedRunFlags flags = ...;                        // from --epochs --warmup --steps
//   StatusOr<std::vector<Tensor>> batch = load_init(path, layout, set_value);
//   int64_t rss_before = proc_status_bytes("VmRSS");  // before the model is built
//   StatusOr<EpochTimes> t = run_epochs(model, flags, [&] { return step(*batch); });
//   nlohmann::json line = result_json(model, config, flags, *t, param_count, rss_before);

#include <cstdint>
#include <functional>
#include <nlohmann/json_fwd.hpp>  // json.hpp (~33k lines) only where a json is built
#include <random>
#include <string>
#include <vector>

#include "ir/shape.h"
#include "ir/status.h"
#include "runtime/tensor.h"
#include "tools/weftc/args.h"

namespace weft::bench {

/// A field of /proc/self/status in bytes (`VmRSS`, `VmHWM`), or -1.
int64_t proc_status_bytes(const std::string& field);

/// A named tensor type: a parameter, a state, a step input or the target.
struct NamedType {
  std::string name;
  Type type;
};

/// What INIT.safetensors must hold for one model (bench/PROTOCOL.md, "Sharing the model").
struct InitLayout {
  std::string model;
  /// Every parameter and state by weft name (not the generator state `rng`).
  std::vector<NamedType> values;
  /// The step's inputs `input.0`, `input.1`, ...; then the target.
  std::vector<NamedType> inputs;
  NamedType target;
  /// The target is `input.0` itself (conv_autoenc): INIT may leave it out.
  bool target_is_input = false;
};

/// Sets every value of `layout` from `path` with `set_value` (types checked; a file tensor
/// that is neither a value, an input nor the target is an error too, and every problem is
/// listed in one error) and returns the batch: the inputs, then the target.
StatusOr<std::vector<Tensor>> load_init(
    const std::string& path, const InitLayout& layout,
    const std::function<Status(const std::string& name, const Tensor& value)>& set_value);

/// One entry of a worker's --names-out JSON (run.py --names reads it): {"name", "shape",
/// "dtype" (safetensors' name), and for i64 "high": token values are in [0, high)}.
nlohmann::json type_json(const std::string& name, const Type& t, int64_t high);

/// Random data of `t`: N(0, 1) floats, or integers in [0, high).
Tensor random_tensor(const Type& t, int64_t high, std::mt19937_64& rng);

/// The batch for --random-init: random inputs, then a random target (or input.0 itself).
std::vector<Tensor> random_batch(const InitLayout& layout, int64_t token_range, uint64_t seed);

/// The flags of a timed run: --init=PATH or --random-init [--seed=S], --epochs, --warmup,
/// --steps. The defaults: 3 warm-up and 20 measured epochs of 50 steps; at the cpu preset
/// 1 and 5.
struct TimedRunFlags {
  std::string preset;
  std::string init_path;  ///< Empty with --random-init.
  uint64_t seed = 0;
  int epochs = 0, warmup = 0, steps_per_epoch = 50;
};

/// The flags both workers take: --model, --preset, --names-out, --profile,
/// --fuse-attention (TrainOptions::fuse_attention; the AOT worker's fused-attention
/// libraries) and the timed-run flags above; each worker adds its own.
std::vector<cli::FlagSpec> worker_flag_specs();

/// `value` as an integer in [min, max], or an error naming the flag ("bad value for
/// --steps: 'x' (an integer in [1, 100000])").
StatusOr<int64_t> parse_int(const std::string& flag, const std::string& value, int64_t min,
                            int64_t max);

/// The timed-run flags of `args` for `preset` ("cpu" or "paper"); an error unless exactly
/// one of --init and --random-init is given, or for a count that is not a number.
StatusOr<TimedRunFlags> parse_timed_run_flags(const cli::Args& args, const std::string& preset);

/// The measured epochs of a run.
struct EpochTimes {
  std::vector<double> epoch_ms;  ///< The measured epochs only.
  double first_loss = 0;         ///< The loss of the run's first step.
  double last_loss = 0;
};

/// `flags.warmup` + `flags.epochs` epochs of `flags.steps_per_epoch` calls to `step` (each
/// one training step returning its loss), timing each epoch; a line per epoch on stderr.
/// `before_measured`, if set, runs once before the first measured epoch (profiling).
StatusOr<EpochTimes> run_epochs(const std::string& model, const TimedRunFlags& flags,
                                const std::function<StatusOr<double>()>& step,
                                const std::function<void()>& before_measured = nullptr);

/// The JSON line's fields both workers print (bench/PROTOCOL.md 3): model, framework
/// "weft", config, preset, init, steps_per_epoch, warmup, epoch_ms, median_ms, first_loss,
/// last_loss, param_count and peak_rss_increase_bytes (VmHWM now minus `rss_before`).
nlohmann::json result_json(const std::string& model, const std::string& config,
                           const TimedRunFlags& flags, const EpochTimes& times,
                           int64_t param_count, int64_t rss_before);

/// weft_worker's `config`: what ran the steps on Trainer backend `backend`, `threads`
/// being the cpu executor's thread count (0 when the steps did not run on runtime/cpu):
/// "compiled cpu, 8 threads", "compiled cuda", "reference interpreter, 1 thread".
std::string run_config(const std::string& backend, int threads);

}  // namespace weft::bench
