#include "autodiff/scan_save.h"

#include <algorithm>
#include <cstdint>

namespace weft::grad_rules {

namespace {

/// The reads of one body's gradient under one policy or the other (the header's), and
/// what each stacks.
class SavePolicy {
 public:
  SavePolicy(const BodyGradient& body, const std::vector<bool>& per_iteration, const std::vector<bool>& x_made_in_step,
             bool remat)
      : body_(body), per_iteration_(per_iteration), x_made_in_step_(x_made_in_step), remat_(remat) {}

  /// The reads of `grads`, saving elementwise values that read an x where
  /// `save_x_readers`.
  Reads reads_under(const std::map<int, ValueId>& grads, bool save_x_readers) const {
    Reads reads;
    std::set<ValueId> seen;
    for (const auto& [i, v] : grads) read(v, save_x_readers, seen, reads);
    return reads;
  }

  /// The bytes per iteration that reading `reads` keeps stacked: the saved values and the
  /// carries (stacked by the forward loop), and the xs made in the step.
  int64_t stacked_bytes(const Reads& reads) const {
    const Graph& g = body_.graph;
    int64_t bytes = 0;
    for (ValueId v : reads.saved) bytes += g.type(v).bytes();
    for (int i : reads.carries) bytes += g.type(g.inputs()[i].value).bytes();
    for (int i : reads.xs) {
      if (x_made_in_step_[i]) bytes += g.type(g.inputs()[i].value).bytes();
    }
    return bytes;
  }

 private:
  void read(ValueId v, bool save_x_readers, std::set<ValueId>& seen, Reads& reads) const {
    if (!seen.insert(v).second) return;
    if (const int i = body_.body_input(v); i >= 0) {
      const Role r = body_.role(i);
      (r == Role::constant ? reads.consts : r == Role::carry ? reads.carries : reads.xs).insert(i);
      return;
    }
    if (const int k = body_.seed_output(v); k >= 0) {
      if (k >= body_.carries) reads.seeds.insert(k);
      return;
    }
    const Node& n = body_.graph.node(body_.graph.value(v).node);
    const OpCategory c = n.info().category;
    const bool cheap = c == OpCategory::Elementwise || c == OpCategory::Movement;
    const bool x_reader = save_x_readers && c == OpCategory::Elementwise &&
                          std::any_of(n.operands.begin(), n.operands.end(), [&](ValueId o) { return is_x_window(o); });
    if (body_.is_forward(v) && per_iteration_[v] && !remat_ && (!cheap || x_reader)) {
      reads.saved.push_back(v);
      return;
    }
    for (ValueId o : n.operands) read(o, save_x_readers, seen, reads);
  }

  /// Whether `v` is an x of the body, or a movement (slice, reshape, ...) of xs only.
  bool is_x_window(ValueId v) const {
    if (const int i = body_.body_input(v); i >= 0) return body_.role(i) == Role::x;
    if (!body_.is_forward(v)) return false;
    const Node& n = body_.graph.node(body_.graph.value(v).node);
    return n.info().category == OpCategory::Movement && !n.operands.empty() &&
           std::all_of(n.operands.begin(), n.operands.end(), [&](ValueId o) { return is_x_window(o); });
  }

  const BodyGradient& body_;
  const std::vector<bool>& per_iteration_;
  const std::vector<bool>& x_made_in_step_;
  const bool remat_;
};

}  // namespace

Reads choose_reads(const BodyGradient& body, const std::map<int, ValueId>& grads,
                   const std::vector<bool>& per_iteration, const std::vector<bool>& x_made_in_step, bool remat) {
  const SavePolicy policy(body, per_iteration, x_made_in_step, remat);
  Reads dots = policy.reads_under(grads, /*save_x_readers=*/false);
  if (remat) return dots;
  Reads x_readers_saved = policy.reads_under(grads, /*save_x_readers=*/true);
  return policy.stacked_bytes(x_readers_saved) < policy.stacked_bytes(dots) ? x_readers_saved : dots;
}

}  // namespace weft::grad_rules
