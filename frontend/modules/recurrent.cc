// Recurrent cells: GRUCell and LSTMCell (one time step each, PyTorch's gate layouts and
// parameter names), and the two views of an LSTM state.
//
// An LSTM has two state tensors, h and c, but a module has one output, so LSTMCell
// returns the packed state concat([h', c'], -1) and also accepts it packed as its second
// input: the cell maps state to state, so the same instance chains step after step (or
// inside a loop body) with one carried value. LSTMHidden / LSTMCellState take the halves.
#include <cmath>
#include <tuple>

#include "frontend/modules.h"

namespace weft {
namespace {

/// `x·Wᵀ + b` for the cells' [gates·H, in] weights.
ValueId affine(Emitter& e, ValueId x, ValueId w, ValueId b) {
  ValueId y = e.matmul(x, e.transpose(w, {1, 0}));
  return b == kNoValue ? y : e.add(y, b);
}

/// Columns [i·H, (i+1)·H) of a [B, n·H] value.
ValueId chunk(Emitter& e, ValueId x, int64_t i, int64_t hidden) {
  int64_t batch = e.shape(x)[0];
  return e.op(Op::Slice, {x},
              {{"start", IntList{0, i * hidden}}, {"stop", IntList{batch, (i + 1) * hidden}}});
}

/// torch.nn.GRUCell's update from the pre-activations gi = x·W_ihᵀ + b_ih and
/// gh = h·W_hhᵀ + b_hh [B, 3·H]: r, z, n in that order; r gates the hidden part of n,
/// bias included. h' = (1 - z)·n + z·h = n + z·(h - n).
ValueId gru_update(Emitter& e, ValueId gi, ValueId gh, ValueId h, int64_t hidden) {
  ValueId r = e.op(Op::Sigmoid, {e.add(chunk(e, gi, 0, hidden), chunk(e, gh, 0, hidden))});
  ValueId z = e.op(Op::Sigmoid, {e.add(chunk(e, gi, 1, hidden), chunk(e, gh, 1, hidden))});
  ValueId n = e.op(Op::Tanh, {e.add(chunk(e, gi, 2, hidden), e.mul(r, chunk(e, gh, 2, hidden)))});
  return e.add(n, e.mul(z, e.sub(h, n)));
}

/// torch.nn.LSTMCell's update from the summed pre-activations [B, 4·H] (input, forget,
/// cell (g), output) and c: (h', c').
std::pair<ValueId, ValueId> lstm_update(Emitter& e, ValueId gates, ValueId c, int64_t hidden) {
  ValueId i = e.op(Op::Sigmoid, {chunk(e, gates, 0, hidden)});
  ValueId f = e.op(Op::Sigmoid, {chunk(e, gates, 1, hidden)});
  ValueId g = e.op(Op::Tanh, {chunk(e, gates, 2, hidden)});
  ValueId o = e.op(Op::Sigmoid, {chunk(e, gates, 3, hidden)});
  ValueId c_next = e.add(e.mul(f, c), e.mul(i, g));
  return {e.mul(o, e.op(Op::Tanh, {c_next})), c_next};
}

/// PyTorch's RNNCellBase / RNNBase reset_parameters: every parameter U(±1/sqrt(hidden)).
Initializer recurrent_init(int64_t hidden) {
  const double bound = 1.0 / std::sqrt(static_cast<double>(hidden));
  return Initializer::uniform(-bound, bound);
}

/// Common parts of the two cells: checks and the gate pre-activations.
class CellBase : public Module {
 protected:
  CellBase(std::string name, int64_t gates, int64_t in, int64_t hidden, bool bias)
      : name_(std::move(name)), gates_(gates), in_(in), hidden_(hidden), bias_(bias) {}

 public:
  std::string describe() const override {
    return name_ + "(" + std::to_string(in_) + "->" + std::to_string(hidden_) + ")";
  }

