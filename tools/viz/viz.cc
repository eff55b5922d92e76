#include "tools/viz/viz.h"

#include <cstdio>
#include <map>
#include <vector>

#include "ir/dot.h"
#include "ir/fused_kind.h"
#include "ir/text.h"
#include "ir/text_util.h"
#include "tools/viz/memory_picture.h"
#include "tools/viz/viewer_assets.h"
#include "tools/viz/viz_internal.h"

namespace weft::viz {
namespace {

using internal::Cluster;
using internal::ClusterTree;
using internal::kNodeFill;
using internal::type_string;

// ---- JSON for the page's script -------------------------------------------------------

std::string json(const std::string& s) {
  std::string out = "\"";
  for (unsigned char c : s) {
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\t': out += "\\t"; break;
      case '<': out += "\\u003c"; break;  // never `</script>` inside the block
      case '>': out += "\\u003e"; break;
      case '&': out += "\\u0026"; break;
      default:
        if (c < 0x20) {
          char buf[8];
          std::snprintf(buf, sizeof(buf), "\\u%04x", c);
          out += buf;
        } else {
          out += static_cast<char>(c);
        }
    }
  }
  return out + "\"";
}

std::string location_json(const Location& loc) {
  std::string where;
  if (loc.known()) {
    where = (loc.file.empty() ? "" : loc.file + ":") + std::to_string(loc.line) + ":" +
            std::to_string(loc.col);
  }
  return "\"loc\":" + json(where) + ",\"path\":" + json(loc.path);
}

// Where a value lives: an arena buffer, a graph input, or written into an input's own
// buffer by an update in place (MemoryPlan::external).
std::string placement_json(const Graph& g, const MemoryPlan* plan, ValueId v,
                           const std::vector<int>& assigned_to) {
  if (!plan) return "";
  const int64_t a = std::max<int64_t>(plan->alignment, 1);
  if (v < static_cast<ValueId>(plan->offset.size()) && plan->offset[v] >= 0) {
    const int64_t bytes = static_cast<int64_t>(g.type(v).bytes());
    return ",\"offset\":" + std::to_string(plan->offset[v]) + ",\"bytes\":" +
           std::to_string(bytes) + ",\"reserved\":" + std::to_string((bytes + a - 1) / a * a);
  }
  if (g.input_index(v) >= 0) return ",\"placement\":\"caller's buffer (graph input)\"";
  if (assigned_to[v] >= 0) {
    return ",\"placement\":" +
           json("written straight into %" + g.value(g.inputs()[assigned_to[v]].value).name +
                "'s buffer (update in place)");
  }
  return ",\"placement\":\"not in the arena\"";
}

std::string page_data_json(const Graph& g, const VizOptions& options, const ClusterTree& tree,
                           const std::vector<BufferKind>& kinds,
                           const std::map<ValueId, std::string>& tags) {
  std::vector<int> assigned_to(g.num_values(), -1);
  for (const Node& n : g.nodes()) {
    if (n.op == Op::Assign) assigned_to[n.operands[1]] = g.input_index(n.operands[0]);
  }
  auto value_json = [&](ValueId v) {
    std::string out = "{\"name\":" + json("%" + g.value(v).name) + ",\"type\":" +
                      json(type_string(g, v)) + ",\"kind\":" +
                      json(std::string(buffer_kind_name(kinds[v])));
    if (auto it = tags.find(v); it != tags.end()) out += ",\"tag\":" + json(it->second);
    return out + placement_json(g, options.plan, v, assigned_to) + "}";
  };
  std::string out = "{\"graph\":" + json(g.name()) + ",\"inputs\":[";
  for (size_t i = 0; i < g.inputs().size(); ++i) {
    const Input& in = g.inputs()[i];
    out += std::string(i ? "," : "") + "{\"value\":" + value_json(in.value) + ",\"input_kind\":" +
           json(std::string(input_kind_name(in.kind))) + "," + location_json(in.loc) + "}";
  }
  out += "],\"nodes\":[";
  for (size_t i = 0; i < g.nodes().size(); ++i) {
    const Node& n = g.node(i);
    out += std::string(i ? "," : "") + "{\"op\":" + json(std::string(op_name(n.op))) +
           ",\"attrs\":[";
    bool first = true;
    for (const auto& [name, value] : n.attrs) {
      out += std::string(first ? "" : ",") + "[" + json(name) + "," +
             json(attribute_to_string(value)) + "]";
      first = false;
    }
    out += "],\"operands\":[";
    for (size_t k = 0; k < n.operands.size(); ++k) out += (k ? "," : "") + value_json(n.operands[k]);
    out += "],\"results\":[";
    for (size_t k = 0; k < n.results.size(); ++k) out += (k ? "," : "") + value_json(n.results[k]);
    out += "]," + location_json(n.loc) + ",\"cluster\":" + std::to_string(tree.of_node[i]);
    if (n.op == Op::Fused && n.body) {
      PrintOptions print;
      print.locations = false;
      out += ",\"fused\":{\"kind\":" + json(std::string(fused_kind_name(fused_kind(n)))) + ",\"ops\":" +
             std::to_string(n.body->nodes().size()) + ",\"body\":" +
             json(print_graph(*n.body, print)) + "}";
    }
    out += "}";
  }
  out += "],\"clusters\":[";
  for (size_t k = 0; k < tree.clusters.size(); ++k) {
    const Cluster& c = tree.clusters[k];
    out += std::string(k ? "," : "") + "{\"name\":" + json(c.name) + ",\"parent\":" +
           std::to_string(c.parent) + "}";
  }
  out += "],\"outputs\":[";
  for (size_t i = 0; i < g.outputs().size(); ++i) {
    out += (i ? "," : "") + json("%" + g.value(g.outputs()[i]).name);
  }
  out += "]";
  if (options.plan) {
    const MemoryPlan& p = *options.plan;
    out += ",\"plan\":{\"arena\":" + std::to_string(p.arena_bytes) + ",\"naive\":" +
           std::to_string(p.naive_bytes) + ",\"bound\":" + std::to_string(p.lower_bound_bytes) +
           ",\"strategy\":" + json(p.strategy) + "}";
  }
  return out + "}";
}

}  // namespace

