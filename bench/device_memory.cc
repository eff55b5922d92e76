#include "bench/device_memory.h"

#include <algorithm>
#include <map>
#include <sstream>

#include "ir/fused_kind.h"

namespace weft::bench {
namespace {

// "conv2d", or a fused kernel's kind and its body's ops: "fused row (sub, mul, sum)".
std::string producer(const Node& node) {
  if (node.op != Op::Fused || node.body == nullptr) return std::string(op_name(node.op));
  std::vector<std::string> ops;
  for (const Node& n : node.body->nodes()) {
    const std::string name(op_name(n.op));
    if (std::find(ops.begin(), ops.end(), name) == ops.end()) ops.push_back(name);
  }
  std::string s = "fused " + std::string(fused_kind_name(fused_kind(node))) + " (";
  for (size_t i = 0; i < ops.size() && i < 5; ++i) s += (i ? ", " : "") + ops[i];
  return s + (ops.size() > 5 ? ", ...)" : ")");
}

int64_t aligned(int64_t bytes, int64_t alignment) { return (bytes + alignment - 1) / alignment * alignment; }

// The buffers live at node `i`: one per offset (values sharing a buffer in place, or a
// stored concat and its parts, count once, at the largest of them), with the value that
// holds it.
std::map<int64_t, LiveValue> live_at(const Graph& g, const MemoryPlan& plan, const ValueLifetimes& l, int i) {
  std::map<int64_t, LiveValue> buffers;
  for (ValueId v = 0; v < g.num_values(); ++v) {
    if (l.def[v] < 0 || l.def[v] > i || l.last[v] < i || plan.offset[v] < 0) continue;
    const Type& t = g.type(v);
    const int64_t bytes = aligned(static_cast<int64_t>(t.bytes()), plan.alignment);
    LiveValue& b = buffers[plan.offset[v]];
    if (bytes <= b.bytes) continue;
    b = {g.value(v).name, producer(g.node(g.value(v).node)), t.to_string(), bytes, l.def[v], l.last[v]};
  }
  return buffers;
}

std::string mib(int64_t bytes) {
  std::ostringstream s;
  s.setf(std::ios::fixed);
  s.precision(1);
  s << static_cast<double>(bytes) / (1 << 20) << " MiB";
  return s.str();
}

}  // namespace

StatusOr<StepMemory> step_memory(const Graph& step, const codegen::LowerOptions& options, int rows) {
  WEFT_ASSIGN_OR_RETURN(codegen::Lowering lowered, codegen::lower_to_program(step, options));
  StepMemory m;
  m.device = cuda::device_memory(lowered.program);
  m.invocations = static_cast<int>(lowered.program.code.size());
  for (const Program& body : lowered.program.bodies) {
    m.body_arenas += body.arena_bytes;
    m.invocations += static_cast<int>(body.code.size());
  }
  m.lower_bound = lowered.plan.lower_bound_bytes;
  const Graph& g = lowered.graph;
  m.nodes = static_cast<int>(g.nodes().size());
  const ValueLifetimes l = value_lifetimes(g, lowered.plan.external);
  int64_t most = -1;
  for (int i = 0; i < m.nodes; ++i) {
    int64_t bytes = 0;
    for (const auto& [offset, b] : live_at(g, lowered.plan, l, i)) bytes += b.bytes;
    if (bytes > most) most = bytes, m.peak_node = i;
  }
  if (m.nodes == 0) return m;
  for (auto& [offset, b] : live_at(g, lowered.plan, l, m.peak_node)) m.peak.push_back(std::move(b));
  std::stable_sort(m.peak.begin(), m.peak.end(), [](const LiveValue& a, const LiveValue& b) { return a.bytes > b.bytes; });
  for (size_t k = static_cast<size_t>(std::max(rows, 0)); k < m.peak.size(); ++k) m.peak_rest += m.peak[k].bytes;
  if (m.peak.size() > static_cast<size_t>(std::max(rows, 0))) m.peak.resize(static_cast<size_t>(std::max(rows, 0)));
  return m;
}

std::string format_step_memory(const StepMemory& m) {
  const cuda::DeviceMemory& d = m.device;
  std::ostringstream s;
  const auto line = [&](const std::string& what, int64_t bytes) {
    s << "  " << what << ": " << bytes << " bytes (" << mib(bytes) << ")\n";
  };
  line("arena", d.arena);
  line("inputs block", d.inputs);
  line("loop bodies (" + std::to_string(d.loops) + " bound; arenas " + std::to_string(m.body_arenas) + " bytes)",
       d.loop_bodies);
  line("update snapshots", d.snapshots);
  line("constants", d.constants);
  line("cuBLAS workspace", d.cublas_workspace);
  s << "  estimate: " << d.known() << " bytes (" << mib(d.known()) << ")";
  s << (d.convolutions > 0 ? " + the cuDNN workspaces of " + std::to_string(d.convolutions) +
                                 " convolutions beyond the arena's free bytes"
                           : "")
    << "; not counted: persistent loops' arrays and barriers (WEFT_PERSISTENT_LOOPS=1), prefetch slots, "
       "a library kernel's workspace beyond cuBLAS's 4 MiB\n";
  s << "  invocations: " << m.invocations << " (the bodies' once each)\n";
  s << "  arena peak: " << m.lower_bound << " bytes (" << mib(m.lower_bound) << ") live at node " << m.peak_node
    << " of " << m.nodes << "; largest:\n";
  for (const LiveValue& v : m.peak) {
    s << "    " << mib(v.bytes) << "  %" << v.name << " " << v.type << " = " << v.op << "  [" << v.def << ", "
      << (v.last == m.nodes ? std::string("end") : std::to_string(v.last)) << "]\n";
  }
  if (m.peak_rest > 0) s << "    " << mib(m.peak_rest) << "  the others\n";
  return s.str();
}

}  // namespace weft::bench
