#include "frontend/loop.h"

#include <string>
#include <utility>
#include <vector>

#include "frontend/flow.h"

namespace weft {
namespace {

class LoopModule : public Module {
 public:
  LoopModule(LoopKind kind, ModulePtr body, ModulePtr cond, int64_t n, bool recompute,
             std::source_location loc)
      : kind_(kind), body_(std::move(body)), cond_(std::move(cond)), n_(n), recompute_(recompute), loc_(loc) {}

  std::string describe() const override {
    std::string out = "loop_body(" + body_->describe() + ")";
    switch (kind_) {
      case LoopKind::for_n: return out + ".for_n(" + std::to_string(n_) + ")";
      case LoopKind::while_cond: return out + ".while_cond(" + cond_->describe() + ", " + std::to_string(n_) + ")";
      case LoopKind::until_cond: return out + ".until_cond(" + cond_->describe() + ", " + std::to_string(n_) + ")";
    }
    return out;
  }

  ValueId forward(Emitter& e, const std::vector<ValueId>& inputs) override {
    if (n_ < 1) {
      e.fail(describe() + ": " + (kind_ == LoopKind::for_n ? "the count" : "max") +
             " must be at least 1, got " + std::to_string(n_));
    }
    if (kind_ != LoopKind::for_n && cond_ == nullptr) e.fail(describe() + ": the condition is null");
    // The state: a value of its own (a same-shape reshape), so that a uses(...) value that
    // is the loop's input itself stays a const of the loop rather than its state.
    const ValueId h0 = e.reshape(inputs[0], e.shape(inputs[0]).dims);
    std::vector<ValueId> rest(inputs.begin() + 1, inputs.end());
    auto body = [&](ValueId h) {
      std::vector<ValueId> args{h};
      args.insert(args.end(), rest.begin(), rest.end());
      const ValueId out = emit_part(e, body_, args, body_->describe(), "", loc_);
      if (e.type(out) != e.type(h)) {
        e.fail(describe() + ": the body maps the stream " + e.type(h).to_string() + " to " +
               e.type(out).to_string() + "; every iteration feeds its output back, so it must keep the type");
      }
      return out;
    };
    ScanRegion region;
    region.length = n_;
    region.remat = recompute_;
    if (kind_ == LoopKind::for_n) {
      region.first_node = e.num_nodes();
      region.carries = {h0};
      region.next_carries = {body(h0)};
      return e.outline_scan(region)[0];
    }
    const Type t = e.type(h0);
    if (t.shape.rank() < 1) e.fail(describe() + " halts per sample, so the stream needs a batch axis; it is " + t.to_string());
    const int64_t batch = t.shape[0];
    // The mask: true while a sample runs. until: all at first; while: cond decides.
    const ValueId active0 = kind_ == LoopKind::until_cond ? e.full(Shape({batch}), 1.0, DType::boolean)
                                                          : running(e, h0, e.full(Shape({batch}), 1.0, DType::boolean));
    const ValueId stop0 = halted(e, active0);
    region.first_node = e.num_nodes();
    const ValueId h1 = body(h0);
    IntList column(static_cast<size_t>(t.shape.rank()), 1);
    column[0] = batch;
    const ValueId next = e.op(Op::Select, {e.reshape(active0, column), h1, h0});
    const ValueId active1 = running(e, next, active0);
    // The loop ends once every sample has halted (scan's `stop`: the CPU stops there,
    // the GPU masks the iterations left).
    region.carries = {h0, active0, stop0};
    region.next_carries = {next, active1, halted(e, active1)};
    region.stop = 2;
    return e.outline_scan(region)[0];
  }

 private:
  // Whether no sample is active: bool[].
  static ValueId halted(Emitter& e, ValueId active) {
    const ValueId count = e.op(Op::Sum, {e.op(Op::Cast, {active}, {{"dtype", DType::f32}})});
    return e.op(Op::Le, {count, e.constant(0.0, DType::f32)});
  }

