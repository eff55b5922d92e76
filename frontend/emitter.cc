#include "frontend/module.h"

#include <algorithm>
#include <memory>

#include "frontend/flow_check.h"
#include "ir/scan.h"
#include "ir/shape_rules.h"

namespace weft {

ValueId UnaryModule::forward(Emitter& e, const std::vector<ValueId>& inputs) {
  if (inputs.size() != 1) {
    e.fail(describe() + " takes one input, but " + std::to_string(inputs.size()) +
           " were given (the stream plus " + std::to_string(inputs.size() - 1) +
           " from uses(...))");
  }
  return forward1(e, inputs[0]);
}

Emitter::Emitter(Graph& graph, BuildOptions options) : graph_(graph), options_(options) {}

Location to_location(const std::source_location& loc) {
  Location l;
  l.file = loc.file_name();
  l.line = static_cast<int>(loc.line());
  l.col = static_cast<int>(loc.column());
  return l;
}

Location Emitter::location() const {
  Location loc = frames_.empty() ? Location{} : frames_.back().loc;
  loc.path = path();
  return loc;
}

std::string Emitter::path() const {
  std::string out;
  for (const Frame& f : frames_) {
    if (f.path_part.empty()) continue;
    out += (out.empty() ? "" : " > ") + f.path_part;
  }
  return out;
}

std::string Emitter::label_path() const {
  std::string out;
  for (const Frame& f : frames_) {
    if (f.is_label) out += (out.empty() ? "" : ".") + f.name_part;
  }
  return out;
}

std::string Emitter::param_prefix() const {
  std::string out;
  for (const Frame& f : frames_) {
    if (!f.name_part.empty()) out += f.name_part + ".";
  }
  return out;
}

void Emitter::fail(const std::string& message) const { throw BuildFailure{Error{message, location()}}; }

ValueId Emitter::op(Op op, std::vector<ValueId> operands, Attrs attrs) {
  StatusOr<ValueId> result =
      add_typed_node(graph_, op, std::move(operands), std::move(attrs), location());
  if (!result.ok()) throw BuildFailure{result.error()};
  node_labels_.push_back(label_path());
  return *result;
}

ValueId Emitter::transpose_last2(ValueId x) {
  IntList perm;
  for (int i = 0; i < rank(x); ++i) perm.push_back(i);
  std::swap(perm[perm.size() - 1], perm[perm.size() - 2]);
  return transpose(x, perm);
}

ValueId Emitter::sum(ValueId x, IntList axes, bool keepdims) {
  return op(Op::Sum, {x}, {{"axes", axes}, {"keepdims", keepdims}});
}

ValueId Emitter::mean(ValueId x, IntList axes, bool keepdims) {
  return op(Op::Mean, {x}, {{"axes", axes}, {"keepdims", keepdims}});
}

ValueId Emitter::constant(double value, DType dtype) { return full({}, value, dtype); }

ValueId Emitter::full(Shape shape, double value, DType dtype) {
  return op(Op::Full, {}, {{"shape", shape.dims}, {"value", value}, {"dtype", dtype}});
}

ValueId Emitter::persistent(std::string_view name, Shape shape, Initializer init, DType dtype,
                            InputKind kind) {
  const Module* owner = frames_.empty() ? nullptr : frames_.back().module;
  auto key = std::make_pair(owner, std::string(name));
  if (auto it = shared_.find(key); it != shared_.end()) {
    const Type& t = graph_.type(it->second);
    if (t.shape != shape || t.dtype != dtype) {
      fail("a shared module's parameter '" + std::string(name) + "' was created as " +
           t.to_string() + " but this use needs " + Type{dtype, shape}.to_string() +
           "; a module instance used in several places must see the same input shapes");
    }
    return it->second;
  }
  const Type type{dtype, shape};
  if (std::string why = flow_detail::unrepresentable(type); !why.empty()) {
    fail("parameter '" + std::string(name) + "' would be " + type.to_string() + ": " + why +
         "; check the module's sizes");
  }
  if (kind == InputKind::param && !is_floating(dtype)) {
    fail("parameter '" + std::string(name) + "' would be " + type.to_string() +
         ", the input's dtype, but parameters are trained and must be floating point; give "
         "this module a float input (integer indices go to Embedding)");
  }
  std::string full_name = param_prefix() + std::string(name);
  if (graph_.find_value(full_name)) {
    fail("two parameters are both named '" + full_name + "'; give one of the flows a label");
  }
  ValueId v = graph_.add_input(full_name, Type{dtype, std::move(shape)}, kind, location());
  shared_[key] = v;
  params_.push_back(ParamInfo{full_name, v, kind, init, label_path()});
  return v;
}

ValueId Emitter::param(std::string_view name, Shape shape, Initializer init, DType dtype) {
  return persistent(name, std::move(shape), init, dtype, InputKind::param);
}

ValueId Emitter::state(std::string_view name, Shape shape, Initializer init, DType dtype) {
  return persistent(name, std::move(shape), init, dtype, InputKind::state);
}

ValueId Emitter::carried_state(const std::string& tag, const Type& type) {
  ValueId v = state(tag + ".state", type.shape, Initializer::zeros(), type.dtype);
  for (ParamInfo& p : params_) {
    if (p.value == v) p.carried = true;
  }
  return v;
}

void Emitter::assign(ValueId target, ValueId value) { op(Op::Assign, {target, value}); }

ValueId Emitter::random_key() {
  if (rng_state_ == kNoValue) {
    // (seed, offset): the runtime seeds it from BuildOptions::seed; finish() makes every
    // step advance the offset.
    rng_state_ = graph_.add_input("rng", Type{DType::i64, {2}}, InputKind::state, location());
    params_.push_back(ParamInfo{"rng", rng_state_, InputKind::state, Initializer::rng_key(), ""});
  }
  // Call site k draws with offset + k * 2^32: disjoint counters for 2^32 steps.
  int k = random_calls_++;
  if (k == 0) return rng_state_;
  ValueId lanes = op(Op::Iota, {}, {{"shape", IntList{2}}, {"axis", int64_t{0}}, {"dtype", DType::i64}});
  ValueId shift = op(Op::Mul, {lanes, constant(static_cast<double>(int64_t{k} << 32), DType::i64)});
  return add(rng_state_, shift);
}

void Emitter::finish() {
  if (rng_state_ == kNoValue) return;
  ValueId lanes = op(Op::Iota, {}, {{"shape", IntList{2}}, {"axis", int64_t{0}}, {"dtype", DType::i64}});
  assign(rng_state_, add(rng_state_, lanes));
}

void Emitter::drop_nodes_from(int first_node) {
  std::vector<bool> keep(graph_.nodes().size(), true);
  std::fill(keep.begin() + first_node, keep.end(), false);
  tags_.erase(std::remove_if(tags_.begin(), tags_.end(),
                             [&](const auto& t) { return graph_.value(t.second).node >= first_node; }),
              tags_.end());
  graph_.remove_nodes(keep);
  node_labels_.resize(static_cast<size_t>(first_node));
}

std::vector<ValueId> Emitter::outline_scan(const ScanRegion& r) {
  // A carry whose next value has another type is the scan shape rule's error (add_scan
  // below); the loop modules check first, to word it for the user.
  const int end = num_nodes();
  for (int i = r.first_node; i < end; ++i) {
    const Node& n = graph_.node(i);
    if (n.op == Op::Assign) {
      throw BuildFailure{Error{"a loop body cannot assign state (" + n.loc.path + " updates %" +
                                   graph_.value(n.operands[0]).name +
                                   " in every iteration: BatchNorm's running statistics or a "
                                   "forward reference); keep it outside the loop",
                               location()}};
    }
  }
  if (r.length == 0) {
    // No iteration runs: the initial carries, and each y stacked zero times.
    std::vector<Type> stacked;
    for (ValueId y : r.ys) {
      Type t = type(y);
      t.shape.dims.insert(t.shape.dims.begin(), 0);
      stacked.push_back(t);
    }
    drop_nodes_from(r.first_node);
    std::vector<ValueId> results = r.carries;
    for (const Type& t : stacked) results.push_back(full(t.shape, 0, t.dtype));
    return results;
  }
  auto inside = [&](ValueId v) { return graph_.value(v).node >= r.first_node; };
  // Inputs: the outer values the iteration reads (consts), its carries, its slices.
  std::vector<bool> is_input(graph_.num_values(), false);
  for (ValueId v : r.carries) is_input[v] = true;
  for (ValueId v : r.slices) is_input[v] = true;
  std::vector<ValueId> consts;
  auto note_const = [&](ValueId v) {
    if (inside(v) || is_input[v]) return;
    is_input[v] = true;
    consts.push_back(v);
  };
  for (int i = r.first_node; i < end; ++i) {
    for (ValueId o : graph_.node(i).operands) note_const(o);
  }
  for (ValueId v : r.next_carries) note_const(v);
  for (ValueId v : r.ys) note_const(v);
  std::vector<ValueId> inner(graph_.num_values(), kNoValue);  // outer value -> body value
  auto body = std::make_shared<Graph>("body");
  auto add_inputs = [&](const std::vector<ValueId>& values) {
    for (ValueId v : values) inner[v] = body->add_input(graph_.value(v).name, type(v));
  };
  add_inputs(consts);
  add_inputs(r.carries);
  add_inputs(r.slices);
  for (int i = r.first_node; i < end; ++i) {
    copy_node(*body, graph_, graph_.node(i), inner, [&](ValueId v) { return graph_.value(v).name; });
  }
  for (ValueId v : r.next_carries) body->add_output(inner[v]);
  for (ValueId v : r.ys) body->add_output(inner[v]);
  drop_nodes_from(r.first_node);  // the iteration leaves the outer graph (with any tag it noted) for the body
  std::vector<ValueId> operands = consts;
  operands.insert(operands.end(), r.carries.begin(), r.carries.end());
  operands.insert(operands.end(), r.xs.begin(), r.xs.end());
  ScanShape shape{r.length, static_cast<int64_t>(r.carries.size()), static_cast<int64_t>(consts.size()),
                  r.reverse, r.remat, r.stop};
  StatusOr<std::vector<ValueId>> results = add_scan(graph_, std::move(operands), shape, body, location());
  if (!results.ok()) throw BuildFailure{results.error()};
  node_labels_.push_back(label_path());
  return *results;
}

void Emitter::note_tag(const std::string& name, ValueId value) {
  std::string labels = label_path();
  tags_.emplace_back(labels.empty() ? name : labels + "." + name, value);
}

void Emitter::push_frame(const Module* m, std::string path_part, std::string name_part,
                         std::source_location loc, bool is_label) {
  frames_.push_back(Frame{m, std::move(path_part), std::move(name_part), to_location(loc), is_label});
}

void Emitter::push_frame(const Module* m, std::string path_part, std::string name_part,
                         Location loc) {
  loc.path.clear();
  frames_.push_back(Frame{m, std::move(path_part), std::move(name_part), std::move(loc), false});
}

void Emitter::pop_frame() { frames_.pop_back(); }

ValueId Emitter::emit(const ModulePtr& m, const std::vector<ValueId>& inputs,
                      std::string path_part, std::string name_part, std::source_location loc) {
  for (const Frame& f : frames_) {
    if (f.module == m.get()) {
      push_frame(m.get(), path_part, name_part, loc);
      fail("cycle: " + m->describe() + " contains itself (builder path " + path() + ")");
    }
  }
  push_frame(m.get(), std::move(path_part), std::move(name_part), loc);
  ValueId out = m->forward(*this, inputs);
  pop_frame();
  return out;
}

}  // namespace weft
