#include "runtime/cuda/recurrent_reference.h"

#include <cstdio>
#include <string>
#include <vector>

#include "runtime/cuda/recurrent_cell_op.h"

namespace weft::cuda {
namespace {

Error malformed(int32_t phase, const std::string& what) {
  return Error("persistent loop program: phase " + std::to_string(phase) + ": " + what);
}

Status check_matmul(const RecurrentProgramView& p, int32_t index) {
  const RecurrentPhase& ph = p.phases[index];
  for (int32_t buffer : {ph.a, ph.b, ph.c}) {
    if (buffer < 0 || buffer >= p.buffer_count) return malformed(index, "buffer " + std::to_string(buffer) + " out of range");
  }
  if (ph.m < 0 || ph.n < 0 || ph.k < 0) return malformed(index, "negative matmul extent");
  if (ph.lda < (ph.transpose_a ? ph.m : ph.k) || ph.ldb < (ph.transpose_b ? ph.k : ph.n) || ph.ldc < ph.n) {
    return malformed(index, "a leading dimension shorter than its rows");
  }
  return Status::ok_status();
}

Status check_instr(const RecurrentPhase& ph, int32_t index, const CellInstr& in) {
  const auto reg = [](int r) { return r < kMaxCellRegisters; };
  if (in.op == kConstOp) {
    if (!reg(in.dst)) return malformed(index, "a constant out of range");
  } else if (in.op == kRowReduceOp) {
    if (ph.kind != PhaseKind::row) return malformed(index, "a row reduction outside a row phase");
    if (!reg(in.dst) || !reg(in.a) || (in.b != kRowSum && in.b != kRowMean)) {
      return malformed(index, "a row reduction out of range");
    }
  } else if (in.op == kLoadOp) {
    if (in.a >= ph.operand_count || !reg(in.dst)) return malformed(index, "a load out of range");
  } else if (in.op == kStoreOp) {
    if (in.a >= ph.result_count || !reg(in.b)) return malformed(index, "a store out of range");
  } else if (in.op == kRoundOp) {
    const bool low = in.b == static_cast<uint8_t>(ElementType::bf16) || in.b == static_cast<uint8_t>(ElementType::f16);
    if (!reg(in.dst) || !reg(in.a) || !low) return malformed(index, "a rounding out of range");
  } else {
    const int arity = cell_code_arity(in.op);
    if (arity == 0) return malformed(index, "op " + std::to_string(in.op) + " is not one a program may hold");
    if (!reg(in.dst) || !reg(in.a) || (arity > 1 && !reg(in.b)) || (arity > 2 && !reg(in.c))) {
      return malformed(index, "a register out of range");
    }
  }
  return Status::ok_status();
}

Status check_elementwise(const RecurrentProgramView& p, int32_t index) {
  const RecurrentPhase& ph = p.phases[index];
  if (ph.rows < 0 || ph.cols < 0) return malformed(index, "negative extent");
  const int64_t maps = static_cast<int64_t>(ph.operand_count) + ph.result_count;
  if (ph.first_map < 0 || ph.operand_count < 0 || ph.result_count < 0 || ph.first_map + maps > p.map_count) {
    return malformed(index, "maps out of range");
  }
  for (int64_t j = ph.first_map; j < ph.first_map + maps; ++j) {
    if (p.maps[j].buffer < 0 || p.maps[j].buffer >= p.buffer_count) return malformed(index, "a map's buffer out of range");
  }
  if (ph.first_instr < 0 || ph.instr_count < 0 || static_cast<int64_t>(ph.first_instr) + ph.instr_count > p.instr_count) {
    return malformed(index, "instructions out of range");
  }
  int reductions = 0;
  for (int32_t i = ph.first_instr; i < ph.first_instr + ph.instr_count; ++i) {
    if (Status s = check_instr(ph, index, p.instrs[i]); !s.ok()) return s;
    reductions += p.instrs[i].op == kRowReduceOp;
  }
  if (reductions > kMaxRowReductions) {
    return malformed(index, std::to_string(reductions) + " row reductions (at most " +
                                std::to_string(kMaxRowReductions) + ")");
  }
  return Status::ok_status();
}

/// Element (r, c) of map `m` in iteration t: its buffer's address and index.
struct Element {
  uint64_t address;
  int64_t index;
  ElementType type;
};

Element element(const RecurrentProgramView& p, const ElementMap& m, int64_t t, int64_t r, int64_t c) {
  const StepAddress& b = p.buffers[m.buffer];
  return {step_address(b, t, p.length), m.offset + r * m.row_stride + c * m.col_stride, b.type};
}

void run_matmul(const RecurrentProgramView& p, const RecurrentPhase& ph, int64_t t) {
  const auto at = [&](int32_t buffer) { return step_address(p.buffers[buffer], t, p.length); };
  const uint64_t a = at(ph.a), b = at(ph.b), c = at(ph.c);
  const ElementType a_type = p.buffers[ph.a].type, b_type = p.buffers[ph.b].type, c_type = p.buffers[ph.c].type;
  for (int64_t i = 0; i < ph.m; ++i) {
    for (int64_t j = 0; j < ph.n; ++j) {
      double sum = 0;
      for (int64_t q = 0; q < ph.k; ++q) {
        const float x = load_element(a, ph.transpose_a ? q * ph.lda + i : i * ph.lda + q, a_type);
        const float y = load_element(b, ph.transpose_b ? j * ph.ldb + q : q * ph.ldb + j, b_type);
        sum += static_cast<double>(x) * y;
      }
      store_element(c, i * ph.ldc + j, c_type, static_cast<float>(sum));
    }
  }
}

// Runs the first `count` instructions of phase `ph`'s program at element (row, col) on
// `reg`: a row reduction reads its row's value from `reduced` (kept from its pass); stores
// only when `store`.
void run_instrs(const RecurrentProgramView& p, const RecurrentPhase& ph, int64_t t, int64_t row, int64_t col,
                int32_t count, const float* reduced, bool store, float* reg) {
  const ElementMap* operands = p.maps + ph.first_map;
  const ElementMap* results = operands + ph.operand_count;
  int reduction = 0;
  for (int32_t i = ph.first_instr; i < ph.first_instr + count; ++i) {
    const CellInstr& in = p.instrs[i];
    if (in.op == kLoadOp) {
      const Element e = element(p, operands[in.a], t, row, col);
      reg[in.dst] = load_element(e.address, e.index, e.type);
    } else if (in.op == kStoreOp) {
      if (!store) continue;
      const Element e = element(p, results[in.a], t, row, col);
      store_element(e.address, e.index, e.type, reg[in.b]);
    } else if (in.op == kRoundOp) {
      reg[in.dst] = round_element(reg[in.a], static_cast<ElementType>(in.b));
    } else if (in.op == kConstOp) {
      reg[in.dst] = in.value;
    } else if (in.op == kRowReduceOp) {
      reg[in.dst] = reduced[reduction++];
    } else {
      cell_op(in.op, reg[in.a], reg[in.b], reg[in.c], &reg[in.dst]);
    }
  }
}

void run_elementwise(const RecurrentProgramView& p, const RecurrentPhase& ph, int64_t t) {
  float reg[kMaxCellRegisters] = {};
  for (int64_t row = 0; row < ph.rows; ++row) {
    for (int64_t col = 0; col < ph.cols; ++col) run_instrs(p, ph, t, row, col, ph.instr_count, nullptr, true, reg);
  }
}

// A row phase (recurrent_program.h), row by row: a pass per reduction, summed in f64
// over the row (a mean divided by the columns in f64, as the interpreter's), then the
// whole program with the stores.
void run_row(const RecurrentProgramView& p, const RecurrentPhase& ph, int64_t t) {
  float reg[kMaxCellRegisters] = {};
  float reduced[kMaxRowReductions] = {};
  for (int64_t row = 0; row < ph.rows; ++row) {
    int reduction = 0;
    for (int32_t i = 0; i < ph.instr_count; ++i) {
      const CellInstr& in = p.instrs[ph.first_instr + i];
      if (in.op != kRowReduceOp) continue;
      double sum = 0;
      for (int64_t col = 0; col < ph.cols; ++col) {
        run_instrs(p, ph, t, row, col, i, reduced, false, reg);
        sum += reg[in.a];
      }
      reduced[reduction++] = static_cast<float>(in.b == kRowMean ? sum / static_cast<double>(ph.cols) : sum);
    }
    for (int64_t col = 0; col < ph.cols; ++col) run_instrs(p, ph, t, row, col, ph.instr_count, reduced, true, reg);
  }
}

}  // namespace

int recurrent_op_arity(Op op) { return cell_op_arity(op); }

bool recurrent_op_supported(Op op) { return recurrent_op_arity(op) != 0; }

Status check_recurrent_program(const RecurrentProgramView& p) {
  if (p.length < 0 || p.buffer_count < 0 || p.phase_count < 0 || p.map_count < 0 || p.instr_count < 0) {
    return Error("persistent loop program: a negative count");
  }
  for (int32_t i = 0; i < p.buffer_count; ++i) {
    if (p.buffers[i].type > ElementType::f16) {
      return Error("persistent loop program: buffer " + std::to_string(i) + " has no element type (" +
                   std::to_string(static_cast<int>(p.buffers[i].type)) + ")");
    }
  }
  for (int32_t i = 0; i < p.phase_count; ++i) {
    const Status s = p.phases[i].kind == PhaseKind::matmul ? check_matmul(p, i)
                     : p.phases[i].kind <= PhaseKind::row ? check_elementwise(p, i)
                                                          : malformed(i, "no phase kind");
    if (!s.ok()) return s;
  }
  return Status::ok_status();
}

Status run_recurrent_on_host(const RecurrentProgramView& p) {
  if (Status s = check_recurrent_program(p); !s.ok()) return s;
  for (int64_t t = 0; t < p.length; ++t) {
    for (int32_t i = 0; i < p.phase_count; ++i) {
      const RecurrentPhase& ph = p.phases[i];
      if (ph.kind == PhaseKind::matmul) run_matmul(p, ph, t);
      else if (ph.kind == PhaseKind::row) run_row(p, ph, t);
      else run_elementwise(p, ph, t);
    }
  }
  return Status::ok_status();
}

RecurrentProgramView RecurrentProgram::view() const {
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

namespace {

std::string hex(uint64_t v) {
  char text[32];
  std::snprintf(text, sizeof(text), "0x%llx", static_cast<unsigned long long>(v));
  return text;
}

std::string instr_text(const CellInstr& in) {
  if (in.op == kLoadOp) return "r" + std::to_string(in.dst) + " = load operand " + std::to_string(in.a);
  if (in.op == kStoreOp) return "store result " + std::to_string(in.a) + " = r" + std::to_string(in.b);
  if (in.op == kConstOp) return "r" + std::to_string(in.dst) + " = " + std::to_string(in.value);
  if (in.op == kRowReduceOp) {
    return "r" + std::to_string(in.dst) + " = row " + (in.b == kRowMean ? "mean" : "sum") + " r" + std::to_string(in.a);
  }
  if (in.op == kGeluOp || in.op == kGeluTanhOp) {
    return "r" + std::to_string(in.dst) + " = gelu" + (in.op == kGeluTanhOp ? "(tanh)" : "") + " r" + std::to_string(in.a);
  }
  if (in.op == kRoundOp) {
    return "r" + std::to_string(in.dst) + " = round r" + std::to_string(in.a) + " to " +
           (in.b == static_cast<uint8_t>(ElementType::bf16) ? "bf16" : "f16");
  }
  const Op op = static_cast<Op>(in.op);
  std::string s = "r" + std::to_string(in.dst) + " = " + std::string(op_name(op)) + " r" + std::to_string(in.a);
  const int arity = recurrent_op_arity(op);
  if (arity > 1) s += " r" + std::to_string(in.b);
  if (arity > 2) s += " r" + std::to_string(in.c);
  return s;
}

std::string map_text(const ElementMap& m) {
  return "b" + std::to_string(m.buffer) + "+" + std::to_string(m.offset) + " [" + std::to_string(m.row_stride) + "," +
         std::to_string(m.col_stride) + "]";
}

}  // namespace

std::string RecurrentProgram::to_string() const {
  std::string s = "persistent loop: " + std::to_string(length) + " iterations, " + std::to_string(phases.size()) +
                  " phases\n";
  for (size_t i = 0; i < buffers.size(); ++i) {
    const StepAddress& b = buffers[i];
    s += "  b" + std::to_string(i) + " " + hex(b.base) + " + t*" + std::to_string(b.stride);
    if (b.first != 0) s += ", first " + hex(b.first);
    if (b.last != 0) s += ", last " + hex(b.last);
    if (b.type != ElementType::f32) s += b.type == ElementType::bf16 ? ", bf16" : ", f16";
    s += "\n";
  }
  for (size_t i = 0; i < phases.size(); ++i) {
    const RecurrentPhase& p = phases[i];
    s += "  phase " + std::to_string(i) + ": ";
    if (p.kind == PhaseKind::matmul) {
      s += "matmul b" + std::to_string(p.c) + "[" + std::to_string(p.m) + "," + std::to_string(p.n) + "] = b" +
           std::to_string(p.a) + (p.transpose_a ? "^T" : "") + " * b" + std::to_string(p.b) +
           (p.transpose_b ? "^T" : "") + " (k " + std::to_string(p.k) + ", ld " + std::to_string(p.lda) + "," +
           std::to_string(p.ldb) + "," + std::to_string(p.ldc) + ")\n";
      continue;
    }
    s += std::string(p.kind == PhaseKind::row ? "row " : "elementwise ") + std::to_string(p.rows) + "x" +
         std::to_string(p.cols) + "\n";
    for (int32_t j = 0; j < p.operand_count + p.result_count; ++j) {
      s += std::string("    ") + (j < p.operand_count ? "operand " : "result ") +
           std::to_string(j < p.operand_count ? j : j - p.operand_count) + ": " +
           map_text(maps[static_cast<size_t>(p.first_map + j)]) + "\n";
    }
    for (int32_t j = 0; j < p.instr_count; ++j) {
      s += "    " + instr_text(instrs[static_cast<size_t>(p.first_instr + j)]) + "\n";
    }
  }
  return s;
}

}  // namespace weft::cuda
