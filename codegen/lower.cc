#include "codegen/lower.h"

#include <algorithm>
#include <memory>
#include <unordered_map>
#include <unordered_set>

#include "codegen/kernel_compiler.h"
#include "ir/fused_kind.h"
#include "ir/scan.h"
#include "ir/verifier.h"
#include "passes/decompose_composites.h"
#include "runtime/ab_switch.h"
#include "runtime/cpu/kernel.h"
#include "passes/fold_batch_matmul.h"
#include "passes/fold_concats.h"
#include "passes/fold_slices.h"
#include "passes/fold_window_producers.h"
#include "passes/merge_updates.h"
#include "passes/split_reductions.h"
#include "passes/fold_transpose.h"
#include "passes/fuse_contraction_epilogue.h"
#include "passes/fuse_elementwise.h"
#include "passes/rematerialize.h"
#include "passes/schedule.h"
#include "passes/hoist_loop_invariants.h"
#include "passes/mask_loop_exits.h"
#include "passes/prune_scan_results.h"
#include "passes/round_at_stores.h"
#include "passes/unroll_scans.h"

namespace weft::codegen {

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
  // The verifier checks this too; build_program may be given an unverified graph.
  if (auto message = check_fused_body(fused)) return Error{*message, fused.loc};
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

int64_t round_up(int64_t n, int64_t m) { return (n + m - 1) / m * m; }

// Sets p.input_offsets and p.inputs_bytes: the input ranges of `merged` first, each
// member at its range offset, then every other input in index order, 64-byte aligned.
void lay_out_inputs(const Graph& g, const std::vector<MergedUpdate>& merged, Program& p) {
  p.input_offsets.assign(p.inputs.size(), -1);
  int64_t end = 0;
  for (const MergedUpdate& m : merged) {
    for (const FlatRange& r : m.ranges) {
      if (!r.input) continue;
      for (size_t k = 0; k < r.values.size(); ++k) {
        p.input_offsets[g.input_index(r.values[k])] = end + r.offsets[k];
      }
      end += round_up(r.bytes, 64);
    }
  }
  for (size_t i = 0; i < p.inputs.size(); ++i) {
    if (p.input_offsets[i] >= 0) continue;
    p.input_offsets[i] = end;
    end += round_up(static_cast<int64_t>(p.inputs[i].type.bytes()), 64);
  }
  p.inputs_bytes = end;
}

// build_program as named steps: the Program's header and inputs, then one invocation per
// node (or per merged update), then its outputs.
class ProgramBuilder {
 public:
  ProgramBuilder(const Graph& g, const MemoryPlan& plan, const std::vector<MergedUpdate>& merged,
                 const LowerOptions& options)
      : g_(g), plan_(plan), merged_(merged), options_(options) {}

  StatusOr<Program> build() {
    start_program();
    index_merged_updates();
    find_values_written_in_place();
    index_stored_concats();
    for (int i = 0; i < static_cast<int>(g_.nodes().size()); ++i) {
      if (merged_at_[i] == kMergedMember) continue;  // runs in its group's invocation
      if (merged_at_[i] >= 0) {
        add_merged_update(merged_[merged_at_[i]]);
      } else {
        WEFT_RETURN_IF_ERROR(add_node(g_.node(i)));
      }
    }
    for (ValueId v : g_.outputs()) p_.outputs.push_back(ref(v));
    return std::move(p_);
  }

 private:
  // merged_at_: the merged update a node starts, or this for its other members.
  static constexpr int kMergedMember = -2;

  // The header, the inputs and the inputs block's layout.
  void start_program() {
    p_.name = g_.name();
    p_.arena_bytes = plan_.arena_bytes;
    p_.naive_bytes = plan_.naive_bytes;
    p_.lower_bound_bytes = plan_.lower_bound_bytes;
    for (const Input& in : g_.inputs()) {
      p_.inputs.push_back({g_.value(in.value).name, g_.type(in.value), in.kind});
    }
    lay_out_inputs(g_, merged_, p_);
  }

