#include "codegen/lower.h"

#include <algorithm>
#include <memory>
#include <unordered_map>

#include "codegen/kernel_compiler.h"
#include "codegen/merge_updates.h"
#include "ir/scan.h"
#include "ir/verifier.h"
#include "passes/decompose_composites.h"
#include "runtime/cpu/kernel.h"
#include "passes/fold_batch_matmul.h"
#include "passes/split_reductions.h"
#include "passes/fold_transpose.h"
#include "passes/fuse_contraction_epilogue.h"
#include "passes/fuse_elementwise.h"
#include "passes/schedule.h"
#include "passes/hoist_loop_invariants.h"
#include "passes/mask_loop_exits.h"
#include "passes/prune_scan_results.h"
#include "passes/unroll_scans.h"

namespace weft::codegen {

std::vector<bool> updates_in_place(const Graph& g) {
  const int n = static_cast<int>(g.nodes().size());
  std::vector<bool> external(g.num_values(), false);
  std::vector<int> last_reader(g.num_values(), -1);  // excluding assigns
  std::vector<int> assigned(g.num_values(), 0);
  for (int i = 0; i < n; ++i) {
    const Node& node = g.node(i);
    if (node.op == Op::Assign) {
      ++assigned[node.operands[1]];
      continue;
    }
    for (ValueId v : node.operands) last_reader[v] = std::max(last_reader[v], i);
  }
  for (ValueId v : g.outputs()) last_reader[v] = n;
  for (const Node& node : g.nodes()) {
    if (node.op != Op::Assign) continue;
    const ValueId target = node.operands[0], value = node.operands[1];
    const int producer = g.value(value).node;
    if (producer < 0 || assigned[value] != 1 || g.type(value) != g.type(target)) continue;
    const Node& p = g.node(producer);
    bool reads_target = false;
    for (ValueId o : p.operands) reads_target = reads_target || o == target;
    // The producer may read the target only element by element (it then writes each
    // element after reading it); every other reader must come before it.
    if (reads_target && !may_take_over_operand(p)) continue;
    if (last_reader[target] > producer) continue;
    external[value] = true;
  }
  return external;
}

namespace {

// A loop's body as lowered: each next carry assigned to its carry input (made a state
// input), so that updates_in_place lets its producer write it there when nothing reads
// the old value afterwards; the loop then copies nothing back for it (runtime/cpu's
// LoopBound skips a carry whose output is its own input). Outputs are unchanged.
Graph carries_assigned(const Graph& body, size_t consts, size_t carries) {
  Graph out(body.name());
  std::vector<ValueId> map(body.num_values(), kNoValue);
  for (size_t k = 0; k < body.inputs().size(); ++k) {
    const Input& in = body.inputs()[k];
    const bool carry = k >= consts && k < consts + carries;
    map[in.value] = out.add_input(body.value(in.value).name, body.type(in.value),
                                  carry ? InputKind::state : in.kind, in.loc);
  }
  for (const Node& n : body.nodes()) {
    copy_node(out, body, n, map, [&](ValueId v) { return body.value(v).name; });
  }
  for (ValueId v : body.outputs()) out.add_output(map[v]);
  for (size_t c = 0; c < carries; ++c) {
    const ValueId next = map[body.outputs()[c]];
    if (out.value(next).node < 0) continue;  // an input itself: copied as it is
    out.add_node(Op::Assign, {map[body.inputs()[consts + c].value], next});
  }
  return out;
}

// The epilogue of a fused contraction's body (layout: passes/fuse_contraction_epilogue.h)
// as a generated kernel's body: the product C, then the body's inputs from 2 on, then the
// elementwise members; its outputs are the body's, less C where C is one of them
// (`gemm_result` receives its position, or 0).
StatusOr<Graph> epilogue_body(const Node& fused, int& gemm_result) {
  const Graph& body = *fused.body;
  const bool laid_out = body.inputs().size() >= 2 && !body.nodes().empty() &&
                        body.node(0).info().category == OpCategory::Contraction &&
                        body.node(0).operands.size() == 2 &&
                        body.node(0).operands[0] == body.inputs()[0].value &&
                        body.node(0).operands[1] == body.inputs()[1].value;
  if (!laid_out) {
    return Error{"fused {kind=\"contraction\"}: the body must start with a contraction of its "
                 "first two inputs (passes/fuse_contraction_epilogue.h)",
                 fused.loc};
  }
  Graph epi("epilogue");
  std::unordered_map<ValueId, ValueId> inner;
  const ValueId c = body.node(0).result();
  inner[c] = epi.add_input("c", body.type(c));
  for (size_t i = 2; i < body.inputs().size(); ++i) {
    const ValueId v = body.inputs()[i].value;
    inner[v] = epi.add_input(body.value(v).name, body.type(v));
  }
  for (size_t k = 1; k < body.nodes().size(); ++k) {
    const Node& n = body.node(static_cast<int>(k));
    std::vector<ValueId> args;
    for (ValueId v : n.operands) {
      if (!inner.count(v)) {
        return Error{"fused {kind=\"contraction\"}: the epilogue reads the contraction's operand %" +
                         body.value(v).name + " (give it as an input of its own)",
                     fused.loc};
      }
      args.push_back(inner.at(v));
    }
    inner[n.result()] = epi.add_node(n.op, std::move(args), n.attrs, n.loc,
                                     body.type(n.result()), body.value(n.result()).name);
  }
  gemm_result = 0;
  for (size_t o = 0; o < body.outputs().size(); ++o) {
    if (body.outputs()[o] == c) {
      gemm_result = static_cast<int>(o);
    } else {
      epi.add_output(inner.at(body.outputs()[o]));
    }
  }
  if (gemm_result == 0 && body.type(body.outputs()[0]) != body.type(c)) {
    return Error{"fused {kind=\"contraction\"}: the first result must have the product's type",
                 fused.loc};
  }
  return epi;
}

}  // namespace

StatusOr<Program> build_program(const Graph& g, const MemoryPlan& plan,
                                const std::vector<MergedUpdate>& merged, const LowerOptions& options) {
  Program p;
  p.name = g.name();
  p.arena_bytes = plan.arena_bytes;
  p.naive_bytes = plan.naive_bytes;
  p.lower_bound_bytes = plan.lower_bound_bytes;
  for (const Input& in : g.inputs()) {
    p.inputs.push_back({g.value(in.value).name, g.type(in.value), in.kind});
  }
  lay_out_inputs(g, merged, p);
  // Node index -> the merged update it starts (-1), or -2 for the other members.
  std::vector<int> merged_at(g.nodes().size(), -1);
  for (size_t m = 0; m < merged.size(); ++m) {
    for (int i : merged[m].nodes) merged_at[i] = -2;
    merged_at[merged[m].nodes.front()] = static_cast<int>(m);
  }
  // Values written straight into the buffer of the input they are assigned to.
  std::unordered_map<ValueId, int> written_to;
  for (const Node& n : g.nodes()) {
    const ValueId v = n.op == Op::Assign ? n.operands[1] : kNoValue;
    if (v != kNoValue && v < static_cast<ValueId>(plan.external.size()) && plan.external[v]) {
      written_to[v] = g.input_index(n.operands[0]);
    }
  }
  auto ref = [&](ValueId v) {
    BufferRef r;
    r.type = g.type(v);
    auto in_place = written_to.find(v);
    const int input = in_place != written_to.end() ? in_place->second : g.input_index(v);
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
  const auto kernel = [&](const Graph& body) {
    std::string key = kernel_key(body);
    auto [it, added] = kernel_by_key.emplace(key, static_cast<int>(p.kernels.size()));
    if (added) {
      const RowLayout layout = row_layout(body);
      p.kernels.push_back({"k" + std::to_string(it->second), std::move(key), body, layout.rows,
                           layout.row_length});
    }
    return it->second;
  };
  for (int i = 0; i < static_cast<int>(g.nodes().size()); ++i) {
    const Node& n = g.node(i);
    if (merged_at[i] == -2) continue;  // runs in its group's merged invocation
    if (merged_at[i] >= 0) {
      const MergedUpdate& m = merged[merged_at[i]];
      const auto range = [&](int r) {
        BufferRef b = ref(m.ranges[r].values[0]);
        b.type = Type{m.ranges[r].dtype, Shape({m.length})};
        return b;
      };
      Invocation inv;
      for (size_t j = 0; j < m.operands.size(); ++j) {
        inv.operands.push_back(m.operand_range[j] >= 0 ? range(m.operand_range[j])
                                                       : ref(m.operands[j]));
      }
      for (int r : m.result_range) inv.results.push_back(range(r));
      // The padding of the arena ranges (after each member, and the tail) may hold bytes
      // of earlier intermediates: zeroed first, so every padding lane computes on zeros.
      for (const FlatRange& r : m.ranges) {
        if (r.space != Space::arena) continue;
        const int64_t start = plan.offset[r.values[0]];
        const int64_t end = start + m.length * static_cast<int64_t>(dtype_size(r.dtype));
        for (size_t k = 0; k < r.values.size(); ++k) {
          WEFT_CHECK(plan.offset[r.values[k]] - start == r.offsets[k],
                     "build_program: the memory plan broke a merged update's gradient range");
          const int64_t from =
              plan.offset[r.values[k]] + static_cast<int64_t>(g.type(r.values[k]).bytes());
          const int64_t to = k + 1 < r.values.size() ? plan.offset[r.values[k + 1]] : end;
          if (to > from) {
            inv.clear.push_back({Space::arena, -1, from, Type{DType::u8, Shape({to - from})}});
          }
        }
      }
      inv.label = g.value(n.result()).name + ".." +
                  g.value(g.node(m.nodes.back()).result()).name;
      inv.kind = Invocation::Kind::generated;
      inv.kernel = kernel(m.body);
      inv.node.op = n.op;
      inv.node.loc = n.loc;
      p.code.push_back(std::move(inv));
      continue;
    }
    if (n.op == Op::Assign) {
      Update u{g.input_index(n.operands[0]), ref(n.operands[1])};
      // A value already written into its target's buffer needs no copy.
      if (u.from.space != Space::input || u.from.input != u.input) p.updates.push_back(u);
      continue;
    }
    Invocation inv;
    for (ValueId v : n.operands) inv.operands.push_back(ref(v));
    for (ValueId v : n.results) inv.results.push_back(ref(v));
    inv.label = g.value(n.result()).name;
    if (n.op == Op::Reshape) {
      if (inv.operands[0] == inv.results[0]) continue;  // planned in place: a view
      inv.kind = Invocation::Kind::copy;
      inv.node.op = n.op;  // every invocation names its op (Node::op has no default)
      inv.node.loc = n.loc;
    } else if (n.op == Op::Scan) {
      // The body lowered as a Program of its own; its kernels join this Program's table
      // and its own loops' bodies this Program's list.
      LowerOptions body_options = options;
      body_options.merge_updates = false;
      WEFT_ASSIGN_OR_RETURN(
          Lowering body,
          lower_to_program(carries_assigned(*n.body, static_cast<size_t>(n.int_attr("consts")),
                                            static_cast<size_t>(n.int_attr("carries"))),
                           body_options));
      Program bp = std::move(body.program);
      std::vector<int> kernel_at;
      for (const GeneratedKernel& k : bp.kernels) kernel_at.push_back(kernel(k.body));
      const int first_body = static_cast<int>(p.bodies.size());
      auto renumber = [&](Program& q) {
        for (Invocation& i : q.code) {
          if (i.kernel >= 0) i.kernel = kernel_at[static_cast<size_t>(i.kernel)];
          if (i.body >= 0) i.body += first_body;
        }
      };
      for (Program& nested : bp.bodies) {
        renumber(nested);
        p.bodies.push_back(std::move(nested));
      }
      renumber(bp);
      bp.kernels.clear();
      bp.bodies.clear();
      inv.kind = Invocation::Kind::loop;
      inv.body = static_cast<int>(p.bodies.size());
      inv.node = n;
      inv.node.body = nullptr;  // the Program holds the lowered body
      p.bodies.push_back(std::move(bp));
    } else if (n.op == Op::Fused) {
      const bool contraction = n.str_attr("kind") == "contraction";
      Graph epilogue;
      if (contraction) {
        WEFT_ASSIGN_OR_RETURN(epilogue, epilogue_body(n, inv.gemm_result));
      }
      inv.kind = contraction ? Invocation::Kind::contraction : Invocation::Kind::generated;
      inv.kernel = kernel(contraction ? epilogue : *n.body);
      if (contraction) {
        inv.node = n.body->node(0);  // the matmul: its op, transposes and location
      } else {
        inv.node.op = n.op;
        inv.node.loc = n.loc;
      }
    } else {
      inv.kind = Invocation::Kind::library;
      inv.node = n;
    }
    p.code.push_back(std::move(inv));
  }
  for (ValueId v : g.outputs()) p.outputs.push_back(ref(v));
  return p;
}

void add_cpu_passes(Pipeline& p, const LowerOptions& options) {
  if (options.unroll_loops) {
    p.add(std::make_unique<UnrollScansPass>());
  } else {
    if (options.mask_loop_exits) p.add(std::make_unique<MaskLoopExitsPass>());
    p.add(std::make_unique<HoistLoopInvariantsPass>());
    // After hoisting: its cse inside bodies makes ys of the same value.
    p.add(std::make_unique<PruneScanResultsPass>());
  }
  p.add(std::make_unique<FoldTransposePass>());
  p.add(std::make_unique<FoldBatchMatmulPass>());
  if (options.fuse && options.decompose_composites) {
    p.add(std::make_unique<DecomposeCompositesPass>());
  }
  if (options.split_reductions) p.add(std::make_unique<SplitReductionsPass>());
  if (options.fuse) {
    ContractionEpilogueOptions epilogue;
    epilogue.contraction = [](const Graph& g, const Node& n) {
      cpu::LibraryCall call{n, {}, g.type(n.result())};
      for (ValueId v : n.operands) call.operand_types.push_back(g.type(v));
      return cpu::supports_gemm_epilogue(call);
    };
    epilogue.fusible = options.fusible ? options.fusible : KernelCompiler::supports;
    if (options.fuse_epilogues) {
      p.add(std::make_unique<FuseContractionEpiloguePass>(std::move(epilogue)));
    }
    FuseOptions fuse;
    fuse.fusible = options.fusible ? options.fusible : KernelCompiler::supports;
    fuse.rows = options.fuse_rows;
    fuse.lone_reductions = options.fuse_lone_reductions;
    p.add(std::make_unique<FuseElementwisePass>(fuse));
  }
  if (options.schedule) p.add(std::make_unique<ScheduleMemoryPass>());
}

Pipeline cpu_pipeline(PipelineOptions options) {
  Pipeline p = default_pipeline(std::move(options));
  add_cpu_passes(p);
  return p;
}

StatusOr<Lowering> lower_to_program(Graph g, const LowerOptions& options) {
  WEFT_RETURN_IF_ERROR(verify(g));
  Pipeline passes;
  add_cpu_passes(passes, options);
  WEFT_RETURN_IF_ERROR(passes.run(g).status());
  PlanOptions plan_options = options.plan;
  std::vector<MergedUpdate> merged;
  if (options.update_in_place) {
    plan_options.external = updates_in_place(g);
    if (options.merge_updates) {
      merged = merge_updates(g, plan_options.external, plan_options.alignment);
      std::vector<ContiguousGroup> groups = arena_groups(merged);
      plan_options.groups.insert(plan_options.groups.end(), groups.begin(), groups.end());
    }
  }
  WEFT_ASSIGN_OR_RETURN(MemoryPlan plan, plan_memory(g, plan_options));
  WEFT_ASSIGN_OR_RETURN(Program program, build_program(g, plan, merged, options));
  return Lowering{std::move(g), std::move(plan), std::move(program)};
}

}  // namespace weft::codegen
