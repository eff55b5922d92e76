#pragma once
// FlowBuilder: the fluent way to describe a network (vocabulary from flodl).
//
//   auto net = FlowBuilder::from(Linear(784, 256))
//                  .through(GELU())
//                  .tag("hidden")
//                  .through(LayerNorm(256))
//                  .also(Linear(256, 256))           // residual: x + Linear(x)
//                  .through(Linear(256, 10))
//                  .build({{"x", f32({128, 784})}});  // StatusOr<Model>
//
// | call                       | meaning                                                 |
// |----------------------------|---------------------------------------------------------|
// | from(m) / through(m)       | start / continue the stream with module m               |
// | also(m)                    | residual: stream + m(stream)                            |
// | also_with(skip, m)         | skip(stream) + m(stream)                                |
// | fork(m)                    | side branch m(stream); the stream continues unchanged;  |
// |                            | the next tag(name) names the branch's output            |
// | split({a, b, ...})         | parallel branches on the stream, then                   |
// |   .tag_group(name)         |   (optional) tags the branch outputs name.0, name.1, ...|
// |   .merge(Merge::add())     |   recombined: add, mean or concat(axis)                 |
// | tag(name)                  | names the current stream value (or a fork's output)     |
// | gate(router, {experts})    | soft routing per sample: Σ_e softmax(router)[e]·expert_e|
// | route(selector, {branches})| hard routing per sample: the argmax branch's output     |
// |                            | (frontend/routing.h: shapes, gradients, names)          |
// | map(body).slices(n)        | body on n slices of the last axis as extra batch rows   |
// | map(body).batched()        | body on the whole stream (frontend/map.h)               |
// | map(body).each()           | body on each sample alone, as a loop over the batch     |
// | map(body).over(tag)        | body on each element of an earlier tag's value: stream  |
// | loop_body(b).for_n(n)      | b applied n times to the stream, parameters shared      |
// | loop_body(b).while_cond(c, |   per sample, while c(state) <= 0 / until c(state) > 0, |
// |   max) / .until_cond(c,max)|   at most max iterations (frontend/loop.h)              |
// | uses({names})              | the previous module also receives these tagged values;  |
// |                            | a tag defined later is read from the previous step      |
// |                            | (below)                                                 |
// | input({names})             | extra graph inputs, usable as tags                      |
// | label(name)                | makes this flow an addressable subgraph (`encoder`)     |
// | build()                    | validates the structure: a Flow, itself a module        |
// | build(inputs, options)     | ...and emits typed IR for these input types: a Model    |
//
// Every call records its C++ source location, so errors — structural ones from build()
// and shape errors from build(inputs) — name the user's file:line and the builder path
// (`encoder > split[1] > Linear(256->10)`).
//
// Forward references. `uses({"h"})` of a tag defined later in the same flow reads the
// value that tag had at the end of the previous training step: a state input `h.state`
// (a checkpoint key), zeros before the first step, of the stream's type at the uses call,
// which the tag must keep (an error names both calls otherwise). The tag assigns it at
// the end of every training step; Trainer::reset_state() zeroes it. Gradients never
// cross a step boundary: the state is an input of the step (truncated BPTT one step
// long, so there is no detach_state()). An evaluation (a model built with
// training = false) reads zeros instead and keeps no state, so it changes nothing and may
// run at another batch size. A flow with a forward reference can be used once in a model
// (a second use would assign the same state: an error). As flodl, which zero-fills the
// buffer with the consumer's stream shape.
//
//   FlowBuilder::from(Linear(3, 8)).through(GRUCell(8, 8)).uses({"h"}).tag("h")
//
// Parameter names follow the structure: labels, then the module's position in its
// chain, then the parameter (`encoder.2.weight`; a split branch adds its index:
// `3.1.weight`). They are stable checkpoint keys.

#include <memory>
#include <source_location>
#include <string>
#include <vector>

#include "frontend/model.h"
#include "frontend/module.h"

