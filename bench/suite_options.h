#pragma once
// The benchmark suite's command line (bench/suite.cc), parsed without side effects so
// that bench/suite_test.cc can pin its defaults and errors.
//
//   StatusOr<SuiteOptions> o = parse_suite_options({"--preset=cpu", "--weft=aot"});

#include <string>
#include <vector>

#include "ir/status.h"

namespace weft::bench {

/// The ten models, in the suite's order.
const std::vector<std::string>& suite_models();

/// The models whose AOT libraries bench/aot also builds in bf16 (the GEMM-bound ones:
/// NAME_bf16), which `--weft=aot --precision=bf16` runs.
const std::vector<std::string>& suite_aot_bf16_models();

/// The usage line printed under every command-line error.
extern const char* const kSuiteUsage;

struct SuiteOptions {
  std::string preset;  ///< "cpu" or "paper".
  std::vector<std::string> models = suite_models();
  /// Epochs measured and warm-up epochs: 5 and 1 at the cpu preset, 20 and 3 at paper.
  int epochs = 0, warmup = 0, rounds = 2;
  std::string json_path;  ///< Relative paths are against BUILD_WORKING_DIRECTORY.
  bool pytorch_only = false, keep_tmp = false, allow_paper = false;
  std::string python = "/usr/bin/python3";
  /// weft's timed runs: "jit" (bench/weft_worker, the Trainer) or "aot"
  /// (bench/weft_aot_worker, the libraries of bench/aot).
  std::string weft = "jit";
  /// Both sides' precision: "f32", or "bf16" (weft's TrainOptions::precision, PyTorch's
  /// torch.autocast("cpu", dtype=torch.bfloat16)). With --weft=aot, bf16 runs the
  /// models of suite_aot_bf16_models() (their default), and refuses any other.
  std::string precision = "f32";
};

/// The suite's flags (the arguments after the program name); an error names the first
/// bad flag or value.
StatusOr<SuiteOptions> parse_suite_options(const std::vector<std::string>& args);

}  // namespace weft::bench