 protected:
  /// Fails unless `v` is a float [batch, dim] of x's dtype.
  void check(Emitter& e, ValueId v, const std::string& what, int64_t batch, int64_t dim,
             DType dtype) const {
    const Type& t = e.type(v);
    if (t.dtype != dtype || t.shape != Shape({batch, dim})) {
      e.fail(describe() + ": " + what + " must be " + Type{dtype, Shape({batch, dim})}.to_string() +
             ", got " + t.to_string());
    }
  }

  /// Checks x and returns (x·W_ihᵀ + b_ih, h·W_hhᵀ + b_hh), each [B, gates·H].
  std::pair<ValueId, ValueId> preactivations(Emitter& e, ValueId x, ValueId h) const {
    DType dtype = e.type(x).dtype;
    Initializer init = recurrent_init(hidden_);
    ValueId w_ih = e.param("weight_ih", {gates_ * hidden_, in_}, init, dtype);
    ValueId w_hh = e.param("weight_hh", {gates_ * hidden_, hidden_}, init, dtype);
    ValueId b_ih = bias_ ? e.param("bias_ih", {gates_ * hidden_}, init, dtype) : kNoValue;
    ValueId b_hh = bias_ ? e.param("bias_hh", {gates_ * hidden_}, init, dtype) : kNoValue;
    return {affine(e, x, w_ih, b_ih), affine(e, h, w_hh, b_hh)};
  }

  /// Checks the stream input x [batch, in] and returns batch.
  int64_t check_x(Emitter& e, ValueId x) const {
    const Type& t = e.type(x);
    if (t.shape.rank() != 2 || t.shape[1] != in_ || !is_floating(t.dtype)) {
      e.fail(describe() + " expects a float input [batch, " + std::to_string(in_) + "], got " +
             t.to_string());
    }
    return t.shape[0];
  }

  std::string name_;
  int64_t gates_, in_, hidden_;
  bool bias_;
};

class GRUCellModule : public CellBase {
 public:
  GRUCellModule(int64_t in, int64_t hidden, bool bias) : CellBase("GRUCell", 3, in, hidden, bias) {}

  ValueId forward(Emitter& e, const std::vector<ValueId>& inputs) override {
    if (inputs.size() != 2) {
      e.fail(describe() + " takes two inputs (the stream x [batch, " + std::to_string(in_) +
             "] and the hidden state h [batch, " + std::to_string(hidden_) +
             "] from uses(...)), but " + std::to_string(inputs.size()) + " were given");
    }
    ValueId x = inputs[0], h = inputs[1];
    int64_t batch = check_x(e, x);
    check(e, h, "the hidden state h", batch, hidden_, e.type(x).dtype);
    auto [gi, gh] = preactivations(e, x, h);
    return gru_update(e, gi, gh, h, hidden_);
  }
};

class LSTMCellModule : public CellBase {
 public:
  LSTMCellModule(int64_t in, int64_t hidden, bool bias)
      : CellBase("LSTMCell", 4, in, hidden, bias) {}

  ValueId forward(Emitter& e, const std::vector<ValueId>& inputs) override {
    if (inputs.size() != 2 && inputs.size() != 3) {
      e.fail(describe() + " takes the stream x [batch, " + std::to_string(in_) +
             "] and, from uses(...), either the packed state concat([h, c], -1) [batch, " +
             std::to_string(2 * hidden_) + "] or h and c [batch, " + std::to_string(hidden_) +
             "] each; got " + std::to_string(inputs.size()) + " inputs");
    }
    ValueId x = inputs[0];
    int64_t batch = check_x(e, x);
    DType dtype = e.type(x).dtype;
    ValueId h, c;
    if (inputs.size() == 3) {
      h = inputs[1];
      c = inputs[2];
      check(e, h, "the hidden state h", batch, hidden_, dtype);
      check(e, c, "the cell state c", batch, hidden_, dtype);
    } else {
      check(e, inputs[1], "the packed state concat([h, c], -1)", batch, 2 * hidden_, dtype);
      h = chunk(e, inputs[1], 0, hidden_);
      c = chunk(e, inputs[1], 1, hidden_);
    }
    auto [gi, gh] = preactivations(e, x, h);
    auto [h_next, c_next] = lstm_update(e, e.add(gi, gh), c, hidden_);
    return e.op(Op::Concat, {h_next, c_next}, {{"axis", int64_t{-1}}});
  }
};

/// GRU and LSTM over a batch-first sequence: one loop over time per layer
/// (frontend/modules.h).
class SequenceModule : public Module {
 public:
  SequenceModule(bool lstm, int64_t in, int64_t hidden, RecurrentOptions options)
      : lstm_(lstm), in_(in), hidden_(hidden), options_(options) {}

