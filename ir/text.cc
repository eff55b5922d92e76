// The `.wir` printer. The parser is in text_parser.cc, its tokenizer in text_lexer.cc.
#include "ir/text.h"

#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>

#include "ir/text_lexer.h"

namespace weft {
namespace {

std::string quote(const std::string& s) { return attribute_to_string(Attribute(s)); }

// `%h`, or `%"a b"` when the name holds characters an unquoted name cannot.
std::string name_ref(char sigil, const std::string& name) {
  bool plain = !name.empty();
  for (char c : name) plain = plain && is_name_char(c);
  return sigil + (plain ? name : quote(name));
}

// How each value of `g` is printed, by ValueId: `%name`, or under PrintOptions::renumber
// `%inK` for the K-th graph input and `%N` for the N-th node result.
using ValueRefs = std::vector<std::string>;

ValueRefs value_refs(const Graph& g, const PrintOptions& options) {
  ValueRefs refs(static_cast<size_t>(g.num_values()));
  if (!options.renumber) {
    for (ValueId v = 0; v < g.num_values(); ++v) refs[v] = name_ref('%', g.value(v).name);
    return refs;
  }
  for (size_t i = 0; i < g.inputs().size(); ++i) refs[g.inputs()[i].value] = "%in" + std::to_string(i);
  int next = 0;
  for (const Node& n : g.nodes()) {
    for (ValueId r : n.results) refs[r] = "%" + std::to_string(next++);
  }
  return refs;
}

std::string types_list(const std::vector<Type>& types) {
  std::string out;
  for (size_t i = 0; i < types.size(); ++i) out += (i ? ", " : "") + types[i].to_string();
  return out;
}

std::string location_text(const Location& loc) {
  std::string out = " loc(";
  if (loc.file.empty() && loc.line == 0 && loc.col == 0) {
    out += "unknown";
  } else {
    out += quote(loc.file) + ":" + std::to_string(loc.line) + ":" + std::to_string(loc.col);
  }
  if (!loc.path.empty()) out += ", " + quote(loc.path);
  return out + ")";
}

// `%x: f32[4]`, with ` {param}` or ` {state}` after the type for those kinds: a graph's
// inputs and a body's block arguments alike (the parser reads both with one rule).
std::string input_text(const Graph& g, const ValueRefs& refs, const Input& input) {
  std::string out = refs[input.value] + ": " + g.type(input.value).to_string();
  if (input.kind != InputKind::data) out += " {" + std::string(input_kind_name(input.kind)) + "}";
  return out;
}

std::string header(const Graph& g, const ValueRefs& refs) {
  std::string out = "graph " + name_ref('@', g.name()) + "(";
  for (size_t i = 0; i < g.inputs().size(); ++i) {
    out += (i ? ", " : "") + input_text(g, refs, g.inputs()[i]);
  }
  out += ")";
  std::vector<Type> output_types = g.declared_output_types();
  bool show = !output_types.empty();
  if (!show) {
    show = true;
    for (ValueId v : g.outputs()) {
      if (!g.value(v).type) {
        show = false;
        break;
      }
      output_types.push_back(*g.value(v).type);
    }
  }
  if (show) out += " -> (" + types_list(output_types) + ")";
  return out + " {\n";
}

std::string statement(const Graph& g, const ValueRefs& refs, const Node& n,
                      const PrintOptions& options, const std::string& indent);

// A fused node's body: `({`, `^body(%a: f32[4], ...):`, its statements, `return`, `})`.
std::string region(const Graph& body, const PrintOptions& options, const std::string& indent) {
  const ValueRefs refs = value_refs(body, options);
  std::string out = " ({\n" + indent + "  ^" + body.name() + "(";
  for (size_t i = 0; i < body.inputs().size(); ++i) {
    out += (i ? ", " : "") + input_text(body, refs, body.inputs()[i]);
  }
  out += "):\n";
  for (const Node& n : body.nodes()) out += statement(body, refs, n, options, indent + "    ");
  out += indent + "    return";
  for (size_t i = 0; i < body.outputs().size(); ++i) {
    out += (i ? ", " : " ") + refs[body.outputs()[i]];
  }
  return out + "\n" + indent + "})";
}

std::string statement(const Graph& g, const ValueRefs& refs, const Node& n,
                      const PrintOptions& options, const std::string& indent) {
  std::string out = indent;
  for (size_t k = 0; k < n.results.size(); ++k) {
    out += refs[n.results[k]] + (k + 1 < n.results.size() ? ", " : " = ");
  }
  out += std::string(op_name(n.op)) + "(";
  for (size_t i = 0; i < n.operands.size(); ++i) {
    out += (i ? ", " : "") + refs[n.operands[i]];
  }
  out += ")";
  if (!n.attrs.empty()) {
    out += " {";
    bool first = true;
    for (const auto& [name, value] : n.attrs) {
      out += (first ? "" : ", ") + name + "=" + attribute_to_string(value);
      first = false;
    }
    out += "}";
  }
  bool typed = !n.results.empty();
  for (ValueId r : n.results) typed = typed && g.value(r).type.has_value();
  if (typed) {
    out += " :";
    for (size_t k = 0; k < n.results.size(); ++k) {
      out += (k ? ", " : " ") + g.value(n.results[k]).type->to_string();
    }
  }
  if (n.body) out += region(*n.body, options, indent);
  if (options.locations) out += location_text(n.loc);
  return out + "\n";
}

}  // namespace

std::string print_graph(const Graph& g, const PrintOptions& options) {
  const ValueRefs refs = value_refs(g, options);
  std::string out = header(g, refs);
  for (const Node& n : g.nodes()) out += statement(g, refs, n, options, "  ");
  out += "  return";
  for (size_t i = 0; i < g.outputs().size(); ++i) {
    out += (i ? ", " : " ") + refs[g.outputs()[i]];
  }
  return out + "\n}\n";
}

StatusOr<Graph> read_graph_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return Error{"cannot read '" + path + "': " + std::strerror(errno)};
  std::ostringstream text;
  text << in.rdbuf();
  return parse_graph(text.str(), path);
}

}  // namespace weft
