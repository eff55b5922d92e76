#pragma once
// A persistent loop program's arrays owned on the host (RecurrentProgram: what the planner,
// recurrent_plan.h, builds and the tests write by hand), and its host oracle: runs a
// RecurrentProgramView whose addresses are host pointers, one phase at a time, one element
// at a time, with the reference interpreter's scalar math (ir/scalar_math.h) and matmuls
// accumulated in f64; bf16 and f16 buffers converted exactly at each load and rounded to
// nearest even at each store (a matmul's C once, from its f64 sum rounded to f32 first).
// The plan's tests check a planned body against the reference interpreter through it; the
// kernel's tests check the device code (under cuda_emulation.h) against it.
//
//   Status s = run_recurrent_on_host(program.view());   // addresses: host memory
//
// It also validates what it runs (buffer, map, register and instruction indices; the ops
// a program may hold), so a malformed program is an error naming the phase, not a crash.

#include <cstdint>
#include <string>
#include <vector>

#include "ir/op.h"
#include "ir/status.h"
#include "runtime/cuda/recurrent_program.h"

namespace weft::cuda {

/// A RecurrentProgramView's arrays, owned on the host.
struct RecurrentProgram {
  int64_t length = 0;
  std::vector<StepAddress> buffers;
  std::vector<RecurrentPhase> phases;
  std::vector<ElementMap> maps;
  std::vector<CellInstr> instrs;

  /// The view of these arrays (valid while this object is neither changed nor moved).
  RecurrentProgramView view() const;
  /// One line per buffer, phase, map and instruction, for dumps and failing tests.
  std::string to_string() const;
};

/// Whether an elementwise program may hold `op`: an f32 unary or binary op with scalar
/// math (ir/scalar_math.h: visit_unary_math, visit_binary_math; comparisons give 1 or 0)
/// or select. The plan refuses a body with any other op; the kernel computes exactly these.
bool recurrent_op_supported(Op op);

/// How many operands `op` takes in a program (1, 2 or 3); 0 for an unsupported op.
int recurrent_op_arity(Op op);

/// Runs `program` on the host (see the top of this file); an error names the first
/// malformed phase or instruction, before anything is written.
Status run_recurrent_on_host(const RecurrentProgramView& program);

/// Checks `program` as run_recurrent_on_host does, running nothing.
Status check_recurrent_program(const RecurrentProgramView& program);

}  // namespace weft::cuda
