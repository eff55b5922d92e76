// The fixture cases of tests/fixtures/cases.json as one-node graphs (fixture_cases.h).

#include "runtime/reference/testing/fixture_cases.h"

#include <fstream>
#include <limits>
#include <optional>

#include <nlohmann/json.hpp>

#include "ir/shape_rules.h"
#include "formats/npy.h"

namespace weft::testing {
namespace {

// Bazel runs the test in its runfiles root, where the fixtures keep their tree paths.
constexpr char kDir[] = "tests/fixtures/";

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

StatusOr<Attrs> decode_attrs(const nlohmann::json& c) {
  Attrs attrs;
  for (const auto& [key, value] : c.at("attrs").items()) {
    StatusOr<Attribute> a = decode_attr(value);
    if (!a.ok()) return a.error();
    attrs[key] = *a;
  }
  return attrs;
}

StatusOr<std::vector<Tensor>> read_inputs(const nlohmann::json& c) {
  std::vector<Tensor> inputs;
  for (const auto& file : c.at("inputs")) {
    StatusOr<Tensor> t = read_npy(kDir + file.get<std::string>());
    if (!t.ok()) return t.error();
    inputs.push_back(std::move(*t));
  }
  return inputs;
}

// One manifest entry as a case; errors carry the messages fixtures_test reports.
StatusOr<FixtureCase> build_case(const nlohmann::json& c) {
  FixtureCase fc;
  fc.name = c.at("name");
  std::optional<Op> op = parse_op(c.at("op").get<std::string>());
  if (!op) return Error{"unknown op " + c.at("op").dump(), {}};
  fc.op = *op;
  StatusOr<Attrs> attrs = decode_attrs(c);
  if (!attrs.ok()) return Error{attrs.error().message, {}};
  StatusOr<std::vector<Tensor>> inputs = read_inputs(c);
  if (!inputs.ok()) return Error{inputs.error().to_string(), {}};
  fc.inputs = std::move(*inputs);
  StatusOr<Tensor> want = read_npy(kDir + c.at("output").get<std::string>());
  if (!want.ok()) return Error{want.error().to_string(), {}};
  fc.want = std::move(*want);
  fc.tol = c.at("tol").get<double>();
  fc.result = c.value("result", size_t{0});

  std::vector<Type> types;
  for (const Tensor& t : fc.inputs) types.push_back(t.type());
  StatusOr<Graph> g = one_node_graph(fc.name, fc.op, *attrs, types,
                                     Location{fc.name + ".wir", 1, 1, ""}, fc.result);
  if (!g.ok()) return Error{g.error().message, {}};
  fc.graph = std::move(*g);
  if (fc.op != Op::Assign) {
    const Type& type = fc.graph.type(fc.graph.outputs()[0]);
    if (type != fc.want.type()) {
      return Error{"shape rule gives " + type.to_string() + " but NumPy gives " +
                       fc.want.type().to_string(),
                   {}};
    }
  }
  return fc;
}

}  // namespace

StatusOr<std::vector<FixtureEntry>> load_fixture_cases() {
  std::ifstream in(std::string(kDir) + "cases.json");
  if (!in.good()) return Error{std::string("cannot open ") + kDir + "cases.json", {}};
  const nlohmann::json manifest = nlohmann::json::parse(in);
  std::vector<FixtureEntry> entries;
  for (const auto& c : manifest.value("cases", nlohmann::json::array())) {
    entries.push_back({c.at("name").get<std::string>(), c.at("op").get<std::string>(),
                       build_case(c)});
  }
  return entries;
}

StatusOr<Graph> one_node_graph(const std::string& name, Op op, const Attrs& attrs,
                               const std::vector<Type>& types, const Location& loc,
                               size_t result) {
  Graph g(name);
  std::vector<ValueId> operands;
  for (size_t i = 0; i < types.size(); ++i) {
    operands.push_back(g.add_input("in" + std::to_string(i), types[i],
                                   op == Op::Assign && i == 0 ? InputKind::state
                                                              : InputKind::data));
  }
  Node probe{op, operands, attrs, {}, loc};
  StatusOr<Type> type = infer_node_type(probe, types);
  if (!type.ok()) return Error{"shape rule: " + type.error().to_string(), loc};
  const ValueId first = g.add_node(op, operands, attrs, loc,
                                   op == Op::Assign ? std::nullopt : std::optional<Type>(*type));
  for (int k = 1; k < op_info(op).results; ++k) {
    g.add_result(g.value(first).node, "", result_type(probe, k, *type, types));
  }
  if (op == Op::Assign) return g;
  const std::vector<ValueId>& results = g.node(g.value(first).node).results;
  if (result >= results.size()) {
    return Error{"result " + std::to_string(result) + " of " + std::string(op_name(op)) +
                     ", which has " + std::to_string(results.size()),
                 loc};
  }
  g.add_output(results[result]);
  return g;
}

const Tensor& case_result(const reference::RunResult& r, const FixtureCase& c) {
  return c.op == Op::Assign ? r.updated.at(0).second : r.outputs.at(0);
}

std::optional<FixtureCase> retyped_case(const FixtureCase& c, DType from, DType to) {
  bool changed = false;
  std::vector<Tensor> inputs;
  std::vector<Type> types;
  for (const Tensor& t : c.inputs) {
    if (t.type().dtype != from) {
      inputs.push_back(t);
    } else {
      changed = true;
      inputs.push_back(to_dtype(t, to));
    }
    types.push_back(inputs.back().type());
  }
  const Node& node = c.graph.nodes()[0];
  Attrs attrs = node.attrs;
  for (auto& [key, value] : attrs) {
    if (const DType* d = std::get_if<DType>(&value); d && *d == from) {
      value = to;
      changed = true;
    }
  }
  if (!changed) return std::nullopt;
  const std::string name =
      c.name + " " + std::string(dtype_name(from)) + "->" + std::string(dtype_name(to));
  StatusOr<Graph> g = one_node_graph(name, c.op, attrs, types, node.loc, c.result);
  if (!g.ok()) return std::nullopt;
  return FixtureCase{name, c.op, std::move(*g), std::move(inputs), c.want, c.tol, c.result};
}

}  // namespace weft::testing
