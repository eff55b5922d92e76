// Recurrent cells: GRUCell and LSTMCell (one time step each, PyTorch's gate layouts and
// parameter names), and the two views of an LSTM state.
//
// An LSTM has two state tensors, h and c, but a module has one output, so LSTMCell
// returns the packed state concat([h', c'], -1) and also accepts it packed as its second
// input: the cell maps state to state, so the same instance chains step after step (or
// inside a loop body) with one carried value. LSTMHidden / LSTMCellState take the halves.
#include <cmath>

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
    // PyTorch's RNNCellBase.reset_parameters: every parameter U(±1/sqrt(hidden)).
    double bound = 1.0 / std::sqrt(static_cast<double>(hidden_));
    Initializer init = Initializer::uniform(-bound, bound);
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
    // torch.nn.GRUCell: r, z, n in that order; r gates the hidden part of n, bias included.
    ValueId r = e.op(Op::Sigmoid, {e.add(chunk(e, gi, 0, hidden_), chunk(e, gh, 0, hidden_))});
    ValueId z = e.op(Op::Sigmoid, {e.add(chunk(e, gi, 1, hidden_), chunk(e, gh, 1, hidden_))});
    ValueId n =
        e.op(Op::Tanh, {e.add(chunk(e, gi, 2, hidden_), e.mul(r, chunk(e, gh, 2, hidden_)))});
    // h' = (1 - z)·n + z·h = n + z·(h - n).
    return e.add(n, e.mul(z, e.sub(h, n)));
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
    ValueId gates = e.add(gi, gh);
    // torch.nn.LSTMCell: input, forget, cell (g), output.
    ValueId i = e.op(Op::Sigmoid, {chunk(e, gates, 0, hidden_)});
    ValueId f = e.op(Op::Sigmoid, {chunk(e, gates, 1, hidden_)});
    ValueId g = e.op(Op::Tanh, {chunk(e, gates, 2, hidden_)});
    ValueId o = e.op(Op::Sigmoid, {chunk(e, gates, 3, hidden_)});
    ValueId c_next = e.add(e.mul(f, c), e.mul(i, g));
    ValueId h_next = e.mul(o, e.op(Op::Tanh, {c_next}));
    return e.op(Op::Concat, {h_next, c_next}, {{"axis", int64_t{-1}}});
  }
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

ModulePtr LSTMHidden(int64_t hidden_size) {
  return std::make_shared<LSTMStatePart>(hidden_size, 0);
}

ModulePtr LSTMCellState(int64_t hidden_size) {
  return std::make_shared<LSTMStatePart>(hidden_size, 1);
}

}  // namespace weft
