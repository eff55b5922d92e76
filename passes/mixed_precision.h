#pragma once
// The mixed-precision stage of a training step, as one pipeline: autocast to the low
// dtype (passes/autocast.h: contractions in bf16/f16, the rest and the loss in f32, loop
// bodies too), then rotate-carry-casts (passes/rotate_carry_casts.h: a loop body's cast
// of a carry becomes a low carry, so no cast runs per iteration). The Trainer
// (frontend/training.cc) and weftc's `--precision` (tools/weftc/precision.h) both run
// this pipeline, so a graph dumped with `--precision=bf16` is the one a training step
// gets.
//
//   Pipeline p = mixed_precision_pipeline(DType::bf16);
//   StatusOr<bool> changed = p.run(g);                 // autocast, rotate-carry-casts
//   p.run_until(g, "autocast");                         // or stop after the casts

#include "ir/dtype.h"
#include "passes/pipeline.h"

namespace weft {

/// autocast to `low` (bf16 or f16), then rotate-carry-casts.
Pipeline mixed_precision_pipeline(DType low, PipelineOptions options = {});

}  // namespace weft
