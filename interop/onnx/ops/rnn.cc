// (family: rnn) ONNX's recurrent layers, RNN, GRU and LSTM (opset 7 on; `layout` from 14),
// as weft `scan` loops, one per direction, emitted as frontend's GRU and LSTM modules
// emit theirs: the input projection X·Wᵀ + Wb for every step at once before the loop,
// the recurrence h·Rᵀ + Rb and the gates inside it, the loop's body one time step:
//
//   Y, Y_h = GRU(X, W, R, B) {direction="bidirectional"}
//   ->  %gi0 = reshape(reshape(X, [T·B, I])·W[0]ᵀ + Wb[0], [T, B, 3H])
//       %h0, %ys0 = scan(R[0]ᵀ, Rb[0], %zeros, %gi0)                  (forward)
//       %h1, %ys1 = scan(R[1]ᵀ, Rb[1], %zeros, %gi1) {reverse=true}   (slot t is still step t)
//       Y = concat of the ys on a direction axis, Y_h of the last states
//
// ONNX's gate orders (LSTM i, o, f, c; GRU z, r, h) and equations (GRU's
// linear_before_reset 0 and 1); `layout` 1 is the batch-first form of X, Y and the states.
// sequence_lens (each row's length): a bool [T, B, 1] mask `t < len[b]` made before the
// loop is scanned with the inputs, and inside a `select` keeps a finished row's state and
// zeroes its Y (exact, and per row: the scan's own `active` skips whole iterations only).
// A reverse direction then holds a row's initial state until step len - 1 and runs back
// from there, as ONNX's reverse over each row's own length does.
// LSTM's peepholes P add P⊙c to the i and f gates (the previous c) and the o gate (the
// new one). Refused, naming the node: activations other than Sigmoid, Tanh and Relu (and
// any activation_alpha / activation_beta), clip and LSTM's input_forget.
#include <algorithm>
#include <cctype>
#include <string>
#include <utility>
#include <vector>

#include "interop/onnx/convert.h"
#include "interop/onnx/proto.h"
#include "ir/cast.h"

