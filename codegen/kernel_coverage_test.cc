// The per-backend completeness tests of the op table: every op × every dtype a training
// step can hold, built as a one-node graph, on
//  - the CPU backend: an elementwise op runs a generated kernel exactly where the table
//    (ir/kernel_support.h) says the CPU's generated code covers it (no silent interpreter
//    fallback: an op whose MLIR math is missing fails here), the reference interpreter
//    where the table states a gap; every other op (one node per fixture case of
//    tests/fixtures/cases.json and its f64 / integer / bool variants) runs on a kernel
//    unless cpu_library_gap (runtime/cpu/kernel.h) states why not, and that answer agrees
//    with make_library_kernel's choice; either way the result is the reference's;
//  - the CUDA backend (decided on the host, no GPU needed): every elementwise op runs on
//    the device in f32, and where neither the generated code nor a CUDA library kernel
//    covers an op the backend refuses it for a reason the table states; every library
//    kernel covers a gap; every other op's host invocation has its reason in library_gap
//    (runtime/cuda/library.h), and the f32 ones are printed.
// The way gradcheck_test holds every op to a gradient rule or a stated reason. Each test
// prints its counts and the stated gaps.

#include <algorithm>
#include <cstdio>
#include <map>
#include <optional>
#include <random>
#include <set>
#include <string>
#include <variant>

#include <gtest/gtest.h>

#include "codegen/cpu_backend.h"
#include "codegen/cuda_program.h"
#include "codegen/emit_elementwise.h"
#include "codegen/emit_gpu.h"
#include "codegen/kernel_test_util.h"
#include "ir/kernel_support.h"
#include "ir/shape_rules.h"
#include "runtime/cuda/library.h"
#include "runtime/cuda/library_plan.h"
#include "runtime/cpu/kernel.h"
#include "runtime/reference/interpreter.h"
#include "runtime/reference/testing/fixture_cases.h"

