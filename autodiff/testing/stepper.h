#pragma once
// Tests: a training step reduced to its optimizer, run on the reference interpreter.
//
//   Stepper s(OptimizerSpec::adam(1e-3).with_group("w", {.lr = 1e-2}),
//             {{"w", w0}, {"b", b0}});
//   s.run(/*lr=*/1e-3, /*step=*/1, {{"w", gw}, {"b", gb}});   // s["w"], s["optimizer.w.exp_avg"]
//
// The graph has param inputs, one data input per gradient, `lr` and `step`, and the
// appended update. `run` feeds the current values, then takes the assigned ones as the
// next step's, as a runtime does with its persistent buffers. A group of the spec
// (OptimizerSpec::groups) is the parameter whose name is its path, with an lr input of its
// own (`lr.NAME`) fed the group's lr scaled as the default group's is (lr / spec.lr).
// A spec with scheduled_momentum gets one `momentum` input (in lr_dtype) for every group,
// fed run()'s `momentum` (the spec's first_momentum() when not given).
// With `all_reduce_gradients`, the data-parallel update (append_optimizer's flag), which
// the reference interpreter, a single process, runs with every all_reduce the identity.

#include <map>
#include <optional>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "autodiff/optimizer.h"
#include "training/init.h"
#include "runtime/reference/interpreter.h"
#include "training/schedule.h"

namespace weft::testing {

class Stepper {
 public:
  Stepper(const OptimizerSpec& spec, const std::map<std::string, Tensor>& params,
          DType lr_dtype = DType::f32, bool all_reduce_gradients = false)
      : spec_(spec), lr_dtype_(lr_dtype) {
    std::vector<OptimizerGroup> groups(spec.groups.size() + 1);
    groups[0].spec = spec;
    groups[0].spec.groups.clear();
    groups[0].lr = g_.add_input("lr", {lr_dtype, {}});
    for (size_t i = 0; i < spec.groups.size(); ++i) {
      groups[i + 1].spec = spec.group_spec(i);
      groups[i + 1].lr = g_.add_input("lr." + spec.groups[i].path, {lr_dtype, {}});
    }
    if (spec.scheduled_momentum) {
      const ValueId momentum = g_.add_input("momentum", {lr_dtype, {}});
      for (OptimizerGroup& group : groups) group.momentum = momentum;
    }
    for (const auto& [name, value] : params) {
      ValueId p = g_.add_input(name, value.type(), InputKind::param);
      ValueId grad = g_.add_input("grad." + name, value.type());
      size_t group = 0;
      for (size_t i = 0; i < spec.groups.size(); ++i) {
        if (spec.groups[i].path == name) group = i + 1;
      }
      groups[group].params_and_grads.push_back({p, grad});
      state_[name] = value;
    }
    ValueId step = g_.add_input("step", {DType::i64, {}});
    auto slots = append_optimizer(g_, groups, step, /*scaled=*/nullptr, all_reduce_gradients);
    status_ = slots.status();
    if (!slots.ok()) return;
    slots_ = *slots;
    for (const OptimizerSlot& s : slots_) {
      auto init = materialize(s.init, g_.type(s.value), /*seed=*/0, /*stream=*/0);
      EXPECT_TRUE(init.ok());
      state_[s.name] = *init;
    }
  }

  const Status& status() const { return status_; }
  const Graph& graph() const { return g_; }
  Graph& mutable_graph() { return g_; }
  const std::vector<OptimizerSlot>& slots() const { return slots_; }
  const Tensor& operator[](const std::string& name) const { return state_.at(name); }

  /// Runs step number `step` (1-based) with these gradients (and this momentum, for a
  /// spec with scheduled_momentum); false on an error.
  bool run(double lr, int64_t step, const std::map<std::string, Tensor>& grads,
           std::optional<double> momentum = std::nullopt) {
    std::vector<Tensor> inputs;
    for (const Input& in : g_.inputs()) {
      const std::string& name = g_.value(in.value).name;
      if (name == "lr") inputs.push_back(Tensor::scalar(lr_dtype_, lr));
      else if (name.rfind("lr.", 0) == 0) inputs.push_back(Tensor::scalar(lr_dtype_, group_lr(name.substr(3), lr)));
      else if (name == "step") inputs.push_back(Tensor::scalar(DType::i64, double(step)));
      else if (name == "momentum") inputs.push_back(Tensor::scalar(lr_dtype_, momentum.value_or(spec_.first_momentum())));
      else if (name.rfind("grad.", 0) == 0) inputs.push_back(grads.at(name.substr(5)));
      else inputs.push_back(state_.at(name));
    }
    auto r = reference::run(g_, inputs);
    EXPECT_TRUE(r.ok()) << r.error().to_string();
    if (!r.ok()) return false;
    EXPECT_EQ(r->updated.size(), state_.size());
    for (auto& [name, value] : r->updated) state_[name] = std::move(value);
    return true;
  }

 private:
  double group_lr(const std::string& path, double lr) const {
    for (size_t i = 0; i < spec_.groups.size(); ++i) {
      if (spec_.groups[i].path == path) return weft::group_lr(spec_.group_spec(i).lr, lr, spec_.lr);
    }
    ADD_FAILURE() << "no group " << path;
    return 0;
  }

  OptimizerSpec spec_;
  Graph g_{"step"};
  Status status_;
  std::vector<OptimizerSlot> slots_;
  std::map<std::string, Tensor> state_;
  DType lr_dtype_ = DType::f32;
};

}  // namespace weft::testing
