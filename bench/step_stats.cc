#include "bench/step_stats.h"

#include <algorithm>
#include <map>
#include <memory>
#include <optional>

#include "passes/cse.h"
#include "passes/decompose_composites.h"
#include "passes/pipeline.h"

namespace weft::bench {
namespace {

/// The product of `s`'s dims other than dim `skip`.
int64_t all_but(const Shape& s, int skip) {
  int64_t p = 1;
  for (int i = 0; i < s.rank(); ++i) p *= i == skip ? 1 : s[i];
  return p;
}

/// The GEMM of one contraction node, or nullopt for any other op.
std::optional<std::array<int64_t, 4>> node_gemm(const Graph& g, const Node& n) {
  auto shape = [&](ValueId v) { return g.type(v).shape; };
  switch (n.op) {
    case Op::Matmul: {
      const Shape a = shape(n.operands[0]), y = shape(n.result());
      const int r = y.rank();
      int64_t batch = 1;
      for (int i = 0; i < r - 2; ++i) batch *= y[i];
      // k is a's last dim, or with transpose_a (aᵀ·b) the one before it.
      const int64_t k = a[a.rank() - (n.bool_attr("transpose_a") ? 2 : 1)];
      return std::array<int64_t, 4>{y[r - 2], y[r - 1], k, batch};
    }
    // Convolutions over any number of spatial dims: the product of every dim but one.
    case Op::Conv: {
      const Shape w = shape(n.operands[1]), y = shape(n.result());
      const int64_t g_ = n.int_attr("groups");
      return std::array<int64_t, 4>{all_but(y, 1), w[0] / g_, all_but(w, 0), g_};
    }
    case Op::ConvBackwardInput: {
      const Shape dy = shape(n.operands[0]), w = shape(n.operands[1]);
      const int64_t g_ = n.int_attr("groups");
      return std::array<int64_t, 4>{all_but(dy, 1), all_but(w, 0), w[0] / g_, g_};
    }
    case Op::ConvBackwardWeight: {
      const Shape dy = shape(n.operands[1]), w = shape(n.result());
      const int64_t g_ = n.int_attr("groups");
      return std::array<int64_t, 4>{w[0] / g_, all_but(w, 0), all_but(dy, 1), g_};
    }
    default:
      return std::nullopt;
  }
}

/// Peak bytes of node results alive at once, running the nodes in order.
int64_t peak_live_bytes(const Graph& g) {
  std::map<ValueId, int> last_use;
  const std::vector<Node>& nodes = g.nodes();
  for (int i = 0; i < static_cast<int>(nodes.size()); ++i) {
    for (ValueId v : nodes[i].operands) last_use[v] = i;
  }
  for (ValueId v : g.outputs()) last_use[v] = static_cast<int>(nodes.size());
  std::vector<std::vector<ValueId>> dies(nodes.size() + 1);
  int64_t live = 0, peak = 0;
  for (int i = 0; i < static_cast<int>(nodes.size()); ++i) {
    for (ValueId r : nodes[i].results) {
      live += static_cast<int64_t>(g.type(r).bytes());
      auto it = last_use.find(r);
      // A result nobody reads dies at once, after being counted.
      dies[it == last_use.end() ? i : it->second].push_back(r);
    }
    peak = std::max(peak, live);
    for (ValueId v : dies[i]) live -= static_cast<int64_t>(g.type(v).bytes());
  }
  return peak;
}

}  // namespace

namespace {

// The GEMMs of g's nodes, each counted `times` (a loop's body once per iteration).
void add_gemms(const Graph& g, int64_t times, std::vector<std::array<int64_t, 4>>& out) {
  for (const Node& n : g.nodes()) {
    if (n.op == Op::Scan) {
      add_gemms(*n.body, times * n.int_attr("length"), out);
      continue;
    }
    std::optional<std::array<int64_t, 4>> gemm = node_gemm(g, n);
    if (!gemm) continue;
    (*gemm)[3] *= times;
    auto same = std::find_if(out.begin(), out.end(), [&](const std::array<int64_t, 4>& s) {
      return s[0] == (*gemm)[0] && s[1] == (*gemm)[1] && s[2] == (*gemm)[2];
    });
    if (same != out.end()) {
      (*same)[3] += (*gemm)[3];
    } else {
      out.push_back(*gemm);
    }
  }
}

}  // namespace

std::vector<std::array<int64_t, 4>> gemm_shapes(const Graph& g) {
  // The contractions the CPU runs: its lowering writes composites back as primitives
  // (decompose-composites; attention's matmuls among them; what it keeps, the losses,
  // holds no product), and nodes that compute the same product are one (cse).
  Graph primitives = g;
  Pipeline cpu_contractions;
  cpu_contractions.add(std::make_unique<DecomposeCompositesPass>()).add(std::make_unique<CsePass>());
  const StatusOr<bool> ran = cpu_contractions.run(primitives);
  WEFT_CHECK(ran.ok(), "step_stats: decompose-composites and cse failed on a step graph: " +
                           (ran.ok() ? std::string() : ran.error().to_string()));
  std::vector<std::array<int64_t, 4>> out;
  add_gemms(primitives, 1, out);
  return out;
}

StepStats step_stats(const Trainer& trainer) {
  StepStats st;
  const Graph& g = trainer.step_graph();
  st.gemm_shapes = gemm_shapes(g);
  for (const auto& s : st.gemm_shapes) {
    st.matmul_flops += 2.0 * static_cast<double>(s[0]) * static_cast<double>(s[1]) *
                       static_cast<double>(s[2]) * static_cast<double>(s[3]);
  }
  int64_t values = 0;
  for (const auto& [name, t] : trainer.values()) values += static_cast<int64_t>(t.bytes());
  for (const ParamInfo& p : trainer.model().parameters()) {
    if (p.kind == InputKind::param) {
      st.param_bytes += static_cast<int64_t>(trainer.values().at(p.name).bytes());
    }
  }
  st.state_bytes = values + st.param_bytes;  // the values, plus one gradient per parameter
  int64_t inputs = 0;
  for (const Input& in : g.inputs()) inputs += static_cast<int64_t>(g.type(in.value).bytes());
  st.planned_bytes = inputs + peak_live_bytes(g);
  return st;
}

}  // namespace weft::bench