namespace weft::codegen {
namespace {

struct OneOp {
  Graph graph;
  DType data = DType::f32;  // The operand dtype the table is asked about.
};

// A one-node graph of elementwise `op` on operands of data dtype `d` (select: a bool
// condition; cast: to f32, or to i32 from f32), or nullopt when the shape rule refuses `d`.
std::optional<OneOp> one_op(Op op, DType d) {
  const OpInfo& info = op_info(op);
  std::vector<Type> types(static_cast<size_t>(info.arity), Type{d, Shape{{5, 7}}});
  if (op == Op::Select) types[0].dtype = DType::boolean;
  Attrs attrs;
  if (op == Op::Cast) attrs["dtype"] = d == DType::f32 ? DType::i32 : DType::f32;
  StatusOr<Graph> graph = weft::testing::one_node_graph("one_op", op, attrs, types, Location{});
  if (!graph.ok()) return std::nullopt;
  return OneOp{std::move(*graph), d};
}

const Node& the_node(const OneOp& o) { return o.graph.nodes()[0]; }

/// one_op for every elementwise op and every dtype its shape rule takes, with "exp on f64"
/// naming each.
std::vector<std::pair<std::string, OneOp>> every_elementwise_op() {
  std::vector<std::pair<std::string, OneOp>> all;
  for (Op op : all_ops()) {
    if (op_info(op).math == MathClass::None) continue;
    for (DType d : kAllDTypes) {
      if (std::optional<OneOp> o = one_op(op, d)) {
        all.emplace_back(std::string(op_name(op)) + " on " + std::string(dtype_name(d)),
                         std::move(*o));
      }
    }
  }
  return all;
}

TEST(KernelCoverage, TheCpuRunsEveryElementwiseOpAsTheTableSays) {
  std::mt19937_64 rng(29);
  int generated = 0, interpreted = 0, half = 0;
  std::map<HalfRule, int> half_by_rule;  // the f16/bf16 pairs by the op's half rule
  for (auto& [what, one] : every_elementwise_op()) {
    SCOPED_TRACE(what);
    const std::optional<std::string_view> gap = elementwise_gap(one.graph, the_node(one),
                                                                CodeTarget::cpu);
    EXPECT_EQ(emit_supports(one.graph, the_node(one)), !gap.has_value());
    StatusOr<std::unique_ptr<cpu::Executor>> ex = compile_for_cpu(one.graph);
    ASSERT_TRUE(ex.ok()) << ex.error().to_string();
    EXPECT_EQ((*ex)->fallbacks(), gap ? 1 : 0)
        << (gap ? "the table states a gap (" + std::string(*gap) + ") but a kernel ran"
                : std::string("no generated kernel: give the op its MLIR math "
                              "(codegen/emit_elementwise.cc)"))
        << "\n" << (*ex)->describe();
    (gap ? interpreted : generated)++;
    // Values in [0.5, 2] keep every op's domain (log, rsqrt, integer div) well defined.
    std::vector<Tensor> inputs = testing::random_inputs(one.graph, rng, 0.5, 2.0);
    StatusOr<reference::RunResult> want = reference::run(one.graph, inputs);
    ASSERT_TRUE(want.ok()) << want.error().to_string();
    StatusOr<reference::RunResult> got = run_on_cpu(one.graph, inputs);
    ASSERT_TRUE(got.ok()) << got.error().to_string();
    if (is_half(one.data)) {
      // Half precision: bit for bit where the f32 math is exact, within one unit in the
      // last place where the f32 functions are approximations.
      const bool approximated = op_info(the_node(one).op).math == MathClass::Transcendental;
      EXPECT_LE(testing::max_half_ulps(got->outputs[0], want->outputs[0]), approximated ? 1 : 0);
      ++half;
      ++half_by_rule[half_rule(the_node(one).op)];
      continue;
    }
    std::string why;
    EXPECT_TRUE(all_close(got->outputs[0], want->outputs[0], 1e-5, &why)) << why;
  }
  std::printf("  cpu: %d op x dtype pairs generated (%d of them f16/bf16), %d on the "
              "interpreter (stated gaps)\n",
              generated, half, interpreted);
  // Every half rule an elementwise op can have (ir/ops.def) is held to the reference in
  // f16/bf16: Widen (rounds its f32 value), Follow (select's pick), Convert (cast).
  for (HalfRule rule : {HalfRule::Widen, HalfRule::Follow, HalfRule::Convert}) {
    EXPECT_GT(half_by_rule[rule], 0)
        << "no f16/bf16 elementwise op of half rule " << static_cast<int>(rule);
  }
  std::printf("  cpu: f16/bf16 pairs by half rule: widen %d, follow %d, convert %d\n",
              half_by_rule[HalfRule::Widen], half_by_rule[HalfRule::Follow],
              half_by_rule[HalfRule::Convert]);
}

TEST(KernelCoverage, TheGpuRunsEveryElementwiseOpInF32AndRefusesOnlyStatedGaps) {
  int refused = 0, generated = 0, half = 0;
  for (auto& [what, one] : every_elementwise_op()) {
    SCOPED_TRACE(what);
    const DType d = one.data;
    const Node& node = the_node(one);
    const std::optional<std::string_view> gap = elementwise_gap(one.graph, node,
                                                                CodeTarget::gpu);
    EXPECT_EQ(gpu_supports(one.graph, node), !gap.has_value());
    const bool half = is_half(d);
    if (!gap) {
      ++generated;
      half += is_half;
      continue;
    }
    // f16/bf16 are generated for the GPU as for the CPU (computed in f32, rounded as the
    // reference rounds): a half gap is only one the op has in f32 too (pow).
    if (is_half) {
      EXPECT_TRUE(generated_code_gap(node.op, DType::f32, DType::f32, CodeTarget::gpu))
          << "f16/bf16 refused on the GPU where f32 is generated: " << *gap;
    }
    std::vector<Type> operands;
    for (ValueId v : node.operands) operands.push_back(one.graph.type(v));
    const bool library = cuda::library_kind(node, operands, one.graph.type(node.result())) !=
                         cuda::LibraryKind::host;
    EXPECT_TRUE(library || d != DType::f32)
        << "no CUDA kernel for an f32 op: the generated code lacks it (" << *gap
        << ") and the CUDA library has none (runtime/cuda/library_plan.cc)";
    if (!library) {
      ++refused;
      std::printf("  cuda refuses %-13s %s; the CUDA library has no kernel for it\n",
                  what.c_str(), std::string(*gap).c_str());
    }
  }
  std::printf("  cuda: %d op x dtype pairs generated (%d of them f16/bf16), %d refused, each "
              "for its stated gap\n",
              generated, half, refused);
}

TEST(KernelCoverage, EveryCudaLibraryElementwiseKernelCoversAGapOfTheGeneratedCode) {
  for (Op op : all_ops()) {
    if (!cuda::library_elementwise_op(op)) continue;
    bool covers = false;
    for (DType d : {DType::f32, DType::f64}) {
      covers = covers || generated_code_gap(op, d, d, CodeTarget::gpu).has_value();
    }
    EXPECT_TRUE(covers) << "the CUDA library's " << op_name(op)
                        << " kernel is never used: the generated code covers the op";
  }
}

// ---- Every other op: one node per fixture case, and its dtype variants. ----

struct Variant {
  std::string what;  // "sum_ax1_f32 (sum) f32->f64"
  Graph graph;
  std::vector<Tensor> inputs;
  Tensor want;       // What the reference interpreter computes (assign: the new state).
};

// The case's inputs and dtype attributes of dtype `from` as `to` (values converted as
// Tensor::set_double does), or nullopt when none is `from` or the shape rule refuses it.
std::optional<Variant> retyped(const weft::testing::FixtureCase& c, DType from, DType to) {
  bool changed = false;
  std::vector<Tensor> inputs;
  std::vector<Type> types;
  for (const Tensor& t : c.inputs) {
    if (t.type().dtype != from) {
      inputs.push_back(t);
    } else {
      changed = true;
      Tensor u(Type{to, t.type().shape});
      for (int64_t i = 0; i < t.type().shape.numel(); ++i) u.set_double(i, t.get_double(i));
      inputs.push_back(std::move(u));
    }
    types.push_back(inputs.back().type());
  }
  const Node& node = c.graph.nodes()[0];
  Attrs attrs = node.attrs;
  for (auto& [key, value] : attrs) {
    if (const DType* d = std::get_if<DType>(&value); d && *d == from) {
      value = to;
      changed = true;
    }
  }
  if (!changed) return std::nullopt;
  StatusOr<Graph> g = weft::testing::one_node_graph(c.name, c.op, attrs, types, node.loc, c.result);
  if (!g.ok()) return std::nullopt;
  return Variant{c.name + " (" + std::string(op_name(c.op)) + ") " +
                     std::string(dtype_name(from)) + "->" + std::string(dtype_name(to)),
                 std::move(*g), std::move(inputs), Tensor()};
}

// Gives `v` what the reference interpreter computes; false when the reference refuses it
// (a dtype the shape rule takes but no training step holds: argmax on bool).
bool with_reference_result(Variant& v) {
  StatusOr<reference::RunResult> r = reference::run(v.graph, v.inputs);
  if (!r.ok()) return false;
  v.want = v.graph.nodes()[0].op == Op::Assign ? r->updated.at(0).second : r->outputs.at(0);
  return true;
}

/// A one-node graph for every fixture case of an op that is not elementwise, and for each
/// of its dtype variants that the shape rule and the reference interpreter take: f32 data
/// as f64, i32, i64, u8 and bool, i64 indices as i32 and u8, i32 data as i64. f16 and bf16
/// wait for [Mixed precision]. The elementwise ops are covered above, dtype by dtype.
std::vector<Variant> every_other_op() {
  std::vector<Variant> all;
  StatusOr<std::vector<weft::testing::FixtureEntry>> entries = weft::testing::load_fixture_cases();
  if (!entries.ok()) return all;
  for (weft::testing::FixtureEntry& e : *entries) {
    if (!e.built.ok()) continue;
    const weft::testing::FixtureCase& c = *e.built;
    if (op_info(c.op).math != MathClass::None) continue;
    all.push_back({c.name + " (" + e.op + ")", c.graph, c.inputs, Tensor()});
    const std::pair<DType, DType> changes[] = {
        {DType::f32, DType::f64}, {DType::f32, DType::i32}, {DType::f32, DType::i64},
        {DType::f32, DType::u8},  {DType::f32, DType::boolean}, {DType::i64, DType::i32},
        {DType::i64, DType::u8},  {DType::i32, DType::i64}};
    for (auto [from, to] : changes) {
      if (std::optional<Variant> v = retyped(c, from, to)) all.push_back(std::move(*v));
    }
  }
  std::erase_if(all, [](Variant& v) { return !with_reference_result(v); });
  return all;
}

// A library invocation's call: its node with the operand and result types.
cpu::LibraryCall call_of(const Invocation& inv) {
  cpu::LibraryCall call{inv.node, {}, inv.results.empty() ? Type{} : inv.results[0].type};
  for (const BufferRef& r : inv.operands) call.operand_types.push_back(r.type);
  return call;
}

// The invocations the CPU executor hands to make_library_kernel (it runs all_reduce and
// assign itself).
std::vector<const Invocation*> library_invocations(const Program& program) {
  std::vector<const Invocation*> out;
  for (const Invocation& inv : program.code) {
    if (inv.kind == Invocation::Kind::library && inv.node.op != Op::AllReduce &&
        inv.node.op != Op::Assign) {
      out.push_back(&inv);
    }
  }
  return out;
}

// "sum: i32 -> i32": one op × dtype pair, as the summary counts them.
std::string pair_name(const Node& node, const std::vector<Type>& operands, const Type& result) {
  std::string s = std::string(op_name(node.op)) + ":";
  for (const Type& t : operands) s += " " + std::string(dtype_name(t.dtype));
  return s + " -> " + std::string(dtype_name(result.dtype));
}

// Op × dtype pairs on a kernel and on a stated gap, each gap's reason with its pairs.
struct Tally {
  std::set<std::string> on_kernel;
  std::map<std::string, std::set<std::string>> gaps;  // reason -> pairs

