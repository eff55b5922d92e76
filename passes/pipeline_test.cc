#include "passes/pipeline.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "ir/dot.h"
#include "ir/json.h"
#include "ir/text.h"

namespace weft {
namespace {
namespace pipeline_test {  // this file's names, apart in its package's unity test

constexpr char kModel[] = R"(graph @f(%x: f32[4,6], %w: f32[6,5] {param}) {
  %h = matmul(%x, %w)
  %dead = exp(%h)
  %a = relu(%h)
  %b = relu(%h)
  %y = add(%a, %b)
  return %y
}
)";

Graph parse(const char* text) {
  StatusOr<Graph> g = parse_graph(text, "test.wir");
  WEFT_CHECK(g.ok(), g.error().to_string());
  return std::move(g).value();
}

std::string print(const Graph& g) { return print_graph(g, PrintOptions{.locations = false}); }

/// A deliberately broken pass: drops the first node's operands.
class BreakOperands : public Pass {
 public:
  std::string_view name() const override { return "break-operands"; }
  StatusOr<bool> run(Graph& g) override {
    g.node(0).operands.clear();
    return true;
  }
};

/// Another broken pass: changes the op of a typed node, so its type no longer follows.
class BreakTypes : public Pass {
 public:
  std::string_view name() const override { return "break-types"; }
  StatusOr<bool> run(Graph& g) override {
    g.node(0).op = Op::Add;
    g.node(0).operands = {g.inputs()[0].value, g.inputs()[0].value};
    return true;
  }
};

TEST(PipelineTest, DefaultPipelineInfersThenCleansUp) {
  Graph g = parse(kModel);
  Pipeline p = default_pipeline();
  EXPECT_EQ(p.pass_names(), (std::vector<std::string_view>{"infer-types", "canonicalize",
                                                     "fold-constants", "dce", "cse"}));
  StatusOr<bool> changed = p.run(g);
  ASSERT_TRUE(changed.ok()) << changed.error().to_string();
  EXPECT_TRUE(*changed);
  EXPECT_EQ(print(g), R"(graph @f(%x: f32[4,6], %w: f32[6,5] {param}) -> (f32[4,5]) {
  %h = matmul(%x, %w) : f32[4,5]
  %a = relu(%h) : f32[4,5]
  %y = add(%a, %a) : f32[4,5]
  return %y
}
)");
  // A second run finds nothing left to do.
  StatusOr<bool> again = p.run(g);
  ASSERT_TRUE(again.ok());
  EXPECT_FALSE(*again);
}

TEST(PipelineTest, VerifiesBetweenPassesUnderTest) {
  EXPECT_TRUE(verify_between_passes_by_default());  // WEFT_TEST is set by .bazelrc

  Graph g = parse(kModel);
  Pipeline p;
  p.add(std::make_unique<BreakOperands>());
  StatusOr<bool> changed = p.run(g);
  ASSERT_FALSE(changed.ok());
  EXPECT_EQ(changed.error().to_string(),
            "test.wir:2:3: error: invalid IR after pass 'break-operands' (a bug in that pass): "
            "'matmul' takes 2 operands, but 0 were given");

  Graph typed = parse(kModel);
  Pipeline q = default_pipeline();
  q.add(std::make_unique<BreakTypes>());
  changed = q.run(typed);
  ASSERT_FALSE(changed.ok());
  EXPECT_EQ(changed.error().to_string(),
            "test.wir:2:3: error: invalid IR after pass 'break-types' (a bug in that pass): "
            "%h has type f32[4,5] but add's shape rule gives f32[4,6]");

  // With verification off, the broken graph gets through.
  Graph unchecked = parse(kModel);
  PipelineOptions no_verify;
  no_verify.verify_each = false;
  Pipeline r(no_verify);
  r.add(std::make_unique<BreakOperands>());
  EXPECT_TRUE(r.run(unchecked).ok());
}

TEST(PipelineTest, InputIsVerifiedFirst) {
  Graph g("f");
  ValueId x = g.add_input("x", {DType::f32, {4}});
  g.add_output(g.add_node(Op::Cast, {x}, {}, Location{"model.cc", 7, 5, ""}));
  StatusOr<bool> changed = default_pipeline().run(g);
  ASSERT_FALSE(changed.ok());
  EXPECT_EQ(changed.error().to_string(),
            "model.cc:7:5: error: 'cast' requires attribute 'dtype' (dtype)");
}