  // active ∧ ¬(cond(h) > 0): which samples run another iteration.
  ValueId running(Emitter& e, ValueId h, ValueId active) {
    const int64_t batch = e.type(h).shape[0];
    const ValueId c = emit_part(e, cond_, {h}, "cond", "cond", loc_);
    const Type ct = e.type(c);
    if (ct.shape.rank() < 1 || ct.shape[0] != batch || ct.shape.numel() != batch || !is_floating(ct.dtype)) {
      e.fail(describe() + ": the condition must give one float per sample ([" + std::to_string(batch) +
             "] or [" + std::to_string(batch) + ", 1]); it gives " + ct.to_string());
    }
    const ValueId halt = e.op(Op::Gt, {e.reshape(c, {batch}), e.constant(0.0, ct.dtype)});
    return e.op(Op::And, {active, e.op(Op::Not, {halt})});
  }

  LoopKind kind_;
  ModulePtr body_, cond_;
  int64_t n_;
  bool recompute_;
  std::source_location loc_;
};

class MapEachModule : public Module {
 public:
  MapEachModule(ModulePtr body, bool over, std::source_location loc)
      : body_(std::move(body)), over_(over), loc_(loc) {}

  std::string describe() const override {
    return "map(" + body_->describe() + ")" + (over_ ? ".over(...)" : ".each()");
  }
  bool over() const { return over_; }

  ValueId forward(Emitter& e, const std::vector<ValueId>& inputs) override {
    if (inputs.size() != (over_ ? 2u : 1u)) {
      e.fail(describe() + (over_ ? " maps over one tagged value" : " takes the stream alone") + "; it was given " +
             std::to_string(inputs.size()) + " inputs");
    }
    const ValueId x = inputs.back();
    const Type t = e.type(x);
    if (t.shape.rank() < 1) e.fail(describe() + " maps over the batch axis; the stream is " + t.to_string());
    const int64_t batch = t.shape[0];
    IntList one = t.shape.dims, stacked = t.shape.dims;
    one[0] = 1;
    stacked.insert(stacked.begin() + 1, 1);
    // [B, ...] as B slots of [1, ...]; the body is emitted on a stand-in for one slot.
    const ValueId xs = e.reshape(x, stacked);
    IntList start(one.size(), 0);
    const ValueId sample = e.op(Op::Slice, {x}, {{"start", start}, {"stop", one}});
    ScanRegion region;
    region.length = batch;
    region.first_node = e.num_nodes();
    const ValueId y = emit_part(e, body_, {sample}, body_->describe(), "", loc_);
    const Type yt = e.type(y);
    if (yt.shape.rank() < 1 || yt.shape[0] != 1) {
      e.fail(describe() + ": the body maps one sample " + e.type(sample).to_string() + " to " +
             yt.to_string() + "; it must keep the batch of one");
    }
    region.slices = {sample};
    region.xs = {xs};
    region.ys = {y};
    const ValueId ys = e.outline_scan(region)[0];  // [B, 1, ...]
    IntList out = yt.shape.dims;
    out[0] = batch;
    return e.reshape(ys, out);
  }

 private:
  ModulePtr body_;
  bool over_;
  std::source_location loc_;
};

}  // namespace

ModulePtr Loop(LoopKind kind, ModulePtr body, ModulePtr cond, int64_t n, bool recompute,
               std::source_location loc) {
  return std::make_shared<LoopModule>(kind, std::move(body), std::move(cond), n, recompute, loc);
}

ModulePtr MapEach(ModulePtr body, std::source_location loc) {
  return std::make_shared<MapEachModule>(std::move(body), false, loc);
}

ModulePtr MapOver(ModulePtr body, std::source_location loc) {
  return std::make_shared<MapEachModule>(std::move(body), true, loc);
}

bool is_map_over(const Module& m) {
  const auto* map = dynamic_cast<const MapEachModule*>(&m);
  return map != nullptr && map->over();
}

}  // namespace weft