  // Node index -> the merged update it starts, kMergedMember for the other members, -1.
  void index_merged_updates() {
    merged_at_.assign(g_.nodes().size(), -1);
    for (size_t m = 0; m < merged_.size(); ++m) {
      for (int i : merged_[m].nodes) merged_at_[i] = kMergedMember;
      merged_at_[merged_[m].nodes.front()] = static_cast<int>(m);
    }
  }

  // Values written straight into the buffer of the input they are assigned to.
  void find_values_written_in_place() {
    for (const Node& n : g_.nodes()) {
      const ValueId v = n.op == Op::Assign ? n.operands[1] : kNoValue;
      if (v != kNoValue && v < static_cast<ValueId>(plan_.external.size()) && plan_.external[v]) {
        written_to_[v] = g_.input_index(n.operands[0]);
      }
    }
  }

  // The operands of the concats the plan stores in place: each -> its windows (concat
  // node, position), and the concat it is a part of (no buffer of its own), if any.
  void index_stored_concats() {
    for (const StoredConcat& c : plan_.stored_concats) {
      const int node = g_.value(c.result).node;
      stored_concats_.insert(node);
      const std::vector<ValueId>& operands = g_.node(node).operands;
      for (size_t k = 0; k < operands.size(); ++k) windows_of_[operands[k]].push_back({node, k});
      for (ValueId v : c.parts) part_of_[v] = node;
    }
  }

  BufferRef ref(ValueId v) const {
    BufferRef r;
    r.type = g_.type(v);
    auto in_place = written_to_.find(v);
    const int input = in_place != written_to_.end() ? in_place->second : g_.input_index(v);
    if (input >= 0) {
      r.space = Space::input;
      r.input = input;
    } else {
      WEFT_CHECK(plan_.offset[v] >= 0, "build_program: %" + g_.value(v).name + " has no offset");
      r.space = Space::arena;
      r.offset = plan_.offset[v];
    }
    return r;
  }

  // The kernel table's entry for `body` of form `kind`: bodies with one structure (so
  // one kind) share one kernel.
  int kernel(const Graph& body, FusedKind kind) {
    std::string key = kernel_key(body);
    auto [it, added] = kernel_by_key_.emplace(key, static_cast<int>(p_.kernels.size()));
    if (added) {
      const RowLayout layout = row_layout(body, kind);
      p_.kernels.push_back({"k" + std::to_string(it->second), std::move(key), body, kind,
                            layout.rows, layout.row_length});
    }
    return it->second;
  }

  // Range `r` of merged update `m` as one buffer of m.length elements.
  BufferRef range(const MergedUpdate& m, int r) const {
    BufferRef b = ref(m.ranges[r].values[0]);
    b.type = Type{m.ranges[r].dtype, Shape({m.length})};
    return b;
  }

  // The padding of the arena ranges (after each member, and the tail) may hold bytes of
  // earlier intermediates: zeroed first, so every padding lane computes on zeros.
  std::vector<BufferRef> padding_to_clear(const MergedUpdate& m) const {
    std::vector<BufferRef> clear;
    for (const FlatRange& r : m.ranges) {
      if (r.input) continue;
      const int64_t start = plan_.offset[r.values[0]];
      const int64_t end = start + m.length * static_cast<int64_t>(dtype_size(r.dtype));
      for (size_t k = 0; k < r.values.size(); ++k) {
        WEFT_CHECK(plan_.offset[r.values[k]] - start == r.offsets[k],
                   "build_program: the memory plan broke a merged update's gradient range");
        const int64_t from =
            plan_.offset[r.values[k]] + static_cast<int64_t>(g_.type(r.values[k]).bytes());
        const int64_t to = k + 1 < r.values.size() ? plan_.offset[r.values[k + 1]] : end;
        if (to > from) clear.push_back({Space::arena, -1, from, Type{DType::u8, Shape({to - from})}});
      }
    }
    return clear;
  }

  // One generated invocation over the flat ranges of merged update `m`.
  void add_merged_update(const MergedUpdate& m) {
    const Node& first = g_.node(m.nodes.front());
    Invocation inv;
    for (size_t j = 0; j < m.operands.size(); ++j) {
      inv.operands.push_back(m.operand_range[j] >= 0 ? range(m, m.operand_range[j])
                                                     : ref(m.operands[j]));
    }
    for (int r : m.result_range) inv.results.push_back(range(m, r));
    inv.clear = padding_to_clear(m);
    inv.label = g_.value(first.result()).name + ".." +
                g_.value(g_.node(m.nodes.back()).result()).name;
    inv.kind = Invocation::Kind::generated;
    inv.kernel = kernel(m.body, FusedKind::elementwise);  // merges elementwise updates only
    inv.node.op = first.op;
    inv.node.loc = first.loc;
    p_.code.push_back(std::move(inv));
  }

