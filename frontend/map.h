#pragma once
// The module behind FlowBuilder::map(body).slices(n) ([Control flow]): one body, its
// parameters shared, applied to n slices of every sample's last axis at once.
//
//   map(Linear(16, 4)).slices(8)    on [B, 128]: the 8 slices [B·8, 16] → [B·8, 4] → [B, 32]
//
// The stream [B, ..., D] is split into n slices of D/n features, which become extra rows
// of the batch ([B·n, ..., D/n]: slice k of sample b is row b·n + k), so the body runs
// once, on a batch n times larger, and its output [B·n, ..., D'] is put back as
// [B, ..., n·D'] (the slices' outputs side by side, in order). As flodl's map.slices. A
// body that mixes rows (BatchNorm) sees the slices as samples. `map(body).batched()` is
// the body on the whole stream (through). The per-sample maps `each()` and `over(tag)`
// are loops (frontend/loop.h).
//
// The body's parameters are named under the map's chain position as a through() of the
// body would be: `2.weight` for Linear at position 2; a labelled body keeps its label
// below it (`2.enc.0.weight`, addressable as `enc`).

#include <cstdint>
#include <source_location>

#include "frontend/module.h"

namespace weft {

/// The module of FlowBuilder::map(body).slices(n).
ModulePtr MapSlices(ModulePtr body, int64_t n, std::source_location loc = std::source_location::current());

}  // namespace weft
