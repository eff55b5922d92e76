#include "ir/graph.h"

#include "ir/status.h"

namespace weft {

std::string_view input_kind_name(InputKind kind) {
  switch (kind) {
    case InputKind::data: return "data";
    case InputKind::param: return "param";
    case InputKind::state: return "state";
  }
  return "?";
}

std::optional<InputKind> parse_input_kind(std::string_view name) {
  if (name == "data") return InputKind::data;
  if (name == "param") return InputKind::param;
  if (name == "state") return InputKind::state;
  return std::nullopt;
}

const Attribute* Node::attr(std::string_view name) const {
  auto it = attrs.find(std::string(name));
  if (it != attrs.end()) return &it->second;
  const AttrSpec* spec = info().find_attr(name);
  if (spec && spec->default_) return &*spec->default_;
  return nullptr;
}

namespace {
template <typename T>
const T& typed_attr(const Node& n, std::string_view name) {
  const Attribute* a = n.attr(name);
  WEFT_CHECK(a != nullptr, std::string(op_name(n.op)) + " has no attribute " + std::string(name));
  WEFT_CHECK(std::holds_alternative<T>(*a),
             std::string(op_name(n.op)) + " attribute " + std::string(name) + " has another kind");
  return std::get<T>(*a);
}
}  // namespace

int64_t Node::int_attr(std::string_view name) const { return typed_attr<int64_t>(*this, name); }
double Node::float_attr(std::string_view name) const {
  const Attribute* a = attr(name);
  // Integers are accepted where a float is expected (`{value=0}`).
  if (a && std::holds_alternative<int64_t>(*a)) return static_cast<double>(std::get<int64_t>(*a));
  return typed_attr<double>(*this, name);
}
const std::string& Node::str_attr(std::string_view name) const {
  return typed_attr<std::string>(*this, name);
}
bool Node::bool_attr(std::string_view name) const { return typed_attr<bool>(*this, name); }
DType Node::dtype_attr(std::string_view name) const { return typed_attr<DType>(*this, name); }
const IntList& Node::ints_attr(std::string_view name) const {
  return typed_attr<IntList>(*this, name);
}

ValueId Graph::new_value(std::string name, std::optional<Type> type, int node) {
  if (name.empty()) name = fresh_name();
  WEFT_CHECK(!by_name_.count(name), "duplicate value name %" + name);
  ValueId id = static_cast<ValueId>(values_.size());
  by_name_[name] = id;
  values_.push_back(Value{std::move(name), std::move(type), node});
  return id;
}

ValueId Graph::add_input(std::string name, Type type, InputKind kind, Location loc) {
  ValueId v = new_value(std::move(name), std::move(type), -1);
  inputs_.push_back(Input{v, kind, std::move(loc)});
  return v;
}

ValueId Graph::add_node(Op op, std::vector<ValueId> operands, Attrs attrs, Location loc,
                        std::optional<Type> type, std::string result_name) {
  Node n{op, std::move(operands), std::move(attrs), {}, std::move(loc)};
  int index = static_cast<int>(nodes_.size());
  if (op_info(op).results > 0) {
    n.results.push_back(new_value(std::move(result_name), std::move(type), index));
  }
  nodes_.push_back(std::move(n));
  return nodes_.back().result();
}

ValueId Graph::add_result(int node, std::string result_name, std::optional<Type> type) {
  ValueId v = new_value(std::move(result_name), std::move(type), node);
  nodes_[node].results.push_back(v);
  return v;
}

const Type& Graph::type(ValueId v) const {
  WEFT_CHECK(values_[v].type.has_value(), "type of %" + values_[v].name + " is not inferred");
  return *values_[v].type;
}

std::optional<ValueId> Graph::find_value(std::string_view name) const {
  auto it = by_name_.find(std::string(name));
  if (it == by_name_.end()) return std::nullopt;
  return it->second;
}

int Graph::input_index(ValueId v) const {
  for (size_t i = 0; i < inputs_.size(); ++i) {
    if (inputs_[i].value == v) return static_cast<int>(i);
  }
  return -1;
}

std::string Graph::fresh_name() {
  while (by_name_.count(std::to_string(next_fresh_))) ++next_fresh_;
  return std::to_string(next_fresh_++);
}

void Graph::replace_all_uses(ValueId from, ValueId to) {
  for (Node& n : nodes_) {
    for (ValueId& o : n.operands) {
      if (o == from) o = to;
    }
  }
  for (ValueId& o : outputs_) {
    if (o == from) o = to;
  }
}

void Graph::remove_nodes(const std::vector<bool>& keep) {
  WEFT_CHECK(keep.size() == nodes_.size(), "remove_nodes: mask size");
  std::vector<Node> kept;
  for (size_t i = 0; i < nodes_.size(); ++i) {
    if (keep[i]) {
      kept.push_back(std::move(nodes_[i]));
    } else {
      for (ValueId r : nodes_[i].results) {
        values_[r].node = -1;
        by_name_.erase(values_[r].name);
      }
    }
  }
  nodes_ = std::move(kept);
  for (size_t i = 0; i < nodes_.size(); ++i) {
    for (ValueId r : nodes_[i].results) values_[r].node = static_cast<int>(i);
  }
}

void Graph::sort_topologically() {
  std::vector<Node>& nodes = nodes_;
  std::vector<char> defined(values_.size(), 0);
  for (const Input& in : inputs_) defined[in.value] = 1;
  std::vector<Node> order;
  std::vector<Node> waiting;
  auto ready = [&](const Node& node) {
    for (ValueId v : node.operands) {
      if (!defined[v]) return false;
    }
    return true;
  };
  auto emit = [&](Node node) {
    for (ValueId r : node.results) defined[r] = 1;
    order.push_back(std::move(node));
  };
  for (Node& node : nodes) {
    if (!ready(node)) {
      waiting.push_back(std::move(node));
      continue;
    }
    emit(std::move(node));
    for (bool progress = true; progress;) {
      progress = false;
      for (size_t k = 0; k < waiting.size(); ++k) {
        if (!ready(waiting[k])) continue;
        emit(std::move(waiting[k]));
        waiting.erase(waiting.begin() + static_cast<long>(k));
        progress = true;
        break;
      }
    }
  }
  WEFT_CHECK(waiting.empty(), "sort_topologically: the graph has a cycle");
  nodes = std::move(order);
  remove_nodes(std::vector<bool>(nodes_.size(), true));  // renumbers value producers
}

std::vector<int> Graph::use_counts() const {
  std::vector<int> counts(values_.size(), 0);
  for (const Node& n : nodes_) {
    for (ValueId o : n.operands) ++counts[o];
  }
  for (ValueId o : outputs_) ++counts[o];
  return counts;
}

bool structurally_equal(const Graph& a, const Graph& b, std::string* why) {
  auto fail = [&](std::string msg) {
    if (why) *why = std::move(msg);
    return false;
  };
  if (a.name() != b.name()) return fail("graph names differ: @" + a.name() + " vs @" + b.name());
  // Maps values of a to values of b, established in definition order.
  std::unordered_map<ValueId, ValueId> map;
  auto same_value = [&](ValueId va, ValueId vb, const std::string& where) -> bool {
    const Value& x = a.value(va);
    const Value& y = b.value(vb);
    if (x.name != y.name) return fail(where + ": names differ: %" + x.name + " vs %" + y.name);
    if (x.type != y.type) {
      return fail(where + ": types of %" + x.name + " differ: " +
                  (x.type ? x.type->to_string() : "?") + " vs " +
                  (y.type ? y.type->to_string() : "?"));
    }
    map[va] = vb;
    return true;
  };
  if (a.inputs().size() != b.inputs().size()) return fail("input counts differ");
  for (size_t i = 0; i < a.inputs().size(); ++i) {
    const Input& x = a.inputs()[i];
    const Input& y = b.inputs()[i];
    if (!same_value(x.value, y.value, "input " + std::to_string(i))) return false;
    if (x.kind != y.kind) return fail("input kinds of %" + a.value(x.value).name + " differ");
  }
  if (a.nodes().size() != b.nodes().size()) return fail("node counts differ");
  for (size_t i = 0; i < a.nodes().size(); ++i) {
    const Node& x = a.nodes()[i];
    const Node& y = b.nodes()[i];
    std::string where = "node " + std::to_string(i) + " (" + std::string(op_name(x.op)) + ")";
    if (x.op != y.op) return fail(where + ": ops differ");
    if (x.operands.size() != y.operands.size()) return fail(where + ": operand counts differ");
    for (size_t k = 0; k < x.operands.size(); ++k) {
      auto it = map.find(x.operands[k]);
      if (it == map.end() || it->second != y.operands[k]) {
        return fail(where + ": operand " + std::to_string(k) + " differs");
      }
    }
    if (x.attrs != y.attrs) return fail(where + ": attributes differ");
    if (!(x.loc == y.loc)) {
      return fail(where + ": locations differ: " + x.loc.to_string() + " vs " + y.loc.to_string());
    }
    if ((x.body == nullptr) != (y.body == nullptr)) return fail(where + ": only one has a body");
    if (x.body) {
      std::string body_why;
      if (!structurally_equal(*x.body, *y.body, &body_why)) {
        return fail(where + ": bodies differ: " + body_why);
      }
    }
    if (x.results.size() != y.results.size()) return fail(where + ": result counts differ");
    for (size_t k = 0; k < x.results.size(); ++k) {
      if (!same_value(x.results[k], y.results[k], where)) return false;
    }
  }
  if (a.outputs().size() != b.outputs().size()) return fail("output counts differ");
  for (size_t i = 0; i < a.outputs().size(); ++i) {
    auto it = map.find(a.outputs()[i]);
    if (it == map.end() || it->second != b.outputs()[i]) {
      return fail("output " + std::to_string(i) + " differs");
    }
  }
  // Declared output types that merely repeat the outputs' known types carry nothing
  // (the text parser drops them), so compare what each graph says its outputs are.
  auto effective = [](const Graph& g) {
    if (!g.declared_output_types().empty()) return g.declared_output_types();
    std::vector<Type> types;
    for (ValueId o : g.outputs()) {
      if (!g.value(o).type) return std::vector<Type>{};
      types.push_back(*g.value(o).type);
    }
    return types;
  };
  if (effective(a) != effective(b)) return fail("declared output types differ");
  return true;
}

}  // namespace weft
