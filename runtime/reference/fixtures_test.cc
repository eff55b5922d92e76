// Runs every case of tests/fixtures/cases.json (made independently with NumPy and
// PyTorch by tests/fixtures/make_fixtures.py) through the reference interpreter: one
// single-node graph per case, typed by the shape rules, compared with the expected
// output within the case's tolerance. Also checks that every op has a case.

#include <fstream>
#include <limits>
#include <set>
#include <sstream>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "ir/shape_rules.h"
#include "runtime/npy.h"
#include "runtime/reference/interpreter.h"

namespace weft::reference {
namespace {

// Bazel runs the test in its runfiles root, where the fixtures keep their tree paths.
constexpr char kDir[] = "tests/fixtures/";

nlohmann::json load_manifest() {
  std::ifstream in(std::string(kDir) + "cases.json");
  EXPECT_TRUE(in.good()) << "cannot open " << kDir << "cases.json";
  if (!in.good()) return nlohmann::json::object();
  return nlohmann::json::parse(in);
}

const nlohmann::json& manifest() {
  static const nlohmann::json m = load_manifest();
  return m;
}

// Decodes a tagged attribute value ({"int": 3}, {"ints": [1, 2]}, ...).
StatusOr<Attribute> decode_attr(const nlohmann::json& v) {
  if (!v.is_object() || v.size() != 1) return Error{"attribute is not a one-key object", {}};
  const std::string& tag = v.begin().key();
  const nlohmann::json& x = v.begin().value();
  if (tag == "int") return Attribute(x.get<int64_t>());
  if (tag == "float") {
    if (x.is_string()) {  // Non-finite values, which JSON cannot spell.
      const std::string s = x.get<std::string>();
      if (s == "inf") return Attribute(std::numeric_limits<double>::infinity());
      if (s == "-inf") return Attribute(-std::numeric_limits<double>::infinity());
      if (s == "nan") return Attribute(std::numeric_limits<double>::quiet_NaN());
    }
    return Attribute(x.get<double>());
  }
  if (tag == "str") return Attribute(x.get<std::string>());
  if (tag == "bool") return Attribute(x.get<bool>());
  if (tag == "ints") return Attribute(x.get<IntList>());
  if (tag == "floats") return Attribute(x.get<FloatList>());
  if (tag == "dtype") {
    if (auto d = parse_dtype(x.get<std::string>())) return Attribute(*d);
  }
  return Error{"bad attribute " + v.dump(), {}};
}

// Runs one case; on failure returns what went wrong.
std::string run_case(const nlohmann::json& c) {
  const std::string name = c.at("name");
  std::optional<Op> op = parse_op(c.at("op").get<std::string>());
  if (!op) return "unknown op " + c.at("op").dump();
  Attrs attrs;
  for (const auto& [key, value] : c.at("attrs").items()) {
    StatusOr<Attribute> a = decode_attr(value);
    if (!a.ok()) return a.error().message;
    attrs[key] = *a;
  }
  std::vector<Tensor> inputs;
  for (const auto& file : c.at("inputs")) {
    StatusOr<Tensor> t = read_npy(kDir + file.get<std::string>());
    if (!t.ok()) return t.error().to_string();
    inputs.push_back(std::move(*t));
  }
  StatusOr<Tensor> want = read_npy(kDir + c.at("output").get<std::string>());
  if (!want.ok()) return want.error().to_string();

  Graph g(name);
  std::vector<ValueId> operands;
  std::vector<Type> types;
  for (size_t i = 0; i < inputs.size(); ++i) {
    operands.push_back(g.add_input("in" + std::to_string(i), inputs[i].type(),
                                   *op == Op::Assign && i == 0 ? InputKind::state
                                                               : InputKind::data));
    types.push_back(inputs[i].type());
  }
  const Location loc{name + ".wir", 1, 1, ""};
  Node probe{*op, operands, attrs, {}, loc};
  StatusOr<Type> type = infer_node_type(probe, types);
  if (!type.ok()) return "shape rule: " + type.error().to_string();
  if (*op != Op::Assign && *type != want->type()) {
    return "shape rule gives " + type->to_string() + " but NumPy gives " +
           want->type().to_string();
  }
  ValueId result = g.add_node(*op, operands, attrs, loc,
                              *op == Op::Assign ? std::nullopt : std::optional<Type>(*type));
  if (*op != Op::Assign) g.add_output(result);

  StatusOr<RunResult> r = run(g, inputs);
  if (!r.ok()) return r.error().to_string();
  const Tensor& got = *op == Op::Assign ? r->updated.at(0).second : r->outputs.at(0);
  std::string why;
  if (!all_close(got, *want, c.at("tol").get<double>(), &why)) {
    return why + "\n  got:  " + tensor_to_string(got, 12) +
           "\n  want: " + tensor_to_string(*want, 12);
  }
  return "";
}

TEST(FixturesTest, EveryCaseMatchesNumpyAndTorch) {
  const nlohmann::json& cases = manifest().value("cases", nlohmann::json::array());
  ASSERT_GT(cases.size(), 0u);
  int failures = 0;
  for (const auto& c : cases) {
    std::string err = run_case(c);
    if (!err.empty()) {
      ++failures;
      ADD_FAILURE() << c.at("name").get<std::string>() << " (" << c.at("op").get<std::string>()
                    << "): " << err;
    }
  }
  std::printf("%zu fixture cases, %d failed\n", cases.size(), failures);
}

TEST(FixturesTest, EveryOpHasACase) {
  std::set<std::string> covered;
  for (const auto& c : manifest().value("cases", nlohmann::json::array())) {
    covered.insert(c.at("op").get<std::string>());
  }
  for (Op op : all_ops()) {
    // A fused kernel computes its body with the other ops' kernels; fuse_test checks it.
    // So does a loop: frontend:loop_test (against the body applied by hand),
    // frontend:recurrent_parity_test (against PyTorch's GRU and LSTM) and
    // passes:unroll_scans_test check its semantics.
    if (op == Op::Fused || op == Op::Scan) continue;
    EXPECT_TRUE(covered.count(std::string(op_name(op))))
        << "no fixture case for " << op_name(op) << "; add one to make_fixtures.py";
  }
}

}  // namespace
}  // namespace weft::reference
