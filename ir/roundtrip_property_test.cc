// Property test: random well-typed graphs (many ops, every attribute kind that a schema
// uses, every dtype, scalars, awkward floats and strings, locations with and without
// builder paths, param/state inputs, assigns, several outputs) survive the `.wir` text
// and the JSON form unchanged: structurally equal, and printed identically again.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <random>

#include "ir/json.h"
#include "ir/text.h"

namespace weft {
namespace {

class GraphGenerator {
 public:
  explicit GraphGenerator(uint32_t seed) : rng_(seed) {}

  Graph generate();

 private:
  struct Typed {
    ValueId value;
    Type type;
  };

  int uniform(int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng_); }
  bool chance(double p) { return std::bernoulli_distribution(p)(rng_); }
  template <typename T>
  const T& pick(const std::vector<T>& items) {
    return items[uniform(0, static_cast<int>(items.size()) - 1)];
  }

  DType random_dtype() { return kAllDTypes[uniform(0, 7)]; }
  Shape random_shape() {
    std::vector<int64_t> dims(uniform(0, 3));
    for (int64_t& d : dims) d = uniform(1, 5);
    return Shape(dims);
  }
  double random_float();
  std::string random_string();
  std::string random_name(std::string_view stem);
  Location random_location();
  const Typed& random_value() { return pick(pool_); }
  /// A value of a floating dtype, made by `full()` when there is none yet.
  Typed random_float_value();
  /// Adds a node whose result has type `type`; the type is left unknown in the graph
  /// one time in five, as before shape inference.
  ValueId add(Op op, std::vector<ValueId> operands, Attrs attrs, Type type);
  void add_random_node();

