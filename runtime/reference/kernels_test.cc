// The completeness test (every op has a reference kernel) and unit tests of the
// semantics edge cases that interpreter.h documents. Broader numeric coverage against
// NumPy/PyTorch is in fixtures_test.

#include <cmath>
#include <limits>

#include <gtest/gtest.h>

#include "ir/shape_rules.h"
#include "runtime/philox.h"
#include "runtime/reference/interpreter.h"

namespace weft::reference {
namespace {

const Location kLoc{"test.wir", 3, 5, ""};

// Runs a one-node graph of `op` on `ins`, typed by the shape rules.
StatusOr<Tensor> run_op(Op op, const std::vector<Tensor>& ins, Attrs attrs = {}) {
  Graph g("t");
  std::vector<ValueId> operands;
  std::vector<Type> types;
  for (size_t i = 0; i < ins.size(); ++i) {
    operands.push_back(g.add_input("in" + std::to_string(i), ins[i].type()));
    types.push_back(ins[i].type());
  }
  Node probe{op, operands, attrs, {}, kLoc};
  WEFT_ASSIGN_OR_RETURN(Type type, infer_node_type(probe, types));
  g.add_output(g.add_node(op, operands, std::move(attrs), kLoc, type));
  WEFT_ASSIGN_OR_RETURN(RunResult r, run(g, ins));
  return r.outputs.at(0);
}

Tensor f32(Shape s, std::vector<float> v) { return Tensor::from_vector<float>(std::move(s), v); }
Tensor i64(Shape s, std::vector<int64_t> v) { return Tensor::from_vector<int64_t>(std::move(s), v); }
Tensor i32(Shape s, std::vector<int32_t> v) { return Tensor::from_vector<int32_t>(std::move(s), v); }

#define EXPECT_TENSOR(result, expected)                                    \
  do {                                                                     \
    auto r_ = (result);                                                    \
    ASSERT_TRUE(r_.ok()) << r_.error().to_string();                        \
    std::string why_;                                                      \
    EXPECT_TRUE(all_close(*r_, (expected), 1e-6, &why_))                   \
        << why_ << "\n got " << tensor_to_string(*r_, 64);                 \
  } while (0)

TEST(KernelsTest, EveryOpHasAReferenceKernel) {
  for (Op op : all_ops()) {
    EXPECT_NE(find_kernel(op), nullptr) << "no reference kernel for " << op_name(op);
  }
}

TEST(KernelsTest, BinaryOpsBroadcastLikeNumpy) {
  EXPECT_TENSOR(run_op(Op::Add, {f32({2, 3}, {0, 1, 2, 3, 4, 5}), f32({3}, {10, 20, 30})}),
                f32({2, 3}, {10, 21, 32, 13, 24, 35}));
  EXPECT_TENSOR(run_op(Op::Sub, {f32({2, 1}, {1, 2}), f32({1, 3}, {1, 2, 3})}),
                f32({2, 3}, {0, -1, -2, 1, 0, -1}));
  EXPECT_TENSOR(run_op(Op::Mul, {f32({}, {2}), f32({2, 2}, {1, 2, 3, 4})}),
                f32({2, 2}, {2, 4, 6, 8}));
  EXPECT_TENSOR(run_op(Op::Lt, {f32({3}, {1, 2, 3}), f32({}, {2})}),
                Tensor::from_vector<bool>({3}, {true, false, false}));
}

TEST(KernelsTest, SelectBroadcastsAllThree) {
  auto cond = Tensor::from_vector<bool>({2, 1}, {true, false});
  EXPECT_TENSOR(run_op(Op::Select, {cond, f32({3}, {1, 2, 3}), f32({}, {0})}),
                f32({2, 3}, {1, 2, 3, 0, 0, 0}));
}

TEST(KernelsTest, SignMaximumAndNan) {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  auto r = run_op(Op::Sign, {f32({4}, {-2, 0, 3, nan})});
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->data<float>()[0], -1);
  EXPECT_EQ(r->data<float>()[1], 0);
  EXPECT_EQ(r->data<float>()[2], 1);
  EXPECT_TRUE(std::isnan(r->data<float>()[3]));
  auto m = run_op(Op::Maximum, {f32({2}, {nan, 1}), f32({2}, {0, 2})});
  ASSERT_TRUE(m.ok());
  EXPECT_TRUE(std::isnan(m->data<float>()[0]));
  EXPECT_EQ(m->data<float>()[1], 2);
  EXPECT_TENSOR(run_op(Op::Sign, {i32({3}, {-5, 0, 7})}), i32({3}, {-1, 0, 1}));
}

TEST(KernelsTest, IntegerDivisionTruncatesTowardZero) {
  EXPECT_TENSOR(run_op(Op::Div, {i64({4}, {7, -7, 7, -7}), i64({4}, {2, 2, -2, -2})}),
                i64({4}, {3, -3, -3, 3}));
  EXPECT_TENSOR(run_op(Op::Div, {i32({1}, {std::numeric_limits<int32_t>::min()}), i32({1}, {-1})}),
                i32({1}, {std::numeric_limits<int32_t>::min()}));
  auto r = run_op(Op::Div, {i32({2}, {1, 2}), i32({2}, {1, 0})});
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().to_string(), "test.wir:3:5: error: div: integer division by zero");
}

