// Writes tests/cuda/cases.cc (cases.h): each graph lowered for the GPU (the
// mixed-precision cases are gen_cases_half.cc's). Run by the
// rules in tests/cuda/BUILD: `gen_cases OUT.cc` (the test cases), `gen_cases --suite
// OUT.cc` (the ten suite models' training steps, for suite_bench), `gen_cases
// --suite-bf16 OUT.cc` (the same steps in bf16 under autocast, for suite_bf16_bench).

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "autodiff/grad.h"
#include "codegen/cuda_program.h"
#include "codegen/program_source.h"
#include "frontend/flow.h"
#include "frontend/losses.h"
#include "frontend/modules.h"
#include "frontend/training.h"
#include "ir/text.h"
#include "passes/infer_types.h"
#include "runtime/cuda/library.h"
#include "tests/cuda/gen_cases.h"
#include "tests/testing/loop_graphs.h"

namespace weft {
namespace gen_cases {

Graph parse(const std::string& text) {
  StatusOr<Graph> g = parse_graph(text, "tests/cuda/gen_cases_main.cc");
  WEFT_CHECK(g.ok(), g.ok() ? "" : g.error().to_string());
  InferTypesPass infer;
  StatusOr<bool> typed = infer.run(*g);
  WEFT_CHECK(typed.ok(), typed.ok() ? "" : typed.error().to_string());
  return std::move(*g);
}

std::string graph_text(const std::string& name, const std::string& inputs, const std::string& body,
                       const std::string& outs) {
  return "graph @" + name + "(" + inputs + ") {\n" + body + "  return " + outs + "\n}\n";
}

}  // namespace gen_cases

namespace {

using gen_cases::graph_text;
using gen_cases::GraphCase;
using gen_cases::attention_step_cases;
using gen_cases::cublaslt_cases;
using gen_cases::data_parallel_cases;
using gen_cases::half_cases;
using gen_cases::loss_scale_cases;
using gen_cases::parse;
using gen_cases::suite_cases;
using gen_cases::training_cases;
using gen_cases::vector_cases;
using gen_cases::vocab_cases;

/// CTC (frontend/losses.h) in one graph: each sample's loss and the gradient w.r.t. the
/// logits before log_softmax, so the alpha loop and its reverse. The seeded targets and
/// lengths are in [0, 2]: short inputs, and alignments that cannot fit (0 with
/// zero_infinity).
Graph ctc_loss_and_gradient() {
  const std::vector<std::string> extras = {"targets", "input_lengths", "target_lengths"};
  StatusOr<Model> m =
      FlowBuilder::from(LogSoftmax(-1)).input(extras)
          .through(CTCLoss({.reduction = Reduction::None, .zero_infinity = true})).uses(extras)
          .build({{"x", f32({6, 4, 5})}, {"targets", i64({4, 3})}, {"input_lengths", i64({4})},
                  {"target_lengths", i64({4})}});
  WEFT_CHECK(m.ok(), m.ok() ? "" : m.error().to_string());
  Graph g = m->graph();
  const ValueId loss = g.outputs()[0];
  const ValueId seed = g.add_input("seed", g.type(loss));
  StatusOr<std::vector<ValueId>> grads = append_gradients(g, loss, {g.inputs()[0].value}, seed);
  WEFT_CHECK(grads.ok(), grads.ok() ? "" : grads.error().to_string());
  g.set_outputs({loss, (*grads)[0]});
  g.set_declared_output_types({});
  return g;
}

/// #28: two loops with early exits whose skipped slots hold NaN (a reversed loop that
/// runs where %on is, whose ys' cotangent is NaN there too) and inf (a loop that stops
/// after two of four iterations), and the gradients of the weight and bias they share:
/// masked on the GPU, every slot runs, and the terms formed after the loops must still
/// read zeros in the skipped ones (autodiff/testdata/skipped_slots holds the same loops).
Graph skipped_slots_gradient() {
  Graph g = parse(graph_text("skipped_slots",
      "%w: f32[3,3] {param}, %b: f32[3] {param}, %h0: f32[2,3], %xs_in: f32[4,2,3], %on: bool[4]", R"(
  %z = full() {shape=[], value=0, dtype=f32}
  %one = full() {shape=[], value=1, dtype=f32}
  %nan = div(%z, %z)
  %inf = div(%one, %z)
  %keep = reshape(%on) {shape=[4,1,1]}
  %xa = select(%keep, %xs_in, %nan)
  %h, %ys = scan(%w, %b, %h0, %xa, %on) {consts=2, carries=1, length=4, active=1, reverse=true} : f32[2,3], f32[4,2,3] ({
    ^cell(%cw: f32[3,3], %cb: f32[3], %ch: f32[2,3], %cx: f32[2,3], %co: bool[]):
      %m = matmul(%cx, %cw) : f32[2,3]
      %s = add(%m, %cb) : f32[2,3]
      %p = add(%s, %ch) : f32[2,3]
      %n = tanh(%p) : f32[2,3]
      return %n, %s
  })
  %t = iota() {shape=[4,1,1], axis=0, dtype=f32}
  %two = full() {shape=[], value=2, dtype=f32}
  %ran = lt(%t, %two)
  %xb = select(%ran, %xs_in, %inf)
  %k0 = full() {shape=[], value=0, dtype=f32}
  %d0 = full() {shape=[], value=0, dtype=bool}
  %h2, %k, %d, %zs = scan(%w, %h, %k0, %d0, %xb) {consts=1, carries=3, length=4, stop=2} : f32[2,3], f32[], bool[], f32[4,2,3] ({
    ^stop(%sw: f32[3,3], %sh: f32[2,3], %sk: f32[], %sd: bool[], %sx: f32[2,3]):
      %sm = matmul(%sx, %sw) : f32[2,3]
      %sa = add(%sm, %sh) : f32[2,3]
      %sn = tanh(%sa) : f32[2,3]
      %inc = full() {shape=[], value=1, dtype=f32} : f32[]
      %k2 = add(%sk, %inc) : f32[]
      %lim = full() {shape=[], value=2, dtype=f32} : f32[]
      %d2 = ge(%k2, %lim) : bool[]
      return %sn, %k2, %d2, %sn
  })
  %sq = mul(%ys, %ys)
  %r = sqrt(%sq)
  %l1 = sum(%r)
  %zz = mul(%zs, %zs)
  %l2 = sum(%zz)
  %hh = mul(%h2, %h2)
  %l3 = sum(%hh)
  %l12 = add(%l1, %l2)
  %loss = add(%l12, %l3)
)", "%loss"));
  const ValueId loss = g.outputs()[0];
  const ValueId seed = g.add_input("seed", g.type(loss));
  StatusOr<std::vector<ValueId>> grads =
      append_gradients(g, loss, {g.inputs()[0].value, g.inputs()[1].value}, seed);
  WEFT_CHECK(grads.ok(), grads.ok() ? "" : grads.error().to_string());
  g.set_outputs({loss, (*grads)[0], (*grads)[1]});
  g.set_declared_output_types({});
  return g;
}

/// One graph per elementwise op and dtype the GPU emitter fuses, over a row-broadcast
/// operand; library ops that run through cuBLAS or fall back to the host; a GEMM with
/// its epilogue; each convolution (cuDNN) and pooling (pool.cu) op.
std::vector<GraphCase> op_cases() {
  std::vector<GraphCase> cases;
  auto add = [&](const std::string& name, const std::string& inputs, const std::string& body,
                 const std::string& outs) {
    cases.push_back({name, parse(graph_text(name, inputs, body, outs))});
  };
  // Unary float ops on x and on |x| + 0.01 (the domain of log, sqrt, ...), fused with
  // abs and add into one kernel; the constant is a library op.
  for (const char* op : {"neg", "abs", "exp", "log", "log1p", "sqrt", "rsqrt", "tanh", "sigmoid",
                         "relu", "sin", "cos", "erf", "sign", "floor"}) {
    for (const char* d : {"f32", "f64"}) {
      add(std::string(op) + "_" + d, std::string("%x: ") + d + "[6,37]",
          std::string("  %c = full() {shape=[], value=0.01, dtype=") + d + "}\n" +
              "  %a = abs(%x)\n  %p = add(%a, %c)\n  %y = " + op + "(%p)\n  %z = " + op +
              "(%x)\n",
          "%y, %z");
    }
  }
  for (const char* mode : {"none", "tanh"}) {
    add(std::string("gelu_") + mode, "%x: f32[6,37]",
        std::string("  %y = gelu(%x) {approximate=\"") + mode + "\"}\n", "%y");
  }
  for (const char* op : {"add", "sub", "mul", "div", "pow", "maximum", "minimum", "eq", "ne",
                         "lt", "le", "gt", "ge"}) {
    for (const char* d : {"f32", "f64", "i32", "i64"}) {
      const std::string o(op);
      if ((o == "div" || o == "pow") && d[0] == 'i') continue;
      add(o + "_" + d, std::string("%x: ") + d + "[6,37], %y: " + d + "[37]",
          "  %z = " + o + "(%x, %y)\n", "%z");
    }
  }
  add("bool_ops", "%a: bool[6,37], %b: bool[37], %x: f32[6,37], %y: f32[6,37]",
      "  %n = not(%a)\n  %o = or(%n, %b)\n  %c = and(%o, %a)\n  %s = select(%c, %x, %y)\n",
      "%s, %c");
  add("casts", "%x: f32[6,37], %i: i32[6,37]",
      "  %a = cast(%x) {dtype=i32}\n  %b = cast(%i) {dtype=f32}\n  %c = cast(%x) {dtype=u8}\n"
      "  %d = cast(%x) {dtype=bool}\n  %e = cast(%d) {dtype=f32}\n  %f = cast(%x) {dtype=f64}\n",
      "%a, %b, %c, %e, %f");
  add("int_unary", "%x: i32[6,37]", "  %a = neg(%x)\n  %b = abs(%a)\n  %c = sign(%x)\n  %d = relu(%x)\n",
      "%b, %c, %d");
  // Library ops: cuBLAS GEMMs (each transpose), batched and broadcast; host fallbacks.
  add("matmul", "%a: f32[48,64], %b: f32[64,40]", "  %c = matmul(%a, %b)\n", "%c");
  add("matmul_ta", "%a: f32[64,48], %b: f32[64,40]",
      "  %c = matmul(%a, %b) {transpose_a=true}\n", "%c");
  add("matmul_tb", "%a: f32[48,64], %b: f32[40,64]",
      "  %c = matmul(%a, %b) {transpose_b=true}\n", "%c");
  add("matmul_tab", "%a: f32[64,48], %b: f32[40,64]",
      "  %c = matmul(%a, %b) {transpose_a=true, transpose_b=true}\n", "%c");
  add("matmul_f64", "%a: f64[17,33], %b: f64[33,9]", "  %c = matmul(%a, %b)\n", "%c");
  add("matmul_batched", "%a: f32[3,16,24], %b: f32[3,24,8]", "  %c = matmul(%a, %b)\n", "%c");
  add("matmul_broadcast", "%a: f32[3,16,24], %b: f32[24,8]", "  %c = matmul(%a, %b)\n", "%c");
  add("gemm_epilogue", "%x: f32[32,48], %w: f32[48,24], %b: f32[24], %r: f32[32,24]",
      "  %m = matmul(%x, %w)\n  %s = add(%m, %b)\n  %t = relu(%s)\n  %u = add(%t, %r)\n", "%u");
  // Reductions and row kernels (one GPU thread per output element or row).
  add("softmax_sum", "%x: f32[6,37]",
      "  %s = softmax(%x) {axis=-1}\n  %t = sum(%x) {axes=[1]}\n  %e = exp(%s)\n", "%e, %t");
  add("log_softmax_mean", "%x: f32[20,10]",
      "  %s = log_softmax(%x) {axis=-1}\n  %m = mean(%s) {axes=[0, 1]}\n", "%s, %m");
  add("layer_norm", "%x: f32[12,48], %g: f32[48], %b: f32[48]",
      "  %y = layer_norm(%x, %g, %b) {axes=[-1], eps=1e-5}\n", "%y");
  add("column_sum_max", "%x: f32[64,24], %y: f32[64,24]",
      "  %m = mul(%x, %y)\n  %s = sum(%m) {axes=[0]}\n  %t = max(%x) {axes=[0]}\n"
      "  %u = min(%y) {axes=[1], keepdims=true}\n", "%s, %t, %u");
  add("sum_f64", "%x: f64[5,7,9]", "  %s = sum(%x) {axes=[0, 2]}\n", "%s");
  // Long rows: one warp per row (emit_gpu.h), f32 and f64, with a ragged last stride.
  add("softmax_long_rows", "%x: f32[9,1000]", "  %s = softmax(%x) {axis=-1}\n", "%s");
  add("log_softmax_f64_rows", "%x: f64[4,333]", "  %s = log_softmax(%x) {axis=-1}\n", "%s");
  add("full_sum_long", "%x: f32[300,257]", "  %s = sum(%x)\n", "%s");
  add("row_max_f64", "%x: f64[10,100]", "  %s = max(%x) {axes=[1]}\n", "%s");
  add("mean_outer_and_inner", "%x: f32[4,5,64]", "  %s = mean(%x) {axes=[0, 2]}\n", "%s");
  // Few long rows: a 256-thread block per row (statistics of a batch norm, a softmax
  // over 20,000, f64 maxima), the warps combined through shared memory.
  add("bn_stats_block", "%x: f32[16,8,40,40]",
      "  %s = sum(%x) {axes=[0, 2, 3]}\n  %m = mean(%x) {axes=[0, 2, 3], keepdims=true}\n", "%s, %m");
  add("softmax_block_rows", "%x: f32[3,20000]", "  %s = softmax(%x) {axis=-1}\n", "%s");
  add("max_block_f64", "%x: f64[8,4,4096]", "  %s = max(%x) {axes=[0, 2]}\n", "%s");
  // Column reductions over 64 rows or more: 32 columns a block, rows over 8 warps (a
  // ragged last block of columns, f64 maxima, two reduced outer dims).
  add("column_sum_groups", "%x: f32[300,70]", "  %s = sum(%x) {axes=[0]}\n", "%s");
  add("column_max_f64_groups", "%x: f64[100,33]", "  %s = max(%x) {axes=[0]}\n", "%s");
  add("column_mean_two_axes", "%x: f32[8,20,45]", "  %s = mean(%x) {axes=[0, 1]}\n", "%s");
  add("layer_norm_768", "%x: f32[6,768], %g: f32[768], %b: f32[768]",
      "  %y = layer_norm(%x, %g, %b) {axes=[-1], eps=1e-5}\n", "%y");
  // weft's CUDA library kernels (runtime/cuda/library_kernels.cu): movement, indexing,
  // cross-entropy and random ops. Integer inputs are in [0, 2] (case_inputs.h).
  add("transpose_3d", "%x: f32[4,6,5]", "  %y = transpose(%x) {perm=[2, 0, 1]}\n", "%y");
  add("transpose_f64_2d", "%x: f64[33,17]", "  %y = transpose(%x) {perm=[1, 0]}\n", "%y");
  add("broadcast_to", "%x: f32[6,1]", "  %y = broadcast_to(%x) {shape=[3, 6, 5]}\n", "%y");
  add("slice_step", "%x: f32[9,12]",
      "  %y = slice(%x) {start=[1, -10], stop=[8, 12], step=[3, 2]}\n", "%y");
  add("pad_value", "%x: i32[3,4]", "  %y = pad(%x) {low=[1, 0], high=[2, 3], value=7.0}\n", "%y");
  add("concat_axis1", "%a: f32[3,2,4], %b: f32[3,5,4], %c: f32[3,1,4]",
      "  %y = concat(%a, %b, %c) {axis=1}\n", "%y");
  add("gather_rows", "%x: f32[3,5], %i: i64[7]", "  %y = gather(%x, %i) {axis=0}\n", "%y");
  add("gather_axis1_f64", "%x: f64[4,3,6], %i: i64[5]", "  %y = gather(%x, %i) {axis=1}\n", "%y");
  add("scatter_add_rows", "%b: f32[3,4], %i: i64[9], %s: f32[9,4]",
      "  %y = scatter_add(%b, %i, %s) {axis=0}\n", "%y");
  add("one_hot", "%i: i64[11]", "  %y = one_hot(%i) {depth=4, dtype=f32}\n", "%y");
  for (const char* r : {"mean", "sum", "none"}) {
    add(std::string("cross_entropy_") + r, "%x: f32[37,10], %l: i64[37]",
        std::string("  %y = cross_entropy(%x, %l) {reduction=\"") + r + "\"}\n", "%y");
  }
  add("cross_entropy_f64_wide", "%x: f64[5,300], %l: i64[5]",
      "  %y = cross_entropy(%x, %l) {reduction=\"mean\"}\n", "%y");
  for (const char* r : {"mean", "sum", "none"}) {
    add(std::string("mse_") + r, "%a: f32[300,257], %b: f32[300,257]",
        std::string("  %y = mse(%a, %b) {reduction=\"") + r + "\"}\n", "%y");
  }
  add("mse_f64_small", "%a: f64[7], %b: f64[7]", "  %y = mse(%a, %b) {reduction=\"mean\"}\n", "%y");
  add("random_ops", "%k: i64[2]",
      "  %u = random_uniform(%k) {shape=[7, 9], dtype=f32}\n"
      "  %v = random_uniform(%k) {shape=[5], dtype=f64}\n"
      "  %b = random_bernoulli(%k) {shape=[6, 8], p=0.3, dtype=f32}\n", "%u, %v, %b");
  add("pow_scalar_f64", "%b: f64[], %t: f64[]", "  %y = pow(%b, %t)\n", "%y");
  // #31: a gated cell's windows (passes/fold_slices.h): three column windows of one
  // [3,120] value and a one-column window of a [3,5] broadcast along the row, all read in
  // place by one generated kernel (offsets 0, 40, 80 and 2): no slice runs.
  add("gate_windows", "%g: f32[3,120], %c: f32[3,40], %k: f32[3,5]",
      "  %i = slice(%g) {start=[0,0], stop=[3,40]}\n  %f = slice(%g) {start=[0,40], stop=[3,80]}\n"
      "  %o = slice(%g) {start=[0,80], stop=[3,120]}\n  %s = slice(%k) {start=[0,2], stop=[3,3]}\n"
      "  %si = sigmoid(%i)\n  %sf = sigmoid(%f)\n  %to = tanh(%o)\n  %m = mul(%sf, %c)\n"
      "  %n = mul(%si, %s)\n  %c2 = add(%m, %n)\n  %h = mul(%to, %c2)\n", "%c2, %h");
  // #31: a concat's parts stored in place (passes/fold_concats.h): the tanh kernel and
  // the product's each write their [4,40] window of %c (columns 0 and 40: the stores'
  // offsets and row stride 80); no concat runs.
  add("stored_concat", "%x: f32[4,40], %y: f32[4,40], %w: f32[80,8]",
      "  %a = tanh(%x)\n  %p = mul(%x, %y)\n  %q = sum(%p) {axes=[1]}\n  %b = neg(%p)\n"
      "  %c = concat(%a, %b) {axis=1}\n  %m = matmul(%c, %w)\n", "%m, %q, %c");
  // The same in a loop, the concat a ys bound to its slot (tests/testing/loop_graphs.h;
  // codegen:loop_slots_test runs the same graph on the cpu).
  cases.push_back({"scan_stored_concat", parse(testing::kScanStoredConcatGraph)});
  // Loops (scan: one loop invocation over a body Program): a recurrent cell forward, a
  // reverse loop without xs; two carries swapped (staged) around a nested loop.
  cases.push_back({"scan_rnn_reverse", parse(R"(graph @scan_rnn_reverse(%w: f32[8,8], %h0: f32[4,8], %xs: f32[6,4,8]) {
  %h, %ys = scan(%w, %h0, %xs) {carries=1, consts=1, length=6} : f32[4,8], f32[6,4,8] ({
    ^cell(%cw: f32[8,8], %ch: f32[4,8], %cx: f32[4,8]):
      %m = matmul(%ch, %cw) : f32[4,8]
      %a = add(%m, %cx) : f32[4,8]
      %n = tanh(%a) : f32[4,8]
      %y = mul(%n, %cx) : f32[4,8]
      return %n, %y
  })
  %back = scan(%w, %h) {carries=1, consts=1, length=3, reverse=true} : f32[4,8] ({
    ^again(%bw: f32[8,8], %bh: f32[4,8]):
      %bm = matmul(%bh, %bw) : f32[4,8]
      %bs = sin(%bm) : f32[4,8]
      return %bs
  })
  return %h, %ys, %back
}
)")});
  cases.push_back({"scan_swapped_nested", parse(R"(graph @scan_swapped_nested(%w: f32[5,5], %a0: f32[3,5], %b0: f32[3,5], %xs: f32[4,3,5]) {
  %a, %b, %ys = scan(%w, %a0, %b0, %xs) {carries=2, consts=1, length=4} : f32[3,5], f32[3,5], f32[4,3,5] ({
    ^outer(%ow: f32[5,5], %oa: f32[3,5], %ob: f32[3,5], %ox: f32[3,5]):
      %in = scan(%ow, %oa) {carries=1, consts=1, length=2} : f32[3,5] ({
        ^inner(%iw: f32[5,5], %ih: f32[3,5]):
          %im = matmul(%ih, %iw) : f32[3,5]
          %it = tanh(%im) : f32[3,5]
          return %it
      })
      %s = add(%in, %ox) : f32[3,5]
      return %ob, %s, %s
  })
  return %a, %b, %ys
}
)")});
  // #31: ys written in their slots, a carry chained and one shifted, then a reversed loop
  // (tests/testing/loop_graphs.h; codegen:loop_slots_test runs the same graph on the cpu).
  cases.push_back({"scan_slots", parse(testing::kScanSlotsGraph)});
  // Early exits, masked on the GPU (mask-loop-exits): a loop that stops after two of five
  // iterations, and one that runs where %on says; the interpreter really stops and skips.
  cases.push_back({"scan_exits", parse(R"(graph @scan_exits(%w: f32[4,4], %h0: f32[3,4], %xs: f32[5,3,4], %on: bool[5]) {
  %k0 = full() {shape=[], value=0, dtype=f32} : f32[]
  %d0 = full() {shape=[], value=0, dtype=bool} : bool[]
  %h, %k, %d, %ys = scan(%w, %h0, %k0, %d0, %xs) {carries=3, consts=1, length=5, stop=2} : f32[3,4], f32[], bool[], f32[5,3,4] ({
    ^cell(%cw: f32[4,4], %ch: f32[3,4], %ck: f32[], %cd: bool[], %cx: f32[3,4]):
      %m = matmul(%ch, %cw) : f32[3,4]
      %s = add(%m, %cx) : f32[3,4]
      %n = tanh(%s) : f32[3,4]
      %one = full() {shape=[], value=1, dtype=f32} : f32[]
      %k2 = add(%ck, %one) : f32[]
      %two = full() {shape=[], value=2, dtype=f32} : f32[]
      %d2 = ge(%k2, %two) : bool[]
      return %n, %k2, %d2, %n
  })
  %g, %zs = scan(%h, %xs, %on) {carries=1, length=5, active=1} : f32[3,4], f32[5,3,4] ({
    ^masked(%gh: f32[3,4], %gx: f32[3,4], %go: bool[]):
      %c = cos(%gh) : f32[3,4]
      %g2 = mul(%c, %gx) : f32[3,4]
      return %g2, %g2
  })
  return %h, %ys, %k, %g, %zs
}
)")});
  // A gather in a loop's body: its index checked on the device, reported from inside.
  cases.push_back({"scan_gather", parse(R"(graph @scan_gather(%t: f32[3,4], %h0: f32[2,4], %idx: i64[5,2]) {
  %h = scan(%t, %h0, %idx) {carries=1, consts=1, length=5} : f32[2,4] ({
    ^rows(%gt: f32[3,4], %gh: f32[2,4], %gi: i64[2]):
      %r = gather(%gt, %gi) {axis=0} : f32[2,4]
      %n = add(%gh, %r) : f32[2,4]
      return %n
  })
  return %h
}
)")});
  cases.push_back({"ctc_loss_and_gradient", ctc_loss_and_gradient()});
  cases.push_back({"skipped_slots_gradient", skipped_slots_gradient()});
  // Convolutions (cuDNN) and poolings (pool.cu): each op with strides, padding, and for
  // the convolutions groups and dilation.
  const std::string conv = "stride=[2, 2], padding=[1, 1], groups=2";
  add("conv2d_grouped", "%x: f32[2,4,9,9], %w: f32[6,2,3,3]",
      "  %y = conv(%x, %w) {" + conv + "}\n", "%y");
  add("conv2d_dilated_f64", "%x: f64[1,3,10,9], %w: f64[4,3,3,2]",
      "  %y = conv(%x, %w) {padding=[2, 1], dilation=[2, 2]}\n", "%y");
  add("conv_backward_input", "%g: f32[2,6,5,5], %w: f32[6,2,3,3]",
      "  %d = conv_backward_input(%g, %w) {input_shape=[2, 4, 9, 9], " + conv + "}\n", "%d");
  add("conv_backward_weight", "%x: f32[2,4,9,9], %g: f32[2,6,5,5]",
      "  %d = conv_backward_weight(%x, %g) {weight_shape=[6, 2, 3, 3], " + conv + "}\n", "%d");
  // Over three spatial dims (cuDNN's Nd descriptors, 5-D) and over one (a 4-D plan of
  // height 1): the forward and both gradients.
  const std::string volume = "stride=[1, 2, 2], padding=[1, 0, 1], dilation=[2, 1, 1], groups=2";
  add("conv3d", "%x: f32[2,4,6,7,7], %w: f32[6,2,3,3,2]",
      "  %y = conv(%x, %w) {" + volume + "}\n", "%y");
  add("conv3d_backward_input", "%g: f32[2,6,4,3,4], %w: f32[6,2,3,3,2]",
      "  %d = conv_backward_input(%g, %w) {input_shape=[2, 4, 6, 7, 7], " + volume + "}\n",
      "%d");
  add("conv3d_backward_weight_f64", "%x: f64[2,4,6,7,7], %g: f64[2,6,4,3,4]",
      "  %d = conv_backward_weight(%x, %g) {weight_shape=[6, 2, 3, 3, 2], " + volume + "}\n",
      "%d");
  add("conv1d", "%x: f32[3,4,20], %w: f32[6,2,3]",
      "  %y = conv(%x, %w) {stride=[2], padding=[1], dilation=[2], groups=2}\n", "%y");
  const std::string pool = "kernel=[3, 2], stride=[2, 2], padding=[1, 0]";
  add("max_pool2d", "%x: f32[2,3,9,8]", "  %y = max_pool2d(%x) {" + pool + "}\n", "%y");
  add("avg_pool2d_f64", "%x: f64[2,3,9,8]", "  %y = avg_pool2d(%x) {" + pool + "}\n", "%y");
  add("max_pool2d_backward", "%x: f32[2,3,9,8], %g: f32[2,3,5,4]",
      "  %d = max_pool2d_backward(%x, %g) {" + pool + "}\n", "%d");
  add("avg_pool2d_backward", "%g: f32[2,3,5,4]",
      "  %d = avg_pool2d_backward(%g) {input_shape=[2, 3, 9, 8], " + pool + "}\n", "%d");
  add("max_pool2d_select", "%x: f32[2,3,9,8], %g: f32[2,3,9,8]",
      "  %y = max_pool2d_select(%x, %g) {" + pool + "}\n", "%y");
  // attention and its three gradients (#31): causal, padded (keys from `pad` on masked,
  // by a mask broadcast over heads and rows), both, odd lengths, Sq != Sk, head_dim 32 and
  // 64. The CUDA lowering runs the f32 ones on the attention kernels (forward and
  // FlashAttention-2's backward) and decomposes the f64 one (GEMMs and row kernels).
  auto attention = [&](const std::string& name, const char* d, int64_t sq, int64_t sk,
                       int64_t dim, bool causal, int64_t pad) {
    auto shape = [&](int64_t rows, int64_t cols) {
      return std::string(d) + "[2,2," + std::to_string(rows) + "," + std::to_string(cols) + "]";
    };
    const std::string inputs = "%q: " + shape(sq, dim) + ", %k: " + shape(sk, dim) + ", %v: " +
                               shape(sk, dim) + ", %dy: " + shape(sq, dim);
    std::string body, mask;
    if (pad > 0) {
      body = "  %i = iota() {shape=[2, 1, 1, " + std::to_string(sk) + "], axis=3}\n" +
             "  %n = full() {shape=[], value=" + std::to_string(pad) + ", dtype=i64}\n" +
             "  %m = ge(%i, %n)\n";
      mask = ", %m";
    }
    const std::string attrs = std::string("scale=") + std::to_string(1.0 / std::sqrt(double(dim))) +
                              ", causal=" + (causal ? "true" : "false");
    body += "  %y = attention(%q, %k, %v" + mask + ") {" + attrs + "}\n";
    body += "  %dq, %dk, %dv = attention_grad(%q, %k, %v, %y, %dy" + mask + ") {" + attrs + "}\n";
    add(name, inputs, body, "%y, %dq, %dk, %dv");
  };
  attention("attention_causal_d32", "f32", 13, 13, 32, /*causal=*/true, /*pad=*/0);
  attention("attention_padded_d64", "f32", 11, 11, 64, false, 7);
  attention("attention_causal_padded_odd_d32", "f32", 9, 9, 32, true, 5);
  attention("attention_cross_padded_f64_d64", "f64", 5, 7, 64, false, 3);
  return cases;
}

std::string cpp_string(const std::string& s) {
  // A raw string literal split into pieces (GCC accepts long ones; the split keeps lines
  // of the generated file readable and well under any literal limit).
  std::string out;
  for (size_t i = 0; i < s.size(); i += 16000) {
    out += "R\"WEFT(" + s.substr(i, 16000) + ")WEFT\"\n";
  }
  return out.empty() ? "\"\"" : out;
}

int run(const std::string& out_path, bool suite, DType precision, bool vocab) {
  std::vector<GraphCase> cases = vocab ? vocab_cases() : suite ? suite_cases(precision) : op_cases();
  if (!suite && !vocab) {
    for (GraphCase& c : training_cases()) cases.push_back(std::move(c));
    for (GraphCase& c : half_cases()) cases.push_back(std::move(c));
    for (GraphCase& c : data_parallel_cases()) cases.push_back(std::move(c));
    for (GraphCase& c : vector_cases()) cases.push_back(std::move(c));
    for (GraphCase& c : cublaslt_cases()) cases.push_back(std::move(c));
    for (GraphCase& c : attention_step_cases()) cases.push_back(std::move(c));
    for (GraphCase& c : loss_scale_cases()) cases.push_back(std::move(c));
  }
  std::ostringstream os;
  os << "// Generated by tests/cuda/gen_cases_main.cc. Do not edit.\n"
     << "#include <cstdint>\n#include <limits>\n#include <vector>\n\n"
     << "#include \"runtime/program_tables.h\"\n#include \"tests/cuda/cases.h\"\n\n";
  std::ostringstream table;
  for (size_t i = 0; i < cases.size(); ++i) {
    const GraphCase& c = cases[i];
    codegen::LowerOptions options = codegen::cuda_lower_options();
    options.unroll_loops = c.unroll;
    if (c.decompose_attention_grad) setenv(cuda::kAttentionGradSwitch, "0", /*overwrite=*/1);
    StatusOr<codegen::CudaProgram> p = codegen::compile_cuda_program(c.graph, options);
    unsetenv(cuda::kAttentionGradSwitch);
    if (!p.ok()) {
      std::fprintf(stderr, "gen_cases: %s: %s\n", c.name.c_str(), p.error().to_string().c_str());
      return 1;
    }
    const std::string ns = "case_" + std::to_string(i);
    std::string src = codegen::program_to_cpp(p->program, ns, /*host_kernels=*/false);
    std::istringstream lines(src);
    os << "namespace " << ns << " {\n";
    for (std::string line; std::getline(lines, line);) {
      if (line.rfind("#include", 0) != 0) os << line << "\n";
    }
    os << "}  // namespace " << ns << "\n\n";
    table << "      {\"" << c.name << "\",\n" << cpp_string(print_graph(c.graph)) << ",\n"
          << "       &" << ns << "::" << ns << "_program,\n" << cpp_string(p->ptx) << ",\n       {";
    for (size_t k = 0; k < p->symbols.size(); ++k) table << (k ? ", " : "") << "\"" << p->symbols[k] << "\"";
    table << "}, " << c.steps << "},\n";
  }
  os << "namespace weft::cuda_cases {\n\nconst std::vector<Case>& all_cases() {\n"
     << "  static const std::vector<Case> cases = {\n" << table.str() << "  };\n  return cases;\n}\n\n"
     << "}  // namespace weft::cuda_cases\n";
  std::ofstream out(out_path);
  out << os.str();
  if (!out) {
    std::fprintf(stderr, "gen_cases: cannot write %s\n", out_path.c_str());
    return 1;
  }
  return 0;
}

}  // namespace
}  // namespace weft

int main(int argc, char** argv) {
  const std::string flag = argc == 3 ? argv[1] : "";
  const bool suite = flag == "--suite" || flag == "--suite-bf16";
  // --vocab: only vocab_cases(); --vocab-scalar: the same with one element per access
  // (the before-vectorization twin).
  const bool vocab = flag == "--vocab" || flag == "--vocab-scalar";
  if (argc != 2 && !suite && !vocab) {
    std::fprintf(stderr, "usage: gen_cases [--suite|--suite-bf16|--vocab|--vocab-scalar] OUT.cc\n");
    return 2;
  }
  if (flag == "--vocab-scalar") setenv("WEFT_GPU_VECTOR", "0", /*overwrite=*/1);  // codegen/emit_gpu.h
  return weft::run(argv[argc - 1], suite,
                   flag == "--suite-bf16" ? weft::DType::bf16 : weft::DType::f32, vocab);
}
