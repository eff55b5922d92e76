#pragma once
// rematerialize: an elementwise value that a training step keeps from the forward to the
// backward only to be read by an elementwise node there is computed again at that node
// from values live there anyway, so fusion puts the recomputation inside the reader's
// kernel and the value dies after its forward readers. Batch norm followed by ReLU is the
// common case: ReLU's gradient reads its input y = x̂·γ + β (the mask y > 0), which the
// norm's backward keeps x̂'s numerator for anyway; PyTorch keeps y too unless ReLU is in
// place. Generic: any elementwise producer, any elementwise reader, no op names.
//
//   graph @f(%x: f32[4,8], %s: f32[1,8], %g: f32[4,8]) {
//     %y = mul(%x, %s) : f32[4,8]          // forward
//     %r = relu(%y) : f32[4,8]
//     %c = matmul(%r, %w) ...              // a kernel boundary: %y idles across it
//     %m = gt(%y, %zero) : bool[4,8]       // backward: reads %y again
//     %d = mul(%g, %x) : f32[4,8]          // %x is live here anyway
//   }
// becomes
//     ...
//     %y.1 = mul(%x, %s) : f32[4,8]        // recomputed where it is read
//     %m = gt(%y.1, %zero) : bool[4,8]
//
// A read of %v (made by an elementwise node) by an elementwise node U is recomputed when
// (1) a contraction, a composite or another library call (a convolution) lies between U
// and %v's previous read (or its producer), so no fusion could have kept %v in registers
// (reductions do not count: row kernels take them with their neighbours); (2) %v is neither a graph output nor assigned; (3) every
// operand of the recomputed nodes is a graph input, is live at U anyway (read at or after
// U), is small (RematerializeOptions::small_ratio times smaller than %v: a broadcast
// per-channel scale), or is itself recomputed this way (up to `max_depth` nodes);
// (4) at most one of the operands it reads is not small, so the recomputation reads about
// the bytes that reading %v would.
// The recomputed nodes are placed right before U; producers left without readers are
// removed.
//
// Requires: a type-inferred graph, before fusion (the recomputation is fused into U's
// kernel). Guarantees: the same values (the same ops on the same operands); no value's
// lifetime grows except small operands' (by rule 3); the graph stays topologically
// ordered. Bodies of scan and fused nodes are not visited, and codegen's lowering does
// not run it on a loop's body (LowerOptions::loop_body: one iteration's scratch).

#include "passes/pass.h"

namespace weft {

struct RematerializeOptions {
  /// An operand counts as small when its bytes times this are at most the recomputed
  /// value's bytes.
  int64_t small_ratio = 16;
  /// The most nodes recomputed for one read.
  int max_depth = 4;
};

class RematerializePass : public Pass {
 public:
  explicit RematerializePass(RematerializeOptions options = {}) : options_(options) {}
  std::string_view name() const override { return "rematerialize"; }
  StatusOr<bool> run(Graph& g) override;

 private:
  RematerializeOptions options_;
};

}  // namespace weft