TEST(KernelsTest, IntegerPowIsExact) {
  EXPECT_TENSOR(run_op(Op::Pow, {i64({3}, {3, -2, 5}), i64({3}, {4, 3, 0})}), i64({3}, {81, -8, 1}));
  auto r = run_op(Op::Pow, {i64({1}, {2}), i64({1}, {-1})});
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().message, "pow: integer power with a negative exponent -1");
}

TEST(KernelsTest, IntegerArithmeticWraps) {
  const int32_t max = std::numeric_limits<int32_t>::max();
  EXPECT_TENSOR(run_op(Op::Add, {i32({1}, {max}), i32({1}, {1})}),
                i32({1}, {std::numeric_limits<int32_t>::min()}));
  EXPECT_TENSOR(run_op(Op::Abs, {i32({2}, {-3, 4})}), i32({2}, {3, 4}));
}

TEST(KernelsTest, ReductionsKeepdimsNegativeAndMultipleAxes) {
  Tensor x = f32({2, 3}, {1, 2, 3, 4, 5, 6});
  EXPECT_TENSOR(run_op(Op::Sum, {x}), f32({}, {21}));
  EXPECT_TENSOR(run_op(Op::Sum, {x}, {{"axes", IntList{-1}}}), f32({2}, {6, 15}));
  EXPECT_TENSOR(run_op(Op::Sum, {x}, {{"axes", IntList{0}}, {"keepdims", true}}),
                f32({1, 3}, {5, 7, 9}));
  EXPECT_TENSOR(run_op(Op::Mean, {x}, {{"axes", IntList{1, 0}}, {"keepdims", true}}),
                f32({1, 1}, {3.5}));
  EXPECT_TENSOR(run_op(Op::Max, {x}, {{"axes", IntList{0}}}), f32({3}, {4, 5, 6}));
  EXPECT_TENSOR(run_op(Op::Min, {x}, {{"axes", IntList{1}}}), f32({2}, {1, 4}));
  EXPECT_TENSOR(run_op(Op::Sum, {x}, {{"axes", IntList{}}}), x);  // No axes: identity.
  EXPECT_TENSOR(run_op(Op::Sum, {i64({3}, {1, 2, 3})}), i64({}, {6}));
  EXPECT_TENSOR(run_op(Op::Max, {Tensor::from_vector<bool>({2}, {false, true})}),
                Tensor::from_vector<bool>({}, {true}));
}

TEST(KernelsTest, ArgmaxReturnsTheFirstMaximum) {
  EXPECT_TENSOR(run_op(Op::Argmax, {f32({2, 4}, {1, 3, 3, 0, 5, 5, 5, 5})}, {{"axis", int64_t{1}}}),
                i64({2}, {1, 0}));
  EXPECT_TENSOR(run_op(Op::Argmax, {f32({2, 2}, {1, 2, 3, 0})},
                       {{"axis", int64_t{-2}}, {"keepdims", true}}),
                i64({1, 2}, {1, 0}));
  const float nan = std::numeric_limits<float>::quiet_NaN();
  EXPECT_TENSOR(run_op(Op::Argmax, {f32({4}, {1, nan, 9, nan})}, {{"axis", int64_t{0}}}),
                i64({}, {1}));
}