  std::mt19937 rng_;
  Graph graph_;
  std::vector<Typed> pool_;           // Values with a result, and their (true) types.
  std::vector<Typed> stateful_;       // Param and state inputs, for assign.
  int next_name_ = 0;
};

double GraphGenerator::random_float() {
  static const std::vector<double> special = {
      1e-05, 0.1, 1e300, -0.0, 0.0, 2.0, -3.5, 1.0 / 3.0, 1e-300, 5e-324,
      std::numeric_limits<double>::max(), std::numeric_limits<double>::infinity(),
      -std::numeric_limits<double>::infinity(), 123456789.0, -1e22};
  if (chance(0.6)) return pick(special);
  if (chance(0.3)) return static_cast<double>(uniform(-1000, 1000));
  return std::uniform_real_distribution<double>(-1e6, 1e6)(rng_);
}

std::string GraphGenerator::random_string() {
  static const std::vector<std::string> strings = {
      "none", "tanh", "", "say \"hi\"", "back\\slash", "two\nlines", "tab\there",
      "# not a comment }", "loc(\"x\":1:2)", "{axis=1}", "trailing\\"};
  return pick(strings);
}

// Unique names: numeric (the graph's fresh names), plain, dotted, or needing quotes.
std::string GraphGenerator::random_name(std::string_view stem) {
  int n = next_name_++;
  switch (uniform(0, 4)) {
    case 0: return "";  // Graph::add_* picks a fresh numeric name.
    case 1: return std::string(stem) + std::to_string(n);
    case 2: return std::string(stem) + "_new." + std::to_string(n);
    case 3: return std::string(stem) + " " + std::to_string(n) + " \"q\"";
    default: return "v" + std::to_string(n) + "-x";
  }
}

Location GraphGenerator::random_location() {
  static const std::vector<std::string> files = {"model.cc", "a/b/net.cc", "we\"ird\\.cc",
                                                 "x.wir"};
  static const std::vector<std::string> paths = {
      "encoder > split[1] > Linear(256->10)", "Linear(784->256)", "a \"b\" > c\\d", "gate"};
  switch (uniform(0, 5)) {
    case 0: return Location{};
    case 1: return Location{"", 0, 0, pick(paths)};
    case 2: return Location{pick(files), uniform(1, 500), uniform(1, 80), pick(paths)};
    default: return Location{pick(files), uniform(1, 500), uniform(0, 80), ""};
  }
}

ValueId GraphGenerator::add(Op op, std::vector<ValueId> operands, Attrs attrs, Type type) {
  std::optional<Type> known;
  if (!chance(0.2)) known = type;
  ValueId v = graph_.add_node(op, std::move(operands), std::move(attrs), random_location(),
                              known, random_name("h"));
  if (v != kNoValue) pool_.push_back({v, std::move(type)});
  return v;
}

GraphGenerator::Typed GraphGenerator::random_float_value() {
  std::vector<Typed> floats;
  for (const Typed& t : pool_) {
    if (is_floating(t.type.dtype)) floats.push_back(t);
  }
  if (!floats.empty()) return pick(floats);
  Shape shape = random_shape();
  add(Op::Full, {}, {{"shape", IntList(shape.dims)}, {"value", random_float()}},
      {DType::f32, shape});
  return pool_.back();
}

void GraphGenerator::add_random_node() {
  static const std::vector<Op> unary = {Op::Neg,  Op::Abs,     Op::Exp,  Op::Log,  Op::Log1p,
                                        Op::Sqrt, Op::Rsqrt,   Op::Tanh, Op::Sigmoid,
                                        Op::Relu, Op::Sin,     Op::Cos,  Op::Erf,  Op::Sign,
                                        Op::Floor};
  static const std::vector<Op> binary = {Op::Add, Op::Sub, Op::Mul, Op::Div, Op::Pow,
                                         Op::Maximum, Op::Minimum};
  static const std::vector<Op> compare = {Op::Eq, Op::Ne, Op::Lt, Op::Le, Op::Gt, Op::Ge};
  static const std::vector<Op> reduce = {Op::Sum, Op::Mean, Op::Max, Op::Min};
  // Numeric ops take floating operands; movement and creation ops take any dtype.
  const Typed x = chance(0.6) ? random_float_value() : random_value();
  const Shape& s = x.type.shape;
  const int category = uniform(0, 17);
  if (!is_floating(x.type.dtype) &&
      (category <= 1 || category == 5 || category == 6 || category == 7 || category >= 14)) {
    return;
  }
  switch (category) {
    case 0: add(pick(unary), {x.value}, {}, x.type); break;
    case 1: add(pick(binary), {x.value, x.value}, {}, x.type); break;
    case 2: {
      ValueId c = add(pick(compare), {x.value, x.value}, {}, {DType::boolean, s});
      ValueId d = add(chance(0.5) ? Op::And : Op::Or, {c, c}, {}, {DType::boolean, s});
      add(Op::Not, {d}, {}, {DType::boolean, s});
      break;
    }
    case 3: {
      ValueId c = add(Op::Eq, {x.value, x.value}, {}, {DType::boolean, s});
      add(Op::Select, {c, x.value, x.value}, {}, x.type);
      break;
    }
    case 4: {
      DType d = random_dtype();
      add(Op::Cast, {x.value}, {{"dtype", d}}, {d, s});
      break;
    }
    case 5: {
      Attrs attrs;
      if (chance(0.7)) attrs["approximate"] = random_string();
      add(Op::Gelu, {x.value}, std::move(attrs), x.type);
      break;
    }
    case 6: {
      Attrs attrs;
      bool keepdims = false;  // The schema default when the attribute is absent.
      if (chance(0.5)) {
        keepdims = chance(0.5);
        attrs["keepdims"] = keepdims;
      }
      IntList axes;
      for (int i = 0; i < s.rank(); ++i) {
        if (chance(0.5)) axes.push_back(i);
      }
      bool all_axes = !chance(0.6);
      if (!all_axes) attrs["axes"] = axes;
      std::vector<int64_t> dims;
      for (int i = 0; i < s.rank(); ++i) {
        bool reduced = all_axes || std::find(axes.begin(), axes.end(), i) != axes.end();
        if (!reduced) {
          dims.push_back(s[i]);
        } else if (keepdims) {
          dims.push_back(1);
        }
      }
      add(pick(reduce), {x.value}, std::move(attrs), {x.type.dtype, Shape(dims)});
      break;
    }
    case 7: {
      if (s.rank() == 0) return;
      Attrs attrs{{"axis", int64_t{uniform(-s.rank(), s.rank() - 1)}}};
      add(chance(0.5) ? Op::Softmax : Op::LogSoftmax, {x.value}, std::move(attrs), x.type);
      break;
    }
    case 8: add(Op::Reshape, {x.value}, {{"shape", IntList{s.numel()}}},
                {x.type.dtype, {s.numel()}}); break;
    case 9: {
      IntList perm;
      std::vector<int64_t> dims;
      for (int i = s.rank() - 1; i >= 0; --i) {
        perm.push_back(i);
        dims.push_back(s[i]);
      }
      add(Op::Transpose, {x.value}, {{"perm", perm}}, {x.type.dtype, Shape(dims)});
      break;
    }
    case 10: {
      if (s.rank() == 0) return;
      int n = uniform(1, 3);
      std::vector<int64_t> dims = s.dims;
      dims[0] *= n;
      add(Op::Concat, std::vector<ValueId>(n, x.value), {{"axis", int64_t{0}}},
          {x.type.dtype, Shape(dims)});
      break;
    }
    case 11: {
      IntList low(s.rank(), 1), high(s.rank(), 0);
      std::vector<int64_t> dims = s.dims;
      for (int64_t& d : dims) d += 1;
      Attrs attrs{{"low", low}, {"high", high}};
      if (chance(0.7)) attrs["value"] = random_float();
      add(Op::Pad, {x.value}, std::move(attrs), {x.type.dtype, Shape(dims)});
      break;
    }
    case 12: {
      Shape shape = random_shape();
      DType d = random_dtype();
      Attrs attrs{{"shape", IntList(shape.dims)}, {"value", random_float()}};
      if (chance(0.5) || d != DType::f32) attrs["dtype"] = d;
      add(Op::Full, {}, std::move(attrs), {d, shape});
      break;
    }
    case 13: {
      Shape shape = random_shape();
      if (shape.rank() == 0) return;
      add(Op::Iota, {}, {{"shape", IntList(shape.dims)}, {"axis", int64_t{0}},
                         {"dtype", DType::i32}}, {DType::i32, shape});
      break;
    }
    case 14: {
      Attrs attrs{{"eps", random_float()}};
      if (chance(0.5)) attrs["axes"] = IntList{-1};
      add(Op::LayerNorm, {x.value, x.value, x.value}, std::move(attrs), x.type);
      break;
    }
    case 15: {
      Shape shape = random_shape();
      add(Op::RandomBernoulli, {x.value}, {{"shape", IntList(shape.dims)}, {"p", random_float()}},
          {DType::f32, shape});
      break;
    }
    case 16: {
      if (s.rank() != 2) {
        add(Op::Mse, {x.value, x.value}, {{"reduction", random_string()}}, {x.type.dtype, {}});
        return;
      }
      ValueId t = add(Op::Transpose, {x.value}, {{"perm", IntList{1, 0}}},
                      {x.type.dtype, {s[1], s[0]}});
      add(Op::Matmul, {x.value, t}, {}, {x.type.dtype, {s[0], s[0]}});
      break;
    }
    default: {
      if (stateful_.empty()) return;
      const Typed& target = pick(stateful_);
      if (target.type.dtype == DType::boolean) return;
      ValueId v = add(Op::Neg, {target.value}, {}, target.type);
      add(Op::Assign, {target.value, v}, {}, target.type);
      break;
    }
  }
}

Graph GraphGenerator::generate() {
  static const std::vector<std::string> graph_names = {"g", "mlp", "model.v2", "train step"};
  graph_ = Graph(pick(graph_names));
  pool_.clear();
  stateful_.clear();
  int inputs = uniform(1, 4);
  for (int i = 0; i < inputs; ++i) {
    Type type{random_dtype(), random_shape()};
    InputKind kind = static_cast<InputKind>(uniform(0, 2));
    ValueId v = graph_.add_input(random_name("x"), type, kind, random_location());
    pool_.push_back({v, type});
    if (kind != InputKind::data) stateful_.push_back({v, type});
  }
  int nodes = uniform(0, 25);
  for (int i = 0; i < nodes; ++i) add_random_node();
  int outputs = uniform(0, 3);
  std::vector<Type> declared;
  bool all_known = true;
  for (int i = 0; i < outputs; ++i) {
    const Typed& out = random_value();
    graph_.add_output(out.value);
    declared.push_back(out.type);
    all_known = all_known && graph_.value(out.value).type.has_value();
  }
  // Declared output types matter (and survive the text form) while some output type is
  // unknown; equal to the known types they are redundant and the parser drops them.
  if (!all_known && chance(0.5)) graph_.set_declared_output_types(std::move(declared));
  return std::move(graph_);
}

void expect_text_round_trip(const Graph& g, int seed) {
  std::string text = print_graph(g);
  StatusOr<Graph> parsed = parse_graph(text, "gen.wir");
  ASSERT_TRUE(parsed.ok()) << "seed " << seed << ": " << parsed.error().to_string() << "\n"
                           << text;
  std::string why;
  EXPECT_TRUE(structurally_equal(g, *parsed, &why)) << "seed " << seed << ": " << why << "\n"
                                                    << text;
  EXPECT_EQ(print_graph(*parsed), text) << "seed " << seed;

  // Without locations the parser supplies its own; the text still round-trips.
  std::string bare = print_graph(g, {.locations = false});
  StatusOr<Graph> parsed_bare = parse_graph(bare, "gen.wir");
  ASSERT_TRUE(parsed_bare.ok()) << "seed " << seed << ": " << parsed_bare.error().to_string();
  EXPECT_EQ(print_graph(*parsed_bare, {.locations = false}), bare) << "seed " << seed;
}

void expect_json_round_trip(const Graph& g, int seed) {
  std::string json = graph_to_json(g);
  StatusOr<Graph> back = graph_from_json(json, "gen.json");
  ASSERT_TRUE(back.ok()) << "seed " << seed << ": " << back.error().to_string() << "\n" << json;
  std::string why;
  EXPECT_TRUE(structurally_equal(g, *back, &why)) << "seed " << seed << ": " << why;
  EXPECT_EQ(graph_to_json(*back), json) << "seed " << seed;
  EXPECT_EQ(print_graph(*back), print_graph(g)) << "seed " << seed;
  for (size_t i = 0; i < g.inputs().size(); ++i) {
    EXPECT_EQ(back->inputs()[i].loc, g.inputs()[i].loc) << "seed " << seed;
  }
}

TEST(RoundTripPropertyTest, RandomGraphs) {
  constexpr int kGraphs = 400;
  size_t total_nodes = 0;
  for (int seed = 0; seed < kGraphs; ++seed) {
    Graph g = GraphGenerator(static_cast<uint32_t>(seed)).generate();
    total_nodes += g.nodes().size();
    expect_text_round_trip(g, seed);
    expect_json_round_trip(g, seed);
    if (::testing::Test::HasFailure()) break;  // One failing seed is enough to debug.
  }
  EXPECT_GT(total_nodes, 3000u);
}

// NaN is not equal to itself, so structurally_equal cannot compare it; the printed
// forms can.
TEST(RoundTripPropertyTest, NanAttributes) {
  Graph g("nan");
  ValueId x = g.add_input("x", {DType::f64, {3}});
  g.add_output(g.add_node(Op::Pad, {x},
                          {{"low", IntList{0}}, {"high", IntList{2}},
                           {"value", std::numeric_limits<double>::quiet_NaN()}},
                          {"m.cc", 1, 1, ""}, Type{DType::f64, {5}}));
  std::string text = print_graph(g);
  EXPECT_NE(text.find("value=nan"), std::string::npos);
  StatusOr<Graph> parsed = parse_graph(text, "nan.wir");
  ASSERT_TRUE(parsed.ok()) << parsed.error().to_string();
  EXPECT_EQ(print_graph(*parsed), text);
  StatusOr<Graph> back = graph_from_json(graph_to_json(g), "nan.json");
  ASSERT_TRUE(back.ok()) << back.error().to_string();
  EXPECT_EQ(print_graph(*back), text);
}

}  // namespace
}  // namespace weft