  std::string describe() const override {
    return std::string(lstm_ ? "LSTM(" : "GRU(") + std::to_string(in_) + "->" + std::to_string(hidden_) +
           (options_.layers != 1 ? ", layers=" + std::to_string(options_.layers) : "") + ")";
  }

  ValueId forward(Emitter& e, const std::vector<ValueId>& inputs) override {
    const Type xt = e.type(inputs[0]);
    if (options_.layers < 1) e.fail(describe() + ": layers must be at least 1");
    if (hidden_ < 1) {
      e.fail(describe() + ": hidden_size must be at least 1 (PyTorch: hidden_size must be greater than zero)");
    }
    if (xt.shape.rank() != 3 || xt.shape[2] != in_ || !is_floating(xt.dtype)) {
      e.fail(describe() + " expects a float sequence [batch, T, " + std::to_string(in_) + "], got " +
             xt.to_string());
    }
    const int64_t batch = xt.shape[0], steps = xt.shape[1], layers = options_.layers, h = hidden_;
    const size_t states = lstm_ ? 2 : 1;
    if (inputs.size() != 1 && inputs.size() != 1 + states) {
      e.fail(describe() + " takes the sequence and, from uses(...), " +
             (lstm_ ? "both initial states h0 and c0" : "the initial state h0") + " [" +
             std::to_string(layers) + ", " + std::to_string(batch) + ", " + std::to_string(h) + "] or nothing (zeros); got " +
             std::to_string(inputs.size()) + " inputs");
    }
    const Type state_type{xt.dtype, Shape({layers, batch, h})};
    for (size_t k = 1; k < inputs.size(); ++k) {
      if (e.type(inputs[k]) != state_type) {
        e.fail(describe() + ": the initial state " + (k == 1 ? "h0" : "c0") + " must be " +
               state_type.to_string() + ", got " + e.type(inputs[k]).to_string());
      }
    }
    const int64_t gates = lstm_ ? 4 : 3;
    const Initializer init = recurrent_init(h);
    ValueId seq = e.transpose(inputs[0], {1, 0, 2});  // [T, B, in]: the loop's axis first
    ValueId last = kNoValue;
    for (int64_t l = 0; l < layers; ++l) {
      const std::string p = "l" + std::to_string(l) + ".";
      const int64_t in = l == 0 ? in_ : h;
      ValueId w_ih = e.param(p + "weight_ih", {gates * h, in}, init, xt.dtype);
      ValueId w_hh = e.param(p + "weight_hh", {gates * h, h}, init, xt.dtype);
      ValueId b_ih = options_.bias ? e.param(p + "bias_ih", {gates * h}, init, xt.dtype) : kNoValue;
      ValueId b_hh = options_.bias ? e.param(p + "bias_hh", {gates * h}, init, xt.dtype) : kNoValue;
      // x·W_ihᵀ + b_ih for every step at once, before the loop.
      ValueId gi = affine(e, e.reshape(seq, {steps * batch, in}), w_ih, b_ih);
      gi = e.reshape(gi, {steps, batch, gates * h});
      const ValueId w_hh_t = e.transpose(w_hh, {1, 0});
      auto initial = [&](size_t k) {
        if (inputs.size() == 1) return e.full(Shape({batch, h}), 0.0, xt.dtype);
        ValueId s = e.op(Op::Slice, {inputs[k]}, {{"start", IntList{l, 0, 0}}, {"stop", IntList{l + 1, batch, h}}});
        return e.reshape(s, {batch, h});
      };
      const ValueId h0 = initial(1);
      const ValueId c0 = lstm_ ? initial(2) : kNoValue;
      // Step t's slice of gi, read by the loop's body (a stand-in while it is emitted).
      const ValueId gi_t = e.reshape(
          e.op(Op::Slice, {gi}, {{"start", IntList{0, 0, 0}}, {"stop", IntList{1, batch, gates * h}}}),
          {batch, gates * h});
      ScanRegion region;
      region.length = steps;
      region.first_node = e.num_nodes();
      ValueId gh = e.matmul(h0, w_hh_t);
      if (b_hh != kNoValue) gh = e.add(gh, b_hh);
      ValueId h1, c1 = kNoValue;
      if (lstm_) {
        std::tie(h1, c1) = lstm_update(e, e.add(gi_t, gh), c0, h);
      } else {
        h1 = gru_update(e, gi_t, gh, h0, h);
      }
      region.carries = lstm_ ? std::vector<ValueId>{h0, c0} : std::vector<ValueId>{h0};
      region.next_carries = lstm_ ? std::vector<ValueId>{h1, c1} : std::vector<ValueId>{h1};
      region.slices = {gi_t};
      region.xs = {gi};
      region.ys = {h1};
      const std::vector<ValueId> r = e.outline_scan(region);
      last = r[0];
      seq = r.back();  // [T, B, H]
    }
    return options_.last ? last : e.transpose(seq, {1, 0, 2});
  }

