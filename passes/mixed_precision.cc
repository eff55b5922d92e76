#include "passes/mixed_precision.h"

#include <memory>

#include "passes/autocast.h"
#include "passes/rotate_carry_casts.h"

namespace weft {

Pipeline mixed_precision_pipeline(DType low, PipelineOptions options) {
  Pipeline p(std::move(options));
  p.add(std::make_unique<AutocastPass>(low));
  p.add(std::make_unique<RotateCarryCastsPass>());
  return p;
}

}  // namespace weft