namespace weft {

/// How split branches recombine.
struct Merge {
  enum class Kind { Add, Mean, Concat };
  Kind kind = Kind::Add;
  int64_t axis = -1;  ///< For concat.

  static Merge add() { return {Kind::Add, -1}; }
  static Merge mean() { return {Kind::Mean, -1}; }
  static Merge concat(int64_t axis) { return {Kind::Concat, axis}; }
  std::string describe() const;
};

class Flow;
using FlowPtr = std::shared_ptr<Flow>;

/// One recorded builder call.
struct FlowStep {
  enum class Kind { From, Through, Also, AlsoWith, Fork, Split, TagGroup, Merge, Tag, Uses,
                    Input, Label };
  Kind kind;
  std::vector<ModulePtr> modules;  ///< From/Through/Also/Fork: 1; AlsoWith: skip, m; Split: branches
  std::vector<std::string> names;  ///< Tag/TagGroup/Uses/Input/Label
  Merge merge;
  std::vector<std::string> uses;   ///< Tags the step's module also receives.
  std::source_location loc;
};

/// A validated flow: a module that emits its steps, and nests inside other builders.
class Flow : public Module {
 public:
  Flow(std::vector<FlowStep> steps, std::string label);

  std::string describe() const override;
  ValueId forward(Emitter& e, const std::vector<ValueId>& inputs) override;

  const std::string& label() const { return label_; }
  const std::vector<FlowStep>& steps() const { return steps_; }
  /// Names declared by input({...}), in order.
  std::vector<std::string> extra_inputs() const;

  /// Emits IR for `inputs` (the stream input first, then one per input({...}) name, in
  /// order) and returns the model, or the first error.
  StatusOr<Model> build(const std::vector<InputSpec>& inputs, BuildOptions options = {}) const;

 private:
  std::vector<FlowStep> steps_;
  std::string label_;
};

class FlowBuilder;

/// What FlowBuilder::map(body) returns: how the body is applied (frontend/map.h).
class MapCall {
 public:
  MapCall(const MapCall&) = delete;
  MapCall& operator=(const MapCall&) = delete;
  /// The body on n slices of every sample's last axis at once, as extra batch rows.
  FlowBuilder& slices(int64_t n) &&;
  /// The body on the whole stream: through(body).
  FlowBuilder& batched() &&;
  /// The body on each sample alone (a batch of one), as a loop over the batch.
  FlowBuilder& each() &&;
  /// The body on each element (along axis 0, a batch of one) of the value tagged `tag`,
  /// defined before; the results, stacked, become the stream.
  FlowBuilder& over(std::string tag) &&;

 private:
  friend class FlowBuilder;
  MapCall(FlowBuilder& builder, ModulePtr body, std::source_location loc)
      : builder_(builder), body_(std::move(body)), loc_(loc) {}
  FlowBuilder& builder_;
  ModulePtr body_;
  std::source_location loc_;
};

/// What FlowBuilder::loop_body(body) returns: how often the body runs (frontend/loop.h).
class LoopCall {
 public:
  LoopCall(const LoopCall&) = delete;
  LoopCall& operator=(const LoopCall&) = delete;
  /// The body n times, its output fed back as its input.
  FlowBuilder& for_n(int64_t n) &&;
  /// Per sample: while cond(state) <= 0, one more iteration (at most `max`); a sample
  /// whose cond is positive at the start keeps its input. The loop ends once every
  /// sample has halted.
  FlowBuilder& while_cond(ModulePtr cond, int64_t max) &&;
  /// Per sample: one iteration, then more until cond(state) > 0 (at most `max` in all).
  /// The loop ends once every sample has halted.
  FlowBuilder& until_cond(ModulePtr cond, int64_t max) &&;
  /// Its gradient recomputes each iteration's intermediates from the saved state instead
  /// of saving them all: less memory, one more forward pass of the body.
  LoopCall&& recompute() &&;