  // An assign: an update after the step, unless its value was written in place.
  void add_update(const Node& n) {
    Update u{g_.input_index(n.operands[0]), ref(n.operands[1])};
    if (u.from.space != Space::input || u.from.input != u.input) p_.updates.push_back(u);
  }

  // One node's invocation (none for an assign or a reshape planned in place).
  Status add_node(const Node& n) {
    if (n.op == Op::Assign) {
      add_update(n);
      return Status();
    }
    Invocation inv;
    for (ValueId v : n.operands) inv.operands.push_back(ref(v));
    for (ValueId v : n.results) inv.results.push_back(ref(v));
    inv.label = g_.value(n.result()).name;
    if (stored_concats_.count(static_cast<int>(&n - g_.nodes().data()))) {
      return Status();  // its operands' kernels stored them in its buffer
    }
    if (n.op == Op::Reshape) {
      if (inv.operands[0] == inv.results[0]) return Status();  // planned in place: a view
      inv.kind = Invocation::Kind::copy;
      inv.node.op = n.op;  // every invocation names its op (Node::op has no default)
      inv.node.loc = n.loc;
    } else if (n.op == Op::Scan) {
      WEFT_RETURN_IF_ERROR(add_loop_body(n, inv));
    } else if (n.op == Op::Fused) {
      WEFT_RETURN_IF_ERROR(set_fused_kernel(n, inv));
    } else {
      inv.kind = Invocation::Kind::library;
      inv.node = n;
    }
    p_.code.push_back(std::move(inv));
    return Status();
  }

  // A loop: its body lowered as a Program of its own, whose kernels join this Program's
  // table and whose own loops' bodies join this Program's list.
  Status add_loop_body(const Node& n, Invocation& inv) {
    LowerOptions body_options = options_;
    body_options.merge_updates = false;
    body_options.loop_body = true;
    WEFT_ASSIGN_OR_RETURN(
        Lowering body,
        lower_to_program(carries_assigned(*n.body, static_cast<size_t>(n.int_attr("consts")),
                                          static_cast<size_t>(n.int_attr("carries"))),
                         body_options));
    Program bp = std::move(body.program);
    std::vector<int> kernel_at;
    for (const GeneratedKernel& k : bp.kernels) kernel_at.push_back(kernel(k.body, k.kind));
    const int first_body = static_cast<int>(p_.bodies.size());
    const auto renumber = [&kernel_at, first_body](Program& q) {
      for (Invocation& i : q.code) {
        if (i.kernel >= 0) i.kernel = kernel_at[static_cast<size_t>(i.kernel)];
        if (i.body >= 0) i.body += first_body;
      }
    };
    for (Program& nested : bp.bodies) {
      renumber(nested);
      p_.bodies.push_back(std::move(nested));
    }
    renumber(bp);
    bp.kernels.clear();
    bp.bodies.clear();
    inv.kind = Invocation::Kind::loop;
    inv.body = static_cast<int>(p_.bodies.size());
    inv.node = n;
    inv.node.body = nullptr;  // the Program holds the lowered body
    p_.bodies.push_back(std::move(bp));
    return Status();
  }

  // A fused node by its kind: a contraction is the GEMM with its epilogue as the kernel,
  // every other kind one generated kernel of its body.
  Status set_fused_kernel(const Node& n, Invocation& inv) {
    if (fused_kind(n) != FusedKind::contraction) {
      inv.kind = Invocation::Kind::generated;
      inv.kernel = kernel(stored_body(n, inv), fused_kind(n));
      inv.node.op = n.op;
      inv.node.loc = n.loc;
      return Status();
    }
    WEFT_ASSIGN_OR_RETURN(Graph epilogue, epilogue_body(n, inv.gemm_result));
    inv.kind = Invocation::Kind::contraction;
    inv.kernel = kernel(epilogue, FusedKind::elementwise);
    inv.node = n.body->node(0);  // the matmul: its op, transposes and location
    return Status();
  }

