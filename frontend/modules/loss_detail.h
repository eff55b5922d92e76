#pragma once
// Helpers shared by the loss files (loss.cc, loss_ternary.cc); not part of the API.
#include <string>

#include "frontend/losses.h"

namespace weft::loss::detail {

/// Fails unless `r` is mean, sum or none (batchmean is kl_div's alone).
void check_not_batchmean(Emitter& e, const char* name, Reduction r);
/// Mean or sum over every element (BatchMean: sum / dim 0), or `x` itself for None.
ValueId reduce(Emitter& e, ValueId x, Reduction r);
/// A loss module's description: "NAME(REDUCTION EXTRA)".
std::string named(const char* name, Reduction r, const std::string& extra = "");

}  // namespace weft::loss::detail
