#include "ir/dot.h"

namespace weft {

std::string dot_escape(const std::string& s) {
  std::string out;
  for (char c : s) {
    if (c == '"' || c == '\\') out += '\\';
    if (c == '\n') {
      out += "\\n";
      continue;
    }
    out += c;
  }
  return out;
}

namespace {

std::string escape(const std::string& s) { return dot_escape(s); }

std::string type_string(const Graph& g, ValueId v) {
  const auto& t = g.value(v).type;
  return t ? t->to_string() : "?";
}

// Draws g's inputs, nodes and edges with ids prefixed by `prefix` (a loop's body inside
// its cluster: `n3_`); returns the DOT id defining each value.
std::vector<std::string> draw(const Graph& g, const std::string& prefix, const std::string& indent,
                              std::string& out) {
  // Which DOT node defines each value: "in<i>" for inputs, "n<i>" for nodes.
  std::vector<std::string> def(g.num_values());
  for (size_t i = 0; i < g.inputs().size(); ++i) {
    const Input& in = g.inputs()[i];
    def[in.value] = prefix + "in" + std::to_string(i);
    bool persistent = in.kind != InputKind::data;
    out += indent + def[in.value] + " [shape=ellipse" +
           (persistent ? ", style=filled, fillcolor=\"#e8e0ff\"" : "") + ", label=\"%" +
           escape(g.value(in.value).name) + "\\n" + type_string(g, in.value) +
           (persistent ? "\\n{" + std::string(input_kind_name(in.kind)) + "}" : "") + "\"];\n";
  }
  for (size_t i = 0; i < g.nodes().size(); ++i) {
    const Node& n = g.nodes()[i];
    std::string id = prefix + "n" + std::to_string(i);
    for (ValueId r : n.results) def[r] = id;
    std::string label = std::string(op_name(n.op));
    for (const auto& [name, value] : n.attrs) label += "\n" + name + "=" + attribute_to_string(value);
    for (ValueId r : n.results) label += "\n" + type_string(g, r);
    bool state = n.info().category == OpCategory::State;
    out += indent + id + " [shape=box" + (state ? ", style=filled, fillcolor=\"#ffe0e0\"" : "") +
           ", label=\"" + escape(label) + "\"];\n";
    for (size_t k = 0; k < n.operands.size(); ++k) {
      ValueId o = n.operands[k];
      // The value's name and shape on the edge (the node shows its result type).
      std::string shape = g.value(o).type ? g.value(o).type->shape.to_string() : "?";
      out += indent + def[o] + " -> " + id + " [label=\"" +
             escape("%" + g.value(o).name + " " + shape) + "\"];\n";
    }
    if (n.op == Op::Scan && n.body) {
      // A loop's body as a nested cluster: dashed edges carry the operands in and the
      // body's results (next carries, per-iteration outputs) back to the loop.
      const Graph& body = *n.body;
      out += indent + "subgraph cluster_" + id + " {\n" + indent + "  label=\"" +
             escape("@" + body.name() + ", " + std::to_string(n.int_attr("length")) + " iterations") +
             "\";\n" + indent + "  style=dashed;\n";
      std::vector<std::string> inner = draw(body, id + "_", indent + "  ", out);
      out += indent + "}\n";
      for (size_t k = 0; k < body.inputs().size() && k < n.operands.size(); ++k) {
        out += indent + id + " -> " + inner[body.inputs()[k].value] + " [style=dashed];\n";
      }
      for (ValueId v : body.outputs()) {
        out += indent + inner[v] + " -> " + id + " [style=dashed];\n";
      }
    }
  }
  return def;
}

}  // namespace

std::string graph_to_dot(const Graph& g) {
  std::string out = "digraph \"" + escape(g.name()) + "\" {\n";
  out += "  rankdir=TB;\n  node [fontname=\"monospace\", fontsize=10];\n";
  out += "  edge [fontname=\"monospace\", fontsize=9];\n";
  std::vector<std::string> def = draw(g, "", "  ", out);
  for (size_t i = 0; i < g.outputs().size(); ++i) {
    std::string id = "out" + std::to_string(i);
    out += "  " + id + " [shape=doublecircle, label=\"out " + std::to_string(i) + "\"];\n";
    out += "  " + def[g.outputs()[i]] + " -> " + id + ";\n";
  }
  return out + "}\n";
}

}  // namespace weft