 private:
  bool lstm_;
  int64_t in_, hidden_;
  RecurrentOptions options_;
};

/// One half of a packed LSTM state [..., 2·H].
class LSTMStatePart : public UnaryModule {
 public:
  LSTMStatePart(int64_t hidden, int64_t part) : hidden_(hidden), part_(part) {}

  std::string describe() const override {
    return std::string(part_ == 0 ? "LSTMHidden(" : "LSTMCellState(") + std::to_string(hidden_) +
           ")";
  }

  ValueId forward1(Emitter& e, ValueId s) override {
    const Shape& shape = e.shape(s);
    if (shape.rank() < 1 || shape.dims.back() != 2 * hidden_) {
      e.fail(describe() + " expects a packed LSTM state concat([h, c], -1) whose last dim is " +
             std::to_string(2 * hidden_) + ", got " + e.type(s).to_string());
    }
    IntList start(shape.rank(), 0), stop = shape.dims;
    start.back() = part_ * hidden_;
    stop.back() = (part_ + 1) * hidden_;
    return e.op(Op::Slice, {s}, {{"start", start}, {"stop", stop}});
  }

 private:
  int64_t hidden_, part_;
};

}  // namespace

ModulePtr GRUCell(int64_t input_size, int64_t hidden_size, bool bias) {
  return std::make_shared<GRUCellModule>(input_size, hidden_size, bias);
}

ModulePtr LSTMCell(int64_t input_size, int64_t hidden_size, bool bias) {
  return std::make_shared<LSTMCellModule>(input_size, hidden_size, bias);
}

ModulePtr GRU(int64_t input_size, int64_t hidden_size, RecurrentOptions options) {
  return std::make_shared<SequenceModule>(false, input_size, hidden_size, options);
}

ModulePtr LSTM(int64_t input_size, int64_t hidden_size, RecurrentOptions options) {
  return std::make_shared<SequenceModule>(true, input_size, hidden_size, options);
}

ModulePtr LSTMHidden(int64_t hidden_size) {
  return std::make_shared<LSTMStatePart>(hidden_size, 0);
}

ModulePtr LSTMCellState(int64_t hidden_size) {
  return std::make_shared<LSTMStatePart>(hidden_size, 1);
}

}  // namespace weft
