#include "bench/gate.h"

namespace weft::bench {
namespace {

class GateModule : public UnaryModule {
 public:
  GateModule(ModulePtr router, std::vector<ModulePtr> experts, std::source_location loc)
      : router_(std::move(router)), experts_(std::move(experts)), loc_(loc) {}

  std::string describe() const override {
    return "Gate(" + std::to_string(experts_.size()) + " experts)";
  }

  ValueId forward1(Emitter& e, ValueId x) override {
    if (experts_.empty()) e.fail(describe() + " needs at least one expert");
    ValueId logits = e.emit(router_, {x}, "router", "router", loc_);
    const Shape ls = e.shape(logits);
    const int64_t n = static_cast<int64_t>(experts_.size());
    if (ls.rank() < 1 || ls[ls.rank() - 1] != n) {
      e.fail(describe() + ": the router's output " + e.type(logits).to_string() + " must have " +
             std::to_string(n) + " features on its last axis, one per expert");
    }
    ValueId probs = e.op(Op::Softmax, {logits}, {{"axis", int64_t{-1}}});
    IntList start(ls.rank(), 0), stop = ls.dims;
    ValueId out = kNoValue;
    for (int64_t i = 0; i < n; ++i) {
      const std::string index = std::to_string(i);
      ValueId y = e.emit(experts_[i], {x}, "expert[" + index + "]", "experts." + index, loc_);
      // probs[..., i:i+1] broadcasts over the expert's feature axis.
      start.back() = i;
      stop.back() = i + 1;
      ValueId w = e.op(Op::Slice, {probs}, {{"start", start}, {"stop", stop}});
      ValueId term = e.mul(w, y);
      out = out == kNoValue ? term : e.add(out, term);
    }
    return out;
  }

 private:
  ModulePtr router_;
  std::vector<ModulePtr> experts_;
  std::source_location loc_;
};

}  // namespace

ModulePtr Gate(ModulePtr router, std::vector<ModulePtr> experts, std::source_location loc) {
  return std::make_shared<GateModule>(std::move(router), std::move(experts), loc);
}

}  // namespace weft::bench
