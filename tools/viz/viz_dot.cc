// The viewer's DOT (viz.h: graph_to_viz_dot) and the cluster tree of builder paths.

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <string>
#include <vector>

#include "ir/dot.h"
#include "ir/fused_kind.h"
#include "tools/viz/memory_picture.h"
#include "tools/viz/viz.h"
#include "tools/viz/viz_internal.h"

namespace weft::viz {
namespace internal {
namespace {

std::vector<std::string> split_path(const std::string& path) {
  std::vector<std::string> parts;
  for (size_t start = 0; !path.empty() && start <= path.size();) {
    size_t sep = path.find(" > ", start);
    if (sep == std::string::npos) sep = path.size();
    parts.push_back(path.substr(start, sep - start));
    start = sep + 3;
  }
  return parts;
}

}  // namespace

ClusterTree cluster_tree(const Graph& g) {
  ClusterTree t;
  std::map<std::pair<int, std::string>, int> by_parent_and_name;
  for (size_t i = 0; i < g.nodes().size(); ++i) {
    std::vector<std::string> parts = split_path(g.node(i).loc.path);
    int current = -1;
    for (size_t k = 0; k + 1 < parts.size(); ++k) {  // the last step is the module call
      auto [it, added] = by_parent_and_name.emplace(std::make_pair(current, parts[k]),
                                                    static_cast<int>(t.clusters.size()));
      if (added) {
        t.clusters.push_back(Cluster{parts[k], current, {}, {}});
        (current < 0 ? t.top : t.clusters[current].children).push_back(it->second);
      }
      current = it->second;
    }
    t.of_node.push_back(current);
    (current < 0 ? t.top_nodes : t.clusters[current].nodes).push_back(static_cast<int>(i));
  }
  return t;
}

std::string type_string(const Graph& g, ValueId v) {
  const auto& t = g.value(v).type;
  return t ? t->to_string() : "?";
}

const DTypeKey& dtype_key(const Graph& g, ValueId v) {
  const auto& t = g.value(v).type;
  if (!t) return kDTypeKeys[0];
  switch (t->dtype) {
    case DType::f32: return kDTypeKeys[0];
    case DType::bf16: return kDTypeKeys[1];
    case DType::f16: return kDTypeKeys[2];
    case DType::boolean: return kDTypeKeys[4];
    case DType::f64: return kDTypeKeys[5];
    default: return kDTypeKeys[3];  // is_integer: i32, i64, u8
  }
}

std::map<ValueId, std::string> tags_by_value(const Graph& g, const VizOptions& options) {
  std::map<ValueId, std::string> out;
  for (const auto& [value_name, tag] : options.tags) {
    if (auto v = g.find_value(value_name)) out[*v] = tag;
  }
  return out;
}

}  // namespace internal

namespace {

using internal::Cluster;
using internal::ClusterTree;
using internal::dtype_key;
using internal::kNodeFill;
using internal::type_string;

std::string last_path_step(const std::string& path) {
  size_t sep = path.rfind(" > ");
  return sep == std::string::npos ? path : path.substr(sep + 3);
}

std::string kind_class(BufferKind k) {
  std::string name(buffer_kind_name(k));
  for (char& c : name) c = c == ' ' ? '-' : c;
  return "kind-" + name;
}

std::string short_attr(const std::string& name, const Attribute& value) {
  std::string text = name + "=" + attribute_to_string(value);
  return text.size() > 40 ? text.substr(0, 37) + "..." : text;
}

// ---- DOT ------------------------------------------------------------------------------

// White to red by `share` (0..1) of the profiled step.
std::string heat_colour(double share) {
  const double t = std::sqrt(std::clamp(share, 0.0, 1.0));  // small shares stay visible
  char buf[16];
  std::snprintf(buf, sizeof(buf), "#ff%02x%02x", static_cast<int>(255 - 200 * t), static_cast<int>(255 - 220 * t));
  return buf;
}

void write_node(const Graph& g, int i, const std::vector<BufferKind>& kinds,
                const std::map<ValueId, std::string>& tags, const std::map<ValueId, double>& times,
                double total_us, const std::string& indent, std::string& out, const std::string& prefix = "");

// A loop's body (`scan`) as a cluster nested where the loop node `loop` is drawn: its
// inputs, nodes (their ids prefixed `<loop>_`, so the page gives them no details of
// their own) and edges, dashed edges carrying the loop's operands in and the body's
// results (next carries, per-iteration outputs) back; nested loops inside it likewise.
void write_loop_body(const Node& n, const std::string& loop, const std::string& indent, std::string& out) {
  const Graph& body = *n.body;
  const std::vector<BufferKind> kinds = classify_values(body);
  const std::string prefix = loop + "_";
  out += indent + "subgraph \"cluster_" + prefix + "body\" {\n";
  out += indent + "  id=\"" + prefix + "body\"; label=\"" +
         dot_escape("@" + body.name() + ", " + std::to_string(n.int_attr("length")) + " iterations" +
                    (n.bool_attr("reverse") ? ", reversed" : "")) +
         "\"; style=\"dashed,rounded\"; color=\"#7060c0\";\n";
  std::vector<std::string> def(body.num_values());
  for (size_t k = 0; k < body.inputs().size(); ++k) {
    const ValueId v = body.inputs()[k].value;
    def[v] = prefix + "in" + std::to_string(k);
    out += indent + "  " + def[v] + " [shape=ellipse, label=\"" +
           dot_escape("%" + body.value(v).name + "\n" + type_string(body, v)) + "\"];\n";
  }
  for (size_t j = 0; j < body.nodes().size(); ++j) {
    write_node(body, static_cast<int>(j), kinds, {}, {}, 0, indent + "  ", out, prefix);
    for (ValueId r : body.node(static_cast<int>(j)).results) def[r] = prefix + "n" + std::to_string(j);
  }
  out += indent + "}\n";
  for (size_t j = 0; j < body.nodes().size(); ++j) {
    for (ValueId o : body.node(static_cast<int>(j)).operands) {
      out += indent + def[o] + " -> " + prefix + "n" + std::to_string(j) + ";\n";
    }
  }
  for (size_t k = 0; k < body.inputs().size(); ++k) {
    out += indent + loop + " -> " + def[body.inputs()[k].value] + " [style=dashed, constraint=false];\n";
  }
  for (ValueId v : body.outputs()) out += indent + def[v] + " -> " + loop + " [style=dashed, constraint=false];\n";
}

void write_node(const Graph& g, int i, const std::vector<BufferKind>& kinds,
                const std::map<ValueId, std::string>& tags, const std::map<ValueId, double>& times,
                double total_us, const std::string& indent, std::string& out, const std::string& prefix) {
  const Node& n = g.node(i);
  std::string label;
  if (!n.loc.path.empty()) label += last_path_step(n.loc.path) + "\n";
  if (n.op == Op::Fused && n.body) {
    label += "fused " + std::string(fused_kind_name(fused_kind(n))) + "\n";
    std::string ops;
    for (const Node& b : n.body->nodes()) ops += (ops.empty() ? "" : " ") + std::string(op_name(b.op));
    if (ops.size() > 40) ops = ops.substr(0, 37) + "...";
    label += ops;
  } else {
    label += std::string(op_name(n.op));
    for (const auto& [name, value] : n.attrs) label += "\n" + short_attr(name, value);
  }
  for (ValueId r : n.results) label += "\n" + type_string(g, r);
  std::string cls;
  const ValueId r = n.result();
  BufferKind kind = r != kNoValue ? kinds[r] : kinds[n.operands.back()];
  cls += kind_class(kind);
  std::string style = "rounded,filled";
  std::string extra;
  if (r != kNoValue) {  // outlined in its result's dtype colour (a fused kernel: orange)
    cls += " dtype-" + std::string(dtype_key(g, r).name);
    if (n.op != Op::Fused) extra += ", color=\"" + std::string(dtype_key(g, r).colour) + "\"";
  }
  if (n.op == Op::Fused) {
    cls += " fused";
    style += ",bold";
    extra += ", peripheries=2, color=\"#c05a00\", penwidth=1.5";
  }
  if (n.info().category == OpCategory::State) {
    cls += " state";
    extra += ", shape=hexagon";
  }
  if (r != kNoValue && tags.count(r)) {
    cls += " tagged";
    label += "\n#" + tags.at(r);
    extra += ", fontcolor=\"#7a4f00\"";
  }
  std::string fill = kNodeFill[static_cast<int>(kind)];
  if (r != kNoValue && times.count(r) && total_us > 0) {
    const double us = times.at(r), share = us / total_us;
    cls += " timed";
    fill = heat_colour(share);
    char buf[64];
    std::snprintf(buf, sizeof(buf), "\n%.1f us (%.1f%%)", us, 100 * share);
    label += buf;
  }
  const std::string id = prefix + "n" + std::to_string(i);
  out += indent + id + " [id=\"" + id + "\", class=\"" + cls + "\", style=\"" + style + "\", fillcolor=\"" + fill +
         "\"" + extra + ", label=\"" + dot_escape(label) + "\"];\n";
  if (n.op == Op::Scan && n.body) write_loop_body(n, id, indent, out);
}

void write_cluster(const Graph& g, const ClusterTree& t, int k,
                   const std::vector<BufferKind>& kinds,
                   const std::map<ValueId, std::string>& tags, const std::map<ValueId, double>& times,
                   double total_us, int depth, std::string& out) {
  const std::string indent(2 * depth, ' ');
  const Cluster& c = t.clusters[k];
  out += indent + "subgraph \"cluster_" + std::to_string(k) + "\" {\n";
  out += indent + "  id=\"c" + std::to_string(k) + "\"; label=\"" + dot_escape(c.name) +
         "\"; style=\"rounded,filled\"; fillcolor=\"#f7f5ff\"; color=\"#7060c0\";\n";
  for (int child : c.children) write_cluster(g, t, child, kinds, tags, times, total_us, depth + 1, out);
  for (int i : c.nodes) write_node(g, i, kinds, tags, times, total_us, indent + "  ", out);
  out += indent + "}\n";
}

}  // namespace

std::string graph_to_viz_dot(const Graph& g, const VizOptions& options) {
  const ClusterTree tree = internal::cluster_tree(g);
  const std::vector<BufferKind> kinds = classify_values(g);
  const std::map<ValueId, std::string> tags = internal::tags_by_value(g, options);
  std::map<ValueId, double> times;
  double total_us = 0;
  for (const auto& [name, us] : options.time_us) {
    total_us += us;
    if (auto v = g.find_value(name)) times[*v] = us;
  }
  std::string out = "digraph \"" + dot_escape(g.name()) + "\" {\n";
  // newrank: rank nodes globally rather than cluster by cluster; without it dot fails
  // ("trouble in init_rank") on some training steps whose edges cross nested clusters.
  out += "  rankdir=TB; newrank=true; nodesep=0.25; ranksep=0.35;\n";
  out += "  graph [fontname=\"sans-serif\", fontsize=11];\n";
  out += "  node [shape=box, fontname=\"monospace\", fontsize=10, margin=\"0.08,0.04\"];\n";
  out += "  edge [fontname=\"monospace\", fontsize=8, color=\"#666666\", arrowsize=0.6];\n";
  std::vector<std::string> def(g.num_values());
  for (size_t i = 0; i < g.inputs().size(); ++i) {
    const Input& in = g.inputs()[i];
    const std::string id = "in" + std::to_string(i);
    def[in.value] = id;
    std::string label = "%" + g.value(in.value).name + "\n" + type_string(g, in.value);
    if (in.kind != InputKind::data) label += "\n{" + std::string(input_kind_name(in.kind)) + "}";
    if (auto it = tags.find(in.value); it != tags.end()) label += "\n#" + it->second;
    const std::string fill = in.kind == InputKind::data ? "#ffffff" : kNodeFill[static_cast<int>(kinds[in.value])];
    const internal::DTypeKey& key = dtype_key(g, in.value);
    out += "  " + id + " [id=\"" + id + "\", shape=ellipse, style=filled, fillcolor=\"" +
           fill + "\", color=\"" + key.colour + "\", label=\"" + dot_escape(label) + "\"];\n";
  }
  for (int k : tree.top) write_cluster(g, tree, k, kinds, tags, times, total_us, 1, out);
  for (int i : tree.top_nodes) write_node(g, i, kinds, tags, times, total_us, "  ", out);
  int edge = 0;
  for (size_t i = 0; i < g.nodes().size(); ++i) {
    const Node& n = g.node(i);
    for (ValueId r : n.results) def[r] = "n" + std::to_string(i);
    for (ValueId o : n.operands) {
      // Each edge in its value's dtype colour (an assign's target: dashed green).
      const internal::DTypeKey& key = dtype_key(g, o);
      const std::string attrs = n.op == Op::Assign && o == n.operands[0]
                                    ? ", style=dashed, color=\"#00806a\", constraint=false"
                                    : ", class=\"dtype-" + std::string(key.name) + "\", color=\"" + key.colour + "\"";
      out += "  " + def[o] + " -> n" + std::to_string(i) + " [id=\"e" + std::to_string(edge++) +
             "\", label=\"" + dot_escape(g.value(o).type ? g.value(o).type->shape.to_string() : "?") +
             "\"" + attrs + "];\n";
    }
  }
  for (size_t i = 0; i < g.outputs().size(); ++i) {
    const std::string id = "out" + std::to_string(i);
    out += "  " + id + " [id=\"" + id + "\", shape=doublecircle, fixedsize=true, width=0.5, label=\"out " +
           std::to_string(i) + "\"];\n";
    const internal::DTypeKey& key = dtype_key(g, g.outputs()[i]);
    out += "  " + def[g.outputs()[i]] + " -> " + id + " [id=\"e" + std::to_string(edge++) + "\", class=\"dtype-" +
           key.name + "\", color=\"" + key.colour + "\"];\n";
  }
  return out + "}\n";
}

}  // namespace weft::viz
