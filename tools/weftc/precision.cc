#include "tools/weftc/precision.h"

#include <algorithm>
#include <string_view>
#include <vector>

#include "passes/autocast.h"
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

Status apply_precision(Graph& g, DType precision) {
  if (precision == DType::f32) return Status();
  WEFT_RETURN_IF_ERROR(default_pipeline().run_until(g, "canonicalize").status());
  return AutocastPass(precision).run(g).status();
}

StatusOr<std::string> run_stages(Graph& g, Pipeline& pipeline, DType precision,
                                 const std::string& after, const std::string& command) {
  const bool stage = after == kAutocastStage || after == kWeightCopiesStage;
  if (stage && precision == DType::f32) {
    const std::string what = after == kAutocastStage ? "casts" : "weight copies";
    return Error{"weftc " + command + ": --after=" + after + " shows the " + what +
                 " of --precision=bf16 or --precision=f16; at f32 there are none"};
  }
  std::vector<std::string_view> passes = pipeline.pass_names();
  if (precision != DType::f32 && !after.empty() && !stage &&
      std::find(passes.begin(), passes.end(), after) == passes.end()) {
    passes.insert(passes.begin(), {kAutocastStage, kWeightCopiesStage});
    return unknown_pass_error(after, passes);
  }
  WEFT_RETURN_IF_ERROR(apply_precision(g, precision));
  if (after == kAutocastStage) return after;
  if (precision != DType::f32) WEFT_RETURN_IF_ERROR(WeightCopiesPass().run(g).status());
  if (after == kWeightCopiesStage) return after;
  WEFT_RETURN_IF_ERROR(pipeline.run_until(g, after).status());
  return after.empty() ? std::string(pipeline.pass_names().back()) : after;
}

}  // namespace weft::cli
