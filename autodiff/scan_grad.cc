// The gradient of a loop (`scan`, ir/ops.def) is a loop running the other way.
//
// The body's own gradient graph is built once (append_gradients on a copy of the body,
// seeded with the cotangents of its next carries and per-iteration outputs). Its
// backward nodes become the body of a reverse scan that carries the cotangent of each
// float carry and an accumulator per const (f32 for a bf16/f16 const: autocast passes a
// weight into a loop in the low dtype), and reads per iteration:
//  - the forward values it needs: the results of products and reductions saved by the
//    forward scan (its body gains outputs, so it stacks them: [length, ...] each, in
//    buffers the memory planner sizes), elementwise and movement results recomputed
//    from them — but an elementwise value reading an x is saved too where that stacks
//    fewer bytes (step 4); with the scan's `remat`, only the carries are saved and
//    everything is recomputed (less memory, one more forward pass of the body). Values
//    that depend on the consts alone are recomputed either way;
//  - the slices of the xs it reads, and the cotangents of the ys.
// Its results are the cotangents of the initial carries, the consts' summed gradients
// and the xs' stacked gradients. A const's gradient terms that are a product of two
// per-iteration values (a weight's xᵀ·g) or a reduction of one (a bias's column sum)
// are not summed in the loop: their operands are stacked (most are already: saved
// activations, the xs, the cotangents) and one product over every iteration's rows, or
// one reduction, follows the loop (JAX's split transpose): one large GEMM instead of
// `length` small ones and an accumulator carried through the loop (scan_moved_terms.h).
// A select's gradient sends nothing to the branch it did not take, so a masked (halted)
// sample's iterations pass its cotangent through unchanged: per-sample halting needs no
// code here.
//
// `ScanGradient::run` lists the steps in order; each step's comment says what it builds.

#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "autodiff/rules.h"
#include "autodiff/scan_body.h"
#include "autodiff/scan_moved_terms.h"
#include "autodiff/scan_save.h"
#include "ir/cast.h"
#include "ir/scan.h"
#include "ir/shape_rules.h"

namespace weft::grad_rules {
namespace {

/// The reverse-mode rule of one `scan` node: a small driver over the loop's facts. Each
/// private member function is one step of `run`, in the order it calls them.
class ScanGradient {
 public:
  ScanGradient(Graph& g, int index, const std::vector<ValueId>& cotangents, const std::vector<bool>& needs);

  /// One gradient per operand of the loop (kNoValue where none), as scan_gradients.
  StatusOr<std::vector<ValueId>> run();

 private:
  Role role(int i) const { return parts_.role(i); }

  std::vector<std::pair<ValueId, ValueId>> seed_outputs();
  Status differentiate_body(const std::vector<std::pair<ValueId, ValueId>>& seeds);
  void mark_per_iteration();
  void choose_reads();
  void stack_forward_values();
  void split_const_gradients();
  void add_reverse_consts_and_carries();
  void add_reverse_xs();
  void add_reverse_x(ValueId v, ValueId source);
  void add_reverse_outputs();
  ValueId build(ValueId v);
  /// The type of const `i`'s accumulator: the const's, but f32 for a half const, whose
  /// terms a sum over `length` iterations would otherwise round at every one.
  Type accumulator_type(int i) const;
  void stack_moved_operands();
  bool caller_stacked(ValueId v) const;
  std::vector<ValueId> add_reverse_scan();
  void add_moved_terms(std::vector<ValueId>& out);
  void round_half_consts(std::vector<ValueId>& out);

  // The loop.
  Graph& g_;
  const int index_;
  const Node node_;  // a copy: g_ grows
  const std::shared_ptr<const Graph> body_;
  const int64_t length_;
  const int consts_, carries_, inputs_, outputs_;
  const bool remat_;
  // An early exit (stop, active): the forward loop also stacks a flag per iteration, true
  // where it ran (a slot it skipped is zero: false), and the reverse loop runs where that
  // flag is (its `active`): exactly the iterations that ran, in reverse.
  const bool exits_;
  const std::vector<ValueId>& cotangents_;
  const std::vector<bool>& needs_;
  const std::vector<ValueId> none_;  // no gradient for any operand
  GradBuilder outer_;                // builds in g_

