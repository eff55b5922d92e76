#include "runtime/program.h"

#include <sstream>

namespace weft {

std::string BufferRef::to_string() const {
  std::string where = space == Space::input ? "in" + std::to_string(input)
                                            : "arena+" + std::to_string(offset);
  return where + " " + type.to_string();
}

void lay_out_inputs_in_order(Program& p) {
  p.input_offsets.clear();
  int64_t end = 0;
  for (const ProgramInput& in : p.inputs) {
    p.input_offsets.push_back(end);
    end += (static_cast<int64_t>(in.type.bytes()) + 63) / 64 * 64;
  }
  p.inputs_bytes = end;
}

namespace {

// Kernel `k` of the table `kernels` by name; a body listed alone has no table (its kernels
// are its root's): then by index, as the root names them ("k3").
std::string kernel_name(const std::vector<GeneratedKernel>& kernels, int k) {
  if (k >= 0 && static_cast<size_t>(k) < kernels.size()) return kernels[static_cast<size_t>(k)].name;
  return "k" + std::to_string(k);
}

// One Program's listing; a body's kernels are its root's.
std::string listing(const Program& p, const std::vector<GeneratedKernel>& kernels) {
  const std::string& name = p.name;
  const std::vector<ProgramInput>& inputs = p.inputs;
  const std::vector<int64_t>& input_offsets = p.input_offsets;
  const std::vector<Invocation>& code = p.code;
  const std::vector<Update>& updates = p.updates;
  const std::vector<BufferRef>& outputs = p.outputs;
  const int64_t inputs_bytes = p.inputs_bytes, arena_bytes = p.arena_bytes;
  const int64_t naive_bytes = p.naive_bytes, lower_bound_bytes = p.lower_bound_bytes;
  std::ostringstream os;
  os << "program @" << name << "  arena " << arena_bytes << " bytes (bound "
     << lower_bound_bytes << ", naive " << naive_bytes << ")\n";
  os << "  inputs:";
  for (size_t i = 0; i < inputs.size(); ++i) {
    os << (i ? ", " : " ") << "%" << inputs[i].name << " " << inputs[i].type.to_string() << " "
       << input_kind_name(inputs[i].kind) << " @in" << i;
  }
  os << "\n";
  // The inputs block, when the lowering chose an order other than the default one.
  Program in_order;
  in_order.inputs = inputs;
  lay_out_inputs_in_order(in_order);
  if (!input_offsets.empty() && input_offsets != in_order.input_offsets) {
    os << "  inputs block " << inputs_bytes << " bytes:";
    for (size_t i = 0; i < inputs.size(); ++i) {
      os << (i ? ", " : " ") << "in" << i << " +" << input_offsets[i];
    }
    os << "\n";
  }
  for (size_t i = 0; i < code.size(); ++i) {
    const Invocation& inv = code[i];
    os << "  " << i << "  ";
    switch (inv.kind) {
      case Invocation::Kind::library: os << op_name(inv.node.op); break;
      case Invocation::Kind::generated: os << "generated " << kernel_name(kernels, inv.kernel); break;
      case Invocation::Kind::copy: os << "copy"; break;
      case Invocation::Kind::contraction:
        os << op_name(inv.node.op) << " + " << kernel_name(kernels, inv.kernel);
        if (inv.gemm_result > 0) os << " (C in result " << inv.gemm_result << ")";
        break;
      case Invocation::Kind::loop:
        os << "loop " << inv.node.int_attr("length") << "x body " << inv.body;
        if (inv.node.bool_attr("reverse")) os << " reversed";
        break;
    }
    os << "  ";
    for (size_t r = 0; r < inv.results.size(); ++r) os << (r ? ", " : "") << inv.results[r].to_string();
    os << " <-";
    for (size_t o = 0; o < inv.operands.size(); ++o) {
      os << (o ? ", " : " ") << inv.operands[o].to_string();
    }
    if (!inv.clear.empty()) os << "  (first zeroes " << inv.clear.size() << " padding ranges)";
    if (!inv.label.empty()) os << "  ; %" << inv.label;
    os << "\n";
  }
  if (!updates.empty()) {
    os << "  updates:";
    for (size_t i = 0; i < updates.size(); ++i) {
      os << (i ? ", " : " ") << "in" << updates[i].input << " <- " << updates[i].from.to_string();
    }
    os << "\n";
  }
  os << "  outputs:";
  for (size_t i = 0; i < outputs.size(); ++i) os << (i ? ", " : " ") << outputs[i].to_string();
  os << "\n";
  return os.str();
}

}  // namespace

std::string Program::to_string() const {
  std::string out = listing(*this, kernels);
  for (size_t b = 0; b < bodies.size(); ++b) {
    out += "body " + std::to_string(b) + ": " + listing(bodies[b], kernels);
  }
  return out;
}

std::string invocation_kind(const Invocation& inv) {
  switch (inv.kind) {
    case Invocation::Kind::library: return "library " + std::string(op_name(inv.node.op));
    case Invocation::Kind::generated: return "generated";
    case Invocation::Kind::contraction: return "contraction";
    case Invocation::Kind::copy: return "copy";
    case Invocation::Kind::loop: return "loop";
  }
  return "?";
}

}  // namespace weft
