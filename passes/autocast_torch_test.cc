// The autocast pass against PyTorch 1.13's CPU autocast, op by op: for each weft op with a
// torch counterpart and each mix of operand dtypes, the dtype the op's result gets, next
// to the one torch.autocast("cpu", dtype=torch.bfloat16) gives (recorded by
// passes/testdata/autocast_torch_cpu.py in autocast_torch_cpu.txt). They agree except
// for the deliberate deviations listed below, each with its reason.
#include <fstream>
#include <map>
#include <sstream>
#include <string>

#include <gtest/gtest.h>

#include "ir/text.h"
#include "passes/autocast.h"

namespace weft {
namespace {

/// One op's graph: its float operands %a, %b, %c (shapes; dtypes by case), and the lines
/// computing %y from them (and from %i: i64[4], %cond: bool[4,6]).
struct OpGraph {
  std::vector<std::string> shapes;
  std::string body;
};

const std::map<std::string, OpGraph>& op_graphs() {
  static const auto* graphs = [] {
    auto* m = new std::map<std::string, OpGraph>();
    for (const char* op : {"neg", "abs", "exp", "log", "log1p", "sqrt", "rsqrt", "tanh",
                           "sigmoid", "relu", "sin", "cos", "erf", "sign", "floor", "gelu",
                           "softplus", "sum", "mean", "max", "min", "softmax", "log_softmax"}) {
      (*m)[op] = {{"4,6"}, std::string("%y = ") + op + "(%a)"};
    }
    for (const char* op : {"add", "sub", "mul", "div", "pow", "maximum", "minimum", "mse"}) {
      (*m)[op] = {{"4,6", "4,6"}, std::string("%y = ") + op + "(%a, %b)"};
    }
    (*m)["select"] = {{"4,6", "4,6"}, "%y = select(%cond, %a, %b)"};
    (*m)["reshape"] = {{"4,6"}, "%y = reshape(%a) {shape=[6,4]}"};
    (*m)["transpose"] = {{"4,6"}, "%y = transpose(%a) {perm=[1,0]}"};
    (*m)["broadcast_to"] = {{"4,6"}, "%y = broadcast_to(%a) {shape=[2,4,6]}"};
    (*m)["slice"] = {{"4,6"}, "%y = slice(%a) {start=[1,0], stop=[3,6]}"};
    (*m)["concat"] = {{"4,6", "4,6"}, "%y = concat(%a, %b) {axis=0}"};
    (*m)["pad"] = {{"4,6"}, "%y = pad(%a) {low=[1,1], high=[1,1]}"};
    (*m)["gather"] = {{"4,6"}, "%y = gather(%a, %i) {axis=0}"};
    (*m)["matmul"] = {{"4,6", "6,5"}, "%y = matmul(%a, %b)"};
    (*m)["conv"] = {{"2,3,8,8", "4,3,3,3"}, "%y = conv(%a, %b)"};
    (*m)["conv_backward_input"] = {{"2,4,6,6", "4,3,3,3"},
                                   "%y = conv_backward_input(%a, %b) {input_shape=[2,3,8,8]}"};
    (*m)["max_pool2d"] = {{"2,3,8,8"}, "%y = max_pool2d(%a) {kernel=[2,2]}"};
    (*m)["avg_pool2d"] = {{"2,3,8,8"}, "%y = avg_pool2d(%a) {kernel=[2,2]}"};
    (*m)["layer_norm"] = {{"4,6", "6", "6"}, "%y = layer_norm(%a, %b, %c)"};
    (*m)["cross_entropy"] = {{"4,6"}, "%y = cross_entropy(%a, %i)"};
    return m;
  }();
  return *graphs;
}

/// Where weft deliberately differs from torch 1.13's CPU autocast, and why.
const std::map<std::string, std::string>& deviations() {
  static const std::map<std::string, std::string> d = {
      // One policy on every device: CUDA autocast's fp32 list, which CPU autocast 1.13
      // lacks (it runs these in bf16), so that a model computes the same on CPU and GPU.
      {"exp bf16", "CUDA's fp32 list"},
      {"log bf16", "CUDA's fp32 list"},
      {"log1p bf16", "CUDA's fp32 list"},
      {"rsqrt bf16", "CUDA's fp32 list"},
      {"softplus bf16", "CUDA's fp32 list"},
      {"pow bf16", "CUDA's fp32 list"},
      {"sum bf16", "CUDA's fp32 list (sum, with its output dtype set to f32)"},
      {"softmax bf16", "CUDA's fp32 list (softmax, with its output dtype set to f32)"},
      {"log_softmax bf16", "CUDA's fp32 list (log_softmax, with its output dtype set to f32)"},
      {"layer_norm bf16", "CUDA's fp32 list"},
      // mean accumulates as sum does; CUDA autocast leaves it in the input's dtype.
      {"mean bf16", "an accumulation, as sum (on neither torch list)"},
      // torch refuses a bf16 input with f32 weight and bias; weft casts all three to f32.
      {"layer_norm mixed", "torch refuses mixed dtypes; weft's fp32 rule casts them"},
      // CPU autocast 1.13 lists conv_transpose on its fp32 list; CUDA's on its
      // lower-precision list with the other convolutions.
      {"conv_backward_input f32", "CUDA's lower-precision list (conv_transpose)"},
      {"conv_backward_input bf16", "CUDA's lower-precision list (conv_transpose)"},
      {"conv_backward_input mixed", "CUDA's lower-precision list (conv_transpose)"},
  };
  return d;
}

/// The dtype of %y after the autocast pass on `op`'s graph with operand dtypes of `which`
/// ("f32", "bf16", "mixed": %a bf16 and the others f32, "scalar": %a bf16 times a 0-d f32
/// constant), or an error.
std::string weft_dtype(const std::string& op, const std::string& which) {
  std::string text = "graph @f(%i: i64[4], %cond: bool[4,6]";
  std::string body;
  if (which == "scalar") {
    text += ", %a: bf16[4,6]";
    body = "%s = full() {shape=[], value=0.5}\n  %y = " + op + "(%a, %s)";
  } else {
    const OpGraph& og = op_graphs().at(op);
    for (size_t k = 0; k < og.shapes.size(); ++k) {
      const bool low = which == "bf16" || (which == "mixed" && k == 0);
      text += std::string(", %") + char('a' + k) + ": " + (low ? "bf16" : "f32") + "[" +
              og.shapes[k] + "]";
    }
    body = og.body;
  }
  // %y is not an output, which the pass would cast back to its dtype before the pass.
  text += ") {\n  " + body + "\n  return %i\n}\n";
  StatusOr<Graph> g = parse_graph(text, "test.wir");
  if (!g.ok()) return "parse: " + g.error().to_string();
  AutocastPass pass(DType::bf16);
  if (StatusOr<bool> changed = pass.run(*g); !changed.ok()) return changed.error().to_string();
  return std::string(dtype_name(g->type(*g->find_value("y")).dtype));
}

TEST(AutocastTorchTest, AgreesWithTorchCpuAutocastOrDeviatesOnPurpose) {
  std::ifstream in("passes/testdata/autocast_torch_cpu.txt");
  ASSERT_TRUE(in) << "passes/testdata/autocast_torch_cpu.txt is missing";
  std::string line;
  int compared = 0, deviated = 0;
  while (std::getline(in, line)) {
    if (line.empty() || line[0] == '#') continue;
    std::istringstream fields(line);
    std::string op, which, torch_dtype;
    fields >> op >> which >> torch_dtype;
    ASSERT_TRUE(which == "scalar" || op_graphs().count(op)) << "no weft graph for " << op;
    const std::string ours = weft_dtype(op, which);
    const auto deviation = deviations().find(op + " " + which);
    if (deviation == deviations().end()) {
      EXPECT_EQ(ours, torch_dtype) << op << " with " << which << " operands";
    } else {
      EXPECT_NE(ours, torch_dtype) << op << " with " << which
                                   << " operands agrees with torch now: drop its deviation ("
                                   << deviation->second << ")";
      ++deviated;
    }
    ++compared;
  }
  EXPECT_GT(compared, 100);
  EXPECT_EQ(deviated, static_cast<int>(deviations().size()));
}

/// With f32 operands only contractions change dtype (their operands are cast to low).
TEST(AutocastTorchTest, F32OperandsStayF32ExceptContractions) {
  for (const auto& [op, graph] : op_graphs()) {
    const AutocastClass c = autocast_class(*parse_op(op));
    EXPECT_EQ(weft_dtype(op, "f32"), c == AutocastClass::Low ? "bf16" : "f32") << op;
  }
}

}  // namespace
}  // namespace weft