StatusOr<std::string> render_dot_to_svg(const std::string& dot) {
  StatusOr<std::string> svg = dot_to_svg(dot);
  if (!svg.ok()) return Error{"cannot lay out the graph: " + svg.error().message};
  return svg;
}

namespace {

// Graphviz writes `<g id="n17" class="node fused ...">` for the DOT ids above; give each
// group the data attribute the page's script and tests use, drop the `<title>`s (the
// page shows its own details) and graphviz's comments.
std::string annotate_svg(const std::string& svg) {
  std::string out;
  out.reserve(svg.size() + svg.size() / 8);
  size_t pos = 0;
  while (pos < svg.size()) {
    if (svg.compare(pos, 7, "<title>") == 0) {
      size_t end = svg.find("</title>", pos);
      if (end != std::string::npos) {
        pos = end + 8;
        if (pos < svg.size() && svg[pos] == '\n') ++pos;
        continue;
      }
    }
    if (svg.compare(pos, 4, "<!--") == 0) {
      size_t end = svg.find("-->", pos);
      if (end != std::string::npos) {
        pos = end + 3;
        if (pos < svg.size() && svg[pos] == '\n') ++pos;
        continue;
      }
    }
    if (svg.compare(pos, 7, "<g id=\"") == 0) {
      const size_t id_start = pos + 7, id_end = svg.find('"', id_start);
      const size_t tag_end = id_end == std::string::npos ? id_end : svg.find('>', id_end);
      if (tag_end == std::string::npos || id_end == id_start) {
        out += svg[pos++];  // not an element graphviz writes for weft's ids
        continue;
      }
      const std::string id = svg.substr(id_start, id_end - id_start);
      std::string rest = svg.substr(id_end + 1, tag_end - id_end - 1);  // ` class="..."`
      for (size_t dash = rest.find("&#45;"); dash != std::string::npos; dash = rest.find("&#45;")) {
        rest.replace(dash, 5, "-");  // graphviz escapes the `-` of `kind-gradient`
      }
      auto digits = [&](size_t from) {
        return id.size() > from && id.find_first_not_of("0123456789", from) == std::string::npos;
      };
      auto replace_class = [&](const std::string& from, const std::string& to) {
        size_t at = rest.find("class=\"" + from);
        if (at != std::string::npos) rest.replace(at + 7, from.size(), to);
      };
      std::string data;
      if (id[0] == 'n' && digits(1)) {
        data = " data-node=\"" + id.substr(1) + "\"";
      } else if (id.rfind("in", 0) == 0 && digits(2)) {
        replace_class("node", "input");
        data = " data-input=\"" + id.substr(2) + "\"";
      } else if (id.rfind("out", 0) == 0 && digits(3)) {
        replace_class("node", "output");
        data = " data-output=\"" + id.substr(3) + "\"";
      } else if (id[0] == 'c' && digits(1)) {
        data = " data-cluster=\"" + id.substr(1) + "\"";
      } else if (id[0] == 'e' && digits(1)) {
        // The edge's endpoints are in the title graphviz writes next: `n3&#45;&gt;n5`.
        const size_t t = svg.find("<title>", tag_end), t_end = svg.find("</title>", tag_end);
        const std::string arrow = "&#45;&gt;";
        if (t != std::string::npos && t_end != std::string::npos && t < t_end) {
          const std::string title = svg.substr(t + 7, t_end - t - 7);
          const size_t a = title.find(arrow);
          if (a != std::string::npos) {
            data = " data-from=\"" + title.substr(0, a) + "\" data-to=\"" +
                   title.substr(a + arrow.size()) + "\"";
          }
        }
      }
      out += "<g id=\"" + id + "\"" + rest + data + ">";
      pos = tag_end + 1;
      continue;
    }
    out += svg[pos++];
  }
  return out;
}

// The legend's dtype keys: edges and outlines by dtype (f64 only when the graph has one).
std::string dtype_legend(const Graph& g) {
  bool has_f64 = false;
  for (ValueId v = 0; v < g.num_values(); ++v) has_f64 |= std::string(internal::dtype_key(g, v).name) == "f64";
  std::string out = "<span class=\"dtype-legend\">dtype:";
  for (const internal::DTypeKey& key : internal::kDTypeKeys) {
    if (std::string(key.name) == "f64" && !has_f64) continue;
    out += "<span class=\"dtype-key\" data-dtype=\"" + std::string(key.name) + "\"><i style=\"background:" +
           key.colour + "\"></i>" + key.label + "</span>";
  }
  return out + "</span>";
}

}  // namespace

