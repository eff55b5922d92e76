#pragma once
// The AOT libraries that bench/weft_aot_worker.cc runs, one definition per device:
// aot_suite_cpu.cc (the libraries of bench/aot at the cpu preset, on runtime/cpu) makes
// //bench:weft_aot_worker, aot_suite_cuda.cc (their CUDA builds at the paper preset, on
// runtime/cuda, each step one CUDA graph) makes //bench:weft_aot_cuda_worker, from the
// same main.

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "runtime/executor.h"
#include "training/aot/compiled_model.h"

namespace weft::bench {

/// A suite model compiled ahead of time (bench/aot/BUILD).
struct AotModel {
  const char* name;
  const aot::ModelTable& (*table)();
  /// bench/models.cc's token_range: integer inputs and targets are drawn from [0, it).
  int64_t token_range = 0;
  /// bench/models.cc's target_is_input: the target is input.0 itself.
  bool target_is_input = false;
  /// The same model compiled with precision = "bf16" (bench/aot/BUILD), or null.
  const aot::ModelTable& (*bf16_table)() = nullptr;
  /// The same model compiled with fuse_attention (f32; bench/aot/BUILD), or null: a model
  /// with attention (suite_options.h's suite_attention_models).
  const aot::ModelTable& (*fused_attention_table)() = nullptr;
};

/// The ten models in bench_model_names()' order.
const std::vector<AotModel>& aot_models();

/// The preset the libraries are compiled at: "cpu" or "paper".
const char* aot_preset();

/// The libraries, for messages: "the AOT libraries of bench/aot".
const char* aot_libraries();

/// The JSON line's config: "aot cpu, 8 threads", "aot cuda".
std::string aot_config(const aot::ModelTable& table, ProgramExecutor& step);

/// The device memory the step's executor allocated (runtime/cuda's device_bytes), or null
/// on the CPU.
std::optional<int64_t> aot_device_bytes(ProgramExecutor& step);

}  // namespace weft::bench
