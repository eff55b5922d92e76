#include "frontend/flow.h"

#include <algorithm>
#include <map>
#include <set>

#include "frontend/flow_check.h"
#include "frontend/loop.h"
#include "frontend/map.h"
#include "frontend/routing.h"
#include "ir/verifier.h"

namespace weft {
namespace {

using Kind = FlowStep::Kind;

using flow_detail::as_flow;
using flow_detail::check_cycles;
using flow_detail::unrepresentable;
using flow_detail::validate;
using flow_detail::where;

}  // namespace

std::string Merge::describe() const {
  switch (kind) {
    case Kind::Add: return "add";
    case Kind::Mean: return "mean";
    case Kind::Concat: return "concat(" + std::to_string(axis) + ")";
  }
  return "?";
}

Flow::Flow(std::vector<FlowStep> steps, std::string label)
    : steps_(std::move(steps)), label_(std::move(label)) {}

std::string Flow::describe() const {
  if (!label_.empty()) return label_;
  return "Flow(" + std::to_string(steps_.size()) + " steps)";
}

std::vector<std::string> Flow::extra_inputs() const {
  std::vector<std::string> names;
  for (const FlowStep& s : steps_) {
    if (s.kind == Kind::Input) names.insert(names.end(), s.names.begin(), s.names.end());
  }
  return names;
}

namespace {

// emit_part with a prefix on the builder path (`split[1] > `).
ValueId emit_part_at(Emitter& e, const ModulePtr& m, const std::vector<ValueId>& inputs,
                     const std::string& path_prefix, const std::string& path_part,
                     const std::string& name_part, std::source_location loc) {
  const Flow* f = as_flow(m);
  if (f && !f->label().empty()) {
    e.push_frame(nullptr, path_prefix + f->label(), f->label(), loc, /*is_label=*/true);
    ValueId out = e.emit(m, inputs, "", "", loc);
    e.pop_frame();
    return out;
  }
  return e.emit(m, inputs, path_prefix + path_part, name_part, loc);
}

// Runs one module of the chain at position `pos`: a labelled flow gets its label as
// path and name part, anything else its description and its position.
ValueId emit_at(Emitter& e, const ModulePtr& m, const std::vector<ValueId>& inputs,
                const std::string& pos, const std::source_location& loc,
                const std::string& path_prefix = "") {
  return emit_part_at(e, m, inputs, path_prefix, m->describe(), pos, loc);
}

}  // namespace

ValueId emit_part(Emitter& e, const ModulePtr& m, const std::vector<ValueId>& inputs,
                  const std::string& path_part, const std::string& name_part, std::source_location loc) {
  return emit_part_at(e, m, inputs, "", path_part, name_part, loc);
}

namespace {

// One emission of a flow's steps (Flow::forward), one member per kind of step, over the
// state they share: the stream, the tags and tag groups defined so far, a fork's output
// waiting for its tag, the branches of the last split, and the values that forward
// references read.
class FlowEmission {
 public:
  FlowEmission(Emitter& e, const std::vector<FlowStep>& steps) : e_(e), steps_(steps) {}

  /// Emits every step on `stream`, with `tags` (the extra inputs) known; returns the
  /// stream's last value.
  ValueId run(ValueId stream, std::map<std::string, ValueId> tags) {
    stream_ = stream;
    tags_ = std::move(tags);
    for (size_t i = 0; i < steps_.size(); ++i) step(i);
    return stream_;
  }

 private:
  struct Carried {
    ValueId value;  ///< The state input (training) or zeros (evaluation).
    std::source_location used_at;
  };

