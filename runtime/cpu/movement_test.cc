// The movement kernels against the reference interpreter, on 1 and 2 threads, across
// dtypes: reshape, transpose (tiled and row paths), broadcast_to, slice with steps and
// negative starts, concat, pad (and negative pads cropping), gather and scatter_add with
// i64 and i32 indices and duplicates, one_hot; index errors with the reference's text.

#include <gtest/gtest.h>

#include "runtime/cpu/kernel_testing.h"

namespace weft::cpu {
namespace {
namespace movement_test {  // this file's names, apart in its package's unity test

using testing::matches_reference;
using testing::random_tensor;
using testing::run_both;

void expect_matches(Op op, const Attrs& attrs, const std::vector<Tensor>& inputs) {
  for (int threads : {1, 2}) {
    std::string why;
    EXPECT_TRUE(matches_reference(op, attrs, inputs, 0.0, &why, threads))
        << op_name(op) << " " << inputs[0].type().to_string() << " threads=" << threads
        << ": " << why;
  }
}

// Runs the CPU kernel alone, for operands the shape rules do not accept (i32 indices).
Tensor run_cpu(Op op, const Attrs& attrs, const std::vector<Tensor>& inputs, Type result,
               Status* status, int threads = 2) {
  LibraryCall call;
  call.node.op = op;
  call.node.attrs = attrs;
  std::vector<const void*> ptrs;
  for (const Tensor& t : inputs) {
    call.operand_types.push_back(t.type());
    ptrs.push_back(t.raw_data());
  }
  call.result_type = result;
  Tensor out(result);
  auto kernel = make_library_kernel(call, ptrs, out.raw_data());
  EXPECT_TRUE(kernel.ok() && *kernel) << op_name(op) << ": no kernel";
  if (!kernel.ok() || !*kernel) return out;
  ThreadPool pool(threads);
  *status = (*kernel)->run(pool);
  return out;
}

Tensor to_i32(const Tensor& idx) {
  Tensor t(Type{DType::i32, idx.shape()});
  for (int64_t i = 0; i < idx.numel(); ++i) t.set_double(i, idx.get_double(i));
  return t;
}

const DType kAll[] = {DType::f32, DType::f64, DType::f16, DType::bf16,
                      DType::i32, DType::i64, DType::u8,  DType::boolean};

TEST(MovementTest, ReshapeAndTranspose) {
  unsigned seed = 1;
  for (DType dtype : kAll) {
    expect_matches(Op::Reshape, {{"shape", IntList{4, 6}}},
                   {random_tensor({dtype, Shape{6, 4}}, seed++, -9, 9)});
    expect_matches(Op::Reshape, {{"shape", IntList{300, 200}}},
                   {random_tensor({dtype, Shape{200, 300}}, seed++, -9, 9)});
    for (auto [shape, perm] : std::vector<std::pair<std::vector<int64_t>, IntList>>{
             {{33, 65}, {1, 0}}, {{200, 300}, {1, 0}}, {{4, 5, 6}, {2, 0, 1}},
             {{4, 5, 6}, {0, 2, 1}}, {{4, 5, 6}, {1, 0, 2}}, {{2, 3, 4, 5}, {3, 1, 0, 2}},
             {{3, 1, 7}, {2, 1, 0}}, {{5}, {0}}}) {
      expect_matches(Op::Transpose, {{"perm", perm}},
                     {random_tensor({dtype, Shape(shape)}, seed++, -9, 9)});
    }
  }
}

TEST(MovementTest, BroadcastToAndSlice) {
  unsigned seed = 50;
  for (DType dtype : kAll) {
    for (auto [from, to] : std::vector<std::pair<std::vector<int64_t>, IntList>>{
             {{3, 1}, {2, 3, 4}}, {{1}, {5}}, {{4}, {3, 4}}, {{}, {2, 2}}, {{2, 1, 3}, {2, 500, 3}},
             {{1, 40000}, {2, 40000}}}) {
      expect_matches(Op::BroadcastTo, {{"shape", to}},
                     {random_tensor({dtype, Shape(from)}, seed++, -9, 9)});
    }
    Tensor x = random_tensor({dtype, Shape{7, 9, 5}}, seed++, -9, 9);
    expect_matches(Op::Slice, {{"start", IntList{1, 0, 2}}, {"stop", IntList{6, 9, 5}}}, {x});
    expect_matches(Op::Slice, {{"start", IntList{-5, 1, 0}}, {"stop", IntList{100, -1, 5}},
                               {"step", IntList{2, 3, 2}}}, {x});
    expect_matches(Op::Slice, {{"start", IntList{0, 4, 4}}, {"stop", IntList{7, 4, 5}}}, {x});
    expect_matches(Op::Slice, {{"start", IntList{6, 8, 0}}, {"stop", IntList{7, 9, 5}},
                               {"step", IntList{5, 1, 100}}}, {x});
  }
}

TEST(MovementTest, ConcatAndPad) {
  unsigned seed = 100;
  for (DType dtype : kAll) {
    Tensor a = random_tensor({dtype, Shape{4, 3, 5}}, seed++, -9, 9);
    Tensor b = random_tensor({dtype, Shape{4, 2, 5}}, seed++, -9, 9);
    Tensor c = random_tensor({dtype, Shape{4, 7, 5}}, seed++, -9, 9);
    expect_matches(Op::Concat, {{"axis", int64_t{1}}}, {a, b, c});
    expect_matches(Op::Concat, {{"axis", int64_t{0}}}, {a, a});
    expect_matches(Op::Concat, {{"axis", int64_t{-1}}}, {a, a, a});
    expect_matches(Op::Pad, {{"low", IntList{1, 0, 2}}, {"high", IntList{0, 3, 1}}}, {a});
    expect_matches(Op::Pad, {{"low", IntList{2, 2}}, {"high", IntList{1, 3}}, {"value", 2.5}},
                   {random_tensor({dtype, Shape{50, 60}}, seed++, -9, 9)});
  }
}

// Negative pads crop (interpreter.h), though the shape rule and the reference kernel
// currently reject them; the kernel is run alone and compared with the reference's slice
// followed by a non-negative pad.
TEST(MovementTest, NegativePadCrops) {
  for (DType dtype : {DType::f32, DType::i64, DType::f16}) {
    Tensor x = random_tensor({dtype, Shape{5, 6}}, 7, -9, 9);
    Status st;
    Tensor y = run_cpu(Op::Pad, {{"low", IntList{-1, 2}}, {"high", IntList{1, -2}}, {"value", 3.0}},
                       {x}, Type{dtype, Shape{5, 6}}, &st);
    ASSERT_TRUE(st.ok()) << st.to_string();
    testing::Comparison s = run_both(
        Op::Slice, {{"start", IntList{1, 0}}, {"stop", IntList{5, 4}}}, {x});
    testing::Comparison p = run_both(
        Op::Pad, {{"low", IntList{0, 2}}, {"high", IntList{1, 0}}, {"value", 3.0}}, {s.reference});
    ASSERT_TRUE(p.reference_status.ok()) << p.reference_status.to_string();
    std::string why;
    EXPECT_TRUE(all_close(y, p.reference, 0.0, &why)) << why;
  }
}

TEST(MovementTest, GatherWithI64AndI32Indices) {
  unsigned seed = 200;
  Tensor idx = Tensor::from_vector<int64_t>(Shape{6}, {2, 0, 2, 1, 3, 0});
  for (DType dtype : kAll) {
    Tensor x = random_tensor({dtype, Shape{4, 4, 3}}, seed++, -9, 9);
    for (int64_t axis : {0, 1, -1}) {
      Tensor ax_idx = axis == -1 ? Tensor::from_vector<int64_t>(Shape{4}, {2, 2, 0, 1}) : idx;
      expect_matches(Op::Gather, {{"axis", axis}}, {x, ax_idx});
      testing::Comparison ref = run_both(Op::Gather, {{"axis", axis}}, {x, ax_idx});
      Status st;
      Tensor y = run_cpu(Op::Gather, {{"axis", axis}}, {x, to_i32(ax_idx)}, ref.reference.type(), &st);
      EXPECT_TRUE(st.ok()) << st.to_string();
      EXPECT_TRUE(y == ref.reference) << "gather with i32 indices, axis " << axis;
    }
  }
  Tensor big = random_tensor({DType::f32, Shape{1000, 64}}, 3);
  Tensor many(Type{DType::i64, Shape{3000}});
  for (int64_t i = 0; i < 3000; ++i) many.data<int64_t>()[i] = (i * 7919) % 1000;
  expect_matches(Op::Gather, {{"axis", int64_t{0}}}, {big, many});
}

TEST(MovementTest, GatherOutOfRangeHasTheReferenceMessage) {
  Tensor x = random_tensor({DType::f32, Shape{4, 3}}, 1);
  for (int64_t bad : {4, -1}) {
    Tensor idx = Tensor::from_vector<int64_t>(Shape{3}, {1, bad, 7});
    testing::Comparison c = run_both(Op::Gather, {{"axis", int64_t{0}}}, {x, idx});
    ASSERT_TRUE(c.has_kernel);
    EXPECT_FALSE(c.cpu_status.ok());
    EXPECT_EQ(c.cpu_status.to_string(), c.reference_status.to_string());
    EXPECT_NE(c.cpu_status.to_string().find("gather: index " + std::to_string(bad) +
                                            " at position 1 is out of range for axis 0 of size 4"),
              std::string::npos)
        << c.cpu_status.to_string();
    Status st;
    run_cpu(Op::Gather, {{"axis", int64_t{0}}}, {x, to_i32(idx)}, Type{DType::f32, Shape{3, 3}}, &st);
    EXPECT_EQ(st.to_string(), c.reference_status.to_string());
  }
}

TEST(MovementTest, ScatterAddAccumulatesDuplicates) {
  unsigned seed = 300;
  for (DType dtype : {DType::f32, DType::f64, DType::i32, DType::i64}) {
    for (int64_t axis : {0, 1, -1}) {
      Tensor base = random_tensor({dtype, Shape{5, 4, 300}}, seed++, -9, 9);
      Tensor idx = Tensor::from_vector<int64_t>(Shape{7}, {1, 3, 1, 0, 1, 3, 2});
      std::vector<int64_t> src_dims = {5, 4, 300};
      src_dims[axis < 0 ? 2 : axis] = 7;
      Tensor src = random_tensor({dtype, Shape(src_dims)}, seed++, -9, 9);
      expect_matches(Op::ScatterAdd, {{"axis", axis}}, {base, idx, src});
      testing::Comparison ref = run_both(Op::ScatterAdd, {{"axis", axis}}, {base, idx, src});
      Status st;
      Tensor y = run_cpu(Op::ScatterAdd, {{"axis", axis}}, {base, to_i32(idx), src}, base.type(), &st);
      EXPECT_TRUE(st.ok()) << st.to_string();
      EXPECT_TRUE(y == ref.reference) << "scatter_add with i32 indices, axis " << axis;
    }
  }
  Tensor base = random_tensor({DType::f32, Shape{3, 2}}, 1);
  Tensor idx = Tensor::from_vector<int64_t>(Shape{2}, {0, 3});
  Tensor src = random_tensor({DType::f32, Shape{2, 2}}, 2);
  testing::Comparison c = run_both(Op::ScatterAdd, {{"axis", int64_t{0}}}, {base, idx, src});
  ASSERT_TRUE(c.has_kernel);
  EXPECT_EQ(c.cpu_status.to_string(), c.reference_status.to_string());
  EXPECT_NE(c.cpu_status.to_string().find("scatter_add: index 3 at position 1 is out of range"),
            std::string::npos)
      << c.cpu_status.to_string();
}

TEST(MovementTest, OneHot) {
  Tensor idx = Tensor::from_vector<int64_t>(Shape{2, 4}, {0, 3, -1, 4, 2, 2, 1, 100});
  for (DType dtype : {DType::f32, DType::i64, DType::boolean, DType::bf16, DType::u8}) {
    expect_matches(Op::OneHot, {{"depth", int64_t{4}}, {"dtype", dtype}}, {idx});
    testing::Comparison ref = run_both(Op::OneHot, {{"depth", int64_t{4}}, {"dtype", dtype}}, {idx});
    Status st;
    Tensor y = run_cpu(Op::OneHot, {{"depth", int64_t{4}}, {"dtype", dtype}}, {to_i32(idx)},
                       ref.reference.type(), &st);
    EXPECT_TRUE(y == ref.reference);
  }
  Tensor labels = random_tensor({DType::i64, Shape{5000}}, 4, 0, 10);
  expect_matches(Op::OneHot, {{"depth", int64_t{10}}}, {labels});
}

}  // namespace movement_test
}  // namespace
}  // namespace weft::cpu