 private:
  friend class FlowBuilder;
  LoopCall(FlowBuilder& builder, ModulePtr body, std::source_location loc)
      : builder_(builder), body_(std::move(body)), loc_(loc) {}
  FlowBuilder& builder_;
  ModulePtr body_;
  std::source_location loc_;
  bool recompute_ = false;
};

class FlowBuilder {
 public:
  using Loc = std::source_location;

  static FlowBuilder from(ModulePtr m, Loc loc = Loc::current());
  FlowBuilder& through(ModulePtr m, Loc loc = Loc::current());
  FlowBuilder& also(ModulePtr m, Loc loc = Loc::current());
  FlowBuilder& also_with(ModulePtr skip, ModulePtr m, Loc loc = Loc::current());
  FlowBuilder& fork(ModulePtr m, Loc loc = Loc::current());
  FlowBuilder& split(std::vector<ModulePtr> branches, Loc loc = Loc::current());
  FlowBuilder& tag_group(std::string name, Loc loc = Loc::current());
  FlowBuilder& merge(Merge how, Loc loc = Loc::current());
  FlowBuilder& tag(std::string name, Loc loc = Loc::current());
  /// Soft routing: every expert on the stream, mixed per sample by the softmax of the
  /// router's scores (one per expert, on its last axis). frontend/routing.h.
  FlowBuilder& gate(ModulePtr router, std::vector<ModulePtr> experts, Loc loc = Loc::current());
  /// Hard routing: per sample, the output of the branch the selector scores highest; the
  /// others contribute nothing and get no gradient; the selector gets none either.
  /// frontend/routing.h.
  FlowBuilder& route(ModulePtr selector, std::vector<ModulePtr> branches, Loc loc = Loc::current());
  /// A body mapped over parts of the stream: `.map(body).slices(n)`, `.map(body).batched()`.
  [[nodiscard]] MapCall map(ModulePtr body, Loc loc = Loc::current());
  /// A body iterated on the stream, its parameters shared by every iteration:
  /// `.loop_body(body).for_n(n)`, `.while_cond(cond, max)`, `.until_cond(cond, max)`.
  [[nodiscard]] LoopCall loop_body(ModulePtr body, Loc loc = Loc::current());
  FlowBuilder& uses(std::vector<std::string> names, Loc loc = Loc::current());
  FlowBuilder& input(std::vector<std::string> names, Loc loc = Loc::current());
  FlowBuilder& label(std::string name, Loc loc = Loc::current());

  /// Validates the structure (no shapes needed): a split never merged, uses of an
  /// unknown tag, a duplicate tag, a label containing a dot, two nested flows with one
  /// label, a label colliding with a tag, ... The result is a module.
  StatusOr<FlowPtr> build() const;
  /// build(), then emits typed IR for `inputs`: the stream input first, then one per
  /// input({...}) name.
  StatusOr<Model> build(const std::vector<InputSpec>& inputs, BuildOptions options = {}) const;

 private:
  FlowBuilder() = default;
  FlowBuilder& add(FlowStep step);

  std::vector<FlowStep> steps_;
};

/// Emits `m` as a part of the module being emitted (the experts of a gate, the body of a
/// map): a labelled flow under its label (its parameters `LABEL.…` below the module's
/// own prefix, its label path addressable by parameters_at and freeze), any other module
/// as `path_part` in builder paths and `name_part` in parameter names (`experts.3`).
ValueId emit_part(Emitter& e, const ModulePtr& m, const std::vector<ValueId>& inputs,
                  const std::string& path_part, const std::string& name_part,
                  std::source_location loc);

/// `f32({128, 784})`: an input type.
inline Type f32(std::vector<int64_t> dims) { return Type{DType::f32, Shape(std::move(dims))}; }
inline Type f64(std::vector<int64_t> dims) { return Type{DType::f64, Shape(std::move(dims))}; }
inline Type i64(std::vector<int64_t> dims) { return Type{DType::i64, Shape(std::move(dims))}; }

}  // namespace weft
