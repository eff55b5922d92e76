#include "ir/shape_rules.h"

#include <gtest/gtest.h>

#include <limits>

namespace weft {
namespace {
namespace shape_rules_test {  // this file's names, apart in its package's unity test

const Location kLoc{"model.wir", 3, 8, ""};

Type f32(Shape s) { return Type{DType::f32, std::move(s)}; }
Type i64(Shape s) { return Type{DType::i64, std::move(s)}; }
Type boolean(Shape s) { return Type{DType::boolean, std::move(s)}; }

StatusOr<Type> infer(Op op, std::vector<Type> operands, Attrs attrs = {}) {
  Node node{op, {}, std::move(attrs), {}, kLoc};
  return infer_node_type(node, operands);
}

/// The inferred type as text, or the full error message.
std::string run(Op op, std::vector<Type> operands, Attrs attrs = {}) {
  StatusOr<Type> t = infer(op, std::move(operands), std::move(attrs));
  return t.ok() ? t->to_string() : t.error().to_string();
}

TEST(ShapeRulesTest, EveryOpHasARule) {
  for (Op op : all_ops()) {
    EXPECT_NE(find_shape_rule(op), nullptr) << op_name(op) << " has no shape rule";
  }
}

TEST(ShapeRulesTest, ElementwiseUnary) {
  EXPECT_EQ(run(Op::Exp, {f32({4, 6})}), "f32[4,6]");
  EXPECT_EQ(run(Op::Neg, {Type{DType::i32, {3}}}), "i32[3]");
  EXPECT_EQ(run(Op::Relu, {Type{DType::u8, {3}}}), "u8[3]");
  EXPECT_EQ(run(Op::Not, {boolean({2})}), "bool[2]");
  EXPECT_EQ(run(Op::Gelu, {f32({2})}, {{"approximate", std::string("tanh")}}), "f32[2]");
  EXPECT_EQ(run(Op::Cast, {f32({2, 2})}, {{"dtype", DType::bf16}}), "bf16[2,2]");
  EXPECT_EQ(run(Op::Exp, {i64({4})}),
            "model.wir:3:8: error: exp: operand i64[4] needs a floating dtype (f32, f64, f16, "
            "bf16); insert a cast");
  EXPECT_EQ(run(Op::Abs, {Type{DType::u8, {4}}}),
            "model.wir:3:8: error: abs: operand u8[4] needs a floating or signed integer dtype "
            "(f*, i32, i64)");
  EXPECT_EQ(run(Op::Not, {f32({4})}), "model.wir:3:8: error: not: operand f32[4] needs bool");
  EXPECT_EQ(run(Op::Gelu, {f32({2})}, {{"approximate", std::string("fast")}}),
            "model.wir:3:8: error: gelu: approximate must be \"none\" or \"tanh\", got \"fast\"");
}

TEST(ShapeRulesTest, ElementwiseBinaryBroadcasts) {
  EXPECT_EQ(run(Op::Add, {f32({4, 1, 6}), f32({5, 1})}), "f32[4,5,6]");
  EXPECT_EQ(run(Op::Mul, {f32({}), f32({3})}), "f32[3]");
  EXPECT_EQ(run(Op::Lt, {i64({2, 3}), i64({3})}), "bool[2,3]");
  EXPECT_EQ(run(Op::Eq, {boolean({2}), boolean({2})}), "bool[2]");
  EXPECT_EQ(run(Op::And, {boolean({2, 1}), boolean({4})}), "bool[2,4]");
  EXPECT_EQ(run(Op::Select, {boolean({4, 1}), f32({1, 5}), f32({})}), "f32[4,5]");
}

TEST(ShapeRulesTest, BinaryErrors) {
  EXPECT_EQ(run(Op::Add, {f32({4, 6}), f32({5})}),
            "model.wir:3:8: error: add: cannot broadcast lhs f32[4,6] with rhs f32[5]: dim 1 "
            "of lhs is 6 but dim 0 of rhs is 5 (dims must match or be 1)");
  EXPECT_EQ(run(Op::Add, {f32({4}), i64({4})}),
            "model.wir:3:8: error: add: operand dtypes differ: lhs f32[4] vs rhs i64[4]; weft "
            "never converts implicitly, insert a cast {dtype=f32}");
  EXPECT_EQ(run(Op::Add, {boolean({4}), boolean({4})}),
            "model.wir:3:8: error: add: arithmetic on bool operands (lhs bool[4], rhs bool[4]) "
            "is not defined; use and/or, or cast to a number");
  EXPECT_EQ(run(Op::Or, {f32({4}), f32({4})}),
            "model.wir:3:8: error: or: operands must be bool, got lhs f32[4] and rhs f32[4]; "
            "compare them (ne) to get bools");
  EXPECT_EQ(run(Op::Select, {f32({4}), f32({4}), f32({4})}),
            "model.wir:3:8: error: select: condition f32[4] must be bool (operands: cond "
            "f32[4], a f32[4], b f32[4])");
  EXPECT_EQ(run(Op::Select, {boolean({3}), f32({4}), f32({4})}),
            "model.wir:3:8: error: select: cannot broadcast cond bool[3] with broadcast(a, b) "
            "f32[4]: dim 0 of cond is 3 but dim 0 of broadcast(a, b) is 4 (dims must match or "
            "be 1)");
}

TEST(ShapeRulesTest, Reductions) {
  Type x = f32({2, 3, 4});
  EXPECT_EQ(run(Op::Sum, {x}), "f32[]");
  EXPECT_EQ(run(Op::Sum, {x}, {{"axes", IntList{-1, 0}}}), "f32[3]");
  EXPECT_EQ(run(Op::Max, {x}, {{"axes", IntList{0, 2}}, {"keepdims", true}}), "f32[1,3,1]");
  EXPECT_EQ(run(Op::Mean, {x}, {{"axes", IntList{}}}), "f32[2,3,4]");
  EXPECT_EQ(run(Op::Min, {boolean({5})}), "bool[]");
  EXPECT_EQ(run(Op::Argmax, {x}, {{"axis", int64_t{-2}}}), "i64[2,4]");
  EXPECT_EQ(run(Op::Argmax, {x}, {{"axis", int64_t{1}}, {"keepdims", true}}), "i64[2,1,4]");
  EXPECT_EQ(run(Op::Sum, {x}, {{"axes", IntList{3}}}),
            "model.wir:3:8: error: sum: axes 3 is out of range for operand f32[2,3,4] (rank 3: "
            "valid axes are -3..2)");
  EXPECT_EQ(run(Op::Sum, {x}, {{"axes", IntList{1, -2}}}),
            "model.wir:3:8: error: sum: axes [1, -2] name axis 1 of operand f32[2,3,4] twice");
  EXPECT_EQ(run(Op::Mean, {i64({4})}),
            "model.wir:3:8: error: mean: operand i64[4] needs a floating dtype; cast it first");
  EXPECT_EQ(run(Op::Argmax, {boolean({4})}, {{"axis", int64_t{0}}}),
            "model.wir:3:8: error: argmax: operand bool[4] needs a numeric dtype (not bool); "
            "cast it to a number");
  EXPECT_EQ(run(Op::Argmax, {f32({})}, {{"axis", int64_t{0}}}),
            "model.wir:3:8: error: argmax: axis 0 is out of range for operand f32[] (rank 0: "
            "valid axes are none)");
}

TEST(ShapeRulesTest, Movement) {
  EXPECT_EQ(run(Op::Reshape, {f32({4, 6})}, {{"shape", IntList{2, -1, 3}}}), "f32[2,4,3]");
  EXPECT_EQ(run(Op::Transpose, {f32({2, 3, 4})}, {{"perm", IntList{2, 0, 1}}}), "f32[4,2,3]");
  EXPECT_EQ(run(Op::BroadcastTo, {f32({3, 1})}, {{"shape", IntList{2, 3, 5}}}), "f32[2,3,5]");
  // Python clamping: [-3:100:2] of 10 is 7,9 -> 2; [5:2] is empty; [-100:3] is 0..2.
  EXPECT_EQ(run(Op::Slice, {f32({10, 10, 10})},
                {{"start", IntList{-3, 5, -100}},
                 {"stop", IntList{100, 2, 3}},
                 {"step", IntList{2, 1, 1}}}),
            "f32[2,0,3]");
  EXPECT_EQ(run(Op::Slice, {f32({10})}, {{"start", IntList{1}}, {"stop", IntList{10}},
                                         {"step", IntList{3}}}),
            "f32[3]");
  EXPECT_EQ(run(Op::Concat, {f32({2, 3}), f32({2, 5}), f32({2, 1})}, {{"axis", int64_t{-1}}}),
            "f32[2,9]");
  EXPECT_EQ(run(Op::Pad, {f32({2, 3})}, {{"low", IntList{1, 0}}, {"high", IntList{2, 4}}}),
            "f32[5,7]");
  EXPECT_EQ(run(Op::Gather, {f32({10, 4}), i64({6})}, {{"axis", int64_t{0}}}), "f32[6,4]");
  EXPECT_EQ(run(Op::ScatterAdd, {f32({10, 4}), i64({6}), f32({6, 4})}, {{"axis", int64_t{0}}}),
            "f32[10,4]");
  EXPECT_EQ(run(Op::OneHot, {i64({8})}, {{"depth", int64_t{10}}}), "f32[8,10]");
}

TEST(ShapeRulesTest, MovementErrors) {
  EXPECT_EQ(run(Op::Reshape, {f32({4, 6})}, {{"shape", IntList{5, 5}}}),
            "model.wir:3:8: error: reshape: cannot reshape f32[4,6] (24 elements) to [5, 5] (25 "
            "elements)");
  EXPECT_EQ(run(Op::Reshape, {f32({4, 6})}, {{"shape", IntList{5, -1}}}),
            "model.wir:3:8: error: reshape: cannot reshape f32[4,6] (24 elements) to [5, -1]: "
            "no size for -1 fits");
  // One element is one ("1 elements" before).
  EXPECT_EQ(run(Op::Reshape, {f32({})}, {{"shape", IntList{2}}}),
            "model.wir:3:8: error: reshape: cannot reshape f32[] (1 element) to [2] (2 elements)");
  EXPECT_EQ(run(Op::Reshape, {f32({2})}, {{"shape", IntList{1}}}),
            "model.wir:3:8: error: reshape: cannot reshape f32[2] (2 elements) to [1] (1 element)");
  EXPECT_EQ(run(Op::Reshape, {f32({1})}, {{"shape", IntList{0, -1}}}),
            "model.wir:3:8: error: reshape: cannot reshape f32[1] (1 element) to [0, -1]: no size for -1 fits");
  EXPECT_EQ(run(Op::Reshape, {f32({4, 6})}, {{"shape", IntList{-1, -1}}}),
            "model.wir:3:8: error: reshape: shape [-1, -1] may hold one -1 and otherwise sizes "
            ">= 0");
  EXPECT_EQ(run(Op::Transpose, {f32({2, 3, 4})}, {{"perm", IntList{0, 0, 1}}}),
            "model.wir:3:8: error: transpose: perm [0, 0, 1] is not a permutation of 0..2 for "
            "operand f32[2,3,4]");
  EXPECT_EQ(run(Op::BroadcastTo, {f32({3, 2})}, {{"shape", IntList{3, 5}}}),
            "model.wir:3:8: error: broadcast_to: cannot broadcast operand f32[3,2] to shape "
            "[3,5] (each operand dim must equal the target's or be 1, aligned from the right)");
  EXPECT_EQ(run(Op::Slice, {f32({10})}, {{"start", IntList{0}}, {"stop", IntList{5}},
                                         {"step", IntList{0}}}),
            "model.wir:3:8: error: slice: step [0] must have entries >= 1");
  EXPECT_EQ(run(Op::Concat, {f32({2, 3}), f32({3, 3})}, {{"axis", int64_t{1}}}),
            "model.wir:3:8: error: concat: operand 0 f32[2,3] and operand 1 f32[3,3] must have "
            "the same rank and equal dims except on axis 1");
  EXPECT_EQ(run(Op::Pad, {f32({2, 3})}, {{"low", IntList{1}}, {"high", IntList{0, 0}}}),
            "model.wir:3:8: error: pad: low [1] must have 2 entries");
  EXPECT_EQ(run(Op::Gather, {f32({10, 4}), Type{DType::i32, {6}}}, {{"axis", int64_t{0}}}),
            "model.wir:3:8: error: gather: indices i32[6] must be a 1-D i64 tensor");
  EXPECT_EQ(run(Op::ScatterAdd, {f32({10, 4}), i64({6}), f32({6, 5})}, {{"axis", int64_t{0}}}),
            "model.wir:3:8: error: scatter_add: src f32[6,5] must have shape [6,4] (base "
            "f32[10,4] with dim 0 = len(indices i64[6]))");
}

TEST(ShapeRulesTest, Matmul) {
  EXPECT_EQ(run(Op::Matmul, {f32({4, 6}), f32({6, 5})}), "f32[4,5]");
  EXPECT_EQ(run(Op::Matmul, {f32({2, 1, 4, 6}), f32({3, 6, 5})}), "f32[2,3,4,5]");
  EXPECT_EQ(run(Op::Matmul, {f32({8, 4, 6}), f32({6, 5})}), "f32[8,4,5]");
  EXPECT_EQ(run(Op::Matmul, {f32({4, 6}), f32({5, 5})}),
            "model.wir:3:8: error: matmul: contraction dims differ: lhs f32[4,6] has 6 columns "
            "but rhs f32[5,5] has 5 rows");
  EXPECT_EQ(run(Op::Matmul, {f32({6}), f32({6, 5})}),
            "model.wir:3:8: error: matmul: operands need rank >= 2, got lhs f32[6] and rhs "
            "f32[6,5]; 1-D operands are not allowed: reshape a vector to [1,k] or [k,1]");
  EXPECT_EQ(run(Op::Matmul, {f32({2, 4, 6}), f32({3, 6, 5})}),
            "model.wir:3:8: error: matmul: batch dims [2] of lhs f32[2,4,6] and [3] of rhs "
            "f32[3,6,5] do not broadcast");
}

TEST(ShapeRulesTest, Conv) {
  EXPECT_EQ(run(Op::Conv, {f32({1, 3, 32, 32}), f32({16, 3, 3, 3})},
                {{"padding", IntList{1, 1}}}),
            "f32[1,16,32,32]");
  // (15 + 2*1 - 2*(3-1) - 1) / 2 + 1 = 7; 4 channels in 2 groups of 2.
  EXPECT_EQ(run(Op::Conv, {f32({2, 4, 15, 15}), f32({8, 2, 3, 3})},
                {{"stride", IntList{2, 2}},
                 {"padding", IntList{1, 1}},
                 {"dilation", IntList{2, 2}},
                 {"groups", int64_t{2}}}),
            "f32[2,8,7,7]");
  EXPECT_EQ(run(Op::ConvBackwardInput, {f32({2, 8, 7, 7}), f32({8, 2, 3, 3})},
                {{"input_shape", IntList{2, 4, 15, 15}},
                 {"stride", IntList{2, 2}},
                 {"padding", IntList{1, 1}},
                 {"dilation", IntList{2, 2}},
                 {"groups", int64_t{2}}}),
            "f32[2,4,15,15]");
  EXPECT_EQ(run(Op::ConvBackwardWeight, {f32({1, 3, 8, 8}), f32({4, 4, 6, 6})},
                {{"weight_shape", IntList{4, 3, 3, 3}}}),
            "model.wir:3:8: error: conv_backward_weight: grad_y f32[4,4,6,6] does not match "
            "conv of x f32[1,3,8,8] and weight_shape [4,3,3,3]'s output f32[1,4,6,6]");
  EXPECT_EQ(run(Op::ConvBackwardWeight, {f32({1, 3, 8, 8}), f32({1, 4, 6, 6})},
                {{"weight_shape", IntList{4, 3, 3, 3}}}),
            "f32[4,3,3,3]");
  EXPECT_EQ(run(Op::Conv, {f32({1, 4, 8, 8}), f32({8, 3, 3, 3})}),
            "model.wir:3:8: error: conv: channel mismatch: w f32[8,3,3,3] has 3 input channels "
            "per group but x f32[1,4,8,8] has C=4 and groups=1, so it needs 4");
  EXPECT_EQ(run(Op::Conv, {f32({1, 4, 8, 8}), f32({6, 1, 3, 3})}, {{"groups", int64_t{4}}}),
            "model.wir:3:8: error: conv: groups 4 must divide the input channels of x "
            "f32[1,4,8,8] (C=4) and the output channels of w f32[6,1,3,3] (O=6)");
  EXPECT_EQ(run(Op::Conv, {f32({1, 3, 2, 2}), f32({4, 3, 3, 3})}),
            "model.wir:3:8: error: conv: window [3, 3] (dilation [1, 1]) does not fit x "
            "f32[1,3,2,2] padded by [0, 0]: the output would be empty");
  EXPECT_EQ(run(Op::Conv, {f32({8, 8}), f32({4, 3, 3})}),
            "model.wir:3:8: error: conv: x f32[8,8] must be 3-D [N, C, W], 4-D [N, C, H, W] or "
            "5-D [N, C, D, H, W]");
  EXPECT_EQ(run(Op::Conv, {f32({3, 8, 8}), f32({4, 3, 3, 3})}),
            "model.wir:3:8: error: conv: w f32[4,3,3,3] must be 3-D [O, C/groups, kw] for x "
            "f32[3,8,8]");
}

TEST(ShapeRulesTest, ConvOverOneAndThreeSpatialDims) {
  // 1-D: (20 + 2*2 - 5) / 3 + 1 = 7.
  EXPECT_EQ(run(Op::Conv, {f32({2, 3, 20}), f32({4, 3, 5})},
                {{"stride", IntList{3}}, {"padding", IntList{2}}}),
            "f32[2,4,7]");
  // 3-D, per-axis stride, padding and dilation: D (6+0-2-1)/1+1 = 4, H (9+2-2-1)/2+1 = 5,
  // W (10+4-4-1)/3+1 = 4.
  EXPECT_EQ(run(Op::Conv, {f32({2, 4, 6, 9, 10}), f32({6, 2, 3, 2, 3})},
                {{"stride", IntList{1, 2, 3}},
                 {"padding", IntList{0, 1, 2}},
                 {"dilation", IntList{1, 2, 2}},
                 {"groups", int64_t{2}}}),
            "f32[2,6,4,5,4]");
  EXPECT_EQ(run(Op::ConvBackwardInput, {f32({1, 4, 2, 2, 2}), f32({4, 3, 3, 3, 3})},
                {{"input_shape", IntList{1, 3, 4, 4, 4}}}),
            "f32[1,3,4,4,4]");
  EXPECT_EQ(run(Op::ConvBackwardWeight, {f32({1, 3, 4, 4, 4}), f32({1, 4, 2, 2, 2})},
                {{"weight_shape", IntList{4, 3, 3, 3, 3}}}),
            "f32[4,3,3,3,3]");
  EXPECT_EQ(run(Op::Conv, {f32({1, 3, 4, 4, 4}), f32({4, 3, 3, 3, 3})},
                {{"stride", IntList{2, 2}}}),
            "model.wir:3:8: error: conv: stride [2, 2] must have 3 entries, one per spatial dim");
  EXPECT_EQ(run(Op::Conv, {f32({1, 3, 4, 4, 4}), f32({4, 3, 3, 3, 3})},
                {{"padding", IntList{0, -1, 0}}}),
            "model.wir:3:8: error: conv: padding [0, -1, 0] must have entries >= 0");
  EXPECT_EQ(run(Op::Conv, {f32({1, 3, 4, 4, 4}), f32({4, 3, 3, 3})}),
            "model.wir:3:8: error: conv: w f32[4,3,3,3] must be 5-D [O, C/groups, kd, kh, kw] "
            "for x f32[1,3,4,4,4]");
  EXPECT_EQ(run(Op::Conv, {f32({1, 3, 2, 4, 4}), f32({4, 3, 3, 3, 3})}),
            "model.wir:3:8: error: conv: window [3, 3, 3] (dilation [1, 1, 1]) does not fit x "
            "f32[1,3,2,4,4] padded by [0, 0, 0]: the output would be empty");
}

TEST(ShapeRulesTest, Pooling) {
  EXPECT_EQ(run(Op::MaxPool2d, {f32({1, 3, 7, 7})}, {{"kernel", IntList{2, 2}}}), "f32[1,3,3,3]");
  EXPECT_EQ(run(Op::AvgPool2d, {f32({1, 3, 7, 7})},
                {{"kernel", IntList{3, 3}}, {"stride", IntList{2, 2}}, {"padding", IntList{1, 1}}}),
            "f32[1,3,4,4]");
  EXPECT_EQ(run(Op::MaxPool2dBackward, {f32({1, 3, 7, 7}), f32({1, 3, 3, 3})},
                {{"kernel", IntList{2, 2}}}),
            "f32[1,3,7,7]");
  EXPECT_EQ(run(Op::MaxPool2dSelect, {f32({1, 3, 7, 7}), f32({1, 3, 7, 7})},
                {{"kernel", IntList{2, 2}}}),
            "f32[1,3,3,3]");
  EXPECT_EQ(run(Op::MaxPool2dSelect, {f32({1, 3, 7, 7}), f32({1, 3, 3, 3})},
                {{"kernel", IntList{2, 2}}}),
            "model.wir:3:8: error: max_pool2d_select: g f32[1,3,3,3] must have x "
            "f32[1,3,7,7]'s type");
  EXPECT_EQ(run(Op::AvgPool2dBackward, {f32({1, 3, 4, 4})},
                {{"input_shape", IntList{1, 3, 7, 7}},
                 {"kernel", IntList{3, 3}},
                 {"stride", IntList{2, 2}},
                 {"padding", IntList{1, 1}}}),
            "f32[1,3,7,7]");
  EXPECT_EQ(run(Op::MaxPool2d, {f32({1, 3, 7, 7})},
                {{"kernel", IntList{3, 3}}, {"padding", IntList{2, 2}}}),
            "model.wir:3:8: error: max_pool2d: padding [2, 2] must be at most half of kernel "
            "[3, 3]");
  EXPECT_EQ(run(Op::AvgPool2d, {i64({1, 3, 7, 7})}, {{"kernel", IntList{2, 2}}}),
            "model.wir:3:8: error: avg_pool2d: x i64[1,3,7,7] needs a floating dtype");
}

TEST(ShapeRulesTest, CreationAndState) {
  EXPECT_EQ(run(Op::Full, {}, {{"shape", IntList{2, 3}}, {"value", 1.5}}), "f32[2,3]");
  EXPECT_EQ(run(Op::Iota, {}, {{"shape", IntList{4}}, {"axis", int64_t{0}}}), "i64[4]");
  EXPECT_EQ(run(Op::RandomUniform, {i64({2})}, {{"shape", IntList{3}}}), "f32[3]");
  EXPECT_EQ(run(Op::RandomBernoulli, {i64({2})},
                {{"shape", IntList{3}}, {"p", 0.5}, {"dtype", DType::boolean}}),
            "bool[3]");
  EXPECT_EQ(run(Op::RandomBernoulli, {i64({2})}, {{"shape", IntList{3}}, {"p", 1.5}}),
            "model.wir:3:8: error: random_bernoulli: p 1.5 must be in [0, 1]");
  EXPECT_EQ(run(Op::RandomUniform, {i64({3})}, {{"shape", IntList{3}}}),
            "model.wir:3:8: error: random_uniform: key i64[3] must be i64[2]");
  EXPECT_EQ(run(Op::Full, {}, {{"shape", IntList{2, -3}}, {"value", 1.5}}),
            "model.wir:3:8: error: full: shape [2, -3] has a negative dim; sizes must be >= 0");
  EXPECT_EQ(run(Op::Assign, {f32({4}), f32({4})}), "f32[4]");
  EXPECT_EQ(run(Op::Assign, {f32({4}), f32({5})}),
            "model.wir:3:8: error: assign: value f32[5] must have the target's type f32[4]");
}

// Huge attributes and dims from a hostile file: each overflow is a user error naming the
// op, the attribute and its value, never wrapped arithmetic (signed overflow is UB).
constexpr int64_t kMax = std::numeric_limits<int64_t>::max();

TEST(ShapeRulesTest, HugeWindowsDoNotOverflow) {
  EXPECT_EQ(run(Op::MaxPool2d, {f32({1, 1, 4, 4})},
                {{"kernel", IntList{2, 2}}, {"padding", IntList{kMax, 0}}}),
            "model.wir:3:8: error: max_pool2d: padding [9223372036854775807, 0] must be at most "
            "half of kernel [2, 2]");
  EXPECT_EQ(run(Op::AvgPool2d, {f32({1, 1, int64_t{1} << 62, 4})},
                {{"kernel", IntList{kMax, 1}}, {"padding", IntList{kMax / 2, 0}}}),
            "model.wir:3:8: error: avg_pool2d: padding [4611686018427387903, 0] overflows int64 "
            "on spatial axis 0 of x f32[1,1,4611686018427387904,4] (size + 2 * padding); check "
            "the padding");
  EXPECT_EQ(run(Op::Conv, {f32({1, 1, 8, 8}), f32({1, 1, 3, 3})},
                {{"dilation", IntList{kMax, 1}}}),
            "model.wir:3:8: error: conv: the window of kernel [3, 3] with dilation "
            "[9223372036854775807, 1] spans more than int64 can hold on spatial axis 0 "
            "(dilation * (kernel - 1) + 1 overflows); check dilation and the kernel size");
  EXPECT_EQ(run(Op::Conv, {f32({1, 1, 8, 8}), f32({1, 1, 3, 3})},
                {{"padding", IntList{0, kMax}}}),
            "model.wir:3:8: error: conv: padding [0, 9223372036854775807] overflows int64 on "
            "spatial axis 1 of x f32[1,1,8,8] (size + 2 * padding); check the padding");
  // A kernel dim of 0 makes the span negative: padded - span overflows instead.
  EXPECT_EQ(run(Op::Conv, {f32({1, 1, kMax, 3}), f32({1, 1, 0, 3})},
                {{"dilation", IntList{2, 1}}}),
            "model.wir:3:8: error: conv: the output size of kernel [0, 3] with dilation [2, 1] "
            "over x f32[1,1,9223372036854775807,3] padded by [0, 0] overflows int64 on spatial "
            "axis 0");
  EXPECT_EQ(run(Op::ConvBackwardInput, {f32({1, 1, 1, 1}), f32({1, 1, 1, 1})},
                {{"input_shape", IntList{1, 1, 1, kMax}}, {"stride", IntList{1, kMax}},
                 {"padding", IntList{0, 1}}}),
            "model.wir:3:8: error: conv_backward_input: padding [0, 1] overflows int64 on "
            "spatial axis 1 of input_shape f32[1,1,1,9223372036854775807] (size + 2 * padding); "
            "check the padding");
  EXPECT_EQ(run(Op::ConvBackwardWeight, {f32({1, 1, 8, 8}), f32({1, 1, 6, 6})},
                {{"weight_shape", IntList{4294967296, 4294967296, 3, 3}}}),
            "model.wir:3:8: error: conv_backward_weight: weight_shape [4294967296, "
            "4294967296, 3, 3] is too large: its element count overflows int64");
  EXPECT_EQ(run(Op::AvgPool2dBackward, {f32({1, 1, 2, 2})},
                {{"input_shape", IntList{0, 4294967296, 4294967296, 4}},
                 {"kernel", IntList{2, 2}}}),
            "model.wir:3:8: error: avg_pool2d_backward: input_shape [0, 4294967296, 4294967296, "
            "4] is too large: its element count overflows int64");
}

TEST(ShapeRulesTest, HugeMovementsDoNotOverflow) {
  EXPECT_EQ(run(Op::Pad, {f32({2})}, {{"low", IntList{kMax}}, {"high", IntList{kMax}}}),
            "model.wir:3:8: error: pad: low [9223372036854775807] and high "
            "[9223372036854775807] overflow int64 on axis 0 of operand f32[2] (low + 2 + high); "
            "check the padding");
  EXPECT_EQ(run(Op::Pad, {f32({2})}, {{"low", IntList{kMax - 2}}, {"high", IntList{0}}}),
            "f32[9223372036854775807]");
  EXPECT_EQ(run(Op::Reshape, {f32({2})}, {{"shape", IntList{4294967296, 4294967296, 0}}}),
            "model.wir:3:8: error: reshape: shape [4294967296, 4294967296, 0] is too large: its "
            "element count overflows int64");
  EXPECT_EQ(run(Op::Reshape, {f32({2})}, {{"shape", IntList{3037000500, -1, 3037000500}}}),
            "model.wir:3:8: error: reshape: shape [3037000500, -1, 3037000500] is too large: "
            "its element count overflows int64");
  EXPECT_EQ(run(Op::Reshape, {f32({4294967296, 4294967296})}, {{"shape", IntList{-1}}}),
            "model.wir:3:8: error: reshape: operand f32[4294967296,4294967296] is too large: "
            "its element count overflows int64");
  EXPECT_EQ(run(Op::Concat, {f32({kMax - 1}), f32({1}), f32({1})}, {{"axis", int64_t{0}}}),
            "model.wir:3:8: error: concat: the sizes along axis 0 of operands 0..2 (last "
            "operand 2 f32[1]) add up to more than int64 can hold");
  EXPECT_EQ(run(Op::BroadcastTo, {f32({1})}, {{"shape", IntList{4294967296, 4294967296}}}),
            "model.wir:3:8: error: broadcast_to: shape [4294967296, 4294967296] is too large: "
            "its element count overflows int64");
  // Slice's step is divided, never added: a huge step takes one element.
  EXPECT_EQ(run(Op::Slice, {f32({10})}, {{"start", IntList{2}}, {"stop", IntList{kMax}},
                                         {"step", IntList{kMax}}}),
            "f32[1]");
}

TEST(ShapeRulesTest, HugeCreationShapesAreErrors) {
  EXPECT_EQ(run(Op::Full, {}, {{"shape", IntList{4294967296, 4294967296}}, {"value", 0.0}}),
            "model.wir:3:8: error: full: shape [4294967296, 4294967296] is too large: its "
            "element count overflows int64");
  EXPECT_EQ(run(Op::Iota, {}, {{"shape", IntList{0, 4294967296, 4294967296}},
                               {"axis", int64_t{0}}}),
            "model.wir:3:8: error: iota: shape [0, 4294967296, 4294967296] is too large: its "
            "element count overflows int64");
  EXPECT_EQ(run(Op::RandomUniform, {i64({2})}, {{"shape", IntList{kMax, 2}}}),
            "model.wir:3:8: error: random_uniform: shape [9223372036854775807, 2] is too large: "
            "its element count overflows int64");
}

TEST(ShapeRulesTest, Composites) {
  EXPECT_EQ(run(Op::Softmax, {f32({2, 5})}), "f32[2,5]");
  EXPECT_EQ(run(Op::LayerNorm, {f32({2, 3, 4}), f32({3, 4}), f32({3, 4})},
                {{"axes", IntList{-1, -2}}}),
            "f32[2,3,4]");
  EXPECT_EQ(run(Op::CrossEntropy, {f32({8, 10}), i64({8})}), "f32[]");
  EXPECT_EQ(run(Op::CrossEntropy, {f32({8, 10}), i64({8})},
                {{"reduction", std::string("none")}}),
            "f32[8]");
  EXPECT_EQ(run(Op::Mse, {f32({8, 10}), f32({8, 10})}, {{"reduction", std::string("sum")}}),
            "f32[]");
  EXPECT_EQ(run(Op::Mse, {f32({8, 10}), f32({8, 10})}, {{"reduction", std::string("none")}}),
            "f32[8,10]");
  EXPECT_EQ(run(Op::CrossEntropy, {f32({8, 10}), f32({8})}),
            "model.wir:3:8: error: cross_entropy: labels f32[8] must be i64[8], one class index "
            "per row of logits f32[8,10] (one_hot or argmax converts other forms)");
  EXPECT_EQ(run(Op::CrossEntropy, {f32({8, 10}), i64({8})}, {{"reduction", std::string("avg")}}),
            "model.wir:3:8: error: cross_entropy: unknown reduction \"avg\"; expected \"mean\", "
            "\"sum\" or \"none\"");
  EXPECT_EQ(run(Op::LayerNorm, {f32({2, 3, 4}), f32({3}), f32({3})}, {{"axes", IntList{1}}}),
            "model.wir:3:8: error: layer_norm: axes [1] must be the last 1 axes of x f32[2,3,4] "
            "(layer_norm normalizes trailing dims)");
  EXPECT_EQ(run(Op::LayerNorm, {f32({2, 3, 4}), f32({3}), f32({4})}),
            "model.wir:3:8: error: layer_norm: gamma f32[3] must be f32[4] (x f32[2,3,4]'s "
            "normalized dims)");
  EXPECT_EQ(run(Op::Mse, {f32({8}), f32({8, 1})}),
            "model.wir:3:8: error: mse: pred f32[8] and target f32[8,1] must have the same "
            "shape (mse does not broadcast)");
}

// attention_grad(q, k, v, y, dy[, mask]) -> (dq, dk, dv): the rule gives dq's type, the
// further results are k's and v's (ops.def: result k has operand k's type), and
// add_typed_node gives the node all three.
TEST(ShapeRulesTest, AttentionGradHasThreeResults) {
  const Type q = f32({2, 5, 4}), k = f32({2, 7, 4}), v = f32({2, 7, 3}), y = f32({2, 5, 3});
  const Attrs attrs = {{"scale", 0.5}};
  EXPECT_EQ(run(Op::AttentionGrad, {q, k, v, y, y}, attrs), "f32[2,5,4]");
  EXPECT_EQ(run(Op::AttentionGrad, {q, k, v, y, y, boolean({2, 1, 7})}, attrs), "f32[2,5,4]");
  Graph g("g");
  std::vector<ValueId> in;
  for (const Type& t : {q, k, v, y, y}) in.push_back(g.add_input("in" + std::to_string(in.size()), t));
  StatusOr<ValueId> dq = add_typed_node(g, Op::AttentionGrad, in, attrs, kLoc);
  ASSERT_TRUE(dq.ok()) << dq.error().to_string();
  const Node& node = g.node(g.value(*dq).node);
  ASSERT_EQ(node.results.size(), 3u);
  EXPECT_EQ(g.type(node.results[0]), q);
  EXPECT_EQ(g.type(node.results[1]), k);
  EXPECT_EQ(g.type(node.results[2]), v);
  EXPECT_EQ(result_type(node, 2, q, {q, k, v, y, y}), v);

  EXPECT_EQ(run(Op::AttentionGrad, {q, k, v, f32({2, 5, 4}), y}, attrs),
            "model.wir:3:8: error: attention_grad: y f32[2,5,4] must have the attention "
            "result's type f32[2,5,3]");
  EXPECT_EQ(run(Op::AttentionGrad, {q, k, v, y, f32({2, 7, 3})}, attrs),
            "model.wir:3:8: error: attention_grad: dy f32[2,7,3] must have the attention "
            "result's type f32[2,5,3]");
  EXPECT_EQ(run(Op::AttentionGrad, {q, k, v, y}, attrs),
            "model.wir:3:8: error: attention_grad: takes q, k, v, y, dy and an optional mask "
            "(5 or 6 operands), but 4 were given");
  EXPECT_EQ(run(Op::AttentionGrad, {q, k, v, y, y, boolean({2, 1, 6})}, attrs),
            "model.wir:3:8: error: attention_grad: mask bool[2,1,6] must be bool and broadcast "
            "to the scores' shape [2,5,7] (true masks a key out)");
  EXPECT_EQ(run(Op::AttentionGrad, {q, f32({2, 7, 5}), v, y, y}, attrs),
            "model.wir:3:8: error: attention_grad: q f32[2,5,4], k f32[2,7,5] and v f32[2,7,3] "
            "must be [..., Sq, D], [..., Sk, D] and [..., Sk, Dv] with the same leading dims");
}

TEST(ShapeRulesTest, AllReduce) {
  EXPECT_EQ(run(Op::AllReduce, {f32({3, 4})}, {}), "f32[3,4]");  // reduction="mean"
  EXPECT_EQ(run(Op::AllReduce, {i64({5})}, {{"reduction", std::string("sum")}}), "i64[5]");
  EXPECT_EQ(run(Op::AllReduce, {i64({5})}, {{"reduction", std::string("mean")}}),
            "model.wir:3:8: error: all_reduce: x i64[5] needs a floating dtype for reduction "
            "\"mean\" (\"sum\" takes integers)");
  EXPECT_EQ(run(Op::AllReduce, {f32({5})}, {{"reduction", std::string("max")}}),
            "model.wir:3:8: error: all_reduce: unknown reduction \"max\"; expected \"mean\" "
            "or \"sum\"");
  // The optional predicate (gradient accumulation): a bool scalar.
  const Type flag = boolean(Shape{});
  EXPECT_EQ(run(Op::AllReduce, {f32({5}), flag}, {}), "f32[5]");
  EXPECT_EQ(run(Op::AllReduce, {f32({5}), f32(Shape{})}, {}),
            "model.wir:3:8: error: all_reduce: the predicate must be bool[], not f32[]");
  EXPECT_EQ(run(Op::AllReduce, {f32({5}), boolean({1})}, {}),
            "model.wir:3:8: error: all_reduce: the predicate must be bool[], not bool[1]");
  EXPECT_EQ(run(Op::AllReduce, {f32({5}), flag, flag}, {}),
            "model.wir:3:8: error: all_reduce: takes x and an optional bool[] predicate, not 3 operands");
}

TEST(ShapeRulesTest, OperandCountIsChecked) {
  EXPECT_EQ(run(Op::Add, {f32({2})}),
            "model.wir:3:8: error: 'add' takes 2 operands, but 1 was given");
  EXPECT_EQ(run(Op::Concat, {}, {{"axis", int64_t{0}}}),
            "model.wir:3:8: error: 'concat' takes at least 1 operand, but none were given");
}

}  // namespace shape_rules_test
}  // namespace
}  // namespace weft