  // The body and its gradient in one graph: the body's nodes, then the backward nodes.
  Graph grad_;
  const int forward_nodes_;
  std::vector<ValueId> seed_of_;      // body output -> the input of grad_ seeding its cotangent
  const BodyGradient parts_;          // grad_'s parts, for the steps and the save policy
  std::map<int, ValueId> grad_of_;    // body input -> its gradient in grad_
  std::vector<bool> per_iteration_;   // value of grad_ -> whether it varies per iteration
  Reads reads_;
  std::vector<ValueId> stacked_;      // the forward loop's added results, in g_

  // The consts' gradient terms: moved after the loop, or summed in it (const -> terms).
  std::vector<MovedTerm> moved_;
  std::map<int, std::vector<ValueId>> kept_;

  // The reverse loop: its body, its operands (consts, carries, xs), and what each means.
  Graph reverse_;
  std::vector<ValueId> inner_;        // value of grad_ -> value of reverse_
  std::vector<ValueId> operands_;
  int reverse_consts_ = 0, reverse_carries_ = 0;
  int64_t active_ = -1;               // the xs that says which iterations ran
  std::vector<int> carry_ct_;         // the forward carry of each cotangent carry
  std::vector<ValueId> accumulators_;
  std::vector<int> accumulated_;      // the const of each accumulator
  std::vector<int> x_grads_;          // the xs of each stacked gradient
  std::map<ValueId, ValueId> stacked_as_;  // what it reads per iteration -> the stacked value
  std::vector<std::pair<size_t, size_t>> stacked_by_loop_;  // (moved term, operand) per extra y
};

ScanGradient::ScanGradient(Graph& g, int index, const std::vector<ValueId>& cotangents,
                           const std::vector<bool>& needs)
    : g_(g), index_(index), node_(g.node(index)), body_(node_.body), length_(node_.int_attr("length")),
      consts_(static_cast<int>(node_.int_attr("consts"))), carries_(static_cast<int>(node_.int_attr("carries"))),
      inputs_(static_cast<int>(body_->inputs().size())), outputs_(static_cast<int>(body_->outputs().size())),
      remat_(node_.bool_attr("remat")), exits_(scan_exit(node_).any()), cotangents_(cotangents),
      needs_(needs), none_(node_.operands.size(), kNoValue), outer_(g, node_.loc), grad_(*body_),
      forward_nodes_(static_cast<int>(body_->nodes().size())),
      parts_{grad_, consts_, carries_, inputs_, forward_nodes_, seed_of_}, reverse_("grad_" + body_->name()) {}

StatusOr<std::vector<ValueId>> ScanGradient::run() {
  const std::vector<std::pair<ValueId, ValueId>> seeds = seed_outputs();
  if (seeds.empty()) return none_;
  WEFT_RETURN_IF_ERROR(differentiate_body(seeds));
  mark_per_iteration();
  choose_reads();
  stack_forward_values();
  split_const_gradients();
  add_reverse_consts_and_carries();
  add_reverse_xs();
  add_reverse_outputs();
  if (reverse_.outputs().empty() && moved_.empty()) return none_;
  std::vector<ValueId> out = add_reverse_scan();
  add_moved_terms(out);
  round_half_consts(out);
  return out;
}

// 1. Seeds for the body's gradient: an input of grad_ per float carry (always: a carry's
//    cotangent flows through every iteration) and per y given a cotangent.
std::vector<std::pair<ValueId, ValueId>> ScanGradient::seed_outputs() {
  std::vector<std::pair<ValueId, ValueId>> seeds;
  seed_of_.assign(outputs_, kNoValue);
  for (int k = 0; k < outputs_; ++k) {
    const Type t = body_->type(body_->outputs()[k]);
    if (!is_floating(t.dtype) || (k >= carries_ && cotangents_[k] == kNoValue)) continue;
    seed_of_[k] = grad_.add_input("", t);
    seeds.push_back({body_->outputs()[k], seed_of_[k]});
  }
  return seeds;
}

// 2. The body's gradient, appended to grad_: with respect to every float carry and the
//    float consts and xs that want one.
Status ScanGradient::differentiate_body(const std::vector<std::pair<ValueId, ValueId>>& seeds) {
  std::vector<ValueId> wrt;
  std::vector<int> wrt_input;  // the body input of each wrt entry
  for (int i = 0; i < inputs_; ++i) {
    const ValueId v = body_->inputs()[i].value;
    if (!is_floating(body_->type(v).dtype) || !(role(i) == Role::carry || needs_[i])) continue;
    wrt.push_back(v);
    wrt_input.push_back(i);
  }
  StatusOr<std::vector<ValueId>> grads = append_gradients(grad_, seeds, wrt);
  if (!grads.ok()) {
    return Error{"in the body of a loop: " + grads.error().message, grads.error().loc};
  }
  for (size_t w = 0; w < wrt.size(); ++w) grad_of_[wrt_input[w]] = (*grads)[w];
  return Status::ok_status();
}

// 3. Which values of grad_ vary per iteration: those that read a carry, an x or a
//    cotangent seed, directly or through other nodes. The rest depend on the consts alone.
void ScanGradient::mark_per_iteration() {
  per_iteration_.assign(grad_.num_values(), false);
  for (int i = consts_; i < inputs_; ++i) per_iteration_[body_->inputs()[i].value] = true;
  for (ValueId s : seed_of_) {
    if (s != kNoValue) per_iteration_[s] = true;
  }
  for (const Node& n : grad_.nodes()) {
    bool any = false;
    for (ValueId o : n.operands) any = any || per_iteration_[o];
    for (ValueId r : n.results) per_iteration_[r] = any;
  }
}

// 4. What the reverse body reads (reads_): consts, stacked carries, x slices, y
//    cotangents, saved forward values; everything else it recomputes. The save policy
//    (which forward values are saved, which recomputed) is autodiff/scan_save.h's.
void ScanGradient::choose_reads() {
  std::vector<bool> x_made_in_step(inputs_, false);
  for (int i = consts_ + carries_; i < inputs_; ++i) x_made_in_step[i] = g_.value(node_.operands[i]).node >= 0;
  reads_ = grad_rules::choose_reads(parts_, grad_of_, per_iteration_, x_made_in_step, remat_);
}

// 5. The forward scan also stacks the saved values and the carries the reverse body
//    reads (and, with an early exit, a flag per iteration that ran): its body gains
//    outputs, the node results (stacked_). Its nodes are taken from grad_, where
//    differentiating a nested loop rewrote it.
void ScanGradient::stack_forward_values() {
  BodyRebuilder rebuilt(grad_);
  rebuilt.inputs(0, inputs_);  // the body's; not the cotangent seeds
  for (int n = forward_nodes_; n < static_cast<int>(grad_.nodes().size()); ++n) rebuilt.skip(n);  // backward
  rebuilt.copy_nodes();
  Graph& forward = rebuilt.graph();
  for (ValueId v : body_->outputs()) forward.add_output(rebuilt[v]);
  for (ValueId v : reads_.saved) forward.add_output(rebuilt[v]);
  for (int i : reads_.carries) forward.add_output(rebuilt[body_->inputs()[i].value]);
  if (exits_) {
    forward.add_output(*add_typed_node(forward, Op::Full, {},
                                       {{"shape", IntList{}}, {"value", 1.0}, {"dtype", DType::boolean}}, node_.loc));
  }
  const int outputs = static_cast<int>(forward.outputs().size());
  g_.node(index_).body = std::make_shared<const Graph>(std::move(forward));
  for (int k = outputs_; k < outputs; ++k) {
    const Type t = result_type(g_.node(index_), static_cast<size_t>(k), g_.type(node_.result()));
    stacked_.push_back(g_.add_result(index_, "", t));
  }
}

// 6. A const's gradient is a sum over the iterations. Its terms that are a product of
//    two per-iteration values or a reduction of one, possibly reshaped or transposed,
//    move out of the loop (moved_, JAX's split transpose; scan_moved_terms.h says which);
//    the other terms are summed in the loop, in a carry (kept_).
void ScanGradient::split_const_gradients() {
  for (const auto& [i, v] : grad_of_) {
    if (role(i) != Role::constant) continue;
    std::vector<ValueId> kept;
    split_const_gradient(parts_, per_iteration_, i, v, moved_, kept);
    if (!kept.empty()) kept_[i] = std::move(kept);
  }
}

// 7. The reverse body's first inputs and the reverse scan's operands for them: the consts
//    it reads, then its carries: the cotangent of each float carry (zero where the loop's
//    result has none), then an accumulator per const with terms summed in the loop.
void ScanGradient::add_reverse_consts_and_carries() {
  inner_.assign(grad_.num_values(), kNoValue);
  for (int i : reads_.consts) {
    inner_[body_->inputs()[i].value] = reverse_.add_input("", body_->type(body_->inputs()[i].value));
    operands_.push_back(node_.operands[i]);
  }
  reverse_consts_ = static_cast<int>(operands_.size());
  for (int k = 0; k < carries_; ++k) {
    if (seed_of_[k] == kNoValue) continue;
    inner_[seed_of_[k]] = reverse_.add_input("", grad_.type(seed_of_[k]));
    carry_ct_.push_back(k);
    operands_.push_back(cotangents_[k] != kNoValue ? cotangents_[k] : outer_.zeros(grad_.type(seed_of_[k])));
  }
  for (const auto& [i, terms] : kept_) {
    const Type t = accumulator_type(i);
    accumulators_.push_back(reverse_.add_input("", t));
    accumulated_.push_back(i);
    operands_.push_back(outer_.zeros(t));
  }
  reverse_carries_ = static_cast<int>(operands_.size()) - reverse_consts_;
}

// 8. What the reverse loop reads per iteration (its xs), each with the stacked value it
//    reads it from: the saved forward values and the carries (stacked by the forward
//    loop), the xs, the ys' cotangents, and with an early exit the flag of the
//    iterations that ran (its `active`).
void ScanGradient::add_reverse_xs() {
  for (size_t s = 0; s < reads_.saved.size(); ++s) add_reverse_x(reads_.saved[s], stacked_[s]);
  size_t s = reads_.saved.size();
  for (int i : reads_.carries) add_reverse_x(body_->inputs()[i].value, stacked_[s++]);
  for (int i : reads_.xs) add_reverse_x(body_->inputs()[i].value, node_.operands[i]);
  for (int k : reads_.seeds) add_reverse_x(seed_of_[k], cotangents_[k]);
  if (exits_) {
    active_ = static_cast<int64_t>(operands_.size()) - reverse_consts_ - reverse_carries_;
    reverse_.add_input("ran", Type{DType::boolean, Shape({})});
    operands_.push_back(stacked_.back());
  }
}

void ScanGradient::add_reverse_x(ValueId v, ValueId source) {
  inner_[v] = reverse_.add_input("", grad_.type(v));
  operands_.push_back(source);
  stacked_as_[v] = source;
}

// 9. The reverse body's outputs: the carries' next cotangents, each accumulator plus its
//    const's kept terms, the xs' gradients, and the moved terms' operands it stacks.
void ScanGradient::add_reverse_outputs() {
  for (int k : carry_ct_) reverse_.add_output(build(grad_of_.at(consts_ + k)));
  for (size_t a = 0; a < accumulators_.size(); ++a) {
    ValueId sum = accumulators_[a];
    const Type acc = reverse_.type(sum);
    for (ValueId term : kept_.at(accumulated_[a])) {
      ValueId t = build(term);
      if (reverse_.type(t) != acc) t = reverse_.add_node(Op::Cast, {t}, {{"dtype", acc.dtype}}, node_.loc, acc);
      sum = reverse_.add_node(Op::Add, {sum, t}, {}, node_.loc, acc);
    }
    reverse_.add_output(sum);
  }
  for (const auto& [i, v] : grad_of_) {
    if (role(i) != Role::x) continue;
    reverse_.add_output(build(v));
    x_grads_.push_back(i);
  }
  stack_moved_operands();
}

Type ScanGradient::accumulator_type(int i) const {
  Type t = body_->type(body_->inputs()[i].value);
  if (is_half(t.dtype)) t.dtype = DType::f32;
  return t;
}

// Value `v` of grad_ in the reverse body: the nodes it needs, copied on first use.
ValueId ScanGradient::build(ValueId v) {
  if (inner_[v] != kNoValue) return inner_[v];
  const Node& n = grad_.node(grad_.value(v).node);
  for (ValueId o : n.operands) build(o);
  copy_node(reverse_, grad_, n, inner_, [](ValueId) { return std::string(); });
  return inner_[v];
}

// A moved term's operands: stacked already when the loop reads them per iteration (a
// saved forward value, an x, a cotangent), else stacked by the reverse loop as further
// ys. With an early exit, the product after the loop also reads the slots that did not
// run, so every operand must be zero there: saved values are (the forward loop left
// those slots zero), but an x or a cotangent holds whatever the caller put there (NaN
// past a padded sequence's end, and NaN·0 is NaN). Those are stacked again by the
// reverse loop, which writes only the slots that ran.
void ScanGradient::stack_moved_operands() {
  for (size_t t = 0; t < moved_.size(); ++t) {
    MovedTerm& m = moved_[t];
    for (size_t k = 0; k < m.operands.size(); ++k) {
      auto it = stacked_as_.find(m.operands[k]);
      const bool reuse = it != stacked_as_.end() && !(exits_ && caller_stacked(m.operands[k]));
      m.stacked.push_back(reuse ? it->second : kNoValue);
      if (reuse) continue;
      reverse_.add_output(build(m.operands[k]));
      stacked_by_loop_.push_back({t, k});
    }
  }
}

// Whether the caller stacked `v` (an x or a cotangent), so its skipped slots hold
// whatever the caller put there.
bool ScanGradient::caller_stacked(ValueId v) const {
  const int i = parts_.body_input(v);
  return (i >= 0 && role(i) == Role::x) || parts_.seed_output(v) >= 0;
}

// 10. The reverse scan (none when every gradient is a moved term of values the forward
//     loop stacked already: a map over slots), and each operand's gradient from its
//     results; the moved terms' operands it stacked.
std::vector<ValueId> ScanGradient::add_reverse_scan() {
  std::vector<ValueId> results;
  if (!reverse_.outputs().empty()) {
    ScanShape shape{length_, reverse_carries_, reverse_consts_, !node_.bool_attr("reverse"), false, -1, active_};
    StatusOr<std::vector<ValueId>> scan =
        add_scan(g_, operands_, shape, std::make_shared<const Graph>(std::move(reverse_)), node_.loc);
    WEFT_CHECK(scan.ok(), "the gradient of a loop is ill-typed: " + scan.status().to_string());
    results = std::move(scan).value();
  }
  std::vector<ValueId> out = none_;
  size_t r = 0;
  for (int k : carry_ct_) out[consts_ + k] = results[r++];
  for (int i : accumulated_) out[i] = results[r++];
  for (int i : x_grads_) out[i] = results[r++];
  for (const auto& [t, k] : stacked_by_loop_) moved_[t].stacked[k] = results[r++];
  return out;
}

// 11. The moved terms, over every iteration at once (scan_moved_terms.h), each added to
//     its const's gradient (cast to f32 onto a half const's f32 sum).
void ScanGradient::add_moved_terms(std::vector<ValueId>& out) {
  for (const MovedTerm& m : moved_) {
    ValueId v = summed_over_iterations(outer_, grad_, m);
    if (out[m.constant] != kNoValue) v = cast_to(outer_, v, outer_.type(out[m.constant]).dtype);  // onto an f32 sum
    out[m.constant] = out[m.constant] == kNoValue ? v : outer_.add(out[m.constant], v);
  }
}

// 12. A half const's gradient, summed in f32 (its accumulator, accumulator_type), rounded
//     to the const's dtype once.
void ScanGradient::round_half_consts(std::vector<ValueId>& out) {
  for (int i = 0; i < consts_; ++i) {
    const DType d = body_->type(body_->inputs()[i].value).dtype;
    if (out[i] != kNoValue) out[i] = cast_to(outer_, out[i], d);
  }
}

}  // namespace

StatusOr<std::vector<ValueId>> scan_gradients(Graph& g, int index,
                                              const std::vector<ValueId>& cotangents,
                                              const std::vector<bool>& needs) {
  return ScanGradient(g, index, cotangents, needs).run();
}

}  // namespace weft::grad_rules
