#pragma once
// What the benchmark suite (bench/suite.cc) collects per model, and how it prints it:
// each timed run's JSON line added to its configuration's summary, the table, the JSON
// list, and the checks between the two sides (bench/PROTOCOL.md). Pure: no processes, no
// timing; bench/suite_test.cc covers it.

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "bench/roofline.h"

namespace weft::bench {

/// The median of `values` (the mean of the two middle ones for an even count); 0 for none.
double median(std::vector<double> values);

/// bench/PROTOCOL.md step 4: |weft − pytorch| ≤ 1e-4·(1 + |pytorch|).
bool first_losses_agree(double weft, double pytorch, double tolerance = 1e-4);
/// The first-loss tolerance at a suite precision: 1e-4 in f32; 1e-2 in bf16, whose 8-bit
/// significand (2^-8 ≈ 3.9e-3 per rounding) weft and PyTorch round at different places
/// (weft keeps layer norm, softmax and exp/log in f32 by CUDA autocast's list).
double first_loss_tolerance(const std::string& precision);

/// One (framework, configuration) of one model, over every round it ran in.
struct RunSummary {
  std::string config;     ///< "weft", "1 thread", "2 threads tuned", ...
  int threads = 0;        ///< PyTorch's thread count; 0 for weft.
  bool tuned_env = false; ///< PyTorch ran with OMP_WAIT_POLICY and GLIBC_TUNABLES set.
  std::vector<double> round_median_ms;           ///< Each process's median epoch.
  std::vector<std::vector<double>> round_epoch_ms;  ///< Each process's epochs.
  std::optional<double> first_loss;        ///< Of the first round.
  std::optional<int64_t> param_count;
  std::optional<int64_t> peak_bytes;       ///< Largest peak RSS increase over the rounds.
  /// With --device=cuda, the largest over the rounds of the device memory the step held:
  /// weft's executor's device allocations, torch.cuda.max_memory_allocated for PyTorch.
  std::optional<int64_t> device_peak_bytes;
  /// PyTorch's: the kernel OpenBLAS chose in its process ("Cooperlake"); null for weft and
  /// for a run.py that reports none.
  std::optional<std::string> openblas_corename;

  /// The median over rounds of each process's median epoch.
  double median_ms() const { return median(round_median_ms); }
  bool ran() const { return !round_median_ms.empty(); }
};

/// Everything measured about one model.
struct ModelResult {
  std::string model;
  /// weft's side ran with fused attention (the suite's --fuse-attention): with
  /// --fuse-attention=both a model with attention has two results, one each way, sharing
  /// PyTorch's runs.
  bool fuse_attention = false;
  std::optional<RunSummary> weft;
  std::vector<RunSummary> pytorch;  ///< Every PyTorch configuration that ran.
  std::optional<int64_t> weft_planned_bytes, arena_bytes, arena_lower_bound_bytes;
  std::optional<double> weft_matmul_flops;  ///< Per step, as the weft worker counted them.
  std::vector<GemmShape> gemm_shapes;
  std::optional<int64_t> state_bytes;
  std::optional<Roofline> roofline;
  std::string weft_note;  ///< Why weft did not run (declined the preset, --pytorch-only).
  std::string error;      ///< Non-empty when this model failed; the run then fails.

  /// The fastest PyTorch configuration by median, or null when none ran.
  const RunSummary* best_pytorch() const;
  /// The table's and the checks' name of the row: "transformer", "transformer (fused
  /// attention)".
  std::string label() const;
};

/// `j[key]` as a T, or null when it is absent or null.
template <typename T>
std::optional<T> optional_field(const nlohmann::json& j, const char* key) {
  auto it = j.find(key);
  if (it == j.end() || it->is_null()) return std::nullopt;
  return it->get<T>();
}

/// Adds one timed run's result, the JSON line a weft worker or run.py printed, to `s`, the
/// summary of its configuration: its median and epochs, the first round's first loss, the
/// parameter count (equal in every round), the largest peaks (RSS and, on the GPU,
/// "device_peak_bytes") and PyTorch's OpenBLAS core. Throws SuiteError (bench/process.h)
/// naming `what` for a malformed result or one that disagrees with an earlier round.
void record_run(const std::string& what, const nlohmann::json& j, RunSummary& s);

/// "12.3 MiB" (binary megabytes, one decimal); "—" for null.
std::string format_bytes(std::optional<int64_t> bytes);
/// "123.4" (milliseconds, one decimal, three significant digits below 10); "—" for null.
std::string format_ms(std::optional<double> ms);

/// The suite's table in Markdown (ready for bench/RESULTS.md), one row per model, then
/// a legend explaining each column and the roofline formula. When any run reported device
/// memory (--device=cuda), two columns more: weft's and PyTorch's device peaks.
std::string format_table(const std::vector<ModelResult>& results);

/// The parameter-count and first-loss lines printed under the table:
/// "mlp: params weft 1,181,952 = PyTorch 1,181,952; first loss weft 1.0234 PyTorch 1.0234".
std::string format_checks(const std::vector<ModelResult>& results);

/// The JSON list written by --json, one object per model and weft run (keys in
/// bench/PROTOCOL.md and issue 5, and "fuse_attention"; null where unknown), pretty-printed. `weft_path` is the suite's --weft: "jit"
/// or "aot", which worker ran weft's side; `device` and `precision` the suite's --device
/// and --precision.
std::string results_json(const std::vector<ModelResult>& results, const std::string& preset,
                         const std::string& weft_path, int epochs, int warmup, int rounds,
                         const std::string& device = "cpu", const std::string& precision = "f32");

}  // namespace weft::bench