  void step(size_t i) {
    const FlowStep& s = steps_[i];
    const std::string p = std::to_string(pos_);
    switch (s.kind) {
      case Kind::From:
      case Kind::Through:
        stream_ = emit_at(e_, s.modules[0], module_inputs(i, stream_), p, s.loc);
        ++pos_;
        break;
      case Kind::Also:
        also(i, p);
        ++pos_;
        break;
      case Kind::AlsoWith:
        also_with(i, p);
        ++pos_;
        break;
      case Kind::Fork:
        forked_ = emit_at(e_, s.modules[0], module_inputs(i, stream_), p, s.loc);
        ++pos_;
        break;
      case Kind::Split:
        split(s, p);
        ++pos_;
        break;
      case Kind::TagGroup: tag_group(s); break;
      case Kind::Merge: merge(s); break;
      case Kind::Tag: tag(s); break;
      case Kind::Uses:
      case Kind::Input:
      case Kind::Label:
        break;
    }
  }

  // The inputs of step i's module: `x` (the stream), then the values of any uses(...)
  // right after it.
  std::vector<ValueId> module_inputs(size_t i, ValueId x) {
    std::vector<ValueId> in = {x};
    for (size_t u = i + 1; u < steps_.size() && steps_[u].kind == Kind::Uses; ++u) {
      for (const std::string& n : steps_[u].names) {
        if (auto it = tags_.find(n); it != tags_.end()) {
          in.push_back(it->second);
        } else if (auto g = groups_.find(n); g != groups_.end()) {
          for (ValueId v : g->second) in.push_back(v);
        } else {
          in.push_back(carried(steps_[i], steps_[u], n, x));
        }
      }
    }
    return in;
  }

  // Forward references: a uses(...) of a tag defined later reads, when training, the
  // value that tag had at the end of the previous step, kept in a state input (zeros
  // before the first step) of the consumer's stream type, which the tag assigns; in
  // evaluation, zeros of that type (no state: an evaluation changes nothing and may run
  // at another batch size). `x`: the consumer's stream.
  ValueId carried(const FlowStep& s, const FlowStep& uses, const std::string& n, ValueId x) {
    if (!s.modules.empty() && s.modules[0] && is_map_over(*s.modules[0])) {
      throw BuildFailure{Error{"map(...).over(\"" + n + "\") maps over a tag defined before it, but \"" + n +
                                   "\" is defined later (a forward reference)",
                               to_location(uses.loc)}};
    }
    auto c = carried_.find(n);
    if (c == carried_.end()) {
      const Type t = e_.type(x);
      ValueId v = e_.training() ? e_.carried_state(n, t) : e_.full(t.shape, 0.0, t.dtype);
      c = carried_.emplace(n, Carried{v, uses.loc}).first;
    }
    return c->second.value;
  }

  void also(size_t i, const std::string& p) {
    const FlowStep& s = steps_[i];
    ValueId out = emit_at(e_, s.modules[0], module_inputs(i, stream_), p, s.loc);
    e_.push_frame(nullptr, "also", "", s.loc);
    stream_ = e_.add(stream_, out);
    e_.pop_frame();
  }

  void also_with(size_t i, const std::string& p) {
    const FlowStep& s = steps_[i];
    ValueId skip = emit_at(e_, s.modules[0], {stream_}, p + ".0", s.loc);
    ValueId out = emit_at(e_, s.modules[1], module_inputs(i, stream_), p + ".1", s.loc);
    e_.push_frame(nullptr, "also_with", "", s.loc);
    stream_ = e_.add(skip, out);
    e_.pop_frame();
  }

  void split(const FlowStep& s, const std::string& p) {
    branches_.clear();
    for (size_t b = 0; b < s.modules.size(); ++b) {
      std::string prefix = "split[" + std::to_string(b) + "] > ";
      branches_.push_back(
          emit_at(e_, s.modules[b], {stream_}, p + "." + std::to_string(b), s.loc, prefix));
    }
  }

  void tag_group(const FlowStep& s) {
    for (size_t b = 0; b < branches_.size(); ++b) {
      tags_[s.names[0] + "." + std::to_string(b)] = branches_[b];
      e_.note_tag(s.names[0] + "." + std::to_string(b), branches_[b]);
    }
    groups_[s.names[0]] = branches_;
  }