  void print(const char* backend) const {
    size_t gapped = 0;
    for (const auto& [why, pairs] : gaps) gapped += pairs.size();
    std::printf("  %s: %zu op x dtype pairs on a kernel, %zu stated gaps:\n", backend,
                on_kernel.size(), gapped);
    for (const auto& [why, pairs] : gaps) {
      std::string list;
      for (const std::string& p : pairs) list += (list.empty() ? "" : "; ") + p;
      std::printf("    %s\n      %s\n", why.c_str(), list.c_str());
    }
  }
};

TEST(KernelCoverage, EveryOpThatIsNotElementwiseHasACase) {
  std::set<Op> covered;
  for (const Variant& v : every_other_op()) covered.insert(v.graph.nodes()[0].op);
  for (Op op : all_ops()) {
    if (op_info(op).math != MathClass::None) continue;  // Covered dtype by dtype above.
    // A fused kernel is the generated code these tests check op by op (and fuse_test and
    // the kernel_*_test files check as bodies); a loop runs its body's kernels
    // (codegen:loop_program_test).
    if (op == Op::Fused || op == Op::Scan) continue;
    EXPECT_TRUE(covered.count(op)) << "no fixture case for " << op_name(op)
                                   << " that the reference runs; add one to make_fixtures.py";
  }
}

TEST(KernelCoverage, TheCpuRunsEveryOtherOpOnAKernelOrAStatedGap) {
  Tally tally;
  for (Variant& v : every_other_op()) {
    SCOPED_TRACE(v.what);
    StatusOr<std::unique_ptr<cpu::Executor>> ex = compile_for_cpu(v.graph);
    ASSERT_TRUE(ex.ok()) << ex.error().to_string();
    int gaps = 0;
    for (const Invocation* inv : library_invocations((*ex)->program())) {
      const cpu::LibraryCall call = call_of(*inv);
      const std::string pair = pair_name(call.node, call.operand_types, call.result_type);
      if (std::optional<std::string_view> gap = cpu::cpu_library_gap(call)) {
        ++gaps;
        tally.gaps[std::string(*gap)].insert(pair);
      } else {
        tally.on_kernel.insert(pair);
      }
    }
    EXPECT_EQ((*ex)->fallbacks(), gaps)
        << "an invocation ran on the reference interpreter with no reason stated: give the CPU "
           "a kernel or say why in cpu_library_gap (runtime/cpu/kernel.cc)\n"
        << (*ex)->describe();
    StatusOr<reference::RunResult> got = run_on_cpu(v.graph, v.inputs);
    ASSERT_TRUE(got.ok()) << got.error().to_string();
    const bool assign = v.graph.nodes()[0].op == Op::Assign;
    std::string why;
    EXPECT_TRUE(all_close(assign ? got->updated.at(0).second : got->outputs.at(0), v.want, 1e-4,
                          &why))
        << why;
  }
  tally.print("cpu");
}

TEST(KernelCoverage, TheCpuLibraryGapAgreesWithItsKernelChoice) {
  for (Variant& v : every_other_op()) {
    SCOPED_TRACE(v.what);
    StatusOr<Lowering> lowered = lower_to_program(v.graph);
    ASSERT_TRUE(lowered.ok()) << lowered.error().to_string();
    for (const Invocation* inv : library_invocations(lowered->program)) {
      const cpu::LibraryCall call = call_of(*inv);
      std::vector<Tensor> operands;
      std::vector<const void*> pointers;
      for (const Type& t : call.operand_types) operands.emplace_back(t);
      for (Tensor& t : operands) pointers.push_back(t.raw_data());
      Tensor result(call.result_type);
      StatusOr<std::unique_ptr<cpu::BoundKernel>> kernel =
          cpu::make_library_kernel(call, pointers, result.raw_data());
      ASSERT_TRUE(kernel.ok()) << kernel.error().to_string();
      EXPECT_EQ(*kernel == nullptr, cpu::cpu_library_gap(call).has_value())
          << (*kernel ? "cpu_library_gap states a gap where make_library_kernel has a kernel"
                      : "make_library_kernel has no kernel and cpu_library_gap no reason");
    }
  }
}

// Whether an invocation computes in f32: an f32 operand or result, and no other float.
bool is_f32_case(const std::vector<Type>& operands, const Type& result) {
  bool f32 = result.dtype == DType::f32;
  for (const Type& t : operands) {
    if (is_floating(t.dtype) && t.dtype != DType::f32) return false;
    f32 = f32 || t.dtype == DType::f32;
  }
  return f32 && (!is_floating(result.dtype) || result.dtype == DType::f32);
}

TEST(KernelCoverage, TheGpuRunsEveryOtherOpOnTheDeviceOrStatesWhyNot) {
  Tally tally;
  std::set<std::string> f32_on_host;
  for (Variant& v : every_other_op()) {
    SCOPED_TRACE(v.what);
    StatusOr<CudaProgram> p = compile_cuda_program(v.graph);
    ASSERT_TRUE(p.ok()) << p.error().to_string();
    const std::vector<int> host = cuda::host_invocations(p->program);
    for (size_t i = 0; i < p->program.code.size(); ++i) {
      const Invocation& inv = p->program.code[i];
      if (inv.kind != Invocation::Kind::library && inv.kind != Invocation::Kind::contraction) {
        continue;  // Generated kernels and copies run on the device.
      }
      std::vector<Type> operands;
      for (const BufferRef& r : inv.operands) operands.push_back(r.type);
      const Type result = inv.results.empty() ? Type{} : inv.results[0].type;
      const std::string pair = pair_name(inv.node, operands, result);
      const bool on_host = std::count(host.begin(), host.end(), static_cast<int>(i)) > 0;
      const std::optional<std::string_view> gap = cuda::library_gap(inv.node, operands, result);
      EXPECT_EQ(gap.has_value(), on_host)
          << cuda::describe_host_invocation(inv) << ": library_gap disagrees with host_invocations";
      if (!gap) {
        tally.on_kernel.insert(pair);
        continue;
      }
      tally.gaps[std::string(*gap)].insert(pair);
      if (is_f32_case(operands, result)) f32_on_host.insert(v.what + ": " + std::string(*gap));
    }
  }
  tally.print("cuda");
  // Not yet every f32 case runs on the device: these are stated gaps (library_gap), printed
  // so that they stay in view until the CUDA library has their kernels.
  std::printf("  cuda: %zu f32 cases on the host\n", f32_on_host.size());
  for (const std::string& what : f32_on_host) std::printf("    %s\n", what.c_str());
}

}  // namespace
}  // namespace weft::codegen
