#pragma once
// Generates fused elementwise kernels through MLIR and JIT-compiles them for the host
// CPU. A kernel is described by a small weft graph, its *body*: graph inputs are the
// kernel's operands, nodes are elementwise ops (NumPy broadcasting between them, as in
// the graph they came from), graph outputs are its results, which all have one shape,
// the iteration space. For example the body of a fused bias + GELU:
//
//   graph @k(%a: f32[128,256], %b: f32[256]) -> (f32[128,256]) {
//     %0 = add(%a, %b) : f32[128,256]
//     %1 = gelu(%0) {approximate="tanh"} : f32[128,256]
//     return %1
//   }
//
// The iteration space is collapsed to rows: adjacent dimensions merge when every operand
// is contiguous (or broadcast) across both, and the last merged dimension is the row
// (here 128 rows of 256). The generated function has the Program ABI
// (runtime/program.h, GeneratedFn): `fn(buffers, row_begin, row_end)` with buffers =
// operands then results. Each row is computed with `vector<W x T>` loads, arithmetic
// and stores emitted directly in MLIR's vector dialect (W = 16 f32 / 8 f64 lanes with
// AVX-512), a broadcast operand being a splat, then a scalar tail;
// math functions use MLIR's polynomial approximations (f32) or libm (f64). Lowering:
// vector/scf/arith/math → LLVM dialect → LLVM IR → host machine code (ExecutionEngine,
// O3, the host CPU's features).
//
//   KernelCompiler& jit = KernelCompiler::global();
//   StatusOr<const CompiledKernel*> k = jit.compile(body);
//   (*k)->fn(buffers, 0, (*k)->rows);
//
// A *reduction body* ends in one sum/mean/max/min (its one output) over a value the
// elementwise nodes compute; its iteration space is the reduction's input shape, and
// each row computes whole output elements (emit_elementwise.h, ReductionSpace), e.g.
//
//   graph @k(%g: f32[512,1024], %y: f32[512,1024]) -> (f32[512]) {
//     %0 = mul(%g, %y) : f32[512,1024]
//     %1 = sum(%0) {axes=[-1]} : f32[512]        // 512 rows of 1024, sums in f64
//     return %1
//   }
//
// A *row body* (fused nodes of kind "row") also consumes its reductions: keepdims
// reductions over the trailing axes of one shape, whose per-row values the elementwise
// nodes broadcast along the row, possibly chained; its outputs have the full or the
// per-row shape. Softmax:
//
//   graph @k(%x: f32[512,64]) -> (f32[512,64]) {
//     %0 = max(%x) {axes=[-1], keepdims=true} : f32[512,1]   // pass 1
//     %1 = sub(%x, %0) : f32[512,64]
//     %2 = exp(%1) : f32[512,64]
//     %3 = sum(%2) {axes=[-1], keepdims=true} : f32[512,1]   // pass 2
//     %4 = div(%2, %3) : f32[512,64]                         // pass 3 stores it
//     return %4
//   }
//
// Each row (512 of 64) is read once per pass; values of full shape are recomputed in
// each pass that needs them, never stored unless they are outputs (emit_rows).
//
// Which of the three forms a body takes is its kind (ir/fused_kind.h FusedKind:
// elementwise, reduction, row), carried from the fused node it came from
// (GeneratedKernel::kind); the compiler dispatches on it and does not re-derive it. A
// body without a node (a test's, a tool's file) has the kind its structure has
// (`standalone_kind`). A contraction's kernel is its elementwise epilogue.
//
// Kernels are cached by structure (`kernel_key`): a second body with the same ops,
// dtypes, shapes and attributes, whatever its value names, returns the first kernel.

#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "ir/fused_kind.h"
#include "ir/graph.h"
#include "ir/status.h"
#include "runtime/program.h"

namespace weft::codegen {

struct CompiledKernel {
  GeneratedFn fn = nullptr;
  int64_t rows = 0;
  int64_t row_length = 0;
  std::string symbol;  ///< The function's name in the JIT module.
};

/// The canonical structural text of a body: value names replaced by position, so two
/// bodies that compute the same thing on the same types have the same key.
std::string kernel_key(const Graph& body);

/// The kind of a kernel body that comes without a fused node (a test's, a tool's file):
/// the one its structure has (body_fused_kind); elementwise when it has none, which
/// compile then refuses with the reason.
FusedKind standalone_kind(const Graph& body);

/// The rows × row_length iteration space of a body of form `kind` (see the top of this
/// file), as the runtime splits it; for a reduction body, rows own disjoint output
/// elements and row_length is the number of elements a row reads.
struct RowLayout {
  int64_t rows = 0;
  int64_t row_length = 0;
};
RowLayout row_layout(const Graph& body, FusedKind kind);
/// The same for a body without a node (standalone_kind).
RowLayout row_layout(const Graph& body);

/// True for a *row body* (see the top of this file): keepdims reductions over the
/// trailing axes of one shape whose per-row values other nodes consume, or several
/// reductions; false for elementwise and reduction bodies. The KernelCompiler and the
/// GPU emitter (emit_gpu.cc) dispatch on the kind instead.
bool is_row_body(const Graph& body);

/// The passes over each row a row body takes: one per level of reductions (a reduction
/// whose input needs another's value comes a pass later), plus the one storing outputs.
int row_passes(const Graph& body);

class KernelCompiler {
 public:
  KernelCompiler();
  ~KernelCompiler();
  KernelCompiler(const KernelCompiler&) = delete;
  KernelCompiler& operator=(const KernelCompiler&) = delete;

  /// The process-wide compiler; its kernels live until the process exits.
  static KernelCompiler& global();

  /// True when `node` of `g` (an elementwise op, or a reduction that would end a body,
  /// with its operand and result types known) can be part of a generated kernel: the
  /// op and its dtypes are supported (reductions: f32/f64 sum, mean, max, min over any
  /// axes). The fuser only groups nodes for which this holds.
  static bool supports(const Graph& g, const Node& node);

  /// The compiled kernel for `body` of form `kind` (cached by kernel_key). Thread-safe.
  /// Errors: a body whose structure is not its kind's, a node that `supports` rejects,
  /// or an MLIR/LLVM failure (with MLIR's diagnostic).
  StatusOr<const CompiledKernel*> compile(const Graph& body, FusedKind kind);
  /// The same for a body without a node (standalone_kind).
  StatusOr<const CompiledKernel*> compile(const Graph& body);

  /// The MLIR module generated for `body` of form `kind`, before lowering (for dumps and
  /// tests); without `kind`, the body's standalone_kind.
  StatusOr<std::string> emit_mlir(const Graph& body, FusedKind kind);
  StatusOr<std::string> emit_mlir(const Graph& body);

  /// One kernel of an ahead-of-time object file: its symbol, its body and its form.
  struct ObjectKernel {
    std::string symbol;
    const Graph* body = nullptr;
    FusedKind kind = FusedKind::elementwise;
  };
  /// Compiles `kernels` ahead of time into one relocatable object file (ELF bytes) for
  /// the host's triple and CPU `cpu` ("native", or an LLVM CPU name such as
  /// "x86-64-v3"), defining each kernel under its symbol with the GeneratedFn ABI: what
  /// AOT-compiled training binaries link instead of the JIT. Needs libm at link time.
  StatusOr<std::string> compile_object(const std::vector<ObjectKernel>& kernels,
                                       const std::string& cpu = "native");

  int compilations() const;  ///< Kernels compiled (cache misses) so far.
  int cache_hits() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace weft::codegen