  void merge(const FlowStep& s) {
    e_.push_frame(nullptr, "merge(" + s.merge.describe() + ")", "", s.loc);
    if (s.merge.kind == Merge::Kind::Concat) {
      stream_ = e_.op(Op::Concat, branches_, {{"axis", s.merge.axis}});
    } else {
      stream_ = branches_[0];
      for (size_t b = 1; b < branches_.size(); ++b) stream_ = e_.add(stream_, branches_[b]);
      if (s.merge.kind == Merge::Kind::Mean && branches_.size() > 1) {
        stream_ = e_.mul(stream_, e_.constant(1.0 / static_cast<double>(branches_.size()),
                                              e_.type(stream_).dtype));
      }
    }
    e_.pop_frame();
  }

  // tag(name): names the fork's output (or the stream), and assigns it to the state a
  // forward reference to it reads.
  void tag(const FlowStep& s) {
    const std::string& name = s.names[0];
    tags_[name] = forked_ != kNoValue ? forked_ : stream_;
    e_.note_tag(name, tags_[name]);
    forked_ = kNoValue;
    if (auto c = carried_.find(name); c != carried_.end()) {
      e_.push_frame(nullptr, "tag(" + name + ")", "", s.loc);
      carry_to_next_step(name, c->second);
      e_.pop_frame();
    }
  }

  void carry_to_next_step(const std::string& name, const Carried& c) {
    const Type kept = e_.type(c.value), now = e_.type(tags_[name]);
    if (kept != now) {
      e_.fail("tag '" + name + "' is " + now.to_string() + ", but uses(\"" + name + "\") at " +
              where(c.used_at) + " reads it from the previous step as " + kept.to_string() +
              ", the stream's type there; a tag read before it is defined must keep that type");
    }
    if (!e_.training()) return;
    for (const Node& n : e_.graph().nodes()) {
      if (n.op == Op::Assign && n.operands[0] == c.value) {
        e_.fail("tag '" + name + "' carries its value to the next step in '" + e_.graph().value(c.value).name +
                "', which another use of this flow already assigns; a flow with a forward reference "
                "can be used once (build one flow per use)");
      }
    }
    e_.assign(c.value, tags_[name]);
  }

