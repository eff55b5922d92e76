// fold-constants against the reference interpreter: every elementwise op with a math class,
// in every dtype, on sample fills (signed zeros, infinities, NaN, values that saturate or
// wrap an integer type), folds to exactly the value the interpreter computes, or does not
// fold at all. Both evaluate the op's scalar math from ir/scalar_math.h; this test fails
// when the folder's use of it (its dtype conversions, its refusals) drifts from the
// interpreter's.

#include <cmath>
#include <limits>
#include <set>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "ir/op.h"
#include "passes/fold_constants.h"
#include "passes/infer_types.h"
#include "runtime/reference/interpreter.h"

namespace weft {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();
constexpr DType kDTypes[] = {DType::f32, DType::f64, DType::f16, DType::i32,
                             DType::i64, DType::u8,  DType::boolean};

/// Sample fill values for `dtype` (stored as `full` does: integers truncate and saturate).
std::vector<double> samples(DType dtype) {
  if (dtype == DType::boolean) return {0, 1};
  if (is_floating(dtype)) return {0.0, -0.0, 0.1, -2.5, 3.0, 1e30, kInf, -kInf, std::nan("")};
  return {0, 1, -1, 7, -128, 255, 2147483647, -2147483648.0, 3e9, 1e20, std::nan("")};
}

/// A graph returning `op` applied to `full` constants of `dtype` holding `values`
/// (`to`: cast's result dtype).
Graph one_op(Op op, DType dtype, const std::vector<double>& values, DType to) {
  Graph g;
  std::vector<ValueId> operands;
  for (double v : values) {
    operands.push_back(g.add_node(Op::Full, {}, {{"shape", std::vector<int64_t>{2}},
                                                  {"value", v}, {"dtype", dtype}}));
  }
  Attrs attrs;
  if (op == Op::Cast) attrs["dtype"] = to;
  if (op == Op::Gelu) attrs["approximate"] = std::string("none");
  g.add_output(g.add_node(op, operands, attrs));
  return g;
}

/// The result's description in a failure message.
std::string describe(Op op, DType dtype, const std::vector<double>& values, DType to) {
  std::string s = std::string(op_name(op)) + " " + std::string(dtype_name(dtype)) + " (";
  for (double v : values) s += std::to_string(v) + " ";
  return s + ")" + (op == Op::Cast ? " to " + std::string(dtype_name(to)) : "");
}

struct Counts {
  int cases = 0;
  int folded = 0;
  std::set<Op> folded_ops;
};

/// Checks one case: when fold-constants folds it, the folded `full` holds bitwise what the
/// interpreter computes; when the interpreter refuses it, it is not folded.
void check_case(Op op, DType dtype, const std::vector<double>& values, DType to, Counts& counts) {
  Graph g = one_op(op, dtype, values, to);
  InferTypesPass infer;
  if (!infer.run(g).ok()) return;  // the op does not take this dtype
  ++counts.cases;
  Graph folded = g;
  FoldConstantsPass fold;
  ASSERT_TRUE(fold.run(folded).ok());
  const bool did_fold = folded.nodes().back().op == Op::Full;
  StatusOr<reference::RunResult> want = reference::run(g, {});
  const std::string what = describe(op, dtype, values, to);
  if (!want.ok()) {
    EXPECT_FALSE(did_fold) << what << " folded, but the interpreter says "
                           << want.error().to_string();
    return;
  }
  if (!did_fold) return;
  ++counts.folded;
  counts.folded_ops.insert(op);
  StatusOr<reference::RunResult> got = reference::run(folded, {});
  ASSERT_TRUE(got.ok()) << what;
  EXPECT_TRUE(got->outputs[0] == want->outputs[0])
      << what << ": folded " << tensor_to_string(got->outputs[0]) << ", interpreter "
      << tensor_to_string(want->outputs[0]);
}

TEST(FoldConstantsMathTest, EveryFoldedValueIsTheInterpreters) {
  Counts counts;
  for (Op op : all_ops()) {
    const OpInfo& info = op_info(op);
    if (info.math == MathClass::None || info.math == MathClass::Select) continue;
    for (DType dtype : kDTypes) {
      for (double a : samples(dtype)) {
        if (op == Op::Cast) {
          for (DType to : kDTypes) check_case(op, dtype, {a}, to, counts);
        } else if (info.arity == 1) {
          check_case(op, dtype, {a}, dtype, counts);
        } else {
          for (double b : samples(dtype)) check_case(op, dtype, {a, b}, dtype, counts);
        }
      }
    }
  }
  // Every op whose math the folder computes folded some case; no transcendental op did.
  for (Op op : all_ops()) {
    const MathClass math = op_info(op).math;
    if (math == MathClass::None || math == MathClass::Select) continue;
    const bool folds = math != MathClass::Transcendental && math != MathClass::Power;
    EXPECT_EQ(counts.folded_ops.count(op) == 1, folds) << op_name(op);
  }
  EXPECT_GT(counts.folded, counts.cases / 2) << counts.folded << " of " << counts.cases;
}

TEST(FoldConstantsMathTest, SaturatesWrapsAndRefusesAsTheInterpreter) {
  Counts counts;
  // f32 3e9 cast to i32 saturates to 2147483647; i32 max + 1 wraps; i32 division by zero
  // is a run-time error, so it stays; NaN results stay (the text form has one NaN).
  check_case(Op::Cast, DType::f32, {3e9}, DType::i32, counts);
  check_case(Op::Add, DType::i32, {2147483647, 1}, DType::i32, counts);
  check_case(Op::Div, DType::i32, {1, 0}, DType::i32, counts);
  check_case(Op::Sub, DType::f32, {kInf, kInf}, DType::f32, counts);
  EXPECT_EQ(counts.cases, 4);
  EXPECT_EQ(counts.folded_ops, (std::set<Op>{Op::Cast, Op::Add}));
}

}  // namespace
}  // namespace weft
