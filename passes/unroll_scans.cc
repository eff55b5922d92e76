#include "passes/unroll_scans.h"

#include "ir/scan.h"
#include "passes/cse.h"
#include "passes/dce.h"
#include "passes/mask_loop_exits.h"

#include <algorithm>
#include <functional>
#include <string>
#include <vector>

namespace weft {
namespace {

struct Unroller {
  Graph& out;
  const Graph& top;  // names of its values stay reserved for the nodes they name

  // A name for value `name` of iteration `step` of the loop whose first result is `loop`.
  std::string name(const std::string& loop, int64_t step, const std::string& inner) const {
    std::string base = loop + "." + std::to_string(step) + "." + inner;
    std::string candidate = base;
    for (int k = 1; out.find_value(candidate) || top.find_value(candidate); ++k) {
      candidate = base + "." + std::to_string(k);
    }
    return candidate;
  }
  // Copies `src`'s nodes into `out`, expanding scans; `map` takes src values to out
  // values (the inputs already mapped). Results are named by `name_of`.
  void expand(const Graph& src, std::vector<ValueId>& map,
              const std::function<std::string(const std::string&)>& name_of);
  void expand_scan(const Graph& src, const Node& n, std::vector<ValueId>& map,
                   const std::function<std::string(const std::string&)>& name_of);
};

void Unroller::expand_scan(const Graph& src, const Node& n, std::vector<ValueId>& map,
                           const std::function<std::string(const std::string&)>& name_of) {
  const Graph& body = *n.body;
  const int64_t length = n.int_attr("length");
  const size_t consts = static_cast<size_t>(n.int_attr("consts"));
  const size_t carries = static_cast<size_t>(n.int_attr("carries"));
  const bool reverse = n.bool_attr("reverse");
  const std::string loop = name_of(src.value(n.result()).name);
  std::vector<ValueId> state;
  for (size_t c = 0; c < carries; ++c) state.push_back(map[n.operands[consts + c]]);
  const size_t ys = body.outputs().size() - carries;
  std::vector<std::vector<ValueId>> slots(ys, std::vector<ValueId>(static_cast<size_t>(length)));
  for (int64_t step = 0; step < length; ++step) {
    const int64_t i = reverse ? length - 1 - step : step;
    std::vector<ValueId> inner(body.num_values(), kNoValue);
    for (size_t k = 0; k < n.operands.size(); ++k) {
      const ValueId arg = body.inputs()[k].value;
      if (k < consts) {
        inner[arg] = map[n.operands[k]];
      } else if (k < consts + carries) {
        inner[arg] = state[k - consts];
      } else {
        const Type whole = src.type(n.operands[k]);
        IntList start(whole.shape.rank(), 0), stop = whole.shape.dims;
        start[0] = i;
        stop[0] = i + 1;
        IntList one = whole.shape.dims;
        one[0] = 1;
        const ValueId s = out.add_node(Op::Slice, {map[n.operands[k]]}, {{"start", start}, {"stop", stop}},
                                       n.loc, Type{whole.dtype, Shape(one)},
                                       name(loop, i, "xs" + std::to_string(k)));
        inner[arg] = out.add_node(Op::Reshape, {s}, {{"shape", body.type(arg).shape.dims}}, n.loc,
                                  body.type(arg), name(loop, i, "x" + std::to_string(k)));
      }
    }
    expand(body, inner, [&](const std::string& v) { return name(loop, i, v); });
    for (size_t c = 0; c < carries; ++c) state[c] = inner[body.outputs()[c]];
    for (size_t k = 0; k < ys; ++k) {
      const ValueId y = inner[body.outputs()[carries + k]];
      Type one = out.type(y);
      one.shape.dims.insert(one.shape.dims.begin(), 1);
      slots[k][static_cast<size_t>(i)] =
          out.add_node(Op::Reshape, {y}, {{"shape", one.shape.dims}}, n.loc, one,
                       name(loop, i, "y" + std::to_string(k)));
    }
  }
  for (size_t c = 0; c < carries; ++c) map[n.results[c]] = state[c];
  for (size_t k = 0; k < ys; ++k) {
    const ValueId r = n.results[carries + k];
    map[r] = length == 1 ? slots[k][0]
                         : out.add_node(Op::Concat, slots[k], {{"axis", int64_t{0}}}, n.loc,
                                        src.type(r), name_of(src.value(r).name));
  }
}

void Unroller::expand(const Graph& src, std::vector<ValueId>& map,
                      const std::function<std::string(const std::string&)>& name_of) {
  for (const Node& n : src.nodes()) {
    if (n.op == Op::Scan) {
      expand_scan(src, n, map, name_of);
      continue;
    }
    copy_node(out, src, n, map, [&](ValueId r) { return name_of(src.value(r).name); });
  }
}

}  // namespace

StatusOr<bool> UnrollScansPass::run(Graph& g) {
  if (std::none_of(g.nodes().begin(), g.nodes().end(), [](const Node& n) { return n.op == Op::Scan; })) {
    return false;
  }
  // An early exit unrolls as masked iterations (the same values).
  WEFT_RETURN_IF_ERROR(MaskLoopExitsPass().run(g).status());
  std::vector<ValueId> map;
  Graph out = rebuild_inputs(g, map);
  Unroller{out, g}.expand(g, map, [](const std::string& v) { return v; });
  rebuild_outputs(g, std::move(out), map);
  // Copies of a loop-invariant computation (a weight's transpose in every iteration of a
  // gradient loop) become one; slices and stacks nobody reads go.
  WEFT_RETURN_IF_ERROR(CsePass().run(g).status());
  WEFT_RETURN_IF_ERROR(DcePass().run(g).status());
  return true;
}

}  // namespace weft
