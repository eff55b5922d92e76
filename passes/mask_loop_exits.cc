#include "passes/mask_loop_exits.h"

#include <memory>
#include <string>
#include <vector>

#include "ir/scan.h"
#include "ir/shape_rules.h"

namespace weft {
namespace {

ValueId typed(Graph& g, Op op, std::vector<ValueId> operands, Attrs attrs, const Location& loc) {
  StatusOr<ValueId> v = add_typed_node(g, op, std::move(operands), std::move(attrs), loc);
  WEFT_CHECK(v.ok(), "mask-loop-exits: " + v.status().to_string());
  return *v;
}

bool mask(Graph& g) {
  bool any = false;
  for (Node& n : g.mutable_nodes()) {
    if (n.op != Op::Scan || !n.body) continue;
    Graph body = *n.body;
    const bool inner = mask(body);
    const ScanExit exit = scan_exit(n);
    if (!inner && !exit.any()) continue;
    any = true;
    if (exit.any()) {
      const size_t consts = static_cast<size_t>(n.int_attr("consts"));
      const size_t carries = static_cast<size_t>(n.int_attr("carries"));
      // Whether this iteration runs: not stopped, and active.
      ValueId run = kNoValue;
      if (exit.stop_carry >= 0) {
        run = typed(body, Op::Not, {body.inputs()[consts + static_cast<size_t>(exit.stop_carry)].value}, {}, n.loc);
      }
      if (exit.active_operand >= 0) {
        const ValueId active = body.inputs()[static_cast<size_t>(exit.active_operand)].value;
        run = run == kNoValue ? active : typed(body, Op::And, {run, active}, {}, n.loc);
      }
      std::vector<ValueId> outputs = body.outputs();
      for (size_t k = 0; k < outputs.size(); ++k) {
        const Type t = body.type(outputs[k]);
        const ValueId otherwise =
            k < carries ? body.inputs()[consts + k].value
                        : typed(body, Op::Full, {}, {{"shape", IntList{}}, {"value", 0.0}, {"dtype", t.dtype}}, n.loc);
        outputs[k] = typed(body, Op::Select, {run, outputs[k], otherwise}, {}, n.loc);
      }
      body.set_outputs(std::move(outputs));
      n.attrs.erase("stop");
      n.attrs.erase("active");
    }
    n.body = std::make_shared<const Graph>(std::move(body));
  }
  return any;
}

}  // namespace

StatusOr<bool> MaskLoopExitsPass::run(Graph& g) { return mask(g); }

}  // namespace weft