TEST(KernelsTest, SliceClampsLikePython) {
  Tensor x = f32({5}, {0, 1, 2, 3, 4});
  EXPECT_TENSOR(run_op(Op::Slice, {x}, {{"start", IntList{-100}}, {"stop", IntList{100}},
                                        {"step", IntList{2}}}),
                f32({3}, {0, 2, 4}));
  EXPECT_TENSOR(run_op(Op::Slice, {x}, {{"start", IntList{-2}}, {"stop", IntList{5}}}),
                f32({2}, {3, 4}));
  EXPECT_TENSOR(run_op(Op::Slice, {x}, {{"start", IntList{4}}, {"stop", IntList{1}}}),
                f32({0}, {}));
  Tensor y = f32({2, 3}, {0, 1, 2, 3, 4, 5});
  EXPECT_TENSOR(run_op(Op::Slice, {y}, {{"start", IntList{1, -3}}, {"stop", IntList{2, -1}}}),
                f32({1, 2}, {3, 4}));
}

constexpr int64_t kMax = std::numeric_limits<int64_t>::max();

TEST(KernelsTest, SliceWithAHugeStepTakesOneElement) {
  // (stop - start + step - 1) / step and stride * step used to overflow here.
  Tensor y = f32({2, 4}, {0, 1, 2, 3, 4, 5, 6, 7});
  EXPECT_TENSOR(run_op(Op::Slice, {y}, {{"start", IntList{1, 1}}, {"stop", IntList{kMax, kMax}},
                                        {"step", IntList{kMax, 2}}}),
                f32({1, 2}, {5, 7}));
  EXPECT_TENSOR(run_op(Op::Slice, {y}, {{"start", IntList{0, -1}}, {"stop", IntList{kMax, 4}},
                                        {"step", IntList{kMax, kMax}}}),
                f32({1, 1}, {3}));
}

// A one-node graph whose result type is given rather than inferred, as a caller that
// skips infer-types might build it: the kernels must not trust huge attributes either.
StatusOr<Tensor> run_typed(Op op, const std::vector<Tensor>& ins, Attrs attrs, Type type) {
  Graph g("t");
  std::vector<ValueId> operands;
  for (size_t i = 0; i < ins.size(); ++i) {
    operands.push_back(g.add_input("in" + std::to_string(i), ins[i].type()));
  }
  g.add_output(g.add_node(op, operands, std::move(attrs), kLoc, std::move(type)));
  WEFT_ASSIGN_OR_RETURN(RunResult r, run(g, ins));
  return r.outputs.at(0);
}

std::string error_of(const StatusOr<Tensor>& r) { return r.ok() ? "ok" : r.error().to_string(); }