  // `n`'s body with its results that stored concats read stored through windows
  // (passes/fold_concats.h): a part in its place in the concat it is a part of (its
  // result in `inv` that concat's buffer), every other window as an extra result (the
  // concat's buffer appended to `inv`'s).
  Graph stored_body(const Node& n, Invocation& inv) const {
    std::vector<StoreWindow> windows;
    std::vector<BufferRef> extra;
    for (size_t o = 0; o < n.results.size(); ++o) {
      auto found = windows_of_.find(n.results[o]);
      if (found == windows_of_.end()) continue;
      const auto part_of = part_of_.find(n.results[o]);
      for (const auto& [node, k] : found->second) {
        const bool part = part_of != part_of_.end() && part_of->second == node;
        const Node& concat = g_.node(node);
        windows.push_back({o, g_.type(concat.result()), part_start(g_, concat, k), /*also=*/!part});
        (part ? inv.results[o] : extra.emplace_back()) = ref(concat.result());
      }
    }
    inv.results.insert(inv.results.end(), extra.begin(), extra.end());
    return windows.empty() ? *n.body : with_store_windows(*n.body, windows);
  }

  const Graph& g_;
  const MemoryPlan& plan_;
  const std::vector<MergedUpdate>& merged_;
  const LowerOptions& options_;
  Program p_;
  std::vector<int> merged_at_;
  std::unordered_map<ValueId, int> written_to_;
  std::unordered_map<ValueId, std::vector<std::pair<int, size_t>>> windows_of_;
  std::unordered_map<ValueId, int> part_of_;  // a stored concat's part -> the concat's node
  std::unordered_set<int> stored_concats_;
  std::unordered_map<std::string, int> kernel_by_key_;
};

// The fusion passes, by `options`, with the CPU runtime's GEMM epilogues.
void add_fusion_passes(Pipeline& p, const LowerOptions& options) {
  const auto fusible = options.fusible ? options.fusible : KernelCompiler::supports;
  if (options.fuse_epilogues) {
    ContractionEpilogueOptions epilogue;
    epilogue.contraction = [](const Graph& g, const Node& n) {
      cpu::LibraryCall call{n, {}, g.type(n.result())};
      for (ValueId v : n.operands) call.operand_types.push_back(g.type(v));
      return cpu::supports_gemm_epilogue(call);
    };
    epilogue.fusible = fusible;
    epilogue.assigned_in_epilogues = options.loop_body;
    p.add(std::make_unique<FuseContractionEpiloguePass>(std::move(epilogue)));
  }
  FuseOptions fuse;
  fuse.fusible = fusible;
  fuse.rows = options.fuse_rows;
  fuse.lone_reductions = options.fuse_lone_reductions;
  fuse.lone_half_reductions = options.fuse_lone_half_reductions;
  p.add(std::make_unique<FuseElementwisePass>(fuse));
  if (options.fold_slices) {
    p.add(std::make_unique<FoldSlicesPass>());
    if (options.fold_window_producers && !switched_off("WEFT_FOLD_WINDOW_PRODUCERS")) {
      p.add(std::make_unique<FoldWindowProducersPass>());
    }
  }
  if (options.round_half_at_stores) p.add(std::make_unique<RoundAtStoresPass>());
}

// The concats stored in place (passes/fold_concats.h) but those whose operands a merged
// update computes: its one invocation over flat ranges stores through no windows.
std::vector<StoredConcat> stored_concats_outside_merges(const Graph& g, const std::vector<MergedUpdate>& merged) {
  std::vector<bool> in_merge(g.nodes().size(), false);
  for (const MergedUpdate& m : merged) {
    for (int i : m.nodes) in_merge[static_cast<size_t>(i)] = true;
  }
  return stored_concats(g, in_merge);
}

// The memory plan's options: `options.plan` with the concats stored in place, the values
// updated in place and the merged updates' gradient groups.
PlanOptions plan_options(const Graph& g, const LowerOptions& options, const UpdatePlan& updates) {
  PlanOptions plan = options.plan;
  if (options.fold_concats) plan.stored_concats = stored_concats_outside_merges(g, updates.merged);
  if (!options.update_in_place) return plan;
  plan.external = options.merge_updates ? updates.external : updates_in_place(g);
  const std::vector<ContiguousGroup> groups = arena_groups(updates.merged);
  plan.groups.insert(plan.groups.end(), groups.begin(), groups.end());
  return plan;
}

}  // namespace

