// ir/cast.h: cast_to through a builder casts only when the dtype differs; add_cast
// appends a typed, located, named cast node.
#include "ir/cast.h"

#include <gtest/gtest.h>

#include <vector>

#include "ir/shape_rules.h"

namespace weft {
namespace {

/// The two calls cast_to needs of a builder (frontend's Emitter and autodiff's
/// GradBuilder have both), on a bare graph, counting the ops emitted.
struct CountingBuilder {
  Graph& g;
  int ops = 0;
  Type type(ValueId v) const { return g.type(v); }
  ValueId op(Op op, std::vector<ValueId> operands, Attrs attrs) {
    ++ops;
    return *add_typed_node(g, op, std::move(operands), std::move(attrs), Location{});
  }
};

TEST(CastTo, CastsOnlyAValueOfAnotherDtype) {
  Graph g("g");
  const ValueId x = g.add_input("x", Type{DType::i32, Shape({2, 3})});
  CountingBuilder b{g};
  const ValueId same = cast_to(b, x, DType::i32);
  EXPECT_EQ(same, x);
  EXPECT_EQ(b.ops, 0);
  const ValueId wide = cast_to(b, x, DType::i64);
  EXPECT_EQ(b.ops, 1);
  EXPECT_EQ(g.type(wide), (Type{DType::i64, Shape({2, 3})}));
  const Node& n = g.node(g.value(wide).node);
  EXPECT_EQ(n.op, Op::Cast);
  EXPECT_EQ(n.operands, std::vector<ValueId>{x});
  EXPECT_EQ(n.dtype_attr("dtype"), DType::i64);
}

TEST(AddCast, AppendsATypedLocatedNamedCast) {
  Graph g("g");
  const ValueId h = g.add_input("h", Type{DType::f32, Shape({4, 8})});
  const Location loc{"model.cc", 12, 5, "rnn"};
  const ValueId b = add_cast(g, h, DType::bf16, loc, "hb");
  EXPECT_EQ(g.type(b), (Type{DType::bf16, Shape({4, 8})}));
  EXPECT_EQ(g.value(b).name, "hb");
  const Node& n = g.node(g.value(b).node);
  EXPECT_EQ(n.op, Op::Cast);
  EXPECT_EQ(n.loc.line, 12);
  EXPECT_EQ(n.loc.path, "rnn");
  EXPECT_EQ(n.dtype_attr("dtype"), DType::bf16);
  // Unnamed: a fresh name. Of the same dtype: still a node (the caller decides).
  const ValueId again = add_cast(g, h, DType::f32, Location{});
  EXPECT_NE(again, h);
  EXPECT_FALSE(g.value(again).name.empty());
  EXPECT_EQ(g.nodes().size(), 2u);
}

}  // namespace
}  // namespace weft
