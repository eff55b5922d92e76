#include "frontend/draw.h"

#include <cerrno>
#include <cstring>
#include <fstream>
#include <map>

#include "ir/dot.h"

namespace weft {
namespace {

std::string escape(const std::string& s) { return dot_escape(s); }

std::string cluster_id(const std::string& path) {
  std::string id = "cluster_";
  for (char c : path) id += (c == '.' ? '_' : c);
  return id;
}

// One level of the label tree: its nodes and its child labels.
struct Cluster {
  std::vector<int> nodes;
  std::map<std::string, Cluster> children;  // by full label path
};

void write_cluster(const Graph& g, const std::string& path, const Cluster& c,
                   const std::map<ValueId, std::string>& tag_of, std::string& out, int depth) {
  std::string indent(2 * depth, ' ');
  for (const auto& [child_path, child] : c.children) {
    std::string name = child_path.substr(child_path.rfind('.') + 1);
    out += indent + "subgraph \"" + escape(cluster_id(child_path)) + "\" {\n";
    out += indent + "  label=\"" + escape(name) + "\"; style=rounded; color=\"#7060c0\";\n";
    write_cluster(g, child_path, child, tag_of, out, depth + 1);
    out += indent + "}\n";
  }
  for (int i : c.nodes) {
    const Node& n = g.node(i);
    std::string label = std::string(op_name(n.op));
    if (!n.loc.path.empty()) {
      // The innermost step of the builder path `encoder > split[1] > Linear(256->10)`.
      size_t sep = n.loc.path.rfind(" > ");
      std::string last = sep == std::string::npos ? n.loc.path : n.loc.path.substr(sep + 3);
      label = last + "\n" + label;
    }
    if (auto it = tag_of.find(n.result()); it != tag_of.end()) label += "\n#" + it->second;
    out += indent + "n" + std::to_string(i) + " [label=\"" + escape(label) + "\"" +
           (tag_of.count(n.result()) ? ", style=\"filled\", fillcolor=\"#fff3c0\"" : "") + "];\n";
  }
  (void)path;
}

}  // namespace

std::string model_to_dot(const Model& model) {
  const Graph& g = model.graph();
  std::map<ValueId, std::string> tag_of;
  for (const auto& [name, v] : model.tags()) tag_of[v] = name;

  Cluster root;
  for (size_t i = 0; i < g.nodes().size(); ++i) {
    const std::string& path = i < model.node_label_paths().size() ? model.node_label_paths()[i] : "";
    Cluster* c = &root;
    for (size_t dot = 0; !path.empty() && dot != std::string::npos;) {
      dot = path.find('.', dot + 1);
      c = &c->children[path.substr(0, dot)];
    }
    c->nodes.push_back(static_cast<int>(i));
  }

  std::string out = "digraph \"" + escape(g.name()) + "\" {\n";
  out += "  rankdir=TB;\n  node [shape=box, fontname=\"monospace\", fontsize=10];\n";
  out += "  edge [fontname=\"monospace\", fontsize=9];\n";
  std::vector<std::string> def(g.num_values());
  for (size_t i = 0; i < g.inputs().size(); ++i) {
    const Input& in = g.inputs()[i];
    def[in.value] = "in" + std::to_string(i);
    if (in.kind != InputKind::data) continue;  // parameters are left out: too many arrows
    out += "  " + def[in.value] + " [shape=ellipse, label=\"" +
           escape(g.value(in.value).name + "\n" + g.type(in.value).to_string()) + "\"];\n";
  }
  write_cluster(g, "", root, tag_of, out, 1);
  for (size_t i = 0; i < g.nodes().size(); ++i) {
    const Node& n = g.node(i);
    for (ValueId r : n.results) def[r] = "n" + std::to_string(i);
    for (ValueId o : n.operands) {
      int k = g.input_index(o);
      if (k >= 0 && g.inputs()[k].kind != InputKind::data) continue;  // keep the picture readable
      out += "  " + def[o] + " -> n" + std::to_string(i) + " [label=\"" +
             g.type(o).shape.to_string() + "\"];\n";
    }
  }
  for (size_t i = 0; i < g.outputs().size(); ++i) {
    out += "  out" + std::to_string(i) + " [shape=doublecircle, label=\"out " + std::to_string(i) +
           "\"];\n  " + def[g.outputs()[i]] + " -> out" + std::to_string(i) + " [label=\"" +
           g.type(g.outputs()[i]).shape.to_string() + "\"];\n";
  }
  return out + "}\n";
}

Status render_svg(const std::string& dot, const std::string& svg_path) {
  if (svg_path.empty()) return Error{"cannot render: the file name is empty; give the path of an .svg file"};
  StatusOr<std::string> svg = dot_to_svg(dot);
  if (!svg.ok()) return Error{"cannot render '" + svg_path + "': " + svg.error().message};
  std::ofstream f(svg_path, std::ios::binary);
  f << *svg;
  if (!f.flush()) return Error{"cannot render '" + svg_path + "': cannot write the file: " + std::strerror(errno)};
  return Status();
}

}  // namespace weft
