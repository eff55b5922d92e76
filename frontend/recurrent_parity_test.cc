// GRU and LSTM over whole sequences (frontend/modules.h: one loop over time per layer)
// against torch.nn.GRU / torch.nn.LSTM (batch_first) in PyTorch 1.13: outputs, and the
// gradients of sum(output · seed) w.r.t. the input and every parameter, to 1e-5
// (fixtures: frontend/testdata/make_sequence_fixtures.py). Then their pinned errors.
#include <gtest/gtest.h>

#include "autodiff/grad.h"
#include "frontend/flow.h"
#include "frontend/modules.h"
#include "frontend/testing/run_model.h"
#include "formats/npy.h"
#include "runtime/reference/interpreter.h"

namespace weft {
namespace {
namespace recurrent_parity_test {  // this file's names, apart in its package's unity test

const std::string kDir = "frontend/testdata/sequence/";
constexpr double kTol = 1e-5;

Tensor load(const std::string& case_name, const std::string& file) {
  auto t = read_npy(kDir + case_name + "/" + file + ".npy");
  EXPECT_TRUE(t.ok()) << t.error().to_string();
  return t.ok() ? *t : Tensor();
}

void expect_matches_torch(const std::string& case_name, const FlowBuilder& builder,
                          const std::vector<std::string>& extra = {}) {
  SCOPED_TRACE(case_name);
  std::map<std::string, Tensor> data = {{"x", load(case_name, "input")}};
  std::vector<InputSpec> specs = {{"x", data.at("x").type()}};
  std::vector<Tensor> ordered = {data.at("x")};
  for (const std::string& name : extra) {
    data[name] = load(case_name, name);
    specs.push_back({name, data.at(name).type()});
    ordered.push_back(data.at(name));
  }
  auto model = builder.build(specs, {.training = false});
  ASSERT_TRUE(model.ok()) << model.error().to_string();
  int loops = 0;
  for (const Node& n : model->graph().nodes()) loops += n.op == Op::Scan;
  EXPECT_GE(loops, 1) << "one loop per layer";
  auto params = testing::load_params(*model, kDir + case_name);
  ASSERT_TRUE(params.ok()) << params.error().to_string();
  auto run = testing::run_model(*model, ordered, *params);
  ASSERT_TRUE(run.ok()) << run.error().to_string();
  std::string why;
  EXPECT_TRUE(all_close(run->outputs[0], load(case_name, "output"), kTol, &why)) << why;

  // Gradients of sum(output · seed) w.r.t. the input and every parameter.
  std::vector<std::string> wrt = {"x"};
  for (const ParamInfo& p : model->parameters()) wrt.push_back(p.name);
  auto grad = gradient_graph(model->graph(), 0, wrt, "seed");
  ASSERT_TRUE(grad.ok()) << grad.error().to_string();
  std::vector<Tensor> inputs;
  for (const Input& in : grad->inputs()) {
    const std::string& name = grad->value(in.value).name;
    inputs.push_back(name == "seed" ? load(case_name, "seed")
                     : data.count(name) ? data.at(name)
                                        : params->at(name));
  }
  auto g = reference::run(*grad, inputs);
  ASSERT_TRUE(g.ok()) << g.error().to_string();
  for (size_t k = 0; k < wrt.size(); ++k) {
    const std::string file = "grad." + (k == 0 ? std::string("input") : wrt[k]);
    EXPECT_TRUE(all_close(g->outputs[k], load(case_name, file), kTol, &why)) << file << ": " << why;
  }
}

TEST(RecurrentParity, TwoLayerGRUWithAnInitialState) {
  auto builder = FlowBuilder::from(Identity()).input({"h0"}).through(GRU(3, 4, {.layers = 2})).uses({"h0"});
  expect_matches_torch("gru_seq", builder, {"h0"});
}

TEST(RecurrentParity, GRUsLastStepFromZeros) {
  expect_matches_torch("gru_seq_last", FlowBuilder::from(Identity()).through(GRU(3, 4, {.last = true})));
}

TEST(RecurrentParity, TwoLayerLSTMWithInitialStates) {
  auto builder = FlowBuilder::from(Identity())
                     .input({"h0", "c0"})
                     .through(LSTM(3, 4, {.layers = 2}))
                     .uses({"h0", "c0"});
  expect_matches_torch("lstm_seq", builder, {"h0", "c0"});
}

TEST(RecurrentParity, ThreeLayerLSTMsLastStepFromZeros) {
  expect_matches_torch("lstm_seq_last",
                       FlowBuilder::from(Identity()).through(LSTM(3, 4, {.layers = 3, .last = true})));
}

TEST(Recurrent, SequenceModulesNameTheirParametersAndGraphByLayer) {
  auto model = FlowBuilder::from(LSTM(3, 4, {.layers = 2})).build({{"x", f32({2, 7, 3})}});
  ASSERT_TRUE(model.ok()) << model.error().to_string();
  std::vector<std::string> names;
  for (const ParamInfo& p : model->parameters()) names.push_back(p.name);
  EXPECT_EQ(names, (std::vector<std::string>{"0.l0.weight_ih", "0.l0.weight_hh", "0.l0.bias_ih",
                                             "0.l0.bias_hh", "0.l1.weight_ih", "0.l1.weight_hh",
                                             "0.l1.bias_ih", "0.l1.bias_hh"}));
  EXPECT_EQ(model->graph().type(model->graph().outputs()[0]), f32({2, 7, 4}));
  // The graph does not grow with the sequence: one loop per layer, whatever T is.
  auto longer = FlowBuilder::from(LSTM(3, 4, {.layers = 2})).build({{"x", f32({2, 70, 3})}});
  ASSERT_TRUE(longer.ok());
  EXPECT_EQ(longer->graph().nodes().size(), model->graph().nodes().size());
}

TEST(Recurrent, SequenceModuleErrors) {
  auto error = [](const FlowBuilder& b, std::vector<InputSpec> specs) {
    auto m = b.build(specs);
    return m.ok() ? std::string("ok") : m.error().message;
  };
  EXPECT_EQ(error(FlowBuilder::from(GRU(3, 4)), {{"x", f32({2, 3})}}),
            "GRU(3->4) expects a float sequence [batch, T, 3], got f32[2,3]");
  EXPECT_EQ(error(FlowBuilder::from(Identity()).input({"h0"}).through(LSTM(3, 4)).uses({"h0"}),
                  {{"x", f32({2, 5, 3})}, {"h0", f32({1, 2, 4})}}),
            "LSTM(3->4) takes the sequence and, from uses(...), both initial states h0 and c0 [1, 2, 4] "
            "or nothing (zeros); got 2 inputs");
  EXPECT_EQ(error(FlowBuilder::from(Identity()).input({"h0"}).through(GRU(3, 4, {.layers = 2})).uses({"h0"}),
                  {{"x", f32({2, 5, 3})}, {"h0", f32({1, 2, 4})}}),
            "GRU(3->4, layers=2): the initial state h0 must be f32[2,2,4], got f32[1,2,4]");
  // GRU(3, 0) built empty states and outputs (PyTorch refuses it); LSTM(3, -4) was refused
  // only by its parameter's negative dims.
  EXPECT_EQ(error(FlowBuilder::from(GRU(3, 0)), {{"x", f32({2, 5, 3})}}),
            "GRU(3->0): hidden_size must be at least 1 (PyTorch: hidden_size must be greater than zero)");
  EXPECT_EQ(error(FlowBuilder::from(LSTM(3, -4)), {{"x", f32({2, 5, 3})}}),
            "LSTM(3->-4): hidden_size must be at least 1 (PyTorch: hidden_size must be greater than zero)");
}

}  // namespace recurrent_parity_test
}  // namespace
}  // namespace weft
