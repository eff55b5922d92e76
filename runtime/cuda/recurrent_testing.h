#pragma once
// Tests' owner of a persistent loop program (recurrent_program.h): the arrays a
// RecurrentProgramView points into, and a few constructors that read like the program.

#include <cstdint>
#include <vector>

#include "ir/op.h"
#include "runtime/cuda/recurrent_program.h"

namespace weft::cuda::recurrent_testing {

struct Program {
  int64_t length = 1;
  std::vector<StepAddress> buffers;
  std::vector<RecurrentPhase> phases;
  std::vector<ElementMap> maps;
  std::vector<CellInstr> instrs;

  RecurrentProgramView view() const {
    RecurrentProgramView v;
    v.length = length;
    v.buffer_count = static_cast<int32_t>(buffers.size());
    v.phase_count = static_cast<int32_t>(phases.size());
    v.map_count = static_cast<int32_t>(maps.size());
    v.instr_count = static_cast<int32_t>(instrs.size());
    v.buffers = buffers.data();
    v.phases = phases.data();
    v.maps = maps.data();
    v.instrs = instrs.data();
    return v;
  }

  /// Appends an elementwise phase of rows × cols with these maps and instructions.
  void elementwise(int64_t rows, int64_t cols, const std::vector<ElementMap>& operands,
                   const std::vector<ElementMap>& results, const std::vector<CellInstr>& code) {
    RecurrentPhase ph;
    ph.rows = rows, ph.cols = cols;
    ph.first_map = static_cast<int32_t>(maps.size());
    ph.operand_count = static_cast<int32_t>(operands.size());
    ph.result_count = static_cast<int32_t>(results.size());
    ph.first_instr = static_cast<int32_t>(instrs.size());
    ph.instr_count = static_cast<int32_t>(code.size());
    maps.insert(maps.end(), operands.begin(), operands.end());
    maps.insert(maps.end(), results.begin(), results.end());
    instrs.insert(instrs.end(), code.begin(), code.end());
    phases.push_back(ph);
  }
};

/// C[m, n] = A·B from buffers a, b into c, leading dimensions the extents.
inline RecurrentPhase matmul(int32_t a, int32_t b, int32_t c, int64_t m, int64_t n, int64_t k) {
  RecurrentPhase ph;
  ph.kind = PhaseKind::matmul;
  ph.a = a, ph.b = b, ph.c = c, ph.m = m, ph.n = n, ph.k = k, ph.lda = k, ph.ldb = n, ph.ldc = n;
  return ph;
}

/// r[dst] = operand `operand`'s element.
inline CellInstr load(int dst, int operand) {
  return {kLoadOp, static_cast<uint8_t>(dst), static_cast<uint8_t>(operand)};
}
/// Result `result`'s element = r[reg].
inline CellInstr store(int result, int reg) {
  return {kStoreOp, 0, static_cast<uint8_t>(result), static_cast<uint8_t>(reg)};
}
/// r[dst] = o(r[a], r[b], r[c]).
inline CellInstr op(Op o, int dst, int a, int b = 0, int c = 0) {
  return {static_cast<uint16_t>(o), static_cast<uint8_t>(dst), static_cast<uint8_t>(a), static_cast<uint8_t>(b),
          static_cast<uint8_t>(c)};
}

}  // namespace weft::cuda::recurrent_testing
