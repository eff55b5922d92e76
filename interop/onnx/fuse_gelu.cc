#include "interop/onnx/fuse_gelu.h"

#include <algorithm>
#include <cmath>
#include <optional>
#include <set>

#include "interop/onnx/reader.h"

namespace weft::onnx_io {
namespace {

// Who computes and who reads each value of one graph.
class Uses {
 public:
  explicit Uses(const onnx::GraphProto& g) : g_(g) {
    for (int i = 0; i < g.node_size(); ++i) {
      for (const std::string& out : g.node(i).output()) producer_[out] = i;
      for (const std::string& in : g.node(i).input()) readers_[in].push_back(i);
    }
    for (const onnx::ValueInfoProto& out : g.output()) outputs_.insert(out.name());
    for (const onnx::TensorProto& t : g.initializer()) initializers_[t.name()] = &t;
  }

  /// The node computing `name`, with `op_type`, or nullptr.
  const onnx::NodeProto* producer(const std::string& name, const char* op_type) const {
    auto it = producer_.find(name);
    if (it == producer_.end() || g_.node(it->second).op_type() != op_type) return nullptr;
    const onnx::NodeProto& n = g_.node(it->second);
    return n.domain().empty() || n.domain() == "ai.onnx" ? &n : nullptr;
  }
  int index_of(const std::string& name) const { return producer_.at(name); }

  /// The one node reading `name`, when it is read once and is not an output of the graph.
  std::optional<int> only_reader(const std::string& name) const {
    auto it = readers_.find(name);
    if (outputs_.count(name) || it == readers_.end() || it->second.size() != 1) return std::nullopt;
    return it->second[0];
  }

  /// The value of `name` when it is a one-element constant (an initializer or a Constant
  /// node's `value` / `value_float`).
  std::optional<double> scalar(const std::string& name) const {
    if (auto it = initializers_.find(name); it != initializers_.end()) return one_element(*it->second);
    const onnx::NodeProto* c = producer(name, "Constant");
    if (c == nullptr || c->attribute_size() != 1) return std::nullopt;
    const onnx::AttributeProto& a = c->attribute(0);
    if (a.name() == "value_float") return a.f();
    if (a.name() == "value" && a.has_t()) return one_element(a.t());
    return std::nullopt;
  }

 private:
  static std::optional<double> one_element(const onnx::TensorProto& t) {
    StatusOr<Tensor> v = tensor_from_proto(t, "");
    if (!v.ok() || v->type().numel() != 1 || !is_floating(v->type().dtype)) return std::nullopt;
    return v->get_double(0);
  }

  const onnx::GraphProto& g_;
  std::map<std::string, int> producer_;
  std::map<std::string, std::vector<int>> readers_;
  std::set<std::string> outputs_;
  std::map<std::string, const onnx::TensorProto*> initializers_;
};

// Within float rounding of `want` (the exporters write the constants as f32).
bool near(std::optional<double> v, double want) {
  return v && std::fabs(*v - want) <= 1e-6 * std::fabs(want);
}

// For a binary node with a scalar constant `c` as one operand: the other operand.
std::optional<std::string> other_than(const Uses& u, const onnx::NodeProto& n, double c, bool either_side) {
  if (n.input_size() != 2) return std::nullopt;
  if (near(u.scalar(n.input(1)), c)) return n.input(0);
  if (either_side && near(u.scalar(n.input(0)), c)) return n.input(1);
  return std::nullopt;
}

// The node reading `name` once, when its op type is `op_type`.
const onnx::NodeProto* only_reader(const onnx::GraphProto& g, const Uses& u, const std::string& name,
                                   const char* op_type, std::vector<int>& span) {
  std::optional<int> r = u.only_reader(name);
  if (!r || g.node(*r).op_type() != op_type || g.node(*r).output_size() != 1) return nullptr;
  span.push_back(*r);
  return &g.node(*r);
}

// The span ending a GELU whose erf is node `erf`, or nothing.
std::optional<GeluSpan> gelu_at(const onnx::GraphProto& g, const Uses& u, int erf) {
  const onnx::NodeProto& e = g.node(erf);
  if (e.input_size() != 1 || e.output_size() != 1) return std::nullopt;
  const std::string& t = e.input(0);
  std::optional<std::string> x;
  if (const onnx::NodeProto* m = u.producer(t, "Mul")) x = other_than(u, *m, std::sqrt(0.5), true);
  if (const onnx::NodeProto* d = u.producer(t, "Div")) x = other_than(u, *d, std::sqrt(2.0), false);
  if (!x || !u.only_reader(t)) return std::nullopt;
  GeluSpan s{*x, {u.index_of(t), erf}};
  const onnx::NodeProto* add = only_reader(g, u, e.output(0), "Add", s.nodes);
  if (add == nullptr || other_than(u, *add, 1.0, true) != e.output(0)) return std::nullopt;
  const onnx::NodeProto* mul = only_reader(g, u, add->output(0), "Mul", s.nodes);
  if (mul == nullptr) return std::nullopt;
  const std::string& q = mul->input(0) == add->output(0) ? mul->input(1) : mul->input(0);
  if (q == *x) {  // x·(1 + erf), then times 0.5
    const onnx::NodeProto* half = only_reader(g, u, mul->output(0), "Mul", s.nodes);
    if (half == nullptr || other_than(u, *half, 0.5, true) != mul->output(0)) return std::nullopt;
    return s;
  }
  // (0.5·x)·(1 + erf)
  const onnx::NodeProto* h = u.producer(q, "Mul");
  if (h == nullptr || other_than(u, *h, 0.5, true) != *x || !u.only_reader(q)) return std::nullopt;
  s.nodes.insert(s.nodes.begin(), u.index_of(q));
  return s;
}

}  // namespace

std::map<int, GeluSpan> find_gelu_spans(const onnx::GraphProto& g) {
  const Uses u(g);
  std::map<int, GeluSpan> spans;
  for (int i = 0; i < g.node_size(); ++i) {
    const onnx::NodeProto& n = g.node(i);
    if (n.op_type() != "Erf" || !(n.domain().empty() || n.domain() == "ai.onnx")) continue;
    std::optional<GeluSpan> s = gelu_at(g, u, i);
    if (!s) continue;
    std::sort(s->nodes.begin(), s->nodes.end());
    spans[s->nodes.back()] = std::move(*s);
  }
  return spans;
}

onnx::NodeProto gelu_node(const onnx::GraphProto& g, const GeluSpan& s) {
  const onnx::NodeProto& last = g.node(s.nodes.back());
  onnx::NodeProto gelu;
  gelu.set_op_type("Gelu");
  gelu.set_name(last.name());
  gelu.add_input(s.x);
  gelu.add_output(last.output(0));
  onnx::AttributeProto* a = gelu.add_attribute();
  a->set_name("approximate");
  a->set_type(onnx::AttributeProto::STRING);
  a->set_s("none");
  return gelu;
}

}  // namespace weft::onnx_io
