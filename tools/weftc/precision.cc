#include "tools/weftc/precision.h"

#include <algorithm>
#include <string_view>
#include <vector>

#include "passes/mixed_precision.h"
#include "passes/weight_copies.h"
#include "training/flag_values.h"

namespace weft::cli {

StatusOr<DType> precision_flag(const Args& args, const std::string& command) {
  if (!args.has("precision")) return DType::f32;
  const std::string text = args.get("precision");
  const std::optional<DType> precision = parse_precision(text);
  if (!precision) {
    return Error{"weftc " + command + ": --precision expects f32, bf16 or f16, got '" + text + "'"};
  }
  return *precision;
}

namespace {

// The mixed-precision stage up to `last` (empty: all of it), after canonicalize.
Status run_mixed_precision(Graph& g, DType precision, std::string_view last) {
  WEFT_RETURN_IF_ERROR(default_pipeline().run_until(g, "canonicalize").status());
  Pipeline stage = mixed_precision_pipeline(precision);
  return (last.empty() ? stage.run(g) : stage.run_until(g, last)).status();
}

}  // namespace

Status apply_precision(Graph& g, DType precision) {
  if (precision == DType::f32) return Status();
  return run_mixed_precision(g, precision, "");
}

StatusOr<std::string> run_stages(Graph& g, Pipeline& pipeline, DType precision,
                                 const std::string& after, const std::string& command) {
  std::vector<std::string_view> stages = mixed_precision_pipeline(DType::bf16).pass_names();
  const bool in_stage = std::find(stages.begin(), stages.end(), after) != stages.end();
  const bool stage = in_stage || after == kWeightCopiesStage;
  if (stage && precision == DType::f32) {
    const std::string what = after == kWeightCopiesStage ? "weight copies" : "casts";
    return Error{"weftc " + command + ": --after=" + after + " shows the " + what +
                 " of --precision=bf16 or --precision=f16; at f32 there are none"};
  }
  std::vector<std::string_view> passes = pipeline.pass_names();
  if (precision != DType::f32 && !after.empty() && !stage &&
      std::find(passes.begin(), passes.end(), after) == passes.end()) {
    stages.push_back(kWeightCopiesStage);
    passes.insert(passes.begin(), stages.begin(), stages.end());
    return unknown_pass_error(after, passes);
  }
  if (precision != DType::f32) WEFT_RETURN_IF_ERROR(run_mixed_precision(g, precision, in_stage ? after : ""));
  if (in_stage) return after;
  if (precision != DType::f32) WEFT_RETURN_IF_ERROR(WeightCopiesPass().run(g).status());
  if (after == kWeightCopiesStage) return after;
  WEFT_RETURN_IF_ERROR(pipeline.run_until(g, after).status());
  return after.empty() ? std::string(pipeline.pass_names().back()) : after;
}

}  // namespace weft::cli