TEST(KernelsTest, HugeAttributesAreErrorsNotOverflow) {
  // 2 + kMax + kMax wraps to 0: the old shape rule typed this f32[0].
  EXPECT_EQ(error_of(run_typed(Op::Pad, {f32({2}, {1, 2})},
                               {{"low", IntList{kMax}}, {"high", IntList{kMax}}, {"value", 0.0}},
                               Type{DType::f32, {0}})),
            "test.wir:3:5: error: pad: low 9223372036854775807 and high 9223372036854775807 "
            "overflow int64 on axis 0 of f32[2]");
  EXPECT_EQ(error_of(run_typed(Op::Pad, {f32({2}, {1, 2})},
                               {{"low", IntList{-1}}, {"high", IntList{0}}, {"value", 0.0}},
                               Type{DType::f32, {1}})),
            "test.wir:3:5: error: pad: low [-1] and high [0] must have entries >= 0");
  EXPECT_EQ(error_of(run_typed(Op::Conv, {f32({1, 1, 2, 2}, {1, 2, 3, 4}), f32({1, 1, 1, 1}, {1})},
                               {{"stride", IntList{1, 1}}, {"padding", IntList{kMax, 0}},
                                {"dilation", IntList{1, 1}}, {"groups", int64_t{1}}},
                               Type{DType::f32, {1, 1, 1, 2}})),
            "test.wir:3:5: error: conv: the convolution of [1,1,2,2] by [1,1,1,1] with stride "
            "[1, 1], padding [9223372036854775807, 0] and dilation [1, 1] has sizes that "
            "overflow int64");
  EXPECT_EQ(error_of(run_typed(Op::ConvBackwardInput,
                               {f32({1, 1, 2, 2}, {1, 2, 3, 4}), f32({1, 1, 1, 1}, {1})},
                               {{"input_shape", IntList{1, 1, 2, 2}}, {"stride", IntList{1, 1}},
                                {"padding", IntList{0, 0}}, {"dilation", IntList{kMax, 1}},
                                {"groups", int64_t{1}}},
                               Type{DType::f32, {1, 1, 2, 2}})),
            "ok");  // A 1x1 kernel spans one element whatever its dilation.
  EXPECT_EQ(error_of(run_typed(Op::AvgPool2dBackward, {f32({1, 1, 1, 1}, {1})},
                               {{"input_shape", IntList{4294967296, 4294967296, 2, 2}},
                                {"kernel", IntList{2, 2}}, {"padding", IntList{0, 0}}},
                               Type{DType::f32, {1, 1, 2, 2}})),
            "test.wir:3:5: error: avg_pool2d_backward: pooling [4294967296,4294967296,2,2] with "
            "kernel [2, 2], stride [2, 2] and padding [0, 0] has sizes that overflow int64");
  EXPECT_EQ(error_of(run_typed(Op::MaxPool2d, {f32({1, 1, 2, 2}, {1, 2, 3, 4})},
                               {{"kernel", IntList{2, 2}}, {"padding", IntList{0, kMax}}},
                               Type{DType::f32, {1, 1, 1, 1}})),
            "test.wir:3:5: error: max_pool2d: pooling [1,1,2,2] with kernel [2, 2], stride "
            "[2, 2] and padding [0, 9223372036854775807] has sizes that overflow int64");
  EXPECT_EQ(error_of(run_typed(Op::Concat, {f32({0, kMax}, {}), f32({0, 1}, {})},
                               {{"axis", int64_t{1}}}, Type{DType::f32, {0, 0}})),
            "test.wir:3:5: error: concat: the sizes along axis 1 add up to more than int64 can "
            "hold");
  // A result type that cannot be measured is refused before it is allocated.
  EXPECT_EQ(error_of(run_typed(Op::Full, {},
                               {{"shape", IntList{4294967296, 4294967296}}, {"value", 0.0}},
                               Type{DType::f32, {4294967296, 4294967296}})),
            "test.wir:3:5: error: full: result type f32[4294967296,4294967296] has a size in "
            "bytes that does not fit in 64 bits");
}

TEST(KernelsTest, CastRoundsToHalfTypesAndSaturatesToIntegers) {
  // 1 + 2^-11 ties to 1.0 in f16; 1 + 3·2^-11 ties up to 1 + 2^-9.
  Tensor x = f32({3}, {1.0f + 0x1p-11f, 1.0f + 3 * 0x1p-11f, 70000.0f});
  auto h = run_op(Op::Cast, {x}, {{"dtype", DType::f16}});
  ASSERT_TRUE(h.ok());
  EXPECT_EQ(h->data<uint16_t>()[0], 0x3c00);
  EXPECT_EQ(h->data<uint16_t>()[1], 0x3c02);
  EXPECT_EQ(h->data<uint16_t>()[2], 0x7c00);
  auto b = run_op(Op::Cast, {f32({1}, {1.0f + 3 * 0x1p-8f})}, {{"dtype", DType::bf16}});
  ASSERT_TRUE(b.ok());
  EXPECT_EQ(b->data<uint16_t>()[0], 0x3f82);
  EXPECT_TENSOR(run_op(Op::Cast, {*h}, {{"dtype", DType::f32}}),
                f32({3}, {1.0f, 1.0f + 0x1p-9f, std::numeric_limits<float>::infinity()}));
  EXPECT_TENSOR(run_op(Op::Cast, {f32({4}, {-2.7f, 3e10f, -3e10f, std::nanf("")})},
                       {{"dtype", DType::i32}}),
                i32({4}, {-2, std::numeric_limits<int32_t>::max(),
                          std::numeric_limits<int32_t>::min(), 0}));
  EXPECT_TENSOR(run_op(Op::Cast, {i64({2}, {(int64_t{1} << 32) + 5, -1})}, {{"dtype", DType::i32}}),
                i32({2}, {5, -1}));  // Integer to integer wraps.
  EXPECT_TENSOR(run_op(Op::Cast, {f32({3}, {0, -0.5f, 2})}, {{"dtype", DType::boolean}}),
                Tensor::from_vector<bool>({3}, {false, true, true}));
  EXPECT_TENSOR(run_op(Op::Cast, {Tensor::from_vector<bool>({2}, {true, false})},
                       {{"dtype", DType::f64}}),
                Tensor::from_vector<double>({2}, {1, 0}));
}

