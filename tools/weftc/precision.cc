#include "tools/weftc/precision.h"

#include <algorithm>
#include <string_view>
#include <vector>

#include "passes/autocast.h"
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
  if (after == kAutocastStage && precision == DType::f32) {
    return Error{"weftc " + command + ": --after=autocast shows the casts of --precision=bf16 "
                 "or --precision=f16; at f32 there are none"};
  }
  std::vector<std::string_view> passes = pipeline.pass_names();
  if (precision != DType::f32 && !after.empty() && after != kAutocastStage &&
      std::find(passes.begin(), passes.end(), after) == passes.end()) {
    passes.insert(passes.begin(), kAutocastStage);
    return unknown_pass_error(after, passes);
  }
  WEFT_RETURN_IF_ERROR(apply_precision(g, precision));
  if (after == kAutocastStage) return after;
  WEFT_RETURN_IF_ERROR(pipeline.run_until(g, after).status());
  return after.empty() ? std::string(pipeline.pass_names().back()) : after;
}

}  // namespace weft::cli
