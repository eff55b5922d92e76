#include "frontend/routing.h"

#include <string>

#include "frontend/flow.h"
#include <utility>

namespace weft {
namespace {

/// gate and route: a scorer on the stream, one score per member on its last axis, and
/// the members' outputs combined with per-sample weights derived from the scores.
class RoutingModule : public UnaryModule {
 public:
  enum class Kind { Gate, Route };

  RoutingModule(Kind kind, ModulePtr scorer, std::vector<ModulePtr> members, std::source_location loc)
      : kind_(kind), scorer_(std::move(scorer)), members_(std::move(members)), loc_(loc) {}

  std::string describe() const override {
    const std::string n = std::to_string(members_.size());
    return kind_ == Kind::Gate ? "gate(" + n + (members_.size() == 1 ? " expert)" : " experts)")
                               : "route(" + n + (members_.size() == 1 ? " branch)" : " branches)");
  }

  ValueId forward1(Emitter& e, ValueId x) override {
    const bool gate = kind_ == Kind::Gate;
    const std::string scorer = gate ? "router" : "selector";
    const std::string member = gate ? "expert" : "branch";
    const std::string members = gate ? "experts" : "branches";
    if (members_.empty()) e.fail(describe() + " needs at least one " + member);
    const int64_t n = static_cast<int64_t>(members_.size());

    ValueId scores = emit_part(e, scorer_, {x}, scorer, scorer, loc_);
    const Type st = e.type(scores);
    if (st.shape.rank() < 1 || st.shape[st.shape.rank() - 1] != n || !is_floating(st.dtype)) {
      e.fail(describe() + ": the " + scorer + "'s output " + st.to_string() + " must be floating " +
             "point with " + std::to_string(n) + " features on its last axis, one per " + member);
    }
    // gate: per-sample weights, the softmax of the scores. route: per-sample choices,
    // the argmax of the scores, applied with select (never a multiplication by a 0/1
    // mask, which would let an infinity or NaN of a branch not taken into the result and
    // its gradients).
    const int lead = st.shape.rank() - 1;
    const IntList lead_dims(st.shape.dims.begin(), st.shape.dims.end() - 1);
    ValueId weights = kNoValue, choice = kNoValue;
    if (gate) {
      weights = e.op(Op::Softmax, {scores}, {{"axis", int64_t{-1}}});
    } else {
      choice = e.op(Op::Argmax, {scores}, {{"axis", int64_t{lead}}});
    }

    // Each member's output joins the result as soon as it is emitted (its weight times it
    // for gate, a select for route), as a hand-written mixture would.
    IntList start(st.shape.rank(), 0), stop = st.shape.dims;
    Type first;
    ValueId out = kNoValue;
    for (int64_t i = 0; i < n; ++i) {
      const std::string index = std::to_string(i);
      ValueId y = emit_part(e, members_[i], {x}, member + "[" + index + "]", members + "." + index, loc_);
      const Type yt = e.type(y);
      if (i > 0 && yt != first) {
        e.fail(describe() + ": " + member + " " + index + "'s output " + yt.to_string() + " differs from " +
               member + " 0's " + first.to_string() + "; every " + member + " must give the same type");
      }
      bool leads = yt.shape.rank() >= lead && yt.dtype == st.dtype;
      for (int d = 0; leads && d < lead; ++d) leads = yt.shape[d] == st.shape[d];
      if (!leads) {
        e.fail(describe() + ": the " + scorer + "'s output " + st.to_string() + (gate ? " weighs " : " chooses ") +
               member + " 0's output " + yt.to_string() + " per sample, so its leading axes " +
               Shape(lead_dims).to_string() + " must lead that output's shape, in the same dtype");
      }
      first = i == 0 ? yt : first;
      // A per-sample value (lead_dims elements) shaped lead_dims with ones appended, to
      // broadcast over the output's other axes.
      auto broadcastable = [&](ValueId v) {
        IntList shape = lead_dims;
        shape.resize(static_cast<size_t>(yt.shape.rank()), 1);
        return e.shape(v).dims == shape ? v : e.reshape(v, shape);
      };
      if (gate) {
        start.back() = i;
        stop.back() = i + 1;
        ValueId w = broadcastable(e.op(Op::Slice, {weights}, {{"start", start}, {"stop", stop}}));
        ValueId term = e.mul(w, y);
        out = out == kNoValue ? term : e.add(out, term);
      } else if (out == kNoValue) {
        out = y;
      } else {
        ValueId taken = broadcastable(e.op(Op::Eq, {choice, e.constant(static_cast<double>(i), e.type(choice).dtype)}));
        out = e.op(Op::Select, {taken, y, out});
      }
    }
    return out;
  }

 private:
  Kind kind_;
  ModulePtr scorer_;
  std::vector<ModulePtr> members_;
  std::source_location loc_;
};

}  // namespace

ModulePtr Gate(ModulePtr router, std::vector<ModulePtr> experts, std::source_location loc) {
  return std::make_shared<RoutingModule>(RoutingModule::Kind::Gate, std::move(router), std::move(experts),
                                         loc);
}

ModulePtr Route(ModulePtr selector, std::vector<ModulePtr> branches, std::source_location loc) {
  return std::make_shared<RoutingModule>(RoutingModule::Kind::Route, std::move(selector),
                                         std::move(branches), loc);
}

}  // namespace weft
