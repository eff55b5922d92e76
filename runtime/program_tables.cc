#include "runtime/program_tables.h"

#include <string>
#include <vector>

namespace weft {
namespace {

class Assembler {
 public:
  explicit Assembler(const ProgramTables& t) : t_(t) {}

  std::vector<int64_t> ints(int32_t first, int32_t count) const {
    return std::vector<int64_t>(t_.ints + first, t_.ints + first + count);
  }

  Type type(int32_t index) const {
    const TypeRow& r = t_.types[index];
    return Type{r.dtype, Shape(ints(r.dims, r.rank))};
  }

  BufferRef buffer(int32_t index) const {
    const BufferRow& r = t_.buffers[index];
    return BufferRef{r.space, r.input, r.offset, type(r.type)};
  }

  std::vector<BufferRef> buffers(int32_t first, int32_t count) const {
    std::vector<BufferRef> out;
    out.reserve(count);
    for (int32_t i = first; i < first + count; ++i) out.push_back(buffer(i));
    return out;
  }

  Attribute attribute(const AttrRow& r) const {
    switch (r.kind) {
      case AttrKind::Int: return Attribute(r.i);
      case AttrKind::Float: return Attribute(r.f);
      case AttrKind::Str: return Attribute(std::string(r.s));
      case AttrKind::Bool: return Attribute(r.i != 0);
      case AttrKind::DType: return Attribute(r.dtype);
      case AttrKind::Ints: return Attribute(IntList(ints(static_cast<int32_t>(r.i), r.count)));
      case AttrKind::Floats:
        return Attribute(FloatList(t_.floats + r.i, t_.floats + r.i + r.count));
    }
    return Attribute(int64_t{0});  // unreachable: every AttrKind is handled above
  }

  Invocation invocation(const InvocationRow& r) const {
    Invocation inv;
    inv.kind = r.kind;
    inv.node.op = r.op;
    for (int32_t a = r.attrs; a < r.attrs + r.num_attrs; ++a) {
      inv.node.attrs.emplace(t_.attrs[a].name, attribute(t_.attrs[a]));
    }
    inv.node.loc = Location{r.file, r.line, r.col, r.path};
    inv.kernel = r.kernel;
    inv.gemm_result = r.gemm_result;
    inv.operands = buffers(r.operands, r.num_operands);
    inv.results = buffers(r.results, r.num_results);
    inv.clear = buffers(r.clear, r.num_clear);
    inv.label = r.label;
    inv.body = r.body;
    return inv;
  }

 private:
  const ProgramTables& t_;
};

}  // namespace

Program assemble_program(const ProgramTables& t) {
  const Assembler a(t);
  Program p;
  p.name = t.name;
  p.arena_bytes = t.arena_bytes;
  p.naive_bytes = t.naive_bytes;
  p.lower_bound_bytes = t.lower_bound_bytes;
  p.inputs_bytes = t.inputs_bytes;
  p.inputs.reserve(t.num_inputs);
  for (int32_t i = 0; i < t.num_inputs; ++i) {
    p.inputs.push_back({t.inputs[i].name, a.type(t.inputs[i].type), t.inputs[i].kind});
  }
  p.input_offsets = a.ints(t.input_offsets, t.num_input_offsets);
  p.kernels.resize(t.num_kernels);
  for (int32_t k = 0; k < t.num_kernels; ++k) {
    p.kernels[k].name = t.kernels[k].name;
    p.kernels[k].rows = t.kernels[k].rows;
    p.kernels[k].row_length = t.kernels[k].row_length;
  }
  p.code.reserve(t.num_code);
  for (int32_t i = 0; i < t.num_code; ++i) p.code.push_back(a.invocation(t.code[i]));
  for (int32_t u = 0; u < t.num_updates; ++u) {
    p.updates.push_back({t.updates[u].input, a.buffer(t.updates[u].from)});
  }
  p.outputs = a.buffers(t.outputs, t.num_outputs);
  for (int32_t b = 0; b < t.num_bodies; ++b) p.bodies.push_back(assemble_program(t.bodies[b]));
  return p;
}

}  // namespace weft