StatusOr<std::string> graph_to_html(const Graph& g, const VizOptions& options) {
  WEFT_ASSIGN_OR_RETURN(std::string svg, render_dot_to_svg(graph_to_viz_dot(g, options)));
  const ClusterTree tree = internal::cluster_tree(g);
  const std::vector<BufferKind> kinds = classify_values(g);
  const std::map<ValueId, std::string> tags = internal::tags_by_value(g, options);
  const std::string title = options.title.empty() ? "@" + g.name() : options.title;

  std::string summary = std::to_string(g.nodes().size()) + " nodes, " +
                        std::to_string(g.inputs().size()) + " inputs, " +
                        std::to_string(g.outputs().size()) + " outputs";
  int fused = 0;
  for (const Node& n : g.nodes()) fused += n.op == Op::Fused;
  if (fused) summary += ", " + std::to_string(fused) + " fused kernels";
  if (!tree.clusters.empty()) summary += ", " + std::to_string(tree.clusters.size()) + " clusters";
  if (!options.backend.empty()) summary += " · backend " + options.backend;
  if (!options.after_pass.empty()) summary += " · after " + options.after_pass;
  if (options.plan) summary += " · arena " + format_bytes(options.plan->arena_bytes);

  std::string html = "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n";
  html += "<title>" + html_escape(title) + " · weft</title>\n<style>\n";
  html += kViewerCss;
  html += "</style>\n</head>\n<body>\n<header><h1>" + html_escape(title) + "</h1><span id=\"summary\">" +
          html_escape(summary) + "</span></header>\n";
  html += "<nav><button class=\"tab active\" data-tab=\"graph\">Graph</button>";
  if (options.plan) html += "<button class=\"tab\" data-tab=\"memory\">Memory plan</button>";
  html += "<span class=\"tools\"><button id=\"zoom-out\" title=\"zoom out\">&#8722;</button>"
          "<button id=\"zoom-fit\" title=\"fit the width\">fit</button>"
          "<button id=\"zoom-in\" title=\"zoom in\">+</button>";
  if (!tree.clusters.empty()) {
    html += "<button id=\"collapse-all\">collapse clusters</button>"
            "<button id=\"expand-all\">expand clusters</button>";
  }
  html += "<input id=\"search\" type=\"search\" placeholder=\"find %value or op\"></span></nav>\n";
  html += "<main>\n<section id=\"graph-view\" class=\"view\"><div id=\"graph\">\n" +
          annotate_svg(svg) + "</div></section>\n";
  if (options.plan) {
    MemoryPictureOptions picture;
    picture.node_links = true;
    html += "<section id=\"memory-view\" class=\"view\" hidden><div id=\"memory\">\n" +
            memory_plan_svg(g, *options.plan, picture) + "</div><pre id=\"plan-report\">" +
            html_escape(options.plan->report()) + "</pre></section>\n";
  }
  html += "<aside id=\"details\"><p class=\"hint\">Hover over a node for its details; click to "
          "keep them. Click a cluster's title to collapse it.</p></aside>\n</main>\n";
  html += "<div id=\"legend\">";
  for (int k = 0; k < kNumBufferKinds; ++k) {
    html += "<span><i style=\"background:" + std::string(kNodeFill[k]) + "\"></i>" +
            std::string(buffer_kind_name(static_cast<BufferKind>(k))) + "</span>";
  }
  html += "<span><i class=\"fused-key\"></i>fused kernel</span>";
  html += dtype_legend(g) + "</div>\n";
  html += "<script type=\"application/json\" id=\"weft-data\">" +
          page_data_json(g, options, tree, kinds, tags) + "</script>\n<script>\n";
  html += kViewerJs;
  html += "</script>\n</body>\n</html>\n";
  return html;
}

}  // namespace weft::viz