TEST(PipelineTest, PassErrorsPropagate) {
  Graph g = parse(R"(graph @f(%x: f32[4,6]) {
  %y = matmul(%x, %x)
  return %y
}
)");
  StatusOr<bool> changed = default_pipeline().run(g);
  ASSERT_FALSE(changed.ok());
  EXPECT_EQ(changed.error().to_string(),
            "test.wir:2:3: error: matmul: contraction dims differ: lhs f32[4,6] has 6 columns "
            "but rhs f32[4,6] has 4 rows");
}

TEST(PipelineTest, StopsAfterTheNamedPass) {
  Graph g = parse(kModel);
  StatusOr<bool> changed = default_pipeline().run_until(g, "infer-types");
  ASSERT_TRUE(changed.ok());
  EXPECT_EQ(g.nodes().size(), 5u);  // typed, but neither dce nor cse ran
  EXPECT_TRUE(g.value(*g.find_value("dead")).type.has_value());

  Graph h = parse(kModel);
  PipelineOptions after_dce;
  after_dce.after = "dce";
  ASSERT_TRUE(default_pipeline(after_dce).run(h).ok());
  EXPECT_EQ(h.nodes().size(), 4u);  // %dead is gone, %b not merged yet
}

TEST(PipelineTest, UnknownPassNameListsTheKnownOnes) {
  Graph g = parse(kModel);
  StatusOr<bool> changed = default_pipeline().run_until(g, "cs");
  ASSERT_FALSE(changed.ok());
  EXPECT_EQ(changed.error().to_string(),
            "error: unknown pass 'cs'; known passes: infer-types, canonicalize, "
            "fold-constants, dce, cse");
  EXPECT_EQ(g.nodes().size(), 5u);  // nothing ran
  EXPECT_FALSE(g.value(*g.find_value("h")).type.has_value());
}

std::string read_file(const std::filesystem::path& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

TEST(PipelineTest, DumpsOneFilePerPass) {
  const char* tmp = std::getenv("TEST_TMPDIR");
  std::filesystem::path dir = std::filesystem::path(tmp ? tmp : "/tmp") / "weft_dumps";
  std::filesystem::remove_all(dir);
  Graph g = parse(kModel);
  PipelineOptions options;
  options.dump_dir = dir.string();
  options.print = print;
  Pipeline p = default_pipeline(options);
  ASSERT_TRUE(p.run(g).ok());

  std::vector<std::string> files;
  for (const auto& entry : std::filesystem::directory_iterator(dir)) {
    files.push_back(entry.path().filename().string());
  }
  std::sort(files.begin(), files.end());
  std::vector<std::string> expected;
  for (const char* pass : {"01-infer-types", "02-canonicalize", "03-fold-constants", "04-dce", "05-cse"}) {
    for (const char* extension : {".dot", ".json", ".wir"}) expected.push_back(pass + std::string(extension));
  }
  EXPECT_EQ(files, expected);
  EXPECT_EQ(read_file(dir / "05-cse.wir"), print(g));
  // Golden: each dump is the graph right after its pass (dce dropped %dead, cse merged
  // the two relus).
  EXPECT_EQ(read_file(dir / "04-dce.wir"), R"(graph @f(%x: f32[4,6], %w: f32[6,5] {param}) -> (f32[4,5]) {
  %h = matmul(%x, %w) : f32[4,5]
  %a = relu(%h) : f32[4,5]
  %b = relu(%h) : f32[4,5]
  %y = add(%a, %b) : f32[4,5]
  return %y
}
)");
  EXPECT_EQ(read_file(dir / "05-cse.wir"), R"(graph @f(%x: f32[4,6], %w: f32[6,5] {param}) -> (f32[4,5]) {
  %h = matmul(%x, %w) : f32[4,5]
  %a = relu(%h) : f32[4,5]
  %y = add(%a, %a) : f32[4,5]
  return %y
}
)");
  EXPECT_EQ(read_file(dir / "05-cse.json"), graph_to_json(g));
  EXPECT_EQ(read_file(dir / "05-cse.dot"), graph_to_dot(g));
  EXPECT_NE(read_file(dir / "01-infer-types.wir").find("%dead = exp(%h) : f32[4,5]"),
            std::string::npos);

  // The default printer keeps locations, and the dump parses back.
  std::filesystem::remove_all(dir);
  Graph h = parse(kModel);
  options.print = nullptr;
  options.after = "dce";
  ASSERT_TRUE(default_pipeline(options).run(h).ok());
  EXPECT_FALSE(std::filesystem::exists(dir / "05-cse.wir"));
  std::string dce = read_file(dir / "04-dce.wir");
  EXPECT_NE(dce.find("loc(\"test.wir\":2:3)"), std::string::npos) << dce;
  EXPECT_TRUE(parse_graph(dce, "04-dce.wir").ok());
}

}  // namespace pipeline_test
}  // namespace
}  // namespace weft
