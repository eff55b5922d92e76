#pragma once
// A Program (runtime/program.h) as constant tables: the form in which ahead-of-time
// builds carry it ([AOT]). codegen/program_source.h writes the tables of one Program as
// C++ source — arrays of plain structs that refer to each other and to shared pools by
// index, string literals for names — and the generated NAME_program() calls
// assemble_program() on them. A compiler reads such a file in about a second at -O2 (it
// is data, not code), and it is a fraction of the size of code that builds the same
// Program statement by statement.
//
//   // Generated (bazel-bin/bench/aot/mlp_step.cc), abridged:
//   const int64_t kInts[] = {64LL, 784LL, 784LL, 256LL, ...};
//   const weft::TypeRow kTypes[] = {{weft::DType::f32, 2, 0}, {weft::DType::f32, 2, 2}, ...};
//   const weft::BufferRow kBuffers[] = {{weft::Space::input, 0, 0LL, 0}, ...};
//   const weft::InvocationRow kCode[] = {
//       {weft::Invocation::Kind::contraction, weft::Op::Matmul, 0, 1, "bench/models.cc", 12, 5,
//        "Linear(784->256)", 0, 0, 0, 3, 3, 1, 0, 0, "4"}, ...};
//   const weft::ProgramTables kProgram = {"model", ..., kInts, nullptr, kTypes, ...};
//   weft::Program mlp_step_program() { return weft::assemble_program(kProgram); }
//
// A range is (first index, count) into one of the tables. The tables are trusted: they
// come from the generator of the same build, so nothing here validates them.

#include <cstdint>

#include "ir/attribute.h"
#include "ir/dtype.h"
#include "ir/graph.h"
#include "ir/op.h"
#include "runtime/program.h"

namespace weft {

/// A Type: its dtype and `rank` dims starting at ProgramTables::ints[dims].
struct TypeRow {
  DType dtype;
  int32_t rank;
  int32_t dims;
};

/// A BufferRef; `type` indexes ProgramTables::types.
struct BufferRow {
  Space space;
  int32_t input;
  int64_t offset;
  int32_t type;
};

/// One attribute of an invocation's node. Int and Bool (0 or 1) are `i`, Float is `f`,
/// Str is `s`, DType is `dtype`; Ints and Floats are `count` entries from index `i` of
/// ProgramTables::ints or ProgramTables::floats.
struct AttrRow {
  const char* name;
  AttrKind kind;
  int64_t i;
  double f;
  const char* s;
  DType dtype;
  int32_t count;
};

struct InputRow {
  const char* name;
  int32_t type;
  InputKind kind;
};

struct KernelRow {
  const char* name;
  int64_t rows;
  int64_t row_length;
};

/// An Invocation: its node's op, attributes (a range of attrs) and location, then its
/// buffers (ranges of buffers).
struct InvocationRow {
  Invocation::Kind kind;
  Op op;
  int32_t attrs, num_attrs;
  const char* file;
  int32_t line, col;
  const char* path;
  int32_t kernel;
  int32_t gemm_result;
  int32_t operands, num_operands;
  int32_t results, num_results;
  int32_t clear, num_clear;
  const char* label;
  int32_t body;  ///< A loop's body: index into ProgramTables::bodies, or -1.
};

/// An Update; `from` indexes ProgramTables::buffers.
struct UpdateRow {
  int32_t input;
  int32_t from;
};

/// One Program. Pointers to empty tables are null.
struct ProgramTables {
  const char* name;
  int64_t arena_bytes, naive_bytes, lower_bound_bytes, inputs_bytes;
  // The pools the rows refer to.
  const int64_t* ints;       ///< Dims, IntList attributes, input offsets.
  const double* floats;      ///< FloatList attributes.
  const TypeRow* types;
  const BufferRow* buffers;  ///< Operands, results, clears, update sources, outputs.
  const AttrRow* attrs;
  // The Program's own lists.
  const InputRow* inputs;
  int32_t num_inputs;
  int32_t input_offsets, num_input_offsets;  ///< A range of ints.
  const KernelRow* kernels;
  int32_t num_kernels;
  const InvocationRow* code;
  int32_t num_code;
  const UpdateRow* updates;
  int32_t num_updates;
  int32_t outputs, num_outputs;  ///< A range of buffers.
  /// The loop bodies (Program::bodies), each sharing these pools; null in a body.
  const ProgramTables* bodies;
  int32_t num_bodies;
};

/// The Program the tables describe (kernel bodies and keys are left empty: the object
/// file holds the compiled kernels).
Program assemble_program(const ProgramTables& tables);

}  // namespace weft