namespace weft::onnx_io {
namespace {
namespace rnn {  // this file's names, apart in the importer's unity units

enum class Cell { rnn, gru, lstm };

/// The gates (rows of W and R per hidden unit) and the activations each direction uses.
int64_t gates_of(Cell cell) { return cell == Cell::rnn ? 1 : cell == Cell::gru ? 3 : 4; }
std::vector<std::string> default_activations(Cell cell) {
  if (cell == Cell::rnn) return {"Tanh"};
  if (cell == Cell::gru) return {"Sigmoid", "Tanh"};
  return {"Sigmoid", "Tanh", "Tanh"};
}

/// What the node asks for, read and checked once.
struct Recurrence {
  Cell cell;
  int64_t hidden = 0, directions = 1, steps = 0, batch = 0, input = 0;
  bool reverse = false;       ///< direction "reverse" (one direction, run backward).
  bool batch_first = false;   ///< layout 1.
  bool linear_before_reset = false;
  std::vector<Op> activations;  ///< Per direction, default_activations(cell).size() each.
  DType dtype = DType::f32;
};

Op activation_op(NodeContext& n, const std::string& name) {
  std::string lower = name;
  std::transform(lower.begin(), lower.end(), lower.begin(), [](unsigned char c) { return std::tolower(c); });
  if (lower == "sigmoid") return Op::Sigmoid;
  if (lower == "tanh") return Op::Tanh;
  if (lower == "relu") return Op::Relu;
  n.unsupported("activation '" + name + "' (weft imports Sigmoid, Tanh and Relu)");
}

/// The attributes and the shapes of X, W and R.
Recurrence read_recurrence(NodeContext& n, Cell cell) {
  Recurrence s;
  s.cell = cell;
  if (n.opset() < 14 && n.has_attr("layout")) n.unsupported("attribute 'layout' (from opset 14)");
  for (const char* a : {"activation_alpha", "activation_beta"}) {
    if (!n.attr_floats(a).empty()) n.unsupported("attribute '" + std::string(a) + "' (activations with parameters)");
  }
  if (n.has_attr("clip")) n.unsupported("attribute 'clip' (clipping the gates' inputs)");
  if (n.attr_int("input_forget", 0) != 0) n.unsupported("input_forget = 1 (coupled input and forget gates)");
  const std::string direction = n.attr_string("direction", "forward");
  if (direction == "bidirectional") {
    s.directions = 2;
  } else if (direction == "reverse") {
    s.reverse = true;
  } else if (direction != "forward") {
    n.invalid("direction is '" + direction + "' (forward, reverse or bidirectional)");
  }
  const int64_t layout = n.attr_int("layout", 0);
  if (layout != 0 && layout != 1) n.invalid("layout is " + std::to_string(layout) + " (0 or 1)");
  s.batch_first = layout == 1;
  s.linear_before_reset = n.attr_int("linear_before_reset", 0) != 0;

  std::vector<std::string> names;
  if (n.has_attr("activations")) {
    const auto& a = n.node().attribute();
    for (const auto& attr : a) {
      if (attr.name() == "activations") names.assign(attr.strings().begin(), attr.strings().end());
    }
  } else {
    for (int64_t d = 0; d < s.directions; ++d) {
      for (const std::string& f : default_activations(cell)) names.push_back(f);
    }
  }
  const size_t per_direction = default_activations(cell).size();
  if (names.size() != per_direction * static_cast<size_t>(s.directions)) {
    n.invalid("attribute 'activations' names " + std::to_string(names.size()) + " functions for " +
              std::to_string(s.directions) + " direction(s), which take " +
              std::to_string(per_direction * static_cast<size_t>(s.directions)));
  }
  for (const std::string& f : names) s.activations.push_back(activation_op(n, f));

  const Type x = n.input_type(0), w = n.input_type(1), r = n.input_type(2);
  if (x.shape.rank() != 3 || !is_floating(x.dtype)) {
    n.invalid("X must be a float tensor of rank 3, got " + x.to_string());
  }
  s.dtype = x.dtype;
  s.steps = x.shape[s.batch_first ? 1 : 0];
  s.batch = x.shape[s.batch_first ? 0 : 1];
  s.input = x.shape[2];
  if (r.shape.rank() != 3) n.invalid("R must have rank 3, got " + r.to_string());
  s.hidden = n.attr_int("hidden_size", r.shape[2]);
  if (s.hidden < 1) n.invalid("hidden_size is " + std::to_string(s.hidden) + " (1 or more)");
  const int64_t rows = gates_of(cell) * s.hidden;
  const auto expect = [&](const Type& t, const char* what, Shape want) {
    if (t.shape != want || t.dtype != s.dtype) {
      n.invalid(std::string(what) + " must be " + Type{s.dtype, want}.to_string() + " for X " + x.to_string() +
                " and hidden_size " + std::to_string(s.hidden) + ", got " + t.to_string());
    }
  };
  expect(w, "W", Shape({s.directions, rows, s.input}));
  expect(r, "R", Shape({s.directions, rows, s.hidden}));
  if (n.has_input(3)) expect(n.input_type(3), "B", Shape({s.directions, 2 * rows}));
  if (n.has_input(4)) {
    const Type lens = n.input_type(4);
    if (lens.shape != Shape({s.batch}) || !is_integer(lens.dtype)) {
      n.invalid("sequence_lens must be integers [" + std::to_string(s.batch) + "], got " + lens.to_string());
    }
  }
  const Shape state =
      s.batch_first ? Shape({s.batch, s.directions, s.hidden}) : Shape({s.directions, s.batch, s.hidden});
  if (n.has_input(5)) expect(n.input_type(5), "initial_h", state);
  if (cell == Cell::lstm && n.has_input(6)) expect(n.input_type(6), "initial_c", state);
  if (cell == Cell::lstm && n.has_input(7)) expect(n.input_type(7), "P", Shape({s.directions, 3 * s.hidden}));
  if (s.steps < 1) n.unsupported("a sequence of length 0");
  return s;
}

/// Entries [begin, end) of `x` along `axis`.
ValueId entries(Emitter& e, ValueId x, int64_t axis, int64_t begin, int64_t end) {
  IntList start(static_cast<size_t>(e.rank(x)), 0), stop = e.shape(x).dims;
  start[static_cast<size_t>(axis)] = begin;
  stop[static_cast<size_t>(axis)] = end;
  return e.op(Op::Slice, {x}, {{"start", start}, {"stop", stop}});
}

/// Entry `i` of `x` along `axis`, without that axis.
ValueId take(Emitter& e, ValueId x, int64_t axis, int64_t i) {
  IntList dims = e.shape(x).dims;
  dims.erase(dims.begin() + axis);
  return e.reshape(entries(e, x, axis, i, i + 1), dims);
}

/// Gate `g` of a [B, gates·H] value: its columns [g·H, (g+1)·H).
ValueId gate(Emitter& e, ValueId x, int64_t g, int64_t hidden) {
  return entries(e, x, 1, g * hidden, (g + 1) * hidden);
}

/// `parts` joined on `axis`, each given a new axis of 1 there first.
ValueId stack(Emitter& e, const std::vector<ValueId>& parts, int64_t axis) {
  std::vector<ValueId> grown;
  for (ValueId p : parts) {
    IntList dims = e.shape(p).dims;
    dims.insert(dims.begin() + axis, 1);
    grown.push_back(e.reshape(p, dims));
  }
  return grown.size() == 1 ? grown[0] : e.op(Op::Concat, grown, {{"axis", axis}});
}

/// One direction's weights, read outside the loop: R's transposes (GRU with
/// linear_before_reset 0 splits off the h gate's, which multiplies r⊙h), the biases and
/// an LSTM's peepholes.
struct Weights {
  ValueId w_t, r_t, r_h_t = kNoValue;      ///< Wᵀ [I, G·H], Rᵀ [H, G·H or 2H], R_hᵀ [H, H].
  ValueId wb = kNoValue, rb = kNoValue, rb_h = kNoValue;
  ValueId p_i = kNoValue, p_o = kNoValue, p_f = kNoValue;  ///< [H] each.
};

/// Whether input `i` is absent or zeros known at import time (P: nothing to add).
bool absent_or_zeros(NodeContext& n, int i) {
  if (!n.has_input(i)) return true;
  const Tensor* t = n.constant(i);
  if (t == nullptr) return false;
  for (int64_t k = 0; k < t->numel(); ++k) {
    if (t->get_double(k) != 0) return false;
  }
  return true;
}

Weights weights(NodeContext& n, const Recurrence& s, int64_t d) {
  Emitter& e = n.e();
  const int64_t rows = gates_of(s.cell) * s.hidden;
  Weights w;
  w.w_t = e.transpose(take(e, n.input(1), 0, d), {1, 0});
  ValueId r = take(e, n.input(2), 0, d);
  const bool split_h = s.cell == Cell::gru && !s.linear_before_reset;
  if (split_h) {
    w.r_h_t = e.transpose(entries(e, r, 0, 2 * s.hidden, rows), {1, 0});
    r = entries(e, r, 0, 0, 2 * s.hidden);
  }
  w.r_t = e.transpose(r, {1, 0});
  if (n.has_input(3)) {
    const ValueId b = take(e, n.input(3), 0, d);
    w.wb = entries(e, b, 0, 0, rows);
    w.rb = entries(e, b, 0, rows, split_h ? rows + 2 * s.hidden : 2 * rows);
    if (split_h) w.rb_h = entries(e, b, 0, rows + 2 * s.hidden, 2 * rows);
  }
  if (s.cell == Cell::lstm && !absent_or_zeros(n, 7)) {
    const ValueId p = take(e, n.input(7), 0, d);
    w.p_i = entries(e, p, 0, 0, s.hidden);
    w.p_o = entries(e, p, 0, s.hidden, 2 * s.hidden);
    w.p_f = entries(e, p, 0, 2 * s.hidden, 3 * s.hidden);
  }
  return w;
}

/// h·Rᵀ + Rb.
ValueId recur(Emitter& e, ValueId h, ValueId r_t, ValueId rb) {
  const ValueId y = e.matmul(h, r_t);
  return rb == kNoValue ? y : e.add(y, rb);
}

/// Direction d's initial state from input `i` (initial_h, initial_c), zeros when absent.
ValueId initial_state(NodeContext& n, const Recurrence& s, int i, int64_t d) {
  Emitter& e = n.e();
  if (!n.has_input(i)) return e.full(Shape({s.batch, s.hidden}), 0, s.dtype);
  return take(e, n.input(i), s.batch_first ? 1 : 0, d);
}

/// One time step of the cell, inside the loop: (h', c'), c' for an LSTM only. `g_in` is the
/// step's X·Wᵀ + Wb [B, G·H]; `acts` this direction's activations (ONNX's f, g, h).
std::pair<ValueId, ValueId> cell_step(Emitter& e, const Recurrence& s, const Weights& w, const Op* acts, ValueId g_in,
                                      ValueId h, ValueId c) {
  const int64_t hidden = s.hidden;
  const auto act = [&](int k, ValueId v) { return e.op(acts[k], {v}); };
  if (s.cell == Cell::rnn) return {act(0, e.add(g_in, recur(e, h, w.r_t, w.rb))), kNoValue};
  if (s.cell == Cell::gru) {  // gates z, r, h
    const ValueId g_rec = recur(e, h, w.r_t, w.rb);  // [B, 3H], or [B, 2H] (z, r) when split
    const ValueId z = act(0, e.add(gate(e, g_in, 0, hidden), gate(e, g_rec, 0, hidden)));
    const ValueId r = act(0, e.add(gate(e, g_in, 1, hidden), gate(e, g_rec, 1, hidden)));
    const ValueId rh = s.linear_before_reset ? e.mul(r, gate(e, g_rec, 2, hidden))
                                             : recur(e, e.mul(r, h), w.r_h_t, w.rb_h);
    const ValueId cand = act(1, e.add(gate(e, g_in, 2, hidden), rh));
    return {e.add(cand, e.mul(z, e.sub(h, cand))), kNoValue};  // (1 - z)⊙cand + z⊙h, as PyTorch has it
  }
  // LSTM: gates i, o, f, c.
  const ValueId g_all = e.add(g_in, recur(e, h, w.r_t, w.rb));
  // Gate k's pre-activation, with its peephole's p⊙state.
  const auto pre = [&](int64_t k, ValueId p, ValueId state) {
    const ValueId v = gate(e, g_all, k, hidden);
    return p == kNoValue ? v : e.add(v, e.mul(p, state));
  };
  const ValueId i = act(0, pre(0, w.p_i, c));
  const ValueId f = act(0, pre(2, w.p_f, c));
  const ValueId cand = act(1, gate(e, g_all, 3, hidden));
  const ValueId c1 = e.add(e.mul(f, c), e.mul(i, cand));
  return {e.mul(act(0, pre(1, w.p_o, c1)), act(2, c1)), c1};
}

/// One direction's loop: its last states (h, and c for an LSTM) and, when Y is wanted,
/// its per-step outputs [T, B, H].
struct DirectionResult {
  ValueId h = kNoValue, c = kNoValue, ys = kNoValue;
};

DirectionResult run_direction(NodeContext& n, const Recurrence& s, ValueId x_steps, ValueId mask, int64_t d) {
  Emitter& e = n.e();
  const bool lstm = s.cell == Cell::lstm;
  const Weights w = weights(n, s, d);
  // X·Wᵀ + Wb for every step at once.
  ValueId gi = e.matmul(e.reshape(x_steps, {s.steps * s.batch, s.input}), w.w_t);
  if (w.wb != kNoValue) gi = e.add(gi, w.wb);
  gi = e.reshape(gi, {s.steps, s.batch, gates_of(s.cell) * s.hidden});
  ScanRegion region;
  region.length = s.steps;
  region.reverse = s.reverse || d == 1;  // the backward direction of a bidirectional layer too
  region.carries.push_back(initial_state(n, s, 5, d));
  if (lstm) region.carries.push_back(initial_state(n, s, 6, d));
  // Stand-ins for one step's slices, read by the body.
  region.xs.push_back(gi);
  region.slices.push_back(take(e, gi, 0, 0));
  if (mask != kNoValue) {
    region.xs.push_back(mask);
    region.slices.push_back(take(e, mask, 0, 0));
  }

  region.first_node = e.num_nodes();
  const ValueId h = region.carries[0], c = lstm ? region.carries[1] : kNoValue;
  const Op* acts = s.activations.data() + static_cast<size_t>(d) * default_activations(s.cell).size();
  auto [h1, c1] = cell_step(e, s, w, acts, region.slices[0], h, c);
  ValueId y = h1;
  if (mask != kNoValue) {  // past the row's length: the state holds, Y is 0
    const ValueId m = region.slices[1];
    h1 = e.op(Op::Select, {m, h1, h});
    if (lstm) c1 = e.op(Op::Select, {m, c1, c});
    y = e.op(Op::Select, {m, h1, e.constant(0, s.dtype)});
  }
  region.next_carries = lstm ? std::vector<ValueId>{h1, c1} : std::vector<ValueId>{h1};
  if (n.wants_output(0)) region.ys.push_back(y);
  const std::vector<ValueId> r = e.outline_scan(region);
  DirectionResult out{.h = r[0]};
  if (lstm) out.c = r[1];
  if (n.wants_output(0)) out.ys = r.back();
  return out;
}

/// The bool [T, B, 1] mask `t < sequence_lens[b]`; kNoValue without sequence_lens, or
/// when they are known at import time to be the whole length.
ValueId length_mask(NodeContext& n, const Recurrence& s) {
  if (!n.has_input(4)) return kNoValue;
  if (const Tensor* lens = n.constant(4)) {
    bool whole = true;
    for (int64_t b = 0; b < lens->numel(); ++b) {
      const int64_t len = static_cast<int64_t>(lens->get_double(b));
      if (len < 0 || len > s.steps) {
        n.invalid("sequence_lens[" + std::to_string(b) + "] is " + std::to_string(len) + ", outside [0, " +
                  std::to_string(s.steps) + "]");
      }
      whole = whole && len == s.steps;
    }
    if (whole) return kNoValue;
  }
  Emitter& e = n.e();
  const ValueId t =
      e.op(Op::Iota, {}, {{"shape", IntList{s.steps, 1, 1}}, {"axis", int64_t{0}}, {"dtype", DType::i64}});
  const ValueId lens = e.reshape(cast_to(e, n.input(4), DType::i64), {1, s.batch, 1});
  return e.op(Op::Lt, {t, lens});
}

void convert_recurrence(NodeContext& n, Cell cell) {
  const int max_inputs = cell == Cell::lstm ? 8 : 6, max_outputs = cell == Cell::lstm ? 3 : 2;
  if (n.num_inputs() < 3) {  // more than ONNX's schema allows: refused by the importer
    n.invalid("it takes 3 to " + std::to_string(max_inputs) + " inputs, got " + std::to_string(n.num_inputs()));
  }
  if (n.num_outputs() > max_outputs) {
    n.invalid("it has at most " + std::to_string(max_outputs) + " outputs, got " + std::to_string(n.num_outputs()));
  }
  const Recurrence s = read_recurrence(n, cell);
  Emitter& e = n.e();
  ValueId x = n.input(0);
  if (s.batch_first) x = e.transpose(x, {1, 0, 2});  // [T, B, I]: the loop's axis first
  const ValueId mask = length_mask(n, s);
  std::vector<DirectionResult> dirs;
  for (int64_t d = 0; d < s.directions; ++d) dirs.push_back(run_direction(n, s, x, mask, d));
  // Y [T, D, B, H] (layout 1: [B, T, D, H]); Y_h, Y_c [D, B, H] (layout 1: [B, D, H]).
  const auto states = [&](ValueId DirectionResult::*part) {
    std::vector<ValueId> v;
    for (const DirectionResult& r : dirs) v.push_back(r.*part);
    return stack(e, v, s.batch_first ? 1 : 0);
  };
  if (n.wants_output(0)) {
    std::vector<ValueId> ys;
    for (const DirectionResult& r : dirs) ys.push_back(s.batch_first ? e.transpose(r.ys, {1, 0, 2}) : r.ys);
    n.set_output(0, stack(e, ys, s.batch_first ? 2 : 1));
  }
  if (n.wants_output(1)) n.set_output(1, states(&DirectionResult::h));
  if (n.wants_output(2)) n.set_output(2, states(&DirectionResult::c));
}

void rnn(NodeContext& n) {
  n.expect_attrs({"activation_alpha", "activation_beta", "activations", "clip", "direction", "hidden_size", "layout"});
  convert_recurrence(n, Cell::rnn);
}

void gru(NodeContext& n) {
  n.expect_attrs({"activation_alpha", "activation_beta", "activations", "clip", "direction", "hidden_size", "layout",
                  "linear_before_reset"});
  convert_recurrence(n, Cell::gru);
}

void lstm(NodeContext& n) {
  n.expect_attrs({"activation_alpha", "activation_beta", "activations", "clip", "direction", "hidden_size", "layout",
                  "input_forget"});
  convert_recurrence(n, Cell::lstm);
}

// One row each: opset 14's only change, `layout`, is read by opset (read_recurrence).
const OpConverter kRecurrent[] = {{"RNN", 7, rnn}, {"GRU", 7, gru}, {"LSTM", 7, lstm}};

}  // namespace rnn
}  // namespace

std::span<const OpConverter> rnn_converters() { return rnn::kRecurrent; }

}  // namespace weft::onnx_io
