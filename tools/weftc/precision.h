#pragma once
// weftc's `--precision=f32|bf16|f16`: the mixed-precision stage a training step gets
// (frontend/training.h's TrainOptions::precision), applied to a graph file so that
// `weftc dump --precision=bf16 --after=autocast model.wir` shows where the casts went and
// every later pass, the run and the profile carry them.
//
//   StatusOr<DType> p = precision_flag(args, "dump");        // --precision, f32 if absent
//   StatusOr<std::string> last = run_stages(g, pipeline, *p, "autocast");
//
// The stage is Trainer::build_step's, in its order: the default pipeline up to
// canonicalize, then passes/mixed_precision.h's pipeline (autocast, rotate-carry-casts;
// `--after=` either). The target's pipeline runs after it, from infer-types on. What dump and viz show (run_stages) also has the weight
// copies a training step keeps (passes/weight_copies.h: each assigned parameter's cast
// becomes a state input `weft.copy.NAME` written after its update), as the stage
// "weight-copies"; run, profile and grad (apply_precision) cast each parameter in every
// execution instead — the same numbers, and no input for the caller to feed.

#include <string>

#include "ir/dtype.h"
#include "ir/graph.h"
#include "ir/status.h"
#include "passes/pipeline.h"
#include "tools/weftc/args.h"

namespace weft::cli {

/// The weight copies' stage's name (dump and viz only), for `--after`.
inline constexpr const char* kWeightCopiesStage = "weight-copies";

/// `--precision`'s value read by training/flag_values.h's parse_precision (f32 when it is
/// not given); an error names the command and the values it takes.
StatusOr<DType> precision_flag(const Args& args, const std::string& command);

/// The mixed-precision stage at `precision` (nothing for f32) on a parsed graph.
Status apply_precision(Graph& g, DType precision);

/// The mixed-precision stage, the weight copies' stage, then `pipeline` up to the pass
/// `after` (empty: every pass); `after` may name a pass of either stage (autocast,
/// rotate-carry-casts, weight-copies), which needs --precision=bf16 or f16 (an error
/// naming `command` says so); an unknown `after` is an error listing the stages' passes
/// first. Returns the name of the last pass run.
StatusOr<std::string> run_stages(Graph& g, Pipeline& pipeline, DType precision,
                                 const std::string& after, const std::string& command);

}  // namespace weft::cli
