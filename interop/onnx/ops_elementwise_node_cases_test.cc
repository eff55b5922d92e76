// Every case of ONNX's node tests for the elementwise and activation converters
// (ops/elementwise.cc, ops/activation.cc), and PyTorch's exports of these ops.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>

#include "interop/onnx/importer.h"
#include "interop/onnx/reader.h"
#include "interop/onnx/testing/onnx_builder.h"

namespace weft::onnx_io {
namespace {
namespace ops_elementwise_node_cases_test {  // this file's names, apart in its package's unity test

// ---------------------------------------------------------------------------
// ONNX's node tests (onnx/backend/test/data/node): each case imported and run on the
// reference interpreter, its outputs compared as ONNX's runner does (rtol 1e-3,
// atol 1e-7; integers and bools exactly).

const char kTestData[] = "/usr/include/onnx/backend/test/data";
const std::string kNodeTests = std::string(kTestData) + "/node";

// The ops of these families, by the prefix of their node tests' names (test_PREFIX...).
const std::map<std::string, std::string>& test_prefixes() {
  static const std::map<std::string, std::string> kPrefixes = {
      {"abs", "Abs"},
      {"acos", "Acos"},
      {"acosh", "Acosh"},
      {"add", "Add"},
      {"and", "And"},
      {"asin", "Asin"},
      {"asinh", "Asinh"},
      {"atan", "Atan"},
      {"atanh", "Atanh"},
      {"bitshift", "BitShift"},
      {"cast", "Cast"},
      {"castlike", "CastLike"},
      {"ceil", "Ceil"},
      {"celu", "Celu"},
      {"clip", "Clip"},
      {"cos", "Cos"},
      {"cosh", "Cosh"},
      {"dequantizelinear", "DequantizeLinear"},
      {"div", "Div"},
      {"dynamicquantizelinear", "DynamicQuantizeLinear"},
      {"hardmax", "Hardmax"},
      {"logsoftmax", "LogSoftmax"},
      {"quantizelinear", "QuantizeLinear"},
      {"softmax", "Softmax"},
      {"elu", "Elu"},
      {"equal", "Equal"},
      {"erf", "Erf"},
      {"exp", "Exp"},
      {"floor", "Floor"},
      {"greater", "Greater"},
      {"greater_equal", "GreaterOrEqual"},
      {"hardsigmoid", "HardSigmoid"},
      {"hardswish", "HardSwish"},
      {"isinf", "IsInf"},
      {"isnan", "IsNaN"},
      {"leakyrelu", "LeakyRelu"},
      {"less", "Less"},
      {"less_equal", "LessOrEqual"},
      {"log", "Log"},
      {"max", "Max"},
      {"mean", "Mean"},
      {"min", "Min"},
      {"mod", "Mod"},
      {"mul", "Mul"},
      {"neg", "Neg"},
      {"not", "Not"},
      {"or", "Or"},
      {"pow", "Pow"},
      {"prelu", "PRelu"},
      {"reciprocal", "Reciprocal"},
      {"relu", "Relu"},
      {"round", "Round"},
      {"selu", "Selu"},
      {"shrink", "Shrink"},
      {"sigmoid", "Sigmoid"},
      {"sign", "Sign"},
      {"sin", "Sin"},
      {"sinh", "Sinh"},
      {"softplus", "Softplus"},
      {"softsign", "Softsign"},
      {"sqrt", "Sqrt"},
      {"sub", "Sub"},
      {"sum", "Sum"},
      {"tan", "Tan"},
      {"tanh", "Tanh"},
      {"thresholdedrelu", "ThresholdedRelu"},
      {"where", "Where"},
      {"xor", "Xor"}};
  return kPrefixes;
}

// The op a node test exercises, from its name: test_greater_equal_bcast -> GreaterOrEqual.
// The longest matching prefix wins (castlike over cast).
std::string op_of_test(const std::string& test) {
  std::string best_prefix, best;
  for (const auto& [prefix, op] : test_prefixes()) {
    const std::string p = "test_" + prefix;
    if (test.rfind(p, 0) != 0 || p.size() <= best_prefix.size()) continue;
    const char next = test.size() > p.size() ? test[p.size()] : '_';
    if (next == '_' || std::isdigit(static_cast<unsigned char>(next))) {
      best_prefix = p;
      best = op;
    }
  }
  return best;
}

bool close(const Tensor& got, const Tensor& want, std::string& why) {
  if (got.type() != want.type()) {
    why = "type " + got.type().to_string() + ", expected " + want.type().to_string();
    return false;
  }
  const bool exact = !is_floating(want.dtype());
  for (int64_t i = 0; i < want.numel(); ++i) {
    const double g = got.get_double(i), w = want.get_double(i);
    if (std::isnan(w) && std::isnan(g)) continue;
    const bool ok = exact ? g == w : (g == w || std::fabs(g - w) <= 1e-7 + 1e-3 * std::fabs(w));
    if (!ok) {
      why = "element " + std::to_string(i) + " is " + std::to_string(g) + ", expected " +
            std::to_string(w);
      return false;
    }
  }
  return true;
}

// A test data tensor. ONNX stores its BFLOAT16 test data with the element type UINT16
// (the same bits); `elem_type` is the type the model declares for it.
StatusOr<Tensor> read_test_tensor(const std::filesystem::path& pb, int elem_type) {
  std::ifstream in(pb, std::ios::binary);
  const std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  onnx::TensorProto t;
  if (!t.ParseFromString(bytes)) return Error{pb.string() + ": not a TensorProto"};
  if (t.data_type() == onnx::TensorProto::UINT16 && elem_type == onnx::TensorProto::BFLOAT16) {
    t.set_data_type(onnx::TensorProto::BFLOAT16);
  }
  return tensor_from_proto(t, "");
}

// Runs every test_data_set of the node test in `dir`; "" when all pass, else why not.
std::string run_node_test(const std::filesystem::path& dir) {
  StatusOr<OnnxFile> file = read_onnx_model((dir / "model.onnx").string());
  if (!file.ok()) return file.error().message;
  int sets = 0;
  for (int s = 0;; ++s) {
    const std::filesystem::path data = dir / ("test_data_set_" + std::to_string(s));
    if (!std::filesystem::exists(data)) break;
    ++sets;
    std::vector<Tensor> inputs, outputs;
    const onnx::GraphProto& g = file->model.graph();
    for (auto [prefix, into] : {std::pair{"input_", &inputs}, std::pair{"output_", &outputs}}) {
      const auto& declared = into == &inputs ? g.input() : g.output();
      for (int k = 0;; ++k) {
        const std::filesystem::path pb = data / (prefix + std::to_string(k) + ".pb");
        if (!std::filesystem::exists(pb)) break;
        const int elem_type =
            k < declared.size() ? declared[k].type().tensor_type().elem_type() : 0;
        StatusOr<Tensor> t = read_test_tensor(pb, elem_type);
        if (!t.ok()) return t.error().message;
        into->push_back(std::move(*t));
      }
    }
    StatusOr<std::vector<Tensor>> got = import_and_run(*file, std::move(inputs));
    if (!got.ok()) return got.error().message;
    if (got->size() != outputs.size()) return "wrong output count";
    for (size_t k = 0; k < outputs.size(); ++k) {
      std::string why;
      if (!close((*got)[k], outputs[k], why)) return "output " + std::to_string(k) + ": " + why;
    }
  }
  return sets == 0 ? "no test data" : "";
}

// The node tests these converters cannot pass, each with (part of) the refusal it gets:
// element types weft lacks (the reader's refusal), ops with no exact form in weft's ops,
// and ONNX 1.12's FLOAT to BFLOAT16 data, which truncates where Cast rounds to nearest
// even (as ONNX's spec and onnxruntime do).
std::string no_dtype(const std::string& onnx_type) {
  return onnx_type +
         " tensors: weft has no such dtype (it has f32, f64, f16, bf16, i32, i64, u8, bool)";
}
constexpr char kNoConverter[] = "the op type is not supported";
constexpr char kTruncatedBf16[] = "output 0: element 1 is 0.480469, expected 0.478516";

const std::map<std::string, std::string>& expected_refusals() {
  static const std::map<std::string, std::string> kRefusals = {
      {"test_acos", kNoConverter},
      {"test_acos_example", kNoConverter},
      {"test_asin", kNoConverter},
      {"test_asin_example", kNoConverter},
      {"test_atan", kNoConverter},
      {"test_atan_example", kNoConverter},
      {"test_bitshift_left_uint16", no_dtype("UINT16")},
      {"test_bitshift_left_uint32", no_dtype("UINT32")},
      {"test_bitshift_left_uint64", no_dtype("UINT64")},
      {"test_bitshift_right_uint16", no_dtype("UINT16")},
      {"test_bitshift_right_uint32", no_dtype("UINT32")},
      {"test_bitshift_right_uint64", no_dtype("UINT64")},
      {"test_cast_FLOAT_to_BFLOAT16", kTruncatedBf16},
      {"test_cast_FLOAT_to_STRING", no_dtype("STRING")},
      {"test_cast_STRING_to_FLOAT", no_dtype("STRING")},
      {"test_castlike_FLOAT_to_BFLOAT16", kTruncatedBf16},
      {"test_castlike_FLOAT_to_BFLOAT16_expanded", kTruncatedBf16},
      {"test_castlike_FLOAT_to_STRING", no_dtype("STRING")},
      {"test_castlike_FLOAT_to_STRING_expanded", no_dtype("STRING")},
      {"test_castlike_STRING_to_FLOAT", no_dtype("STRING")},
      {"test_castlike_STRING_to_FLOAT_expanded", no_dtype("STRING")},
      {"test_clip_default_int8_inbounds", no_dtype("INT8")},
      {"test_clip_default_int8_max", no_dtype("INT8")},
      {"test_clip_default_int8_min", no_dtype("INT8")},
      {"test_max_int16", no_dtype("INT16")},
      {"test_max_int8", no_dtype("INT8")},
      {"test_max_uint16", no_dtype("UINT16")},
      {"test_max_uint32", no_dtype("UINT32")},
      {"test_max_uint64", no_dtype("UINT64")},
      {"test_min_int16", no_dtype("INT16")},
      {"test_min_int8", no_dtype("INT8")},
      {"test_min_uint16", no_dtype("UINT16")},
      {"test_min_uint32", no_dtype("UINT32")},
      {"test_min_uint64", no_dtype("UINT64")},
      {"test_mod_mixed_sign_float16", "Mod of f16 operands"},
      {"test_mod_mixed_sign_float32", "Mod of f32 operands"},
      {"test_mod_mixed_sign_float64", "Mod of f64 operands"},
      {"test_mod_mixed_sign_int16", no_dtype("INT16")},
      {"test_mod_mixed_sign_int8", no_dtype("INT8")},
      {"test_mod_uint16", no_dtype("UINT16")},
      {"test_mod_uint32", no_dtype("UINT32")},
      {"test_mod_uint64", no_dtype("UINT64")},
      {"test_pow_types_float32_uint32", no_dtype("UINT32")},
      {"test_pow_types_float32_uint64", no_dtype("UINT64")},
  };
  return kRefusals;
}

// The op type of an import refused for lack of a converter outside these families.
std::string other_family_op(const std::string& why) {
  const size_t end = why.find(", opset ");
  const size_t begin = why.rfind('(', end);
  if (why.find("the op type is not supported") == std::string::npos || begin == std::string::npos)
    return "";
  const std::string op = why.substr(begin + 1, end - begin - 1);
  for (const auto& [prefix, mine] : test_prefixes()) {
    if (mine == op) return "";
  }
  return op;
}

TEST(OnnxNodeTests, EveryCaseOfTheseOpsPassesOrIsRefusedAsExpected) {
  if (!std::filesystem::exists(kNodeTests)) GTEST_SKIP() << kNodeTests << " is not installed";
  std::map<std::string, std::pair<int, int>> counts;  // op -> (passed, cases)
  std::vector<std::filesystem::path> dirs;
  for (const auto& entry : std::filesystem::directory_iterator(kNodeTests))
    dirs.push_back(entry.path());
  std::sort(dirs.begin(), dirs.end());
  for (const std::filesystem::path& dir : dirs) {
    const std::string test = dir.filename().string();
    const std::string op = op_of_test(test);
    if (op.empty()) continue;
    const std::string why = run_node_test(dir);
    if (const std::string other = other_family_op(why); !other.empty()) {
      // An expanded test (the op's ONNX function body) using ops of other families.
      std::printf("%s needs a converter of %s\n", test.c_str(), other.c_str());
      continue;
    }
    auto& [passed, cases] = counts[op];
    ++cases;
    passed += why.empty();
    auto refusal = expected_refusals().find(test);
    if (refusal == expected_refusals().end()) {
      EXPECT_EQ(why, "") << test;
    } else {
      EXPECT_NE(why.find(refusal->second), std::string::npos) << test << ": " << why;
    }
  }
  int passed = 0, cases = 0;
  for (const auto& [op, c] : counts) {
    std::printf("%-16s %2d / %2d\n", op.c_str(), c.first, c.second);
    passed += c.first;
    cases += c.second;
  }
  std::printf("%-16s %2d / %2d\n", "all", passed, cases);
}

// PyTorch's exports of the time (opset 6: legacy broadcasting, per-channel PRelu, Softmax
// over matrix rows) of these ops.
TEST(OnnxNodeTests, PyTorchModelsOfTheseOpsPass) {
  if (!std::filesystem::exists(kTestData)) GTEST_SKIP() << kTestData << " is not installed";
  for (const char* test : {"pytorch-operator/test_operator_add_broadcast",
                           "pytorch-operator/test_operator_add_size1_broadcast",
                           "pytorch-operator/test_operator_add_size1_right_broadcast",
                           "pytorch-operator/test_operator_add_size1_singleton_broadcast",
                           "pytorch-operator/test_operator_addconstant",
                           "pytorch-operator/test_operator_basic",
                           "pytorch-operator/test_operator_clip",
                           "pytorch-operator/test_operator_exp",
                           "pytorch-operator/test_operator_max",
                           "pytorch-operator/test_operator_min",
                           "pytorch-operator/test_operator_pow",
                           "pytorch-operator/test_operator_selu",
                           "pytorch-operator/test_operator_sqrt",
                           "pytorch-converted/test_ELU",
                           "pytorch-converted/test_LeakyReLU",
                           "pytorch-converted/test_LeakyReLU_with_negval",
                           "pytorch-converted/test_PReLU_1d",
                           "pytorch-converted/test_PReLU_1d_multiparam",
                           "pytorch-converted/test_PReLU_2d",
                           "pytorch-converted/test_PReLU_2d_multiparam",
                           "pytorch-converted/test_PReLU_3d",
                           "pytorch-converted/test_PReLU_3d_multiparam",
                           "pytorch-converted/test_ReLU",
                           "pytorch-converted/test_SELU",
                           "pytorch-converted/test_Sigmoid",
                           "pytorch-converted/test_Softplus",
                           "pytorch-converted/test_Softsign",
                           "pytorch-converted/test_Tanh",
                           "pytorch-converted/test_Softmax",
                           "pytorch-converted/test_LogSoftmax",
                           "pytorch-converted/test_Softmin",
                           "pytorch-converted/test_log_softmax_dim3",
                           "pytorch-converted/test_log_softmax_lastdim",
                           "pytorch-converted/test_softmax_functional_dim3",
                           "pytorch-converted/test_softmax_lastdim"}) {
    EXPECT_EQ(run_node_test(std::filesystem::path(kTestData) / test), "") << test;
  }
}

}  // namespace ops_elementwise_node_cases_test
}  // namespace
}  // namespace weft::onnx_io