StatusOr<Program> build_program(const Graph& g, const MemoryPlan& plan,
                                const std::vector<MergedUpdate>& merged, const LowerOptions& options) {
  return ProgramBuilder(g, plan, merged, options).build();
}

KeepComposite keep_library_composites(CodeTarget target, KeepComposite takes) {
  return [target, takes = std::move(takes)](const Graph& g, const Node& node) {
    if (node.operands.empty() || composite_prefers_rows(node.op)) return false;
    if (library_composite_gap(node.op, g.type(node.operands[0]).dtype, target)) return false;
    return !takes || takes(g, node);
  };
}

void add_lowering_passes(Pipeline& p, const LowerOptions& options) {
  if (options.unroll_loops) {
    p.add(std::make_unique<UnrollScansPass>());
  } else if (options.mask_loop_exits) {
    p.add(std::make_unique<MaskLoopExitsPass>());
  }
  // Before hoisting, loop bodies included: the constants a decomposition makes in a
  // body (layer norm's eps) are then hoisted out of the loop with the rest.
  if (options.fuse && options.decompose_composites) {
    p.add(std::make_unique<DecomposeCompositesPass>(options.keep_composite));
  }
  if (!options.unroll_loops) {
    p.add(std::make_unique<HoistLoopInvariantsPass>());
    // After hoisting: its cse inside bodies makes ys of the same value.
    p.add(std::make_unique<PruneScanResultsPass>());
  }
  p.add(std::make_unique<FoldTransposePass>());
  p.add(std::make_unique<FoldBatchMatmulPass>());
  if (options.split_reductions) p.add(std::make_unique<SplitReductionsPass>());
  // Before fusion, which puts each recomputation inside its reader's kernel. Not in a
  // loop's body: its arena is one iteration's scratch, so a recomputation there saves
  // little and costs every iteration (and a row kernel would store its statistics for
  // the recomputing reader, which the persistent loop kernel refuses).
  // $WEFT_REMATERIALIZE=0 turns it off for an A/B.
  if (options.fuse && !options.loop_body && !switched_off("WEFT_REMATERIALIZE")) {
    p.add(std::make_unique<RematerializePass>());
  }
  if (options.fuse) add_fusion_passes(p, options);
  if (options.schedule) p.add(std::make_unique<ScheduleMemoryPass>());
}

void add_merge_updates(Pipeline& p, const LowerOptions& options, UpdatePlan* updates) {
  if (!options.update_in_place || !options.merge_updates) return;
  p.add(std::make_unique<MergeUpdatesPass>(
      MergeUpdatesOptions{.key = kernel_key, .alignment = options.plan.alignment}, updates));
}

Pipeline cpu_pipeline(PipelineOptions options) {
  Pipeline p = default_pipeline(std::move(options));
  add_lowering_passes(p);
  return p;
}

// The lowering, one list: the target's graph passes, merge-updates, then the memory plan
// and the Program. The memory plan is not a pass: it changes nothing in the graph, it
// is the arena layout of the graph the passes leave (an analysis, passes/memory_plan.h).
StatusOr<Lowering> lower_to_program(Graph g, const LowerOptions& options) {
  WEFT_RETURN_IF_ERROR(verify(g));
  UpdatePlan updates;
  Pipeline passes;
  add_lowering_passes(passes, options);
  add_merge_updates(passes, options, &updates);
  WEFT_RETURN_IF_ERROR(passes.run(g).status());
  WEFT_ASSIGN_OR_RETURN(MemoryPlan plan, plan_memory(g, plan_options(g, options, updates)));
  WEFT_ASSIGN_OR_RETURN(Program program, build_program(g, plan, updates.merged, options));
  return Lowering{std::move(g), std::move(plan), std::move(program)};
}

}  // namespace weft::codegen