TEST(KernelsTest, HalfPrecisionComputesInF32AndRounds) {
  Tensor a = Tensor::from_doubles(DType::f16, {2}, {1.0, 2048.0});
  Tensor b = Tensor::from_doubles(DType::f16, {2}, {0x1p-11, 1.0});
  // 1 + 2^-11 and 2049 both tie in f16 and round to even.
  EXPECT_TENSOR(run_op(Op::Add, {a, b}), Tensor::from_doubles(DType::f16, {2}, {1.0, 2048.0}));
  Tensor c = Tensor::from_doubles(DType::bf16, {2, 2}, {1, 2, 3, 4});
  EXPECT_TENSOR(run_op(Op::Sum, {c}, {{"axes", IntList{1}}}),
                Tensor::from_doubles(DType::bf16, {2}, {3, 7}));
  EXPECT_TENSOR(run_op(Op::Transpose, {c}, {{"perm", IntList{1, 0}}}),
                Tensor::from_doubles(DType::bf16, {2, 2}, {1, 3, 2, 4}));
}

// ops.def's half rule (ir/op.h, HalfRule): a Widen op computes on the f32 values and
// rounds, which quiets a signaling NaN (bf16 0x7f81 becomes 0x7fc1); a Follow op picks
// the bits as they are (select), an Exact op copies them (transpose).
TEST(KernelsTest, HalfRuleWidensOrTakesBitsAsTheOpTableSays) {
  Tensor snan(Type{DType::bf16, Shape{{1}}});
  snan.data<uint16_t>()[0] = 0x7f81;
  const Tensor zero = Tensor::from_doubles(DType::bf16, {1}, {0.0});
  ASSERT_TRUE(computes_half_in_f32(Op::Add));
  auto added = run_op(Op::Add, {snan, zero});
  ASSERT_TRUE(added.ok());
  EXPECT_EQ(added->data<uint16_t>()[0], 0x7fc1);
  ASSERT_EQ(half_rule(Op::Select), HalfRule::Follow);
  auto picked = run_op(Op::Select, {Tensor::from_vector<bool>({1}, {true}), snan, zero});
  ASSERT_TRUE(picked.ok());
  EXPECT_EQ(picked->data<uint16_t>()[0], 0x7f81);
  ASSERT_EQ(half_rule(Op::Transpose), HalfRule::Exact);
  auto moved = run_op(Op::Transpose, {snan}, {{"perm", IntList{0}}});
  ASSERT_TRUE(moved.ok());
  EXPECT_EQ(moved->data<uint16_t>()[0], 0x7f81);
}

TEST(KernelsTest, RandomUniformIsPhilox) {
  Tensor key = i64({2}, {0, 0});
  auto r = run_op(Op::RandomUniform, {key}, {{"shape", IntList{2, 3}}});
  ASSERT_TRUE(r.ok()) << r.error().to_string();
  // Element 0 with seed 0 and offset 0 is the all-zero Philox block: 6627e8d5 ...
  EXPECT_EQ(r->data<float>()[0], static_cast<float>(0x6627e8d5u >> 8) * 0x1p-24f);
  for (int64_t i = 0; i < 6; ++i) {
    EXPECT_EQ(r->data<float>()[i],
              philox::uniform_f32(philox::element_block(0, 0, static_cast<uint64_t>(i))));
  }
  auto d = run_op(Op::RandomUniform, {i64({2}, {7, 9})},
                  {{"shape", IntList{5}}, {"dtype", DType::f64}});
  ASSERT_TRUE(d.ok());
  EXPECT_EQ(d->data<double>()[3], philox::uniform_f64(philox::element_block(7, 9, 3)));
  // The same key gives the same tensor; another offset gives another.
  auto again = run_op(Op::RandomUniform, {key}, {{"shape", IntList{2, 3}}});
  EXPECT_TRUE(*again == *r);
  auto other = run_op(Op::RandomUniform, {i64({2}, {0, 1})}, {{"shape", IntList{2, 3}}});
  EXPECT_FALSE(*other == *r);
  // Uniform statistics over many elements.
  auto big = run_op(Op::RandomUniform, {i64({2}, {42, 0})},
                    {{"shape", IntList{100000}}, {"dtype", DType::f16}});
  ASSERT_TRUE(big.ok());
  double sum = 0;
  for (int64_t i = 0; i < big->numel(); ++i) {
    const double v = big->get_double(i);
    ASSERT_GE(v, 0.0);
    ASSERT_LT(v, 1.0);
    sum += v;
  }
  EXPECT_NEAR(sum / big->numel(), 0.5, 0.01);
}

