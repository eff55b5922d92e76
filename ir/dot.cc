#include "ir/dot.h"

#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>

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


namespace {

// A temporary file named from $TMPDIR (or /tmp), open for writing; removed by its owner.
struct TempFile {
  std::string path;
  int fd = -1;
  ~TempFile() {
    if (fd >= 0) ::close(fd);
    if (!path.empty()) std::remove(path.c_str());
  }
};

Status make_temp(const char* tag, TempFile& t) {
  const char* tmp = std::getenv("TMPDIR");
  std::string name = std::string(tmp && *tmp ? tmp : "/tmp") + "/weft-" + tag + "-XXXXXX";
  t.fd = ::mkstemp(name.data());
  if (t.fd < 0) return Error{"cannot create a temporary file for dot: " + std::string(std::strerror(errno))};
  t.path = name;
  return Status::ok_status();
}

std::string read_all(int fd) {
  std::string text;
  char buf[8192];
  for (ssize_t n; (n = ::read(fd, buf, sizeof(buf))) > 0;) text.append(buf, static_cast<size_t>(n));
  return text;
}

}  // namespace

StatusOr<std::string> dot_to_svg(const std::string& dot) {
  // The DOT text and dot's messages go through files, its SVG through a pipe: no shell, and
  // no two pipes to drain at once.
  TempFile input, messages;
  WEFT_RETURN_IF_ERROR(make_temp("dot", input));
  WEFT_RETURN_IF_ERROR(make_temp("dot-messages", messages));
  for (size_t done = 0; done < dot.size();) {
    const ssize_t n = ::write(input.fd, dot.data() + done, dot.size() - done);
    if (n <= 0) return Error{"cannot write the temporary file '" + input.path + "': " + std::strerror(errno)};
    done += static_cast<size_t>(n);
  }
  int out[2];
  if (::pipe(out) != 0) return Error{std::string("cannot run dot: pipe: ") + std::strerror(errno)};
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, out[1], STDOUT_FILENO);
  posix_spawn_file_actions_adddup2(&actions, messages.fd, STDERR_FILENO);
  posix_spawn_file_actions_addclose(&actions, out[0]);
  std::string program = "dot", format = "-Tsvg", path = input.path;
  char* argv[] = {program.data(), format.data(), path.data(), nullptr};
  pid_t pid = 0;
  const int spawned = posix_spawnp(&pid, "dot", &actions, nullptr, argv, environ);
  posix_spawn_file_actions_destroy(&actions);
  ::close(out[1]);
  const std::string svg = read_all(out[0]);
  ::close(out[0]);
  int status = 0;
  if (spawned == 0) ::waitpid(pid, &status, 0);
  if (spawned != 0) {
    return Error{"graphviz's `dot` is not on PATH; install the Debian package `graphviz` (tools/setup installs it)"};
  }
  ::lseek(messages.fd, 0, SEEK_SET);
  const std::string said = read_all(messages.fd);
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) return Error{"graphviz's dot failed: " + said};
  const size_t start = svg.find("<svg");
  if (start == std::string::npos) return Error{"graphviz's dot printed no SVG: " + said};
  return svg.substr(start);
}

}  // namespace weft
