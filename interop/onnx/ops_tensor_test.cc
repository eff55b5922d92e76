// The tensor converters (ops/tensor.cc, ops/indexing.cc): small models per op and opset
// variant compared with numbers worked out by hand, and the refusals. (Reductions and
// matrix products: ops_reduce_linalg_test; ONNX's node tests of these families:
// ops_tensor_node_cases_test.)
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <limits>

#include "interop/onnx/importer.h"
#include "interop/onnx/reader.h"
#include "interop/onnx/testing/node_case.h"

namespace weft::onnx_io {
namespace {
namespace ops_tensor_test {  // this file's names, apart in its package's unity test


TEST(TensorOps, FlattenSqueezeUnsqueezeTranspose) {
  const Tensor x = iota_f32({2, 3, 4});
  Case flat(13);
  set_attr(flat.data("x", x).node("Flatten", {"x"}), "axis", -1);
  EXPECT_EQ(flat.y().shape(), Shape({6, 4}));
  Case flat0(9);
  set_attr(flat0.data("x", x).node("Flatten", {"x"}), "axis", 0);
  EXPECT_EQ(flat0.y().shape(), Shape({1, 24}));

  const Tensor x1 = iota_f32({1, 3, 1});
  Case sq11(11);
  set_attr(sq11.data("x", x1).node("Squeeze", {"x"}), "axes", std::vector<int64_t>{0});
  EXPECT_EQ(sq11.y(), iota_f32({3, 1}));
  Case sq13(13);
  sq13.data("x", x1).init("axes", i64({1}, {-1})).node("Squeeze", {"x", "axes"});
  EXPECT_EQ(sq13.y(), iota_f32({1, 3}));
  Case sq_all(13);
  sq_all.data("x", x1).node("Squeeze", {"x"});
  EXPECT_EQ(sq_all.y(), iota_f32({3}));
  Case sq_bad(13);
  sq_bad.data("x", x1).init("axes", i64({1}, {1})).node("Squeeze", {"x", "axes"});
  EXPECT_EQ(sq_bad.error(), "node 'n' (Squeeze, opset 13): axis 1 has size 3, not 1");

  const Tensor x2 = iota_f32({2, 3});
  Case un11(11);
  set_attr(un11.data("x", x2).node("Unsqueeze", {"x"}), "axes", std::vector<int64_t>{0, 3});
  EXPECT_EQ(un11.y(), iota_f32({1, 2, 3, 1}));
  Case un13(13);
  un13.data("x", x2).init("axes", i64({1}, {-1})).node("Unsqueeze", {"x", "axes"});
  EXPECT_EQ(un13.y(), iota_f32({2, 3, 1}));

  Case tr(13);
  tr.data("x", x2).node("Transpose", {"x"});  // default perm: reversed
  EXPECT_EQ(tr.y(), f32({3, 2}, {1, 4, 2, 5, 3, 6}));
}

TEST(TensorOps, ConcatAndSplit) {
  Case cat(13);
  set_attr(cat.data("a", f32({2, 1}, {1, 2}))
               .data("b", f32({2, 2}, {3, 4, 5, 6}))
               .node("Concat", {"a", "b"}),
           "axis", -1);
  EXPECT_EQ(cat.y(), f32({2, 3}, {1, 3, 4, 2, 5, 6}));
  Case no_axis(13);
  no_axis.data("a", f32({1}, {1})).node("Concat", {"a", "a"});
  EXPECT_EQ(no_axis.error(), "node 'n' (Concat, opset 13): axis is required");

  Case s11(11);
  set_attr(s11.data("x", iota_f32({3})).node("Split", {"x"}, {"p", "q"}), "split",
           std::vector<int64_t>{1, 2});
  StatusOr<std::vector<Tensor>> r = s11.run();
  ASSERT_TRUE(r.ok()) << r.error().to_string();
  EXPECT_EQ((*r)[0], f32({1}, {1}));
  EXPECT_EQ((*r)[1], f32({2}, {2, 3}));
  Case s13(13);
  s13.data("x", iota_f32({2, 2})).init("split", i64({2}, {1, 1}));
  set_attr(s13.node("Split", {"x", "split"}, {"p", "q"}), "axis", 1);
  r = s13.run();
  ASSERT_TRUE(r.ok()) << r.error().to_string();
  EXPECT_EQ((*r)[1], f32({2, 1}, {2, 4}));
  Case equal(13);
  equal.data("x", iota_f32({4})).node("Split", {"x"}, {"p", "q"});
  r = equal.run();
  ASSERT_TRUE(r.ok()) << r.error().to_string();
  EXPECT_EQ((*r)[1], f32({2}, {3, 4}));
  Case uneven(13);
  uneven.data("x", iota_f32({5})).node("Split", {"x"}, {"p", "q"});
  EXPECT_EQ(uneven.error(), "node 'n' (Split, opset 13): dim 5 does not split into 2 equal parts");
}

TEST(TensorOps, SliceAttributesAndInputsWithNegativeSteps) {
  Case s9(9);
  auto& n = s9.data("x", iota_f32({5})).node("Slice", {"x"});
  set_attr(n, "starts", std::vector<int64_t>{-4});
  set_attr(n, "ends", std::vector<int64_t>{1000});
  set_attr(n, "axes", std::vector<int64_t>{0});
  EXPECT_EQ(s9.y(), f32({4}, {2, 3, 4, 5}));

  const int64_t kMin = std::numeric_limits<int64_t>::min(),
                kMax = std::numeric_limits<int64_t>::max();
  Case rev(13);  // x[::-2] along axis 0, x[0:3:2] along axis 1
  rev.data("x", iota_f32({5, 3}))
      .init("starts", i64({2}, {kMax, 0}))
      .init("ends", i64({2}, {kMin, 3}))
      .init("axes", i64({2}, {0, -1}))
      .init("steps", i64({2}, {-2, 2}))
      .node("Slice", {"x", "starts", "ends", "axes", "steps"});
  EXPECT_EQ(rev.y(), f32({3, 2}, {13, 15, 7, 9, 1, 3}));
  Case mid(13);  // x[3:0:-1]
  mid.data("x", iota_f32({5}))
      .init("s", i64({1}, {3}))
      .init("e", i64({1}, {0}))
      .init("st", i64({1}, {-1}));
  mid.node("Slice", {"x", "s", "e", "", "st"});
  EXPECT_EQ(mid.y(), f32({3}, {4, 3, 2}));
  Case computed(13);
  computed.data("x", iota_f32({5})).data("s", i64({1}, {1})).init("e", i64({1}, {3}));
  computed.node("Slice", {"x", "s", "e"});
  EXPECT_EQ(computed.error(),
            "node 'n' (Slice, opset 13): starts computed at run time (weft's shapes are static: it "
            "must be a constant or an initializer) is not supported");
}

TEST(TensorOps, GatherTakesAnyRankAndNegativeIndices) {
  Case g(13);  // indices given at run time: negatives wrap in the graph
  g.data("x", iota_f32({3, 2})).data("i", i32({2, 2}, {0, -1, 2, 0})).node("Gather", {"x", "i"});
  EXPECT_EQ(g.y(), f32({2, 2, 2}, {1, 2, 5, 6, 5, 6, 1, 2}));
  Case scalar(13);
  scalar.data("x", iota_f32({3, 2})).init("i", i64({}, {-1}));
  set_attr(scalar.node("Gather", {"x", "i"}), "axis", 1);
  EXPECT_EQ(scalar.y(), f32({3}, {2, 4, 6}));
  Case out_of_range(13);
  out_of_range.data("x", iota_f32({3})).data("i", i64({1}, {3})).node("Gather", {"x", "i"});
  EXPECT_FALSE(out_of_range.run().ok());

  Case ge(13);
  ge.data("x", iota_f32({2, 2})).data("i", i64({2, 2}, {0, 0, 1, -2}));
  set_attr(ge.node("GatherElements", {"x", "i"}), "axis", 1);
  EXPECT_EQ(ge.y(), f32({2, 2}, {1, 1, 4, 3}));
  Case ge0(13);  // indices smaller than the data on the other axis
  ge0.data("x", iota_f32({3, 3}))
      .data("i", i64({2, 2}, {2, 0, 1, 2}))
      .node("GatherElements", {"x", "i"});
  EXPECT_EQ(ge0.y(), f32({2, 2}, {7, 2, 4, 8}));
}

TEST(TensorOps, ExpandTileAndBlocks) {
  Case ex(13);
  ex.data("x", f32({3, 1}, {1, 2, 3})).init("s", i64({3}, {2, 1, 2})).node("Expand", {"x", "s"});
  EXPECT_EQ(ex.y(), f32({2, 3, 2}, {1, 1, 2, 2, 3, 3, 1, 1, 2, 2, 3, 3}));
  Case smaller(13);  // the shape may be smaller: both ways
  smaller.data("x", f32({2, 1}, {1, 2})).init("s", i64({1}, {1})).node("Expand", {"x", "s"});
  EXPECT_EQ(smaller.y(), f32({2, 1}, {1, 2}));
  Case bad(13);
  bad.data("x", f32({3}, {1, 2, 3})).init("s", i64({1}, {2})).node("Expand", {"x", "s"});
  EXPECT_EQ(bad.error(), "node 'n' (Expand, opset 13): shapes [3] and [2] do not broadcast");

  Case tile(13);
  tile.data("x", f32({1, 2}, {1, 2})).init("r", i64({2}, {2, 3})).node("Tile", {"x", "r"});
  EXPECT_EQ(tile.y(), f32({2, 6}, {1, 2, 1, 2, 1, 2, 1, 2, 1, 2, 1, 2}));

  Case d2s(13);
  d2s.data("x", iota_f32({1, 8, 1, 1}));
  set_attr(d2s.node("DepthToSpace", {"x"}), "blocksize", 2);  // DCR
  EXPECT_EQ(d2s.y(), f32({1, 2, 2, 2}, {1, 3, 5, 7, 2, 4, 6, 8}));
  Case crd(13);
  crd.data("x", iota_f32({1, 8, 1, 1}));
  auto& c = crd.node("DepthToSpace", {"x"});
  set_attr(c, "blocksize", 2);
  set_attr(c, "mode", "CRD");
  EXPECT_EQ(crd.y(), f32({1, 2, 2, 2}, {1, 2, 3, 4, 5, 6, 7, 8}));
  Case s2d(13);
  s2d.data("x", iota_f32({1, 1, 2, 4}));
  set_attr(s2d.node("SpaceToDepth", {"x"}), "blocksize", 2);
  EXPECT_EQ(s2d.y(), f32({1, 4, 1, 2}, {1, 3, 2, 4, 5, 7, 6, 8}));
}

TEST(TensorOps, MadeFromShapesAndIndices) {
  Case cos(13);
  cos.init("s", i64({2}, {2, 1}));
  set_attr(cos.node("ConstantOfShape", {"s"}), "value", i64({1}, {7}));
  EXPECT_EQ(cos.y(), i64({2, 1}, {7, 7}));
  Case range(13);
  range.init("a", i32({}, {10}))
      .init("b", i32({}, {4}))
      .init("d", i32({}, {-3}))
      .node("Range", {"a", "b", "d"});
  EXPECT_EQ(range.y(), i32({2}, {10, 7}));
  Case range_data(13);
  range_data.data("a", f32({}, {0}))
      .init("b", f32({}, {4}))
      .init("d", f32({}, {1}))
      .node("Range", {"a", "b", "d"});
  EXPECT_EQ(range_data.error(),
            "node 'n' (Range, opset 13): start computed at run time is not supported");
  Case size(13);
  size.data("x", iota_f32({2, 3})).node("Size", {"x"});
  EXPECT_EQ(size.y(), i64({}, {6}));

  Case hot(11);  // axis 0; -1 counts from the end of depth; 3 is out of range: all off
  hot.data("i", i64({3}, {1, -1, 3})).init("depth", f32({}, {3})).data("v", f32({2}, {-1, 5}));
  set_attr(hot.node("OneHot", {"i", "depth", "v"}), "axis", 0);
  EXPECT_EQ(hot.y(), f32({3, 3}, {-1, -1, -1, 5, -1, -1, -1, 5, -1}));

  Case upper(14);
  upper.data("x", iota_f32({3, 3})).data("k", i64({}, {-1})).node("Trilu", {"x", "k"});
  EXPECT_EQ(upper.y(), f32({3, 3}, {1, 2, 3, 4, 5, 6, 0, 8, 9}));
  Case lower(14);
  lower.data("x", iota_f32({2, 2, 3}));
  set_attr(lower.node("Trilu", {"x"}), "upper", 0);
  EXPECT_EQ(lower.y(), f32({2, 2, 3}, {1, 0, 0, 4, 5, 0, 7, 0, 0, 10, 11, 0}));

  Case eye(13);
  eye.data("x", iota_f32({2, 3}));
  auto& n = eye.node("EyeLike", {"x"});
  set_attr(n, "k", 1);
  set_attr(n, "dtype", static_cast<int64_t>(onnx::TensorProto::INT64));
  EXPECT_EQ(eye.y(), i64({2, 3}, {0, 1, 0, 0, 0, 1}));
}

TEST(TensorOps, PadModesAndOpsets) {
  Case reflect(2);  // pads beyond the edge reflect again, as NumPy's
  auto& r = reflect.data("x", f32({3}, {1, 2, 3})).node("Pad", {"x"});
  set_attr(r, "pads", std::vector<int64_t>{4, 2});
  set_attr(r, "mode", "reflect");
  EXPECT_EQ(reflect.y(), f32({9}, {1, 2, 3, 2, 1, 2, 3, 2, 1}));
  Case value(2);
  auto& v = value.data("x", f32({1, 2}, {1, 2})).node("Pad", {"x"});
  set_attr(v, "pads", std::vector<int64_t>{1, 0, 0, 1});
  set_attr(v, "value", 9.0);
  EXPECT_EQ(value.y(), f32({2, 3}, {9, 9, 9, 1, 2, 9}));
  Case edge(11);
  edge.data("x", f32({3}, {1, 2, 3})).init("p", i64({2}, {2, 1}));
  set_attr(edge.node("Pad", {"x", "p"}), "mode", "edge");
  EXPECT_EQ(edge.y(), f32({6}, {1, 1, 1, 2, 3, 3}));
  Case crop(11);  // a negative pad crops
  crop.data("x", f32({3}, {1, 2, 3})).init("p", i64({2}, {-1, 2})).init("c", f32({}, {9}));
  crop.node("Pad", {"x", "p", "c"});
  EXPECT_EQ(crop.y(), f32({4}, {2, 3, 9, 9}));
  Case wrap(11);
  wrap.data("x", f32({3}, {1, 2, 3})).init("p", i64({2}, {1, 1}));
  set_attr(wrap.node("Pad", {"x", "p"}), "mode", "wrap");
  EXPECT_EQ(wrap.error(), "node 'n' (Pad, opset 11): mode 'wrap' is not constant, reflect or edge");
  Case neg(11);
  neg.data("x", f32({3}, {1, 2, 3})).init("p", i64({2}, {-1, 1}));
  set_attr(neg.node("Pad", {"x", "p"}), "mode", "edge");
  EXPECT_EQ(neg.error(), "node 'n' (Pad, opset 11): negative pads in mode 'edge' is not supported");
}

TEST(TensorOps, CumSum) {
  Case cs(14);
  cs.data("x", f32({5}, {1, 2, 3, 4, 5})).init("axis", i64({}, {0}));
  auto& n = cs.node("CumSum", {"x", "axis"});
  set_attr(n, "exclusive", 1);
  set_attr(n, "reverse", 1);
  EXPECT_EQ(cs.y(), f32({5}, {14, 12, 9, 5, 0}));
  Case cs2(11);
  cs2.data("x", i32({2, 3}, {1, 2, 3, 4, 5, 6}))
      .init("axis", i32({1}, {-1}))
      .node("CumSum", {"x", "axis"});
  EXPECT_EQ(cs2.y(), i32({2, 3}, {1, 3, 6, 4, 9, 15}));
}

TEST(TensorOps, ExportedShapeArithmeticFoldsThroughTheConverters) {
  // x.view(x.size(0), -1) as PyTorch exports it: Shape, Gather, Unsqueeze, Concat.
  OnnxBuilder b(13);
  b.input("x", DType::f32, {2, 3, 4});
  b.initializer("zero", i64({}, {0}));
  b.initializer("axes", i64({1}, {0}));
  b.initializer("minus1", i64({1}, {-1}));
  b.node("Shape", {"x"}, {"s"});
  b.node("Gather", {"s", "zero"}, {"n"});
  b.node("Unsqueeze", {"n", "axes"}, {"n1"});
  set_attr(b.node("Concat", {"n1", "minus1"}, {"shape"}), "axis", 0);
  b.node("Reshape", {"x", "shape"}, {"y"});
  b.output("y", DType::f32);
  StatusOr<ImportedGraph> g = import_onnx(b.file());
  ASSERT_TRUE(g.ok()) << g.error().to_string();
  EXPECT_TRUE(g->params.empty());
  EXPECT_EQ(g->graph.nodes().size(), 1u);
  EXPECT_EQ(g->graph.type(g->graph.outputs()[0]).to_string(), "f32[2,12]");
}

TEST(TensorOps, DataDependentShapesAreRefused) {
  Case nz(13);
  nz.data("x", f32({2}, {0, 1})).node("NonZero", {"x"});
  EXPECT_EQ(
      nz.error(),
      "node 'n' (NonZero, opset 13): NonZero (its output shape depends on the input's values; "
      "weft's shapes are static) is not supported");
}

// Each message of an invalid or unsupported node, with a model that shows it.
TEST(TensorOps, InvalidNodesAreRefusedNamingTheProblem) {
  struct Want {
    std::function<void(Case&)> build;
    std::string message;
  };
  const Tensor x = iota_f32({2, 3});
  auto ints = [](std::vector<int64_t> v) { return i64({static_cast<int64_t>(v.size())}, v); };
  const std::vector<Want> wants = {
      {[&](Case& c) {
         set_attr(c.data("x", x).node("Transpose", {"x"}), "perm", std::vector<int64_t>{0});
       },
       "perm"},  // the shape rule's message, checked below only for being an error
      {[&](Case& c) { set_attr(c.data("x", x).node("Flatten", {"x"}), "axis", 3); },
       "node 'n' (Flatten, opset 14): axis 3 is out of range"},
      {[&](Case& c) {
         c.data("x", x).init("a", ints({0, 0})).node("Unsqueeze", {"x", "a"});
       },
       "node 'n' (Unsqueeze, opset 14): axis 0 is repeated"},
      {[&](Case& c) { c.data("x", x).node("Unsqueeze", {"x"}); },
       "node 'n' (Unsqueeze, opset 14): axes are required"},
      {[&](Case& c) {
         c.data("x", x).init("a", ints({2})).node("Squeeze", {"x", "a"});
       },
       "node 'n' (Squeeze, opset 14): axis 2 is out of range for rank 2"},
      {[&](Case& c) { c.init("s", ints({-2})).node("ConstantOfShape", {"s"}); },
       "node 'n' (ConstantOfShape, opset 14): the shape has a negative entry -2"},
      {[&](Case& c) {
         c.init("s", ints({1}));
         set_attr(c.node("ConstantOfShape", {"s"}), "value", i64({1}, {(int64_t{1} << 60) + 1}));
       },
       "node 'n' (ConstantOfShape, opset 14): an int64 value beyond 2^53 is not supported"},
      {[&](Case& c) {
         c.init("a", i64({}, {0})).init("d", i64({}, {0})).node("Range", {"a", "a", "d"});
       },
       "node 'n' (Range, opset 14): delta is 0"},
      {[&](Case& c) {
         c.data("x", x).init("r", ints({2})).node("Tile", {"x", "r"});
       },
       "node 'n' (Tile, opset 14): repeats has 1 entries for rank 2"},
      {[&](Case& c) {
         c.data("x", x).init("r", ints({1, -1})).node("Tile", {"x", "r"});
       },
       "node 'n' (Tile, opset 14): repeats has a negative entry -1"},
      {[&](Case& c) { set_attr(c.data("x", x).node("DepthToSpace", {"x"}), "blocksize", 2); },
       "node 'n' (DepthToSpace, opset 14): the input must be 4-D [N, C, H, W]"},
      {[&](Case& c) {
         set_attr(c.data("x", iota_f32({1, 2, 1, 1})).node("DepthToSpace", {"x"}), "blocksize", 2);
       },
       "node 'n' (DepthToSpace, opset 14): blocksize² must divide the channels"},
      {[&](Case& c) {
         auto& n = c.data("x", iota_f32({1, 4, 1, 1})).node("DepthToSpace", {"x"});
         set_attr(n, "blocksize", 2);
         set_attr(n, "mode", "XYZ");
       },
       "node 'n' (DepthToSpace, opset 14): mode 'XYZ' is neither DCR nor CRD"},
      {[&](Case& c) { set_attr(c.data("x", x).node("SpaceToDepth", {"x"}), "blocksize", 2); },
       "node 'n' (SpaceToDepth, opset 14): the input must be 4-D [N, C, H, W]"},
      {[&](Case& c) {
         set_attr(c.data("x", iota_f32({1, 1, 3, 2})).node("SpaceToDepth", {"x"}), "blocksize", 2);
       },
       "node 'n' (SpaceToDepth, opset 14): blocksize must divide H and W"},
      {[&](Case& c) {
         c.data("x", x).init("s", ints({1, 2})).node("Split", {"x", "s"}, {"p", "q"});
       },
       "node 'n' (Split, opset 14): split sizes must be one per output and add up to 2"},
      {[&](Case& c) {
         c.data("x", x).init("s", ints({0})).init("e", ints({1, 2})).node("Slice", {"x", "s", "e"});
       },
       "node 'n' (Slice, opset 14): starts, ends, axes and steps must have one entry each per "
       "sliced axis"},
      {[&](Case& c) {
         c.data("x", x)
             .init("s", ints({0}))
             .init("e", ints({1}))
             .init("a", ints({0}))
             .init("t", ints({0}));
         c.node("Slice", {"x", "s", "e", "a", "t"});
       },
       "node 'n' (Slice, opset 14): a step is 0"},
      {[&](Case& c) {
         c.data("x", x).data("i", f32({1}, {0})).node("Gather", {"x", "i"});
       },
       "node 'n' (Gather, opset 14): indices must be integers"},
      {[&](Case& c) {
         c.data("x", x).data("i", i64({2}, {0, 1})).node("GatherElements", {"x", "i"});
       },
       "node 'n' (GatherElements, opset 14): indices must have the data's rank"},
      {[&](Case& c) {
         c.data("i", ints({0}))
             .init("d", i64({}, {0}))
             .data("v", f32({2}, {0, 1}))
             .node("OneHot", {"i", "d", "v"});
       },
       "node 'n' (OneHot, opset 14): depth must be >= 1"},
      {[&](Case& c) {
         c.data("i", ints({0}))
             .init("d", i64({}, {2}))
             .data("v", f32({3}, {0, 1, 2}))
             .node("OneHot", {"i", "d", "v"});
       },
       "node 'n' (OneHot, opset 14): values must hold [off, on]"},
      {[&](Case& c) {
         c.data("i", ints({0}))
             .data("d", i64({}, {2}))
             .data("v", f32({2}, {0, 1}))
             .node("OneHot", {"i", "d", "v"});
       },
       "node 'n' (OneHot, opset 14): depth computed at run time is not supported"},
      {[&](Case& c) {
         c.data("x", f32({2}, {1, 2})).node("Trilu", {"x"});
       },
       "node 'n' (Trilu, opset 14): the input must have rank >= 2"},
      {[&](Case& c) {
         c.data("x", f32({2}, {1, 2})).node("EyeLike", {"x"});
       },
       "node 'n' (EyeLike, opset 14): the input must be 2-D"},
      {[&](Case& c) {
         set_attr(c.data("x", x).node("EyeLike", {"x"}), "dtype",
                  static_cast<int64_t>(onnx::TensorProto::INT8));
       },
       "node 'n' (EyeLike, opset 14): INT8 tensors: weft has no such dtype (it has f32, f64, f16, "
       "bf16, i32, i64, "
       "u8, bool) is not supported"},
      {[&](Case& c) {
         c.data("x", x).init("p", ints({1, 1})).node("Pad", {"x", "p"});
       },
       "node 'n' (Pad, opset 14): pads must have 2·rank = 4 entries"},
      {[&](Case& c) {
         c.data("x", f32({0}, {})).init("p", ints({1, 1}));
         set_attr(c.node("Pad", {"x", "p"}), "mode", "edge");
       },
       "node 'n' (Pad, opset 14): mode 'edge' pads an empty axis"},
      {[&](Case& c) {
         c.data("x", x).data("s", f32({2}, {1, 2}));
         set_attr(c.node("Resize", {"x", "", "s"}), "mode", "nearest");
       },
       "node 'n' (Resize, opset 14): scales computed at run time is not supported"},
      {[&](Case& c) {
         c.data("x", x).init("s", f32({1}, {2})).node("Resize", {"x", "", "s"});
       },
       "node 'n' (Resize, opset 14): scales need one entry per axis"},
      {[&](Case& c) { c.data("x", x).node("Resize", {"x"}); },
       "node 'n' (Resize, opset 14): give scales or sizes, one entry per axis"},
      {[&](Case& c) {
         c.data("x", x).init("a", ints({0, -2})).node("ReduceSum", {"x", "a"});
       },
       "node 'n' (ReduceSum, opset 14): an axis is repeated"},
      {[&](Case& c) {
         set_attr(c.data("x", x).node("ReduceMax", {"x"}), "axes", std::vector<int64_t>{2});
       },
       "node 'n' (ReduceMax, opset 14): axis 2 is out of range for rank 2"},
      {[&](Case& c) {
         c.data("x", Tensor::from_vector<bool>(Shape{2}, {true, false})).node("ArgMax", {"x"});
       },
       "node 'n' (ArgMax, opset 14): a bool input is not supported"},
      {[&](Case& c) { set_attr(c.data("x", x).node("ArgMin", {"x"}), "axis", -3); },
       "node 'n' (ArgMin, opset 14): axis -3 is out of range for rank 2"},
      {[&](Case& c) {
         set_attr(c.data("x", x).node("Einsum", {"x", "x", "x"}), "equation", "ij,ij,ij->i");
       },
       "node 'n' (Einsum, opset 14): equation 'ij,ij,ij->i' (more than two operands) is not "
       "supported"},
      {[&](Case& c) {
         set_attr(c.data("x", x).node("Einsum", {"x", "x"}), "equation", "ij,ji->ij");
       },
       "node 'n' (Einsum, opset 14): equation 'ij,ji->ij' (letter 'j' broadcast) is not supported"},
      {[&](Case& c) {
         set_attr(c.data("x", x).node("Einsum", {"x", "x"}), "equation", "ij,ij->k");
       },
       "node 'n' (Einsum, opset 14): output letter 'k' is in no operand"},
      {[&](Case& c) { set_attr(c.data("x", x).node("Einsum", {"x"}), "equation", "ij,jk->ik"); },
       "node 'n' (Einsum, opset 14): the equation names 2 operands"},
      {[&](Case& c) { set_attr(c.data("x", x).node("Einsum", {"x"}), "equation", "i.j->i"); },
       "node 'n' (Einsum, opset 14): equation 'i.j->i' (an ellipsis that is not '...') is not "
       "supported"},
      {[&](Case& c) {
         c.data("a", x).data("b", f32({3}, {1, 2, 3})).data("c", x).node("Gemm", {"a", "b", "c"});
       },
       "node 'n' (Gemm, opset 14): A and B must be matrices"},
      {[&](Case& c) {
         c.data("x", x).init("s", f32({2}, {2, 2}));
         set_attr(c.node("Upsample", {"x", "s"}), "mode", "cubic");
       },
       "node 'n' (Upsample, opset 14): mode 'cubic' is not supported"},
      {[&](Case& c) {
         c.init("a", i64({}, {0}))
             .init("b", i64({}, {int64_t{1} << 50}))
             .init("d", i64({}, {1}))
             .node("Range", {"a", "b", "d"});
       },
       "node 'n' (Range, opset 14): a range of more than 2^40 elements is not supported"},
      {[&](Case& c) {
         c.data("x", Tensor::from_vector<bool>(Shape{2}, {true, false})).node("ReduceProd", {"x"});
       },
       "node 'n' (ReduceProd, opset 14): a bool input is not supported"},
      {[&](Case& c) { set_attr(c.data("x", x).node("Einsum", {"x"}), "equation", "ij->ii"); },
       "node 'n' (Einsum, opset 14): output letter 'i' is repeated"},
      {[&](Case& c) { set_attr(c.data("x", x).node("Einsum", {"x"}), "equation", "i->i"); },
       "node 'n' (Einsum, opset 14): operand 0's rank does not match the equation"},
  };
  for (const Want& w : wants) {
    Case c(14);
    w.build(c);
    const std::string got = c.error();
    if (w.message == "perm") {
      EXPECT_NE(got, "");
    } else {
      EXPECT_EQ(got, w.message);
    }
  }
}

}  // namespace ops_tensor_test
}  // namespace
}  // namespace weft::onnx_io