TEST(KernelsTest, RandomBernoulliThresholdsTheUniform) {
  Tensor key = i64({2}, {123, 4});
  auto u = run_op(Op::RandomUniform, {key}, {{"shape", IntList{1000}}});
  auto b = run_op(Op::RandomBernoulli, {key},
                  {{"shape", IntList{1000}}, {"p", 0.3}, {"dtype", DType::boolean}});
  ASSERT_TRUE(u.ok() && b.ok());
  int64_t ones = 0;
  for (int64_t i = 0; i < 1000; ++i) {
    EXPECT_EQ(b->data<uint8_t>()[i], u->data<float>()[i] < 0.3f ? 1 : 0);
    ones += b->data<uint8_t>()[i];
  }
  EXPECT_NEAR(ones / 1000.0, 0.3, 0.05);
  auto all = run_op(Op::RandomBernoulli, {key}, {{"shape", IntList{50}}, {"p", 1.0}});
  EXPECT_TENSOR(all, Tensor::from_doubles(DType::f32, {50}, std::vector<double>(50, 1.0)));
}

TEST(KernelsTest, GatherOneHotAndScatterAdd) {
  Tensor x = f32({3, 2}, {0, 1, 2, 3, 4, 5});
  EXPECT_TENSOR(run_op(Op::Gather, {x, i64({4}, {2, 0, 2, 1})}, {{"axis", int64_t{0}}}),
                f32({4, 2}, {4, 5, 0, 1, 4, 5, 2, 3}));
  auto bad = run_op(Op::Gather, {x, i64({2}, {1, 3})}, {{"axis", int64_t{0}}});
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.error().to_string(),
            "test.wir:3:5: error: gather: index 3 at position 1 is out of range for axis 0 of "
            "size 3");
  EXPECT_TENSOR(run_op(Op::OneHot, {i64({3}, {1, -1, 3})}, {{"depth", int64_t{3}}}),
                f32({3, 3}, {0, 1, 0, 0, 0, 0, 0, 0, 0}));
  EXPECT_TENSOR(run_op(Op::ScatterAdd, {f32({3, 2}, {0, 0, 0, 0, 0, 0}), i64({3}, {2, 0, 2}),
                                        f32({3, 2}, {1, 2, 3, 4, 5, 6})},
                       {{"axis", int64_t{0}}}),
                f32({3, 2}, {3, 4, 0, 0, 6, 8}));
}

TEST(KernelsTest, MaxPoolBackwardRoutesToTheFirstMaximum) {
  Tensor x = f32({1, 1, 2, 2}, {7, 7, 7, 7});
  Tensor gy = f32({1, 1, 1, 1}, {1});
  EXPECT_TENSOR(run_op(Op::MaxPool2dBackward, {x, gy}, {{"kernel", IntList{2, 2}}}),
                f32({1, 1, 2, 2}, {1, 0, 0, 0}));
}

TEST(KernelsTest, MaxPoolSelectReadsTheFirstMaximum) {
  // Windows [[7, 7], [7, 7]] (a tie: the first wins) and [[1, 9], [3, 2]].
  Tensor x = f32({1, 1, 2, 4}, {7, 7, 1, 9, 7, 7, 3, 2});
  Tensor g = f32({1, 1, 2, 4}, {10, 20, 30, 40, 50, 60, 70, 80});
  EXPECT_TENSOR(run_op(Op::MaxPool2dSelect, {x, g}, {{"kernel", IntList{2, 2}}}),
                f32({1, 1, 1, 2}, {10, 40}));
}

