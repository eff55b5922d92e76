#pragma once
// Graphs of loops shared by the cpu's tests and tests/cuda's generated GPU cases, so that
// both run exactly the same graph (one text, two backends).

namespace weft::testing {

/// An LSTM-like cell: h chained to %hs, c shifted into %cs (the ys of its old value: read
/// in slot i, its next value written into slot i+1, the last into %c); then a reversed
/// loop chained to its ys (runtime/loop_slots.h). codegen:loop_slots_test runs it on the
/// cpu, tests/cuda's `scan_slots` case on the GPU.
inline constexpr char kScanSlotsGraph[] = R"(graph @scan_slots(%w: f32[6,6], %h0: f32[3,6], %c0: f32[3,6], %xs: f32[5,3,6]) {
  %h, %c, %hs, %cs = scan(%w, %h0, %c0, %xs) {carries=2, consts=1, length=5} : f32[3,6], f32[3,6], f32[5,3,6], f32[5,3,6] ({
    ^cell(%cw: f32[6,6], %ch: f32[3,6], %cc: f32[3,6], %cx: f32[3,6]):
      %m = matmul(%ch, %cw) : f32[3,6]
      %a = add(%m, %cx) : f32[3,6]
      %c2 = add(%cc, %a) : f32[3,6]
      %t = tanh(%c2) : f32[3,6]
      %n = mul(%t, %a) : f32[3,6]
      return %n, %c2, %n, %cc
  })
  %g, %gs = scan(%w, %h, %xs) {carries=1, consts=1, length=5, reverse=true} : f32[3,6], f32[5,3,6] ({
    ^back(%bw: f32[6,6], %bh: f32[3,6], %bx: f32[3,6]):
      %bm = matmul(%bh, %bw) : f32[3,6]
      %bn = sin(%bm) : f32[3,6]
      %bo = add(%bn, %bx) : f32[3,6]
      return %bo, %bo
  })
  return %h, %c, %hs, %cs, %g, %gs
}
)";

/// A concat stored in place by its parts' kernels (passes/fold_concats.h: the tanh's, over
/// [4,8], and one kernel over [4,4] for the two halves of the product, which is summed
/// too: parts over different iteration spaces stay apart, passes/fuse_elementwise.h) and a
/// ys bound to its slot: every window's kernel writes the slot (runtime/loop_slots.h), the
/// GEMM reads it.
/// codegen:loop_slots_test runs it on the cpu, tests/cuda's `scan_stored_concat` case on
/// the GPU.
inline constexpr char kScanStoredConcatGraph[] = R"(graph @scan_stored_concat(%w: f32[16,8], %h0: f32[4,8], %xs: f32[5,4,8]) {
  %h, %cs, %qs = scan(%w, %h0, %xs) {carries=1, consts=1, length=5} : f32[4,8], f32[5,4,16], f32[5,4] ({
    ^cell(%cw: f32[16,8], %ch: f32[4,8], %cx: f32[4,8]):
      %s = add(%ch, %cx) : f32[4,8]
      %a = tanh(%s) : f32[4,8]
      %p = mul(%ch, %cx) : f32[4,8]
      %q = sum(%p) {axes=[1]} : f32[4]
      %l = slice(%p) {start=[0, 0], stop=[4, 4]} : f32[4,4]
      %r = slice(%p) {start=[0, 4], stop=[4, 8]} : f32[4,4]
      %b = neg(%l) : f32[4,4]
      %d = exp(%r) : f32[4,4]
      %c = concat(%a, %b, %d) {axis=1} : f32[4,16]
      %m = matmul(%c, %cw) : f32[4,8]
      %n = tanh(%m) : f32[4,8]
      return %n, %c, %q
  })
  return %h, %cs, %qs
}
)";

}  // namespace weft::testing
