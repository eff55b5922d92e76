#include "codegen/lower.h"

#include <unordered_map>

#include "codegen/kernel_compiler.h"
#include "ir/verifier.h"
#include "passes/fold_transpose.h"
#include "passes/fuse_elementwise.h"
#include "passes/schedule.h"

namespace weft::codegen {

StatusOr<Program> build_program(const Graph& g, const MemoryPlan& plan) {
  Program p;
  p.name = g.name();
  p.arena_bytes = plan.arena_bytes;
  p.naive_bytes = plan.naive_bytes;
  p.lower_bound_bytes = plan.lower_bound_bytes;
  for (const Input& in : g.inputs()) {
    p.inputs.push_back({g.value(in.value).name, g.type(in.value), in.kind});
  }
  auto ref = [&](ValueId v) {
    BufferRef r;
    r.type = g.type(v);
    const int input = g.input_index(v);
    if (input >= 0) {
      r.space = Space::input;
      r.input = input;
    } else {
      WEFT_CHECK(plan.offset[v] >= 0, "build_program: %" + g.value(v).name + " has no offset");
      r.space = Space::arena;
      r.offset = plan.offset[v];
    }
    return r;
  };
  std::unordered_map<std::string, int> kernel_by_key;
  for (const Node& n : g.nodes()) {
    if (n.op == Op::Assign) {
      p.updates.push_back({g.input_index(n.operands[0]), ref(n.operands[1])});
      continue;
    }
    Invocation inv;
    for (ValueId v : n.operands) inv.operands.push_back(ref(v));
    for (ValueId v : n.results) inv.results.push_back(ref(v));
    inv.label = g.value(n.result()).name;
    if (n.op == Op::Reshape) {
      if (inv.operands[0] == inv.results[0]) continue;  // planned in place: a view
      inv.kind = Invocation::Kind::copy;
    } else if (n.op == Op::Fused) {
      std::string key = kernel_key(*n.body);
      auto [it, added] = kernel_by_key.emplace(key, static_cast<int>(p.kernels.size()));
      if (added) {
        const RowLayout layout = row_layout(*n.body);
        p.kernels.push_back({"k" + std::to_string(it->second), std::move(key), *n.body,
                             layout.rows, layout.row_length});
      }
      inv.kind = Invocation::Kind::generated;
      inv.kernel = it->second;
      inv.node.op = n.op;
      inv.node.loc = n.loc;
    } else {
      inv.kind = Invocation::Kind::library;
      inv.node = n;
    }
    p.code.push_back(std::move(inv));
  }
  for (ValueId v : g.outputs()) p.outputs.push_back(ref(v));
  return p;
}

StatusOr<Lowering> lower_to_program(Graph g, const LowerOptions& options) {
  WEFT_RETURN_IF_ERROR(verify(g));
  {
    FoldTransposePass pass;
    WEFT_RETURN_IF_ERROR(pass.run(g).status());
  }
  if (options.fuse) {
    FuseOptions fuse;
    fuse.fusible = options.fusible ? options.fusible : KernelCompiler::supports;
    FuseElementwisePass pass(fuse);
    WEFT_RETURN_IF_ERROR(pass.run(g).status());
  }
  if (options.schedule) {
    ScheduleMemoryPass pass;
    WEFT_RETURN_IF_ERROR(pass.run(g).status());
  }
  WEFT_ASSIGN_OR_RETURN(MemoryPlan plan, plan_memory(g, options.plan));
  WEFT_ASSIGN_OR_RETURN(Program program, build_program(g, plan));
  return Lowering{std::move(g), std::move(plan), std::move(program)};
}

}  // namespace weft::codegen
