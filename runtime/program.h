#pragma once
// The Program: what the CPU runtime executes (DESIGN.md, "The flow of data"). codegen/
// lowers a fused, scheduled, planned graph into one; runtime/cpu runs it. It is plain
// data — a flat list of kernel invocations whose buffers are fixed at compile time — so
// it can be printed, and (for AOT) written out as C++ source.
//
//   program @mlp_step  arena 1.2 MiB (bound 1.2 MiB, naive 3.4 MiB)
//     inputs: %x f32[128,784] data @in0, %w1 f32[784,256] param @in1, ...
//     0  matmul         arena+0 f32[128,256]      <- in0 f32[128,784], in1 f32[784,256]
//     1  generated k0   arena+131072 f32[128,256] <- arena+0, in2
//     ...
//     updates: in1 <- arena+..., ...
//     outputs: arena+4096 f32[]
//
// Buffers. Every graph input has its own buffer owned by the runtime (`Space::input`,
// indexed like Graph::inputs()); every intermediate lives at a fixed offset in one arena
// (`Space::arena`, from passes/memory_plan.h). The input buffers are themselves one
// block, the *inputs block*: input i starts `input_offsets[i]` bytes into it (a multiple
// of 64), in an order the lowering chooses, so that the parameters (or the optimizer
// states) of one merged update lie back to back and one kernel can walk them as a single
// flat range (passes/merge_updates.h). A BufferRef in the input space whose type is
// larger than its input's own (`in1 f32[4096]`) is such a range: it starts at the input
// and runs on through the inputs laid out after it. A view (a reshape of a buffer that dies
// there) shares its operand's bytes. Updates (`assign`) are applied after the last
// invocation, so every invocation of a step reads the old parameters.
//
// Loops. A `loop` invocation runs a body Program (`Program::bodies[body]`: inputs, arena,
// code and outputs of its own, lowered from a `scan` node's body) `length` times
// (node attributes, ir/ops.def): its operands are the scan's consts, initial carries and
// xs, its results the last carries and the stacked ys. Iteration i reads slot i of each
// xs and writes its per-iteration outputs into slot i of the stacked results; its next
// carries are the next iteration's carries. How the executors bind that — the body once
// per slot, reading the xs and writing the ys in place, carries kept in a ys's slots
// where they can, copying the rest — is runtime/loop_slots.h's, not the Program's: a
// loop's Program does not grow with its length, and says nothing of slots. Bodies share
// the root Program's kernels (a body listed alone names them by index), and a loop inside
// a body names another entry of the root's `bodies` (the list is flat).
//
// Generated kernels share one calling convention, `GeneratedFn`: buffers[] holds the
// kernel's operand pointers then its result pointers, and the call computes rows
// [row_begin, row_end) of its iteration space (`rows` rows of `row_length` elements of
// the result, row-major), so the runtime splits the rows over its threads.

#include <cstdint>
#include <string>
#include <vector>

#include "ir/fused_kind.h"
#include "ir/graph.h"

namespace weft {

/// The ABI of every generated kernel (JIT or AOT object code).
using GeneratedFn = void (*)(void* const* buffers, int64_t row_begin, int64_t row_end);

enum class Space : uint8_t { input, arena };

/// One buffer operand of an invocation.
struct BufferRef {
  Space space = Space::arena;
  int32_t input = -1;   ///< Space::input: index into Program::inputs.
  int64_t offset = 0;   ///< Space::arena: byte offset in the arena.
  Type type;

  bool operator==(const BufferRef& o) const {
    return space == o.space && input == o.input && offset == o.offset;
  }
  std::string to_string() const;  ///< "in3 f32[4]" or "arena+128 f32[4]".
};

struct ProgramInput {
  std::string name;
  Type type;
  InputKind kind = InputKind::data;
};

/// A kernel generated for a fused group: its structure key (identical keys compile
/// once), its body as printable IR, and the shape of its iteration space.
struct GeneratedKernel {
  std::string name;     ///< "k0", "k1", ... (the symbol of AOT object code).
  std::string key;      ///< Canonical text of the body with its types.
  Graph body;           ///< Operands are the body's inputs, results its outputs.
  /// The kernel's form, from the fused node it came from (codegen dispatches on it):
  /// elementwise, reduction or row; a contraction's kernel is its elementwise epilogue.
  FusedKind kind = FusedKind::elementwise;
  int64_t rows = 0;
  int64_t row_length = 0;
};

/// A `contraction` invocation is a GEMM with a generated epilogue (a fused node of kind
/// "contraction"): `node` is the matmul (op, transposes, location), its A and B are
/// operands[0] and [1], and it writes C into results[gemm_result]; then kernel `kernel`
/// runs on C's elements with buffers = C, operands[2...], then every result except
/// results[gemm_result] when gemm_result > 0. With gemm_result == 0, C is not a value
/// of the graph: it is computed in results[0]'s buffer, which the epilogue overwrites in
/// place. The runtime applies the epilogue to each block of C's rows right after the
/// block's GEMM (runtime/cpu/kernel.h, make_gemm_epilogue_kernel).
struct Invocation {
  enum class Kind : uint8_t { library, generated, copy, contraction, loop };
  Kind kind = Kind::library;
  Node node;                         ///< library, contraction: the op, attributes, location.
  int kernel = -1;                   ///< generated, contraction: index into Program::kernels.
  int gemm_result = 0;               ///< contraction: where C goes (see above).
  std::vector<BufferRef> operands;
  std::vector<BufferRef> results;
  std::string label;                 ///< The graph value it computes (for dumps).
  /// generated: arena bytes zeroed just before the kernel runs (`u8[n]` ranges): the
  /// alignment padding inside the flat gradient ranges of a merged update, which other
  /// intermediates may have used earlier in the step (passes/merge_updates.h).
  std::vector<BufferRef> clear;
  int body = -1;                     ///< loop: index into the root Program's `bodies`.
};

/// What an invocation is, for messages and dumps: "library matmul" (the op), "generated",
/// "contraction", "copy" or "loop".
std::string invocation_kind(const Invocation& inv);

/// An `assign`: after the step, input `input` takes the bytes of `from`.
struct Update {
  int32_t input = -1;
  BufferRef from;
};

struct Program {
  std::string name;
  std::vector<ProgramInput> inputs;
  /// Byte offset of each input in the inputs block (see the top of this file), indexed
  /// like `inputs`; empty: every input in index order, each at the next multiple of 64
  /// (lay_out_inputs_in_order).
  std::vector<int64_t> input_offsets;
  /// Bytes of the inputs block (at least the end of every input and flat range).
  int64_t inputs_bytes = 0;
  std::vector<Invocation> code;
  std::vector<GeneratedKernel> kernels;
  std::vector<Update> updates;
  std::vector<BufferRef> outputs;
  int64_t arena_bytes = 0;
  int64_t naive_bytes = 0;        ///< From the memory plan (every intermediate alone).
  int64_t lower_bound_bytes = 0;  ///< From the memory plan (most bytes live at once).
  /// The loop bodies (see the top of this file); empty in a body itself.
  std::vector<Program> bodies;

  /// The listing shown at the top of this file.
  std::string to_string() const;
};

/// Sets `p.input_offsets` and `p.inputs_bytes` to the default layout: every input in
/// index order, each at the next multiple of 64 bytes.
void lay_out_inputs_in_order(Program& p);

}  // namespace weft
