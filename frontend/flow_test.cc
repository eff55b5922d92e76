#include "frontend/flow.h"

#include <gtest/gtest.h>

#include "frontend/modules.h"
#include "ir/text.h"

namespace weft {
namespace {

const std::string kFile = "frontend/flow_test.cc";

std::string at(int line) { return kFile + ":" + std::to_string(line); }

std::vector<std::string> param_names(const Model& m) {
  std::vector<std::string> names;
  for (const ParamInfo& p : m.parameters()) names.push_back(p.name);
  return names;
}

TEST(Flow, BuildsTheReadmeModel) {
  auto model = FlowBuilder::from(Linear(8, 16))
                   .through(GELU())
                   .tag("hidden")
                   .through(LayerNorm(16))
                   .also(Linear(16, 16))
                   .through(Linear(16, 4))
                   .build({{"x", f32({2, 8})}});
  ASSERT_TRUE(model.ok()) << model.error().to_string();
  EXPECT_EQ(param_names(*model),
            (std::vector<std::string>{"0.weight", "0.bias", "2.weight", "2.bias", "3.weight",
                                      "3.bias", "4.weight", "4.bias"}));
  EXPECT_EQ(model->parameter_count(), 8 * 16 + 16 + 16 + 16 + 16 * 16 + 16 + 16 * 4 + 4);
  const Graph& g = model->graph();
  EXPECT_EQ(g.type(g.outputs()[0]).to_string(), "f32[2,4]");
  // Every node points at the builder call that placed its module.
  for (const Node& n : g.nodes()) {
    EXPECT_EQ(n.loc.file, kFile);
    EXPECT_GT(n.loc.line, 0);
    EXPECT_FALSE(n.loc.path.empty()) << op_name(n.op);
  }
}

TEST(Flow, PrintsIrWithBuilderPaths) {
  int line = __LINE__ + 1;
  auto model = FlowBuilder::from(Linear(3, 2)).through(ReLU()).build({{"x", f32({4, 3})}});
  ASSERT_TRUE(model.ok()) << model.error().to_string();
  std::string text = print_graph(model->graph());
  EXPECT_NE(text.find("%0 = transpose(%0.weight) {perm=[1, 0]} : f32[3,2] loc(\"" + kFile +
                      "\":" + std::to_string(line)),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("\"Linear(3->2)\")"), std::string::npos) << text;
  EXPECT_NE(text.find("\"ReLU\")"), std::string::npos) << text;
}

TEST(Flow, SharedModuleSharesParameters) {
  auto shared = Linear(4, 4);
  auto model = FlowBuilder::from(shared).through(Tanh()).through(shared).build({{"x", f32({1, 4})}});
  ASSERT_TRUE(model.ok()) << model.error().to_string();
  EXPECT_EQ(param_names(*model), (std::vector<std::string>{"0.weight", "0.bias"}));
}

TEST(Flow, SplitMergeForkUsesAndLabels) {
  auto encoder = FlowBuilder::from(Linear(4, 8)).through(ReLU()).label("encoder").build();
  ASSERT_TRUE(encoder.ok()) << encoder.error().to_string();
  auto model = FlowBuilder::from(*encoder)
                   .fork(Linear(8, 8))
                   .tag("side")
                   .split({Linear(8, 8), Linear(8, 8)})
                   .tag_group("heads")
                   .merge(Merge::add())
                   .split({Identity(), Identity()})
                   .merge(Merge::concat(1))
                   .through(Linear(16, 8))
                   .build({{"x", f32({2, 4})}});
  ASSERT_TRUE(model.ok()) << model.error().to_string();
  EXPECT_EQ(param_names(*model),
            (std::vector<std::string>{"encoder.0.weight", "encoder.0.bias", "1.weight", "1.bias",
                                      "2.0.weight", "2.0.bias", "2.1.weight", "2.1.bias",
                                      "4.weight", "4.bias"}));
  EXPECT_EQ(model->label_paths(), std::vector<std::string>{"encoder"});
  auto in_encoder = model->parameters_at("encoder");
  ASSERT_TRUE(in_encoder.ok());
  EXPECT_EQ(in_encoder->size(), 2u);
  EXPECT_EQ(model->parameters_at("decoder").error().to_string(),
            "error: no subgraph labelled 'decoder'; label paths in this model: encoder");
}

TEST(Flow, StructuralErrorsNameTheCall) {
  int line = __LINE__ + 1;
  auto never_merged = FlowBuilder::from(Linear(2, 2)).split({ReLU(), Tanh()}).build();
  EXPECT_EQ(never_merged.error().to_string(),
            at(line) + ":60: error: split(...) is never merged: merge(...) must follow it "
                       "(after an optional tag_group)");

  line = __LINE__ + 1;
  auto unknown = FlowBuilder::from(Linear(2, 2)).through(Linear(2, 2)).uses({"ghost"}).build();
  EXPECT_EQ(unknown.error().to_string(),
            at(line) + ":76: error: uses of unknown tag 'ghost'; tags defined before this call: "
                       "(none)");

  line = __LINE__ + 1;
  auto dup = FlowBuilder::from(Linear(2, 2)).tag("a").through(ReLU()).tag("a").build();
  EXPECT_EQ(dup.error().to_string(),
            at(line) + ":74: error: duplicate tag 'a': already defined at " + at(line));

  line = __LINE__ + 1;
  auto dotted = FlowBuilder::from(Linear(2, 2)).label("enc.oder").build();
  EXPECT_EQ(dotted.error().to_string(),
            at(line) + ":54: error: label 'enc.oder' contains a dot; dots separate the levels "
                       "of a label path (encoder.scan), so a label cannot contain one");
}

// The order of the steps: what may follow what, and the names they define.
TEST(Flow, StepOrderErrorsNameTheCall) {
  int line = __LINE__ + 1;
  auto stray_group = FlowBuilder::from(Linear(2, 2)).tag_group("g").build();
  EXPECT_EQ(stray_group.error().to_string(),
            at(line) + ":63: error: tag_group(\"g\") must directly follow split(...)");

  line = __LINE__ + 1;
  auto stray_merge = FlowBuilder::from(Linear(2, 2)).merge(Merge::add()).build();
  EXPECT_EQ(stray_merge.error().to_string(),
            at(line) + ":59: error: merge(...) without a split(...) before it");

  line = __LINE__ + 1;
  auto unnamed_tag = FlowBuilder::from(Linear(2, 2)).tag("").build();
  EXPECT_EQ(unnamed_tag.error().to_string(), at(line) + ":57: error: tag name must not be empty");

  line = __LINE__ + 1;
  auto unnamed_input = FlowBuilder::from(Linear(2, 2)).input({""}).build();
  EXPECT_EQ(unnamed_input.error().to_string(), at(line) + ":61: error: input name must not be empty");

  line = __LINE__ + 1;
  auto stray_uses = FlowBuilder::from(Linear(2, 2)).tag("a").uses({"a"}).build();
  EXPECT_EQ(stray_uses.error().to_string(),
            at(line) + ":66: error: uses(...) must follow a module: from, through, also, "
                       "also_with or fork");

  line = __LINE__ + 1;
  auto unnamed_label = FlowBuilder::from(Linear(2, 2)).label("").build();
  EXPECT_EQ(unnamed_label.error().to_string(), at(line) + ":61: error: label name must not be empty");

  line = __LINE__ + 1;
  auto twice = FlowBuilder::from(Linear(2, 2)).label("a").label("b").build();
  EXPECT_EQ(twice.error().to_string(),
            at(line) + ":64: error: flow labelled twice: 'a' at " + at(line) + ", then 'b'");
}

TEST(Flow, LabelErrors) {
  auto a = FlowBuilder::from(Linear(2, 2)).label("block").build();
  auto b = FlowBuilder::from(Linear(2, 2)).label("block").build();
  ASSERT_TRUE(a.ok() && b.ok());
  int line = __LINE__ + 1;
  auto twice = FlowBuilder::from(*a).through(*b).build();
  EXPECT_EQ(twice.error().to_string(),
            at(line) + ":45: error: duplicate label 'block' at one level: already used at " +
                at(line));
  // The same labelled instance twice is sharing, not a duplicate.
  EXPECT_TRUE(FlowBuilder::from(*a).through(*a).build().ok());

  line = __LINE__ + 1;
  auto collides = FlowBuilder::from(Linear(2, 2)).tag("block").through(*a).build();
  EXPECT_EQ(collides.error().to_string(),
            at(line) + ":71: error: label 'block' collides with the tag of that name defined at " +
                at(line) + "; tags and labels share one namespace");
}

/// Forwards to a module set after construction: the only way to make a flow that
/// contains itself.
class Indirect : public UnaryModule {
 public:
  std::string describe() const override { return "Indirect"; }
  ValueId forward1(Emitter& e, ValueId x) override {
    return e.emit(target, {x}, target->describe(), "0", std::source_location::current());
  }
  ModulePtr target;
};

TEST(Flow, CycleIsAnError) {
  auto indirect = std::make_shared<Indirect>();
  int line = __LINE__ + 1;
  auto flow = FlowBuilder::from(indirect).label("loop").build();
  ASSERT_TRUE(flow.ok());
  indirect->target = *flow;
  auto model = (*flow)->build({{"x", f32({1, 2})}});
  ASSERT_FALSE(model.ok());
  EXPECT_EQ(model.error().message,
            "cycle: Indirect contains itself (builder path loop > Indirect > loop > Indirect)");
  (void)line;
  indirect->target = nullptr;  // the test's own shared_ptr cycle: LeakSanitizer reported it
}

TEST(Flow, AForwardReferenceReadsTheTagsValueFromThePreviousStep) {
  // A GRU cell whose hidden state is carried across steps: uses("h") before tag("h").
  auto net = FlowBuilder::from(Linear(3, 2)).through(GRUCell(2, 2)).uses({"h"}).tag("h").through(Linear(2, 1)).build();
  ASSERT_TRUE(net.ok()) << net.error().to_string();
  auto model = (*net)->build({{"x", f32({4, 3})}}, {.training = true});
  ASSERT_TRUE(model.ok()) << model.error().to_string();
  const ParamInfo* state = nullptr;
  for (const ParamInfo& p : model->parameters()) {
    if (p.name == "h.state") state = &p;
    EXPECT_EQ(p.carried, p.name == "h.state") << p.name;
  }
  ASSERT_NE(state, nullptr);
  EXPECT_EQ(state->kind, InputKind::state);
  EXPECT_EQ(model->graph().type(state->value), f32({4, 2}));
  int assigns = 0;
  for (const Node& n : model->graph().nodes()) assigns += n.op == Op::Assign && n.operands[0] == state->value;
  EXPECT_EQ(assigns, 1);

  // Evaluation reads zeros and keeps no state, at any batch size.
  auto eval = (*net)->build({{"x", f32({7, 3})}}, {.training = false});
  ASSERT_TRUE(eval.ok()) << eval.error().to_string();
  for (const ParamInfo& p : eval->parameters()) EXPECT_NE(p.name, "h.state");
}

TEST(Flow, AFlowWithAForwardReferenceCanBeUsedOnce) {
  auto cell = FlowBuilder::from(Identity()).through(GRUCell(2, 2)).uses({"h"}).tag("h").build();
  ASSERT_TRUE(cell.ok());
  auto twice = FlowBuilder::from(Linear(3, 2)).through(*cell).through(*cell).build({{"x", f32({4, 3})}});
  ASSERT_FALSE(twice.ok());
  EXPECT_EQ(twice.error().message,
            "tag 'h' carries its value to the next step in '1.h.state', which another use of this flow already "
            "assigns; a flow with a forward reference can be used once (build one flow per use)");
  // Two flows, one per use, carry two states.
  auto other = FlowBuilder::from(Identity()).through(GRUCell(2, 2)).uses({"h"}).tag("h").build();
  auto two = FlowBuilder::from(Linear(3, 2)).through(*cell).through(*other).build({{"x", f32({4, 3})}});
  ASSERT_TRUE(two.ok()) << two.error().to_string();
  int states = 0;
  for (const ParamInfo& p : two->parameters()) states += p.carried;
  EXPECT_EQ(states, 2);
}

TEST(Flow, ForwardReferenceErrors) {
  int line = __LINE__ + 2;
  auto wider = FlowBuilder::from(Linear(3, 2))
                   .through(GRUCell(2, 2)).uses({"h"})
                   .through(Linear(2, 5))
                   .tag("h")
                   .build({{"x", f32({4, 3})}});
  ASSERT_FALSE(wider.ok());
  EXPECT_EQ(wider.error().message,
            "tag 'h' is f32[4,5], but uses(\"h\") at " + at(line) +
                " reads it from the previous step as f32[4,2], the stream's type there; a tag read before "
                "it is defined must keep that type");
  EXPECT_NE(wider.error().to_string().find(at(line + 2)), std::string::npos) << wider.error().to_string();

  line = __LINE__ + 2;
  auto group = FlowBuilder::from(Linear(2, 2))
                   .through(Linear(2, 2)).uses({"g"})
                   .split({Identity(), Identity()}).tag_group("g").merge(Merge::add())
                   .build();
  EXPECT_EQ(group.error().to_string(),
            at(line) + ":47: error: uses(\"g\") refers to tag_group \"g\", defined later, at " + at(line + 1) +
                "; a forward reference reads one tag, not a group");

  line = __LINE__ + 1;
  auto input = FlowBuilder::from(Linear(2, 2)).through(Linear(2, 2)).uses({"extra"}).input({"extra"}).build();
  EXPECT_EQ(input.error().to_string(),
            at(line) + ":74: error: uses(\"extra\") refers to input \"extra\", declared later, at " + at(line) +
                "; declare inputs before they are used");
}

TEST(Flow, UsesPassesTaggedValuesAndInputs) {
  auto model = FlowBuilder::from(Linear(2, 3))
                   .input({"bias"})
                   .tag("h")
                   .through(Tanh())
                   .split({Identity(), Identity()})
                   .merge(Merge::mean())
                   .build({{"x", f32({4, 2})}, {"bias", f32({3})}});
  ASSERT_TRUE(model.ok()) << model.error().to_string();
  EXPECT_EQ(model->graph().inputs().size(), 4u);  // x, bias, 0.weight, 0.bias
  auto wrong = FlowBuilder::from(Linear(2, 3)).input({"bias"}).build({{"x", f32({4, 2})}});
  EXPECT_EQ(wrong.error().to_string(),
            "error: build(...) got 1 input types but the flow has 2 inputs: the stream input, "
            "'bias'");
}

TEST(Flow, ForkNeedsATag) {
  int line = __LINE__ + 1;
  auto flow = FlowBuilder::from(Linear(2, 2)).fork(ReLU()).through(Tanh()).build();
  EXPECT_EQ(flow.error().to_string(),
            at(line) + ":51: error: fork(ReLU)'s output is never named: tag(...) must follow "
                       "fork(...)");
}

TEST(Flow, ASplitWithoutBranchesIsAnError) {
  int line = __LINE__ + 1;
  auto empty = FlowBuilder::from(Linear(2, 2)).split({}).merge(Merge::add()).build({{"x", f32({1, 2})}});
  EXPECT_EQ(empty.error().to_string(),
            at(line) + ":53: error: split({}) has no branches: give it at least one module");
}

// gate, route, map and loop_body wrap the modules they are given: a null one among them is
// refused at the user's call, as one given to through(), not a crash when emitted.
TEST(Flow, ANullModuleInsideGateRouteMapOrLoopIsRefusedAtItsCall) {
  const ModulePtr none;
  const std::vector<InputSpec> x = {{"x", f32({2, 4})}};
  const std::string null_module = ": error: a null module was passed to the builder";
  int line = __LINE__ + 1;
  auto gate = FlowBuilder::from(Linear(4, 4)).gate(none, {Linear(4, 2)}).build(x);
  EXPECT_EQ(gate.error().to_string(), at(line) + ":51" + null_module);
  line = __LINE__ + 1;
  auto route = FlowBuilder::from(Linear(4, 4)).route(Linear(4, 2), {Linear(4, 2), none}).build(x);
  EXPECT_EQ(route.error().to_string(), at(line) + ":53" + null_module);
  line = __LINE__ + 1;
  auto slices = FlowBuilder::from(Linear(4, 4)).map(none).slices(2).build(x);
  EXPECT_EQ(slices.error().to_string(), at(line) + ":52" + null_module);
  line = __LINE__ + 1;
  auto each = FlowBuilder::from(Linear(4, 4)).map(none).each().build(x);
  EXPECT_EQ(each.error().to_string(), at(line) + ":50" + null_module);
  line = __LINE__ + 1;
  auto over = FlowBuilder::from(Linear(4, 4)).tag("t").map(none).over("t").build(x);
  EXPECT_EQ(over.error().to_string(), at(line) + ":59" + null_module);
  line = __LINE__ + 1;
  auto body = FlowBuilder::from(Linear(4, 4)).loop_body(none).for_n(2).build(x);
  EXPECT_EQ(body.error().to_string(), at(line) + ":56" + null_module);
  line = __LINE__ + 1;
  auto cond = FlowBuilder::from(Linear(4, 4)).loop_body(Linear(4, 4)).until_cond(none, 3).build(x);
  EXPECT_EQ(cond.error().to_string(), at(line) + ":56" + null_module);
}

// It said "map(Linear(4->2)).over(...) maps over one tagged value; it was given 3 inputs".
TEST(Flow, MapOverATagGroupIsAnError) {
  int line = __LINE__ + 2;
  auto over = FlowBuilder::from(Linear(4, 4))
                  .split({Identity(), Identity()}).tag_group("g").merge(Merge::add())
                  .map(Linear(4, 2)).over("g")
                  .build({{"x", f32({2, 4})}});
  EXPECT_EQ(over.error().to_string(),
            at(line + 1) + ":23: error: map(...).over(\"g\") names a tag_group; map over one of its tags: g.0, g.1");
}

TEST(Flow, InputTypesThatCannotExistAreRefused) {
  auto negative = FlowBuilder::from(Linear(4, 4)).build({{"x", f32({-2, 4})}});
  EXPECT_EQ(negative.error().to_string(),
            "error: build(...) input 'x' is f32[-2,4]: a dimension is negative; check its dims");
  auto huge = FlowBuilder::from(Linear(4, 4)).build({{"x", f32({int64_t{1} << 62, 4})}});
  EXPECT_EQ(huge.error().to_string(),
            "error: build(...) input 'x' is f32[4611686018427387904,4]: its size in bytes does not fit "
            "in 64 bits; check its dims");
}

// A module's sizes and its input's dtype make its parameters: a negative size, or an integer
// input, is named at the module's call instead of giving a graph with f32[-3,4] or i64 weights.
TEST(Flow, ParametersThatCannotBeTrainedAreRefused) {
  int line = __LINE__ + 1;
  auto negative = FlowBuilder::from(Linear(4, -3)).build({{"x", f32({2, 4})}});
  EXPECT_EQ(negative.error().to_string(),
            at(line) + ":36: error: parameter 'weight' would be f32[-3,4]: a dimension is negative; check "
                       "the module's sizes [in Linear(4->-3)]");
  line = __LINE__ + 1;
  auto integer = FlowBuilder::from(Linear(4, 4)).build({{"x", i64({2, 4})}});
  EXPECT_EQ(integer.error().to_string(),
            at(line) + ":35: error: parameter 'weight' would be i64[4,4], the input's dtype, but parameters "
                       "are trained and must be floating point; give this module a float input (integer "
                       "indices go to Embedding) [in Linear(4->4)]");
  EXPECT_TRUE(FlowBuilder::from(Linear(4, 0)).build({{"x", f32({2, 4})}}).ok());  // PyTorch allows it too
  EXPECT_TRUE(FlowBuilder::from(Linear(4, 4)).build({{"x", f64({2, 4})}}).ok());
}

TEST(Flow, ShapeErrorsNameFileLinePathOpAndShapes) {
  int line = __LINE__ + 2;
  auto model = FlowBuilder::from(Linear(4, 8))
                   .through(Linear(6, 2))
                   .build({{"x", f32({2, 4})}});
  EXPECT_EQ(model.error().to_string(),
            at(line) + ":28: error: Linear(6->2) expects inputs whose last dim is 6, got "
                       "f32[2,8] [in Linear(6->2)]");

  // An op's own shape rule, deep inside a nested labelled flow and a split.
  auto head = FlowBuilder::from(Linear(8, 4)).label("head").build();
  ASSERT_TRUE(head.ok());
  line = __LINE__ + 2;
  auto merged = FlowBuilder::from(Linear(4, 8))
                    .split({*head, Identity()})
                    .merge(Merge::add())
                    .build({{"x", f32({2, 4})}});
  EXPECT_EQ(merged.error().to_string(),
            at(line + 1) + ":27: error: add: cannot broadcast lhs f32[2,4] with rhs f32[2,8]: "
                           "dim 1 of lhs is 4 but dim 1 of rhs is 8 (dims must match or be 1) "
                           "[in merge(add)]");
}

}  // namespace
}  // namespace weft
