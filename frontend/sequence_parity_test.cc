// MultiheadAttention, GRUCell and LSTMCell against PyTorch 1.13: each case builds a flow,
// loads the weights and inputs PyTorch used (frontend/testdata/make_sequence_fixtures.py)
// and runs it with the reference interpreter; outputs must agree to 1e-5. Then the user
// errors of these modules, with their messages pinned.
#include <gtest/gtest.h>

#include <cmath>
#include <functional>

#include "frontend/flow.h"
#include "frontend/modules.h"
#include "frontend/testing/run_model.h"
#include "ir/text.h"
#include "formats/npy.h"

namespace weft {
namespace {
namespace sequence_parity_test {  // this file's names, apart in its package's unity test

const std::string kDir = "frontend/testdata/sequence/";
const std::string kFile = "frontend/sequence_parity_test.cc";
constexpr double kTol = 1e-5;

Tensor load(const std::string& case_name, const std::string& file) {
  auto t = read_npy(kDir + case_name + "/" + file + ".npy");
  EXPECT_TRUE(t.ok()) << t.error().to_string();
  return t.ok() ? *t : Tensor();
}

/// Builds `builder` for the case's inputs (`input` plus `extra`, in order), runs it with
/// the case's parameters and compares with `output`.
void expect_matches_torch(const std::string& case_name, const FlowBuilder& builder,
                          const std::vector<std::string>& extra = {}) {
  SCOPED_TRACE(case_name);
  std::vector<Tensor> data = {load(case_name, "input")};
  std::vector<InputSpec> specs = {{"x", data[0].type()}};
  for (const std::string& name : extra) {
    data.push_back(load(case_name, name));
    specs.push_back({name, data.back().type()});
  }
  auto model = builder.build(specs, {.training = false});
  ASSERT_TRUE(model.ok()) << model.error().to_string();
  auto params = testing::load_params(*model, kDir + case_name);
  ASSERT_TRUE(params.ok()) << params.error().to_string();
  auto run = testing::run_model(*model, data, *params);
  ASSERT_TRUE(run.ok()) << run.error().to_string();
  Tensor want = load(case_name, "output");
  std::string why;
  EXPECT_TRUE(all_close(run->outputs[0], want, kTol, &why)) << why;
}

/// Returns its second input: moves the stream to a tagged value (for unrolling).
class TakeUse : public Module {
 public:
  std::string describe() const override { return "TakeUse"; }
  ValueId forward(Emitter&, const std::vector<ValueId>& inputs) override { return inputs[1]; }
};

TEST(AttentionParity, Plain) {
  expect_matches_torch("mha_plain", FlowBuilder::from(MultiheadAttention(8, 2)));
}

TEST(AttentionParity, OneHead) {
  expect_matches_torch("mha_one_head", FlowBuilder::from(MultiheadAttention(6, 1)));
}

TEST(AttentionParity, FourHeads) {
  expect_matches_torch("mha_four_heads", FlowBuilder::from(MultiheadAttention(16, 4)));
}

TEST(AttentionParity, Causal) {
  expect_matches_torch("mha_causal", FlowBuilder::from(MultiheadAttention(8, 2, {.causal = true})));
}

TEST(AttentionParity, KeyPaddingMask) {
  auto builder = FlowBuilder::from(Identity())
                     .input({"mask"})
                     .through(MultiheadAttention(8, 2, {.key_padding_mask = true}))
                     .uses({"mask"});
  expect_matches_torch("mha_padding", builder, {"mask"});
}

TEST(AttentionParity, CausalAndKeyPaddingMask) {
  auto builder = FlowBuilder::from(Identity())
                     .input({"mask"})
                     .through(MultiheadAttention(8, 4, {.causal = true, .key_padding_mask = true}))
                     .uses({"mask"});
  expect_matches_torch("mha_causal_padding", builder, {"mask"});
}

TEST(AttentionParity, SeparateProjections) {
  expect_matches_torch("mha_separate",
                       FlowBuilder::from(MultiheadAttention(8, 2, {.packed_qkv = false})));
}

TEST(AttentionParity, NoBias) {
  expect_matches_torch("mha_no_bias", FlowBuilder::from(MultiheadAttention(8, 2, {.bias = false})));
}

TEST(Attention, UsesPyTorchParameterNamesAndInit) {
  auto model = FlowBuilder::from(MultiheadAttention(8, 2)).build({{"x", f32({2, 5, 8})}});
  ASSERT_TRUE(model.ok()) << model.error().to_string();
  std::vector<std::string> names;
  for (const ParamInfo& p : model->parameters()) names.push_back(p.name);
  EXPECT_EQ(names, (std::vector<std::string>{"0.in_proj_weight", "0.in_proj_bias",
                                             "0.out_proj.weight", "0.out_proj.bias"}));
  EXPECT_EQ(model->find_parameter("0.in_proj_weight")->init, Initializer::xavier_uniform());
  EXPECT_EQ(model->find_parameter("0.in_proj_bias")->init, Initializer::zeros());
  EXPECT_EQ(model->find_parameter("0.out_proj.bias")->init, Initializer::zeros());

  auto separate = FlowBuilder::from(MultiheadAttention(8, 2, {.packed_qkv = false}))
                      .build({{"x", f32({2, 5, 8})}});
  ASSERT_TRUE(separate.ok()) << separate.error().to_string();
  EXPECT_NE(separate->find_parameter("0.k_proj.weight"), nullptr);
  EXPECT_NE(separate->find_parameter("0.v_proj.bias"), nullptr);
}

TEST(Attention, DropoutOnlyInTraining) {
  auto builder = FlowBuilder::from(MultiheadAttention(8, 2, {.dropout = 0.5}));
  auto count = [](const Model& m, Op op) {
    int n = 0;
    for (const Node& node : m.graph().nodes()) n += node.op == op;
    return n;
  };
  auto train = builder.build({{"x", f32({2, 5, 8})}}, {.training = true});
  auto eval = builder.build({{"x", f32({2, 5, 8})}}, {.training = false});
  ASSERT_TRUE(train.ok() && eval.ok());
  EXPECT_EQ(count(*train, Op::RandomBernoulli), 1);
  EXPECT_EQ(count(*eval, Op::RandomBernoulli), 0);
  EXPECT_NE(train->find_parameter("rng"), nullptr);
  EXPECT_EQ(eval->find_parameter("rng"), nullptr);

  // In training, dropped weights are zero and kept ones scaled by 2: the output is not
  // the eval output but stays finite.
  auto params = testing::load_params(*train, kDir + "mha_plain", /*seed=*/7);
  ASSERT_TRUE(params.ok());
  // mha_plain's weights are named 0.*, as here.
  auto run = testing::run_model(*train, {load("mha_plain", "input")}, *params);
  ASSERT_TRUE(run.ok()) << run.error().to_string();
  Tensor want = load("mha_plain", "output");
  EXPECT_FALSE(all_close(run->outputs[0], want, kTol));
  for (double v : run->outputs[0].to_doubles()) EXPECT_TRUE(std::isfinite(v));
}

TEST(Attention, MaskedGraphRoundTripsThroughText) {
  // The masks are -inf constants: the .wir form must carry them.
  auto model = FlowBuilder::from(Identity())
                   .input({"mask"})
                   .through(MultiheadAttention(8, 2, {.causal = true, .key_padding_mask = true}))
                   .uses({"mask"})
                   .build({{"x", f32({2, 5, 8})}, {"mask", Type{DType::boolean, {2, 5}}}});
  ASSERT_TRUE(model.ok()) << model.error().to_string();
  std::string text = print_graph(model->graph());
  EXPECT_NE(text.find("value=-inf"), std::string::npos) << text;
  auto back = parse_graph(text, "mha.wir");
  ASSERT_TRUE(back.ok()) << back.error().to_string();
  std::string why;
  EXPECT_TRUE(structurally_equal(model->graph(), *back, &why)) << why;
}

TEST(RecurrentParity, GRUCell) {
  auto builder = FlowBuilder::from(Identity()).input({"h"}).through(GRUCell(3, 4)).uses({"h"});
  expect_matches_torch("gru_cell", builder, {"h"});
}

TEST(RecurrentParity, LSTMCellWithSeparateHAndC) {
  auto builder =
      FlowBuilder::from(Identity()).input({"h", "c"}).through(LSTMCell(3, 4)).uses({"h", "c"});
  expect_matches_torch("lstm_cell", builder, {"h", "c"});
}

TEST(RecurrentParity, LSTMCellUnrolledWithSharedParameters) {
  auto cell = LSTMCell(3, 4);
  auto take = std::make_shared<TakeUse>();
  auto builder = FlowBuilder::from(Identity())
                     .input({"x1", "x2", "s0"})
                     .through(cell)
                     .uses({"s0"})
                     .tag("s1")
                     .through(take)
                     .uses({"x1"})
                     .through(cell)
                     .uses({"s1"})
                     .tag("s2")
                     .through(take)
                     .uses({"x2"})
                     .through(cell)
                     .uses({"s2"});
  expect_matches_torch("lstm_unrolled", builder, {"x1", "x2", "s0"});
  auto model = builder.build(
      {{"x", f32({2, 3})}, {"x1", f32({2, 3})}, {"x2", f32({2, 3})}, {"s0", f32({2, 8})}});
  ASSERT_TRUE(model.ok()) << model.error().to_string();
  EXPECT_EQ(model->parameters().size(), 4u);  // one set, shared by the three steps
}

TEST(Recurrent, LSTMStateViews) {
  for (int part = 0; part < 2; ++part) {
    auto model =
        FlowBuilder::from(part == 0 ? LSTMHidden(2) : LSTMCellState(2)).build({{"s", f32({1, 4})}});
    ASSERT_TRUE(model.ok()) << model.error().to_string();
    auto run = testing::run_model(*model, {Tensor::from_vector<float>({1, 4}, {1, 2, 3, 4})}, {});
    ASSERT_TRUE(run.ok()) << run.error().to_string();
    Tensor want = part == 0 ? Tensor::from_vector<float>({1, 2}, {1, 2})
                            : Tensor::from_vector<float>({1, 2}, {3, 4});
    EXPECT_EQ(run->outputs[0], want);
  }
}

TEST(Recurrent, PyTorchParameterNamesAndInit) {
  auto model = FlowBuilder::from(Identity())
                   .input({"h"})
                   .through(GRUCell(3, 4))
                   .uses({"h"})
                   .build({{"x", f32({2, 3})}, {"h", f32({2, 4})}});
  ASSERT_TRUE(model.ok()) << model.error().to_string();
  std::vector<std::string> names;
  for (const ParamInfo& p : model->parameters()) {
    names.push_back(p.name);
    EXPECT_EQ(p.init, Initializer::uniform(-0.5, 0.5)) << p.name;  // 1/sqrt(4)
  }
  EXPECT_EQ(names,
            (std::vector<std::string>{"1.weight_ih", "1.weight_hh", "1.bias_ih", "1.bias_hh"}));
  EXPECT_EQ(model->graph().type(model->find_parameter("1.weight_ih")->value).to_string(),
            "f32[12,3]");
}

// ---- User errors, messages pinned.

std::string error_of(const FlowBuilder& builder, const std::vector<InputSpec>& inputs) {
  auto model = builder.build(inputs);
  if (model.ok()) return "(built)";
  return model.error().to_string();
}

std::string at(int line, int col) {
  return kFile + ":" + std::to_string(line) + ":" + std::to_string(col) + ": error: ";
}

TEST(AttentionErrors, EmbedDimNotDivisibleByHeads) {
  int line = __LINE__ + 1;
  auto b = FlowBuilder::from(MultiheadAttention(10, 3));
  EXPECT_EQ(error_of(b, {{"x", f32({2, 4, 10})}}),
            at(line, 29) +
                "MultiheadAttention(10, heads=3): embed_dim 10 is not divisible by "
                "num_heads 3; each head gets embed_dim / num_heads features"
                " [in MultiheadAttention(10, heads=3)]");
}

TEST(AttentionErrors, WrongInputShape) {
  int line = __LINE__ + 1;
  auto b = FlowBuilder::from(MultiheadAttention(8, 2));
  EXPECT_EQ(error_of(b, {{"x", f32({2, 8})}}),
            at(line, 29) +
                "MultiheadAttention(8, heads=2) expects a float input [batch, seq, "
                "8] (batch first), got f32[2,8] [in MultiheadAttention(8, heads=2)]");
}

TEST(AttentionErrors, MaskDtype) {
  int line = __LINE__ + 3;
  auto b = FlowBuilder::from(Identity())
               .input({"mask"})
               .through(MultiheadAttention(8, 2, {.key_padding_mask = true}))
               .uses({"mask"});
  EXPECT_EQ(error_of(b, {{"x", f32({2, 5, 8})}, {"mask", f32({2, 5})}}),
            at(line, 24) +
                "MultiheadAttention(8, heads=2): the key padding mask must be bool "
                "[batch, seq] = bool[2,5] (true marks padding), got f32[2,5]"
                " [in MultiheadAttention(8, heads=2)]");
}

TEST(AttentionErrors, MaskShape) {
  int line = __LINE__ + 3;
  auto b = FlowBuilder::from(Identity())
               .input({"mask"})
               .through(MultiheadAttention(8, 2, {.key_padding_mask = true}))
               .uses({"mask"});
  EXPECT_EQ(error_of(b, {{"x", f32({2, 5, 8})}, {"mask", Type{DType::boolean, {5, 2}}}}),
            at(line, 24) +
                "MultiheadAttention(8, heads=2): the key padding mask must be bool "
                "[batch, seq] = bool[2,5] (true marks padding), got bool[5,2]"
                " [in MultiheadAttention(8, heads=2)]");
}

TEST(AttentionErrors, MaskMissing) {
  int line = __LINE__ + 1;
  auto b = FlowBuilder::from(MultiheadAttention(8, 2, {.key_padding_mask = true}));
  EXPECT_EQ(error_of(b, {{"x", f32({2, 5, 8})}}),
            at(line, 29) +
                "MultiheadAttention(8, heads=2) takes two inputs (the stream "
                "[batch, seq, dim] and the key padding mask bool [batch, seq] from "
                "uses(...)), but 1 were given [in MultiheadAttention(8, heads=2)]");
}

TEST(AttentionErrors, MaskNotEnabled) {
  int line = __LINE__ + 3;
  auto b = FlowBuilder::from(Identity())
               .input({"mask"})
               .through(MultiheadAttention(8, 2))
               .uses({"mask"});
  EXPECT_EQ(error_of(b, {{"x", f32({2, 5, 8})}, {"mask", Type{DType::boolean, {2, 5}}}}),
            at(line, 24) +
                "MultiheadAttention(8, heads=2) takes one input (the stream "
                "[batch, seq, dim]); set AttentionOptions::key_padding_mask to pass "
                "a mask, but 2 were given [in MultiheadAttention(8, heads=2)]");
}

TEST(RecurrentErrors, GRUCellWithoutHiddenState) {
  int line = __LINE__ + 1;
  auto b = FlowBuilder::from(GRUCell(3, 4));
  EXPECT_EQ(error_of(b, {{"x", f32({2, 3})}}),
            at(line, 29) +
                "GRUCell(3->4) takes two inputs (the stream x [batch, 3] and the "
                "hidden state h [batch, 4] from uses(...)), but 1 were given"
                " [in GRUCell(3->4)]");
}

TEST(RecurrentErrors, GRUCellHiddenShape) {
  int line = __LINE__ + 1;
  auto b = FlowBuilder::from(Identity()).input({"h"}).through(GRUCell(3, 4)).uses({"h"});
  EXPECT_EQ(error_of(b, {{"x", f32({2, 3})}, {"h", f32({2, 5})}}),
            at(line, 62) +
                "GRUCell(3->4): the hidden state h must be f32[2,4], got f32[2,5]"
                " [in GRUCell(3->4)]");
}

TEST(RecurrentErrors, LSTMCellInputs) {
  int line = __LINE__ + 1;
  auto b = FlowBuilder::from(LSTMCell(3, 4));
  EXPECT_EQ(error_of(b, {{"x", f32({2, 3})}}),
            at(line, 29) +
                "LSTMCell(3->4) takes the stream x [batch, 3] and, from uses(...), "
                "either the packed state concat([h, c], -1) [batch, 8] or h and c "
                "[batch, 4] each; got 1 inputs [in LSTMCell(3->4)]");
}

TEST(RecurrentErrors, LSTMCellPackedStateShape) {
  int line = __LINE__ + 1;
  auto b = FlowBuilder::from(Identity()).input({"s"}).through(LSTMCell(3, 4)).uses({"s"});
  EXPECT_EQ(error_of(b, {{"x", f32({2, 3})}, {"s", f32({2, 4})}}),
            at(line, 62) +
                "LSTMCell(3->4): the packed state concat([h, c], -1) must be "
                "f32[2,8], got f32[2,4] [in LSTMCell(3->4)]");
}

TEST(RecurrentErrors, LSTMCellInputWidth) {
  int line = __LINE__ + 1;
  auto b = FlowBuilder::from(Identity()).input({"s"}).through(LSTMCell(3, 4)).uses({"s"});
  EXPECT_EQ(error_of(b, {{"x", f32({2, 5})}, {"s", f32({2, 8})}}),
            at(line, 62) +
                "LSTMCell(3->4) expects a float input [batch, 3], got f32[2,5]"
                " [in LSTMCell(3->4)]");
}

}  // namespace sequence_parity_test
}  // namespace
}  // namespace weft