  Emitter& e_;
  const std::vector<FlowStep>& steps_;
  std::map<std::string, ValueId> tags_;
  std::map<std::string, std::vector<ValueId>> groups_;
  std::map<std::string, Carried> carried_;
  ValueId stream_ = kNoValue;
  ValueId forked_ = kNoValue;  ///< A fork's output, until the tag after it.
  std::vector<ValueId> branches_;  ///< The last split's outputs.
  int pos_ = 0;                    ///< The position of the next module in the chain.
};

}  // namespace

ValueId Flow::forward(Emitter& e, const std::vector<ValueId>& inputs) {
  std::vector<std::string> extra = extra_inputs();
  if (inputs.size() != 1 + extra.size()) {
    std::string want = "the stream";
    for (const std::string& n : extra) want += ", " + n;
    e.fail(describe() + " expects " + std::to_string(1 + extra.size()) + " inputs (" + want +
           ") but receives " + std::to_string(inputs.size()) +
           "; pass the extra ones with uses({...})");
  }
  std::map<std::string, ValueId> tags;
  for (size_t i = 0; i < extra.size(); ++i) tags[extra[i]] = inputs[i + 1];
  return FlowEmission(e, steps_).run(inputs[0], std::move(tags));
}

StatusOr<Model> Flow::build(const std::vector<InputSpec>& inputs, BuildOptions options) const {
  std::vector<std::string> extra = extra_inputs();
  std::string want = "the stream input";
  for (const std::string& n : extra) want += ", '" + n + "'";
  if (inputs.size() != 1 + extra.size()) {
    return Error{"build(...) got " + std::to_string(inputs.size()) + " input types but the flow "
                 "has " + std::to_string(1 + extra.size()) + " inputs: " + want};
  }
  for (size_t i = 0; i < extra.size(); ++i) {
    if (inputs[i + 1].name != extra[i]) {
      return Error{"build(...) input " + std::to_string(i + 1) + " is named '" +
                   inputs[i + 1].name + "' but the flow's input " + std::to_string(i + 1) +
                   " is '" + extra[i] + "' (inputs: " + want + ")"};
    }
  }
  for (const InputSpec& in : inputs) {
    if (std::string why = unrepresentable(in.type); !why.empty()) {
      return Error{"build(...) input '" + in.name + "' is " + in.type.to_string() + ": " + why +
                   "; check its dims"};
    }
  }
  Graph g(label_.empty() ? "model" : label_);
  Emitter e(g, options);
  std::vector<ValueId> values;
  for (const InputSpec& in : inputs) values.push_back(g.add_input(in.name, in.type));
  try {
    // The top-level flow is emitted like a nested one, so its label (if any) prefixes
    // every parameter name.
    auto self = std::make_shared<Flow>(steps_, label_);
    std::source_location loc = steps_.empty() ? std::source_location::current() : steps_[0].loc;
    ValueId out = label_.empty() ? e.emit(self, values, "", "", loc)
                                 : emit_at(e, self, values, "", loc);
    e.finish();
    g.add_output(out);
  } catch (const BuildFailure& failure) {
    return failure.error;
  }
  WEFT_CHECK(verify(g).ok(), "builder emitted an invalid graph: " + verify(g).to_string());
  std::vector<std::string> labels;
  auto note = [&](const std::string& path) {
    for (size_t dot = 0; dot != std::string::npos;) {
      dot = path.find('.', dot + 1);
      std::string prefix = path.substr(0, dot);
      if (!prefix.empty() && std::find(labels.begin(), labels.end(), prefix) == labels.end()) {
        labels.push_back(prefix);
      }
    }
  };
  for (const std::string& l : e.node_label_paths()) note(l);
  for (const ParamInfo& p : e.params()) note(p.label_path);
  Model model(std::move(g), e.params(), e.node_label_paths(), std::move(labels));
  model.set_tags(e.tags());
  return model;
}

FlowBuilder FlowBuilder::from(ModulePtr m, Loc loc) {
  FlowBuilder b;
  b.add(FlowStep{Kind::From, {std::move(m)}, {}, {}, {}, loc});
  return b;
}

FlowBuilder& FlowBuilder::add(FlowStep step) {
  steps_.push_back(std::move(step));
  return *this;
}

FlowBuilder& FlowBuilder::through(ModulePtr m, Loc loc) {
  return add(FlowStep{Kind::Through, {std::move(m)}, {}, {}, {}, loc});
}
// gate, route, map and loop_body wrap the modules they are given in one module of their
// own; when one of those is null, the step's module is null instead, which build()
// refuses at the user's call.
namespace {
bool any_null(const ModulePtr& m, const std::vector<ModulePtr>& more = {}) {
  return !m || std::find(more.begin(), more.end(), nullptr) != more.end();
}
}  // namespace

FlowBuilder& FlowBuilder::gate(ModulePtr router, std::vector<ModulePtr> experts, Loc loc) {
  if (any_null(router, experts)) return through(nullptr, loc);
  return through(Gate(std::move(router), std::move(experts), loc), loc);
}
FlowBuilder& FlowBuilder::route(ModulePtr selector, std::vector<ModulePtr> branches, Loc loc) {
  if (any_null(selector, branches)) return through(nullptr, loc);
  return through(Route(std::move(selector), std::move(branches), loc), loc);
}
MapCall FlowBuilder::map(ModulePtr body, Loc loc) { return MapCall(*this, std::move(body), loc); }
FlowBuilder& MapCall::slices(int64_t n) && {
  return builder_.through(any_null(body_) ? nullptr : MapSlices(body_, n, loc_), loc_);
}
FlowBuilder& MapCall::batched() && { return builder_.through(body_, loc_); }
FlowBuilder& MapCall::each() && {
  return builder_.through(any_null(body_) ? nullptr : MapEach(body_, loc_), loc_);
}
FlowBuilder& MapCall::over(std::string tag) && {
  return builder_.through(any_null(body_) ? nullptr : MapOver(body_, loc_), loc_).uses({std::move(tag)}, loc_);
}

LoopCall FlowBuilder::loop_body(ModulePtr body, Loc loc) { return LoopCall(*this, std::move(body), loc); }
LoopCall&& LoopCall::recompute() && {
  recompute_ = true;
  return std::move(*this);
}
FlowBuilder& LoopCall::for_n(int64_t n) && {
  if (any_null(body_)) return builder_.through(nullptr, loc_);
  return builder_.through(Loop(LoopKind::for_n, body_, nullptr, n, recompute_, loc_), loc_);
}
FlowBuilder& LoopCall::while_cond(ModulePtr cond, int64_t max) && {
  if (any_null(body_, {cond})) return builder_.through(nullptr, loc_);
  return builder_.through(Loop(LoopKind::while_cond, body_, std::move(cond), max, recompute_, loc_), loc_);
}
FlowBuilder& LoopCall::until_cond(ModulePtr cond, int64_t max) && {
  if (any_null(body_, {cond})) return builder_.through(nullptr, loc_);
  return builder_.through(Loop(LoopKind::until_cond, body_, std::move(cond), max, recompute_, loc_), loc_);
}
FlowBuilder& FlowBuilder::also(ModulePtr m, Loc loc) {
  return add(FlowStep{Kind::Also, {std::move(m)}, {}, {}, {}, loc});
}
FlowBuilder& FlowBuilder::also_with(ModulePtr skip, ModulePtr m, Loc loc) {
  return add(FlowStep{Kind::AlsoWith, {std::move(skip), std::move(m)}, {}, {}, {}, loc});
}
FlowBuilder& FlowBuilder::fork(ModulePtr m, Loc loc) {
  return add(FlowStep{Kind::Fork, {std::move(m)}, {}, {}, {}, loc});
}
FlowBuilder& FlowBuilder::split(std::vector<ModulePtr> branches, Loc loc) {
  return add(FlowStep{Kind::Split, std::move(branches), {}, {}, {}, loc});
}
FlowBuilder& FlowBuilder::tag_group(std::string name, Loc loc) {
  return add(FlowStep{Kind::TagGroup, {}, {std::move(name)}, {}, {}, loc});
}
FlowBuilder& FlowBuilder::merge(Merge how, Loc loc) {
  return add(FlowStep{Kind::Merge, {}, {}, how, {}, loc});
}
FlowBuilder& FlowBuilder::tag(std::string name, Loc loc) {
  return add(FlowStep{Kind::Tag, {}, {std::move(name)}, {}, {}, loc});
}
FlowBuilder& FlowBuilder::uses(std::vector<std::string> names, Loc loc) {
  return add(FlowStep{Kind::Uses, {}, std::move(names), {}, {}, loc});
}
FlowBuilder& FlowBuilder::input(std::vector<std::string> names, Loc loc) {
  return add(FlowStep{Kind::Input, {}, std::move(names), {}, {}, loc});
}
FlowBuilder& FlowBuilder::label(std::string name, Loc loc) {
  return add(FlowStep{Kind::Label, {}, {std::move(name)}, {}, {}, loc});
}

StatusOr<FlowPtr> FlowBuilder::build() const {
  for (const FlowStep& s : steps_) {
    for (const ModulePtr& m : s.modules) {
      if (!m) return Error{"a null module was passed to the builder", to_location(s.loc)};
    }
  }
  WEFT_RETURN_IF_ERROR(validate(steps_));
  std::string label;
  for (const FlowStep& s : steps_) {
    if (s.kind == Kind::Label) label = s.names[0];
  }
  auto flow = std::make_shared<Flow>(steps_, label);
  std::vector<const Flow*> stack;
  WEFT_RETURN_IF_ERROR(check_cycles(flow.get(), stack));
  return flow;
}

StatusOr<Model> FlowBuilder::build(const std::vector<InputSpec>& inputs, BuildOptions options) const {
  WEFT_ASSIGN_OR_RETURN(FlowPtr flow, build());
  return flow->build(inputs, options);
}

}  // namespace weft