TEST(KernelsTest, CrossEntropyLabelOutOfRange) {
  auto r = run_op(Op::CrossEntropy, {f32({2, 3}, {0, 0, 0, 0, 0, 0}), i64({2}, {0, 3})});
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().to_string(),
            "test.wir:3:5: error: cross_entropy: label 3 at position 1 is out of range for 3 "
            "classes");
}

TEST(KernelsTest, AssignReportsUpdatesInInputOrderAfterTheStep) {
  Graph g("step");
  Type t{DType::f32, {2}};
  auto w = g.add_input("w", t, InputKind::param);
  auto v = g.add_input("v", t, InputKind::state);
  auto one = g.add_node(Op::Full, {}, {{"shape", IntList{2}}, {"value", 1.0}}, {}, t);
  g.add_node(Op::Assign, {v, g.add_node(Op::Add, {v, one}, {}, {}, t)});
  g.add_node(Op::Assign, {w, g.add_node(Op::Mul, {w, w}, {}, {}, t)});
  // Read after the assigns: still sees the old w.
  g.add_output(g.add_node(Op::Add, {w, one}, {}, {}, t));
  Tensor w0 = f32({2}, {2, 3}), v0 = f32({2}, {10, 20});
  auto r = run(g, {w0, v0});
  ASSERT_TRUE(r.ok()) << r.error().to_string();
  ASSERT_EQ(r->outputs.size(), 1u);
  EXPECT_TRUE(all_close(r->outputs[0], f32({2}, {3, 4}), 0));
  ASSERT_EQ(r->updated.size(), 2u);
  EXPECT_EQ(r->updated[0].first, "w");
  EXPECT_TRUE(all_close(r->updated[0].second, f32({2}, {4, 9}), 0));
  EXPECT_EQ(r->updated[1].first, "v");
  EXPECT_TRUE(all_close(r->updated[1].second, f32({2}, {11, 21}), 0));
  EXPECT_TRUE(all_close(w0, f32({2}, {2, 3}), 0));  // Inputs are not mutated.
}

TEST(KernelsTest, InputErrorsNameTheInput) {
  Graph g("f");
  auto x = g.add_input("x", {DType::f32, {2, 3}}, InputKind::data, Location{"m.wir", 1, 12, ""});
  g.add_output(g.add_node(Op::Relu, {x}, {}, {}, Type{DType::f32, {2, 3}}));
  auto wrong = run(g, {f32({3, 2}, {0, 0, 0, 0, 0, 0})});
  ASSERT_FALSE(wrong.ok());
  EXPECT_EQ(wrong.error().to_string(),
            "m.wir:1:12: error: input %x expects f32[2,3], but was given f32[3,2]");
  auto count = run(g, {});
  ASSERT_FALSE(count.ok());
  EXPECT_EQ(count.error().to_string(), "error: graph @f takes 1 inputs, but 0 were given");
}

TEST(KernelsTest, UntypedNodesAreRefused) {
  Graph g("f");
  auto x = g.add_input("x", {DType::f32, {2}});
  g.add_output(g.add_node(Op::Relu, {x}, {}, kLoc));
  auto r = run(g, {f32({2}, {1, 2})});
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().to_string(),
            "test.wir:3:5: error: relu: result %0 has no type; run shape inference before the "
            "reference interpreter");
}

TEST(KernelsTest, MatmulBatchesBroadcast) {
  Tensor a = f32({2, 1, 2}, {1, 2, 3, 4});
  Tensor b = f32({2, 1}, {10, 100});
  EXPECT_TENSOR(run_op(Op::Matmul, {a, b}), f32({2, 1, 1}, {210, 430}));
  Tensor c = f32({3, 5}, {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15});
  Tensor d = f32({5, 2}, {1, 0, 0, 1, 1, 0, 0, 1, 1, 0});
  EXPECT_TENSOR(run_op(Op::Matmul, {c, d}), f32({3, 2}, {9, 6, 24, 16, 39, 26}));
}

}  // namespace
}  // namespace weft::reference
