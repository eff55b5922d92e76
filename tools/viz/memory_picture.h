#pragma once
// The memory plan as a picture: one SVG in which every arena buffer is a rectangle —
// x is the schedule steps its value is live over, y its byte offset in the arena,
// height its (aligned) size — coloured by what the value is, with the peak of live bytes
// and the arena's top marked, axes and a legend.
//
//   StatusOr<MemoryPlan> plan = plan_memory(g);
//   std::string svg = memory_plan_svg(g, *plan);   // `weftc viz FILE.wir --memory`
//
// Liveness follows passes/memory_plan.h: a value lives from the step of its node to its
// last reader (inclusive), to the end of the step when it is a graph output or assigned.
// A value whose buffer a reader takes over in place (MemoryPlan::in_place_nodes) ends
// just before that reader, where its successor in the same buffer begins, so the
// rectangles of one buffer line up without overlapping.

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "ir/graph.h"
#include "passes/memory_plan.h"

namespace weft::viz {

/// What a value of a step is, for colouring.
enum class BufferKind { activation, gradient, parameter, optimizer_state };
inline constexpr int kNumBufferKinds = 4;
/// "activation", "gradient", "parameter", "optimizer state".
std::string_view buffer_kind_name(BufferKind kind);

/// Classifies every value of `g` from the IR alone (by ValueId), in this order:
///  1. a value assigned to an input: `parameter` when the input is a param, or state
///     that is not an optimizer slot (batch-norm statistics: model state, saved with
///     the parameters); `optimizer state` when it is an optimizer slot, a state input
///     named `optimizer.*` (autodiff/optimizer.h names slots `optimizer.<param>.<slot>`);
///  2. a value some graph output needs (the forward pass and the loss): `activation`;
///  3. a value computed from an optimizer slot (Adam's bias-corrected moments):
///     `optimizer state`;
///  4. a value that reaches the update of a param (the backward pass from the loss's
///     gradient seed on, and the optimizer's arithmetic on gradients): `gradient`;
///  5. a value that reaches only updates of other state: `parameter` (model state);
///  anything else (graph inputs of kind data, values nothing uses): `activation`.
/// Graph inputs of kind param are `parameter`, state inputs `optimizer state` when
/// named `optimizer.*` and `parameter` otherwise.
std::vector<BufferKind> classify_values(const Graph& g);

/// One value's buffer in the picture.
struct BufferSpan {
  ValueId value = kNoValue;
  int node = -1;        ///< The producing node (the schedule step where it starts).
  int first_step = 0;   ///< Inclusive.
  int last_step = 0;    ///< Inclusive.
  int64_t offset = 0;   ///< Arena offset in bytes.
  int64_t bytes = 0;    ///< Aligned size in bytes (what the arena reserves).
  BufferKind kind = BufferKind::activation;
};

/// The arena buffers of `plan` over `g`'s node order, in node (then result) order.
std::vector<BufferSpan> buffer_spans(const Graph& g, const MemoryPlan& plan);

struct MemoryPictureOptions {
  int width = 960;   ///< Pixels, legend included.
  int height = 420;
  /// Put `data-producer="N"` on each rectangle (the producing node) so that a viewer can
  /// link a buffer to its node. Off for the standalone picture.
  bool node_links = false;
};

/// The SVG (a complete document, `<svg ...>...</svg>` plus a newline). Deterministic:
/// the same graph and plan always give the same text (the golden test relies on it).
std::string memory_plan_svg(const Graph& g, const MemoryPlan& plan,
                            const MemoryPictureOptions& options = {});

/// Bytes as the picture and the viewer print them: `12 B`, `2.2 KiB`, `256 KiB`,
/// `1.25 MiB` (ir/text_util.h's format_bytes, two decimals at most).
std::string format_bytes(int64_t bytes);

}  // namespace weft::viz
