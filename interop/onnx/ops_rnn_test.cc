// The recurrent converters (ops/rnn.cc): ONNX's RNN, GRU and LSTM as weft `scan` loops,
// one node at a time against an independent reference written here (ONNX's equations in
// plain loops over doubles), on the reference interpreter and the compiled CPU backend,
// for each direction, layout, optional input and output, GRU's linear_before_reset, LSTM's
// peepholes and sequence_lens; the loops they lower to (an imported LSTM's training step
// as frontend's LSTM module's); gradients through an imported LSTM and GRU against finite
// differences; the export back as ONNX Scans; and every error, pinned. (PyTorch's
// nn.LSTM, nn.GRU and nn.RNN exported and trained: training_parity_test; ONNX's own node
// cases of the three: tools/onnx_conformance.)
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "autodiff/grad.h"
#include "codegen/cpu_backend.h"
#include "codegen/lower.h"
#include "formats/file_io.h"
#include "frontend/flow.h"
#include "frontend/modules.h"
#include "frontend/testing/gradcheck.h"
#include "interop/onnx/testing/export_round_trip.h"
#include "interop/onnx/testing/onnx_builder.h"
#include "ir/verifier.h"

namespace weft::onnx_io {
namespace {
namespace ops_rnn_test {  // this file's names, apart in its package's unity test

/// Appends the STRINGS attribute `name` (the recurrent ops' `activations`) to `n`.
void add_strings(onnx::NodeProto& n, const std::string& name, const std::vector<std::string>& v) {
  onnx::AttributeProto* a = n.add_attribute();
  a->set_name(name);
  a->set_type(onnx::AttributeProto::STRINGS);
  for (const std::string& s : v) a->add_strings(s);
}

/// An LSTM's peepholes P: absent, zeros, or drawn values (initializers).
enum class Peepholes { none, zeros, drawn };

/// One recurrent node and its inputs: what a case varies.
struct RnnCase {
  std::string op;                  ///< "RNN", "GRU" or "LSTM".
  int opset = 14;
  std::string direction = "forward";
  int64_t layout = 0;
  int64_t linear_before_reset = 0;  ///< GRU only.
  bool bias = true;                 ///< B given.
  bool initial = true;              ///< initial_h (and initial_c) given, as data inputs.
  std::vector<int32_t> lens = {};   ///< sequence_lens as a data input; empty: absent.
  Peepholes peepholes = Peepholes::none;  ///< LSTM only.
  std::vector<bool> outputs = {true, true, true};  ///< Y, Y_h (, Y_c) wanted.
  std::vector<std::string> activations = {};       ///< Empty: the defaults.
  int64_t steps = 3, batch = 2, input = 3, hidden = 4;

  int64_t gates() const { return op == "RNN" ? 1 : op == "GRU" ? 3 : 4; }
  int64_t directions() const { return direction == "bidirectional" ? 2 : 1; }
  bool lstm() const { return op == "LSTM"; }
};

/// Values in [-1, 1), the same for the same seed.
std::vector<double> draws(int64_t count, unsigned seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<double> u(-1, 1);
  std::vector<double> v(static_cast<size_t>(count));
  for (double& x : v) x = u(rng);
  return v;
}

/// The node's inputs, in ONNX's layout-0 order ([T, B, I], [D, B, H]): what both the
/// model (permuted for layout 1) and the reference read.
struct RnnInputs {
  std::vector<double> x, w, r, b, h0, c0, p;
};

RnnInputs inputs_of(const RnnCase& c) {
  const int64_t d = c.directions(), g = c.gates(), h = c.hidden;
  RnnInputs in;
  in.x = draws(c.steps * c.batch * c.input, 1);
  in.w = draws(d * g * h * c.input, 2);
  in.r = draws(d * g * h * h, 3);
  in.b = c.bias ? draws(d * 2 * g * h, 4) : std::vector<double>(static_cast<size_t>(d * 2 * g * h), 0.0);
  const size_t states = static_cast<size_t>(d * c.batch * h);
  in.h0 = c.initial ? draws(static_cast<int64_t>(states), 5) : std::vector<double>(states, 0.0);
  in.c0 = c.initial ? draws(static_cast<int64_t>(states), 6) : std::vector<double>(states, 0.0);
  in.p = c.peepholes == Peepholes::drawn ? draws(d * 3 * h, 7)
                                         : std::vector<double>(static_cast<size_t>(d * 3 * h), 0.0);
  return in;
}

double activate(const std::string& f, double v) {
  if (f == "Sigmoid") return 1 / (1 + std::exp(-v));
  if (f == "Tanh") return std::tanh(v);
  if (f == "Relu") return v > 0 ? v : 0;
  ADD_FAILURE() << "no reference for activation " << f;
  return 0;
}

/// ONNX's outputs in layout 0: Y [T, D, B, H], Y_h and Y_c [D, B, H].
struct RnnOutputs {
  std::vector<double> y, y_h, y_c;
};

/// ONNX's equations (onnx/docs/Operators.md, RNN, GRU, LSTM), step by step and row by row:
/// row b runs its first lens[b] steps (backward from lens[b] - 1 in a reverse direction);
/// Y is zero past its length, Y_h and Y_c its states after its last step.
RnnOutputs reference(const RnnCase& c, const RnnInputs& in) {
  const int64_t T = c.steps, B = c.batch, I = c.input, H = c.hidden, G = c.gates(), D = c.directions();
  std::vector<std::string> acts = c.activations;
  if (acts.empty()) {
    const std::vector<std::string> one = c.op == "RNN"   ? std::vector<std::string>{"Tanh"}
                                         : c.op == "GRU" ? std::vector<std::string>{"Sigmoid", "Tanh"}
                                                         : std::vector<std::string>{"Sigmoid", "Tanh", "Tanh"};
    for (int64_t d = 0; d < D; ++d) acts.insert(acts.end(), one.begin(), one.end());
  }
  const size_t per = acts.size() / static_cast<size_t>(D);
  RnnOutputs out;
  out.y.assign(static_cast<size_t>(T * D * B * H), 0.0);
  out.y_h.assign(static_cast<size_t>(D * B * H), 0.0);
  out.y_c.assign(static_cast<size_t>(D * B * H), 0.0);
  for (int64_t d = 0; d < D; ++d) {
    const bool backward = c.direction == "reverse" || d == 1;
    auto f = [&](size_t k, double v) { return activate(acts[static_cast<size_t>(d) * per + k], v); };
    auto W = [&](int64_t row, int64_t i) { return in.w[static_cast<size_t>((d * G * H + row) * I + i)]; };
    auto R = [&](int64_t row, int64_t k) { return in.r[static_cast<size_t>((d * G * H + row) * H + k)]; };
    auto Wb = [&](int64_t row) { return in.b[static_cast<size_t>(d * 2 * G * H + row)]; };
    auto Rb = [&](int64_t row) { return in.b[static_cast<size_t>(d * 2 * G * H + G * H + row)]; };
    for (int64_t b = 0; b < B; ++b) {
      std::vector<double> h(static_cast<size_t>(H)), cs(static_cast<size_t>(H));
      for (int64_t j = 0; j < H; ++j) {
        h[j] = in.h0[static_cast<size_t>((d * B + b) * H + j)];
        cs[j] = in.c0[static_cast<size_t>((d * B + b) * H + j)];
      }
      const int64_t len = c.lens.empty() ? T : c.lens[static_cast<size_t>(b)];
      for (int64_t s = 0; s < len; ++s) {
        const int64_t t = backward ? len - 1 - s : s;
        // xw[row] = X_t·W[row] + Wb[row], hr[row] = H·R[row] + Rb[row].
        std::vector<double> xw(static_cast<size_t>(G * H)), hr(static_cast<size_t>(G * H));
        for (int64_t row = 0; row < G * H; ++row) {
          double a = Wb(row), r = Rb(row);
          for (int64_t i = 0; i < I; ++i) a += in.x[static_cast<size_t>((t * B + b) * I + i)] * W(row, i);
          for (int64_t k = 0; k < H; ++k) r += h[k] * R(row, k);
          xw[row] = a;
          hr[row] = r;
        }
        std::vector<double> next(static_cast<size_t>(H));
        for (int64_t j = 0; j < H; ++j) {
          if (c.op == "RNN") {
            next[j] = f(0, xw[j] + hr[j]);
          } else if (c.op == "GRU") {  // gates z, r, h
            const double z = f(0, xw[j] + hr[j]);
            double hidden_part;
            if (c.linear_before_reset) {
              hidden_part = f(0, xw[H + j] + hr[H + j]) * hr[2 * H + j];
            } else {
              hidden_part = Rb(2 * H + j);
              for (int64_t k = 0; k < H; ++k) hidden_part += f(0, xw[H + k] + hr[H + k]) * h[k] * R(2 * H + j, k);
            }
            const double n = f(1, xw[2 * H + j] + hidden_part);
            next[j] = (1 - z) * n + z * h[j];
          } else {  // gates i, o, f, c; peepholes i, o, f
            auto P = [&](int64_t g) { return in.p[static_cast<size_t>(d * 3 * H + g * H + j)]; };
            const double ig = f(0, xw[j] + hr[j] + P(0) * cs[j]);
            const double fg = f(0, xw[2 * H + j] + hr[2 * H + j] + P(2) * cs[j]);
            const double cand = f(1, xw[3 * H + j] + hr[3 * H + j]);
            cs[j] = fg * cs[j] + ig * cand;
            next[j] = f(0, xw[H + j] + hr[H + j] + P(1) * cs[j]) * f(2, cs[j]);
          }
        }
        h = next;
        for (int64_t j = 0; j < H; ++j) out.y[static_cast<size_t>(((t * D + d) * B + b) * H + j)] = h[j];
      }
      for (int64_t j = 0; j < H; ++j) {
        out.y_h[static_cast<size_t>((d * B + b) * H + j)] = h[j];
        out.y_c[static_cast<size_t>((d * B + b) * H + j)] = cs[j];
      }
    }
  }
  return out;
}

/// `v` laid out [a, b, rest] as a tensor of `dims` in layout 0, or swapped to [b, a, rest]
/// for layout 1 (X [T, B, I] -> [B, T, I]; states [D, B, H] -> [B, D, H]).
Tensor laid_out(const std::vector<double>& v, std::vector<int64_t> dims, bool swap, DType dtype) {
  if (!swap) return Tensor::from_doubles(dtype, Shape(dims), v);
  int64_t rest = 1;
  for (size_t k = 2; k < dims.size(); ++k) rest *= dims[k];
  std::vector<double> out(v.size());
  for (int64_t i = 0; i < dims[0]; ++i) {
    for (int64_t j = 0; j < dims[1]; ++j) {
      for (int64_t k = 0; k < rest; ++k) {
        out[static_cast<size_t>((j * dims[0] + i) * rest + k)] = v[static_cast<size_t>((i * dims[1] + j) * rest + k)];
      }
    }
  }
  std::swap(dims[0], dims[1]);
  return Tensor::from_doubles(dtype, Shape(dims), out);
}

/// Y [T, D, B, H] in layout 1: [B, T, D, H].
Tensor y_laid_out(const RnnCase& c, const std::vector<double>& y, DType dtype) {
  const int64_t T = c.steps, D = c.directions(), B = c.batch, H = c.hidden;
  if (c.layout == 0) return Tensor::from_doubles(dtype, Shape({T, D, B, H}), y);
  std::vector<double> out(y.size());
  for (int64_t t = 0; t < T; ++t) {
    for (int64_t d = 0; d < D; ++d) {
      for (int64_t b = 0; b < B; ++b) {
        for (int64_t j = 0; j < H; ++j) {
          out[static_cast<size_t>(((b * T + t) * D + d) * H + j)] =
              y[static_cast<size_t>(((t * D + d) * B + b) * H + j)];
        }
      }
    }
  }
  return Tensor::from_doubles(dtype, Shape({B, T, D, H}), out);
}

/// The one-node model of `c` (W, R, B, P initializers; X, initial states, lens data) and
/// its data inputs, in `dtype`.
struct RnnModel {
  OnnxBuilder b;
  std::vector<Tensor> data;
  std::vector<std::string> outputs;  ///< The wanted outputs' names.
};

RnnModel model_of(const RnnCase& c, DType dtype = DType::f32) {
  const RnnInputs in = inputs_of(c);
  const int64_t D = c.directions(), G = c.gates(), H = c.hidden;
  const bool swap = c.layout == 1;
  RnnModel m{OnnxBuilder(c.opset), {}, {}};
  auto data = [&](const std::string& name, Tensor t) {
    m.b.input(name, t.dtype(), t.shape().dims);
    m.data.push_back(std::move(t));
    return name;
  };
  std::vector<std::string> ins = {data("X", laid_out(in.x, {c.steps, c.batch, c.input}, swap, dtype)), "W", "R", "", "",
                                  "", ""};
  m.b.initializer("W", Tensor::from_doubles(dtype, Shape({D, G * H, c.input}), in.w));
  m.b.initializer("R", Tensor::from_doubles(dtype, Shape({D, G * H, H}), in.r));
  if (c.bias) {
    m.b.initializer("B", Tensor::from_doubles(dtype, Shape({D, 2 * G * H}), in.b));
    ins[3] = "B";
  }
  if (!c.lens.empty()) ins[4] = data("lens", Tensor::from_vector<int32_t>(Shape({c.batch}), c.lens));
  if (c.initial) {
    ins[5] = data("h0", laid_out(in.h0, {D, c.batch, H}, swap, dtype));
    if (c.lstm()) ins[6] = data("c0", laid_out(in.c0, {D, c.batch, H}, swap, dtype));
  }
  if (c.peepholes != Peepholes::none) {
    m.b.initializer("P", Tensor::from_doubles(dtype, Shape({D, 3 * H}), in.p));
    ins.push_back("P");
  }
  while (!ins.empty() && ins.back().empty()) ins.pop_back();
  std::vector<std::string> outs;
  const char* names[] = {"Y", "Y_h", "Y_c"};
  for (int k = 0; k < (c.lstm() ? 3 : 2); ++k) {
    outs.push_back(c.outputs[static_cast<size_t>(k)] ? names[k] : "");
    if (c.outputs[static_cast<size_t>(k)]) {
      m.b.output(names[k], dtype);
      m.outputs.push_back(names[k]);
    }
  }
  while (!outs.empty() && outs.back().empty()) outs.pop_back();
  onnx::NodeProto& n = m.b.node(c.op, ins, outs, "n");
  set_attr(n, "hidden_size", H);
  if (c.direction != "forward") set_attr(n, "direction", c.direction);
  if (c.layout != 0) set_attr(n, "layout", c.layout);
  if (c.op == "GRU" && c.linear_before_reset) set_attr(n, "linear_before_reset", c.linear_before_reset);
  if (!c.activations.empty()) add_strings(n, "activations", c.activations);
  return m;
}

/// The reference's outputs of `c` that the model names, in its output order.
std::vector<Tensor> expected(const RnnCase& c) {
  const RnnOutputs r = reference(c, inputs_of(c));
  const std::vector<int64_t> states = {c.directions(), c.batch, c.hidden};
  std::vector<Tensor> want;
  if (c.outputs[0]) want.push_back(y_laid_out(c, r.y, DType::f32));
  if (c.outputs[1]) want.push_back(laid_out(r.y_h, states, c.layout == 1, DType::f32));
  if (c.lstm() && c.outputs[2]) want.push_back(laid_out(r.y_c, states, c.layout == 1, DType::f32));
  return want;
}

/// The case's name in failures: `GRU opset 14 bidirectional layout 1 ...`.
std::string describe(const RnnCase& c) {
  std::string s =
      c.op + " opset " + std::to_string(c.opset) + " " + c.direction + " layout " + std::to_string(c.layout);
  if (c.op == "GRU") s += " linear_before_reset " + std::to_string(c.linear_before_reset);
  if (!c.bias) s += " no B";
  if (!c.initial) s += " no initial states";
  if (!c.lens.empty()) s += " sequence_lens";
  if (c.peepholes != Peepholes::none) s += " peepholes";
  return s;
}

/// Each output within 1e-5·(1 + |want|) of the reference's (f32 against sums in doubles).
void expect_near(const std::vector<Tensor>& got, const std::vector<Tensor>& want, const std::string& what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  for (size_t k = 0; k < got.size(); ++k) {
    ASSERT_EQ(got[k].type(), want[k].type()) << what << ", output " << k;
    for (int64_t i = 0; i < got[k].numel(); ++i) {
      const double g = got[k].get_double(i), w = want[k].get_double(i);
      ASSERT_LE(std::abs(g - w), 1e-5 * (1 + std::abs(w))) << what << ", output " << k << " element " << i;
    }
  }
}

/// Imports `c`'s model and runs it on the reference interpreter and the CPU backend,
/// each against the reference written above.
void expect_matches_reference(const RnnCase& c) {
  RnnModel m = model_of(c);
  const std::vector<Tensor> want = expected(c);
  StatusOr<std::vector<Tensor>> on_reference = import_and_run(m.b.file(), m.data);
  ASSERT_TRUE(on_reference.ok()) << describe(c) << ": " << on_reference.error().to_string();
  expect_near(*on_reference, want, describe(c) + " on the reference interpreter");

  StatusOr<std::map<std::string, Tensor>> data = name_data_inputs(m.b.file(), m.data);
  ASSERT_TRUE(data.ok()) << data.error().to_string();
  StatusOr<ImportedGraph> g = import_onnx(m.b.file(), options_with_shapes_of(*data));
  ASSERT_TRUE(g.ok()) << g.error().to_string();
  StatusOr<std::vector<Tensor>> all = g->inputs_with(*data);
  ASSERT_TRUE(all.ok()) << all.error().to_string();
  StatusOr<reference::RunResult> on_cpu = codegen::run_on_cpu(g->graph, *all);
  ASSERT_TRUE(on_cpu.ok()) << describe(c) << ": " << on_cpu.error().to_string();
  expect_near(on_cpu->outputs, want, describe(c) + " on the cpu backend");
}

TEST(OnnxRnn, RnnMatchesOnnxsEquations) {
  expect_matches_reference({.op = "RNN"});
  expect_matches_reference({.op = "RNN", .opset = 7, .direction = "reverse", .bias = false, .initial = false,
                            .activations = {"Relu"}});
  expect_matches_reference(
      {.op = "RNN", .direction = "bidirectional", .layout = 1, .activations = {"Relu", "Sigmoid"}});
  expect_matches_reference({.op = "RNN", .direction = "bidirectional", .lens = {3, 1}, .outputs = {false, true}});
}

TEST(OnnxRnn, GruMatchesOnnxsEquations) {
  for (int64_t lbr : {0, 1}) {
    expect_matches_reference({.op = "GRU", .linear_before_reset = lbr});
    expect_matches_reference(
        {.op = "GRU", .opset = 7, .direction = "reverse", .linear_before_reset = lbr, .bias = false});
    expect_matches_reference({.op = "GRU", .direction = "bidirectional", .layout = 1, .linear_before_reset = lbr,
                              .initial = false, .lens = {2, 3}});
    expect_matches_reference({.op = "GRU", .direction = "reverse", .linear_before_reset = lbr, .lens = {1, 3},
                              .outputs = {true, false}});
  }
}

TEST(OnnxRnn, LstmMatchesOnnxsEquations) {
  expect_matches_reference({.op = "LSTM"});
  expect_matches_reference({.op = "LSTM", .opset = 7, .direction = "reverse", .bias = false, .initial = false,
                            .outputs = {true, false, false}});
  expect_matches_reference({.op = "LSTM", .direction = "bidirectional", .layout = 1, .lens = {3, 2},
                            .peepholes = Peepholes::zeros, .outputs = {false, false, true}});
  expect_matches_reference({.op = "LSTM", .direction = "bidirectional", .lens = {2, 3}, .peepholes = Peepholes::drawn});
  // Lengths that are the whole sequence, and a row that stops after one step.
  expect_matches_reference({.op = "LSTM", .direction = "bidirectional", .lens = {3, 3}});
  expect_matches_reference({.op = "LSTM", .direction = "bidirectional", .lens = {1, 3}, .steps = 4, .batch = 2});
  // A row of length 0 keeps its initial states, its Y all zeros.
  expect_matches_reference({.op = "LSTM", .direction = "bidirectional", .lens = {0, 2}});
}

/// The number of loop invocations of `p`.
int loops(const Program& p) {
  int count = 0;
  for (const Invocation& inv : p.code) count += inv.kind == Invocation::Kind::loop;
  return count;
}

TEST(OnnxRnn, EachDirectionIsOneLoopForwardAndBackward) {
  // A bidirectional LSTM: two scans, the second reversed; lowered, two loop invocations
  // whatever the length (no unrolled graph), and its gradient two more.
  RnnModel m = model_of({.op = "LSTM", .direction = "bidirectional", .steps = 20});
  StatusOr<ImportedGraph> g = import_onnx(m.b.file());
  ASSERT_TRUE(g.ok()) << g.error().to_string();
  EXPECT_TRUE(verify(g->graph).ok());
  std::vector<bool> reversed;
  for (const Node& n : g->graph.nodes()) {
    if (n.op == Op::Scan) reversed.push_back(n.bool_attr("reverse"));
  }
  EXPECT_EQ(reversed, (std::vector<bool>{false, true}));
  StatusOr<codegen::Lowering> forward = codegen::lower_to_program(g->graph);
  ASSERT_TRUE(forward.ok()) << forward.error().to_string();
  EXPECT_EQ(loops(forward->program), 2) << forward->program.to_string();
  EXPECT_NE(forward->program.to_string().find("loop 20x"), std::string::npos);
  StatusOr<Graph> grad = gradient_graph(g->graph, 0, {"W", "R", "B"}, "seed");
  ASSERT_TRUE(grad.ok()) << grad.error().to_string();
  StatusOr<codegen::Lowering> backward = codegen::lower_to_program(*grad);
  ASSERT_TRUE(backward.ok()) << backward.error().to_string();
  EXPECT_EQ(loops(backward->program), 4) << backward->program.to_string();
}

TEST(OnnxRnn, ExportsBackAsAScanThatImportsToTheSameNumbers) {
  // No exporter writes ONNX's LSTM: the imported loops export as ONNX Scans (one per
  // direction, export_ops_loop.cc), which import back and compute the same.
  RnnModel m = model_of({.op = "LSTM", .direction = "bidirectional", .lens = {3, 1}});
  StatusOr<std::map<std::string, Tensor>> data = name_data_inputs(m.b.file(), m.data);
  ASSERT_TRUE(data.ok()) << data.error().to_string();
  StatusOr<ImportedGraph> g = import_onnx(m.b.file(), options_with_shapes_of(*data));
  ASSERT_TRUE(g.ok()) << g.error().to_string();
  std::map<std::string, Tensor> weights;
  for (const onnx::TensorProto& t : m.b.model().graph().initializer()) {
    StatusOr<Tensor> v = tensor_from_proto(t, "");
    ASSERT_TRUE(v.ok()) << v.error().to_string();
    weights[t.name()] = *v;
  }
  const RoundTrip r = export_round_trip(g->graph, weights, m.data, 1e-6);
  EXPECT_EQ(r.error, "");
  EXPECT_TRUE(r.same) << r.why;
  int scans = 0;
  for (const onnx::NodeProto& n : r.model.graph().node()) scans += n.op_type() == "Scan";
  EXPECT_EQ(scans, 2);
}

/// Writes the model to the test's temporary folder as `name`; returns its path.
std::string save(const OnnxBuilder& b, const std::string& name) {
  const std::string path = ::testing::TempDir() + "/" + name;
  const Status written = write_file_atomically(path, b.model().SerializeAsString());
  EXPECT_TRUE(written.ok()) << written.to_string();
  return path;
}

/// The gradient of `m`'s output 0 with respect to its parameters (the training step's
/// forward and backward loops), lowered for the CPU: each loop body's invocations, as
/// `kind:op` (a library call, a contraction with its epilogue, a generated kernel...).
std::vector<std::string> lowered_bodies(const Model& m) {
  std::vector<std::string> wrt;
  for (const ParamInfo& p : m.parameters()) wrt.push_back(p.name);
  StatusOr<Graph> grad = gradient_graph(m.graph(), 0, wrt, "seed");
  EXPECT_TRUE(grad.ok()) << grad.error().to_string();
  if (!grad.ok()) return {};
  StatusOr<codegen::Lowering> l = codegen::lower_to_program(*grad);
  EXPECT_TRUE(l.ok()) << l.error().to_string();
  if (!l.ok()) return {};
  std::vector<std::string> bodies;
  for (const Program& body : l->program.bodies) {
    std::string kinds;
    for (const Invocation& inv : body.code) {
      kinds += std::to_string(static_cast<int>(inv.kind)) + ":" + std::string(op_name(inv.node.op)) + " ";
    }
    bodies.push_back(kinds);
  }
  return bodies;
}

TEST(OnnxRnn, AnImportedLstmLowersAsFrontendsLstm) {
  // ONNX's LSTM (gates i, o, f, c) and frontend's LSTM module (PyTorch's i, f, g, o), each
  // differentiated and lowered: the same two loops, each body one matmul with its fused
  // epilogue and one generated kernel (forward), one generated kernel and a matmul
  // (backward). Only the weights' slicing outside the loops differs.
  const int64_t batch = 4, steps = 7, in = 5, hidden = 8;
  StatusOr<Model> native = FlowBuilder::from(LSTM(in, hidden)).build({{"x", Type{DType::f32, {batch, steps, in}}}});
  ASSERT_TRUE(native.ok()) << native.error().to_string();
  RnnModel m = model_of({.op = "LSTM", .layout = 1, .initial = false, .outputs = {true, false, false},
                         .steps = steps, .batch = batch, .input = in, .hidden = hidden});
  m.b.initializer("shape", Tensor::from_vector<int64_t>(Shape({3}), {batch, steps, hidden}));
  m.b.model().mutable_graph()->mutable_output(0)->set_name("Y4");
  m.b.model().mutable_graph()->mutable_node(0)->set_output(0, "Y4");
  m.b.node("Reshape", {"Y4", "shape"}, {"Y"});
  m.b.model().mutable_graph()->mutable_output(0)->set_name("Y");
  StatusOr<Model> imported = FlowBuilder::from(OnnxModel(save(m.b, "lstm.onnx"))).build({{"x", m.data[0].type()}});
  ASSERT_TRUE(imported.ok()) << imported.error().to_string();
  const std::vector<std::string> bodies = lowered_bodies(*imported);
  EXPECT_EQ(bodies.size(), 2u);
  EXPECT_EQ(bodies, lowered_bodies(*native));
}

/// `c`'s model in f64 with X its only data input (sequence_lens, when given, a Constant
/// node) as the first module of a flow: the gradients of its weights through the imported
/// loops against central finite differences.
void expect_gradients_match(RnnCase c, const std::string& file) {
  const std::vector<int32_t> lens = c.lens;
  c.lens.clear();
  c.initial = false;
  RnnModel m = model_of(c, DType::f64);
  if (!lens.empty()) {
    onnx::GraphProto* graph = m.b.model().mutable_graph();
    onnx::NodeProto* rnn = graph->mutable_node(0);
    while (rnn->input_size() < 5) rnn->add_input("");
    rnn->set_input(4, "lens");
    onnx::NodeProto constant;
    constant.set_op_type("Constant");
    constant.add_output("lens");
    set_attr(constant, "value", Tensor::from_vector<int32_t>(Shape({c.batch}), lens));
    *graph->add_node() = *rnn;
    *graph->mutable_node(0) = constant;
  }
  StatusOr<Model> model = FlowBuilder::from(OnnxModel(save(m.b, file)))
                              .build({{"x", m.data[0].type()}}, BuildOptions{.training = true});
  ASSERT_TRUE(model.ok()) << model.error().to_string();
  testing::expect_gradients_match_finite_differences(*model, m.data[0], 1e-5);
}

TEST(OnnxRnn, GradientsThroughAnImportedLstmMatchFiniteDifferences) {
  // Bidirectional, the rows stopping after 2 of 3 steps (the mask's selects). Lengths of
  // one value: a Constant of others would be a state input, which the check would perturb.
  expect_gradients_match({.op = "LSTM", .direction = "bidirectional", .lens = {2, 2}, .input = 2, .hidden = 2},
                         "lstm_grad.onnx");
}

TEST(OnnxRnn, GradientsThroughAnImportedGruMatchFiniteDifferences) {
  expect_gradients_match({.op = "GRU", .direction = "reverse", .layout = 1, .input = 2, .hidden = 2},
                         "gru_grad.onnx");
}

/// The import error of `c`'s model after `edit` of its node, or "imported". The model
/// has two more initializers for edits to read: `v` f32[2, 3] and `lens` i32[2] {4, 1}.
std::string import_error(const RnnCase& c, const std::function<void(onnx::NodeProto&)>& edit) {
  RnnModel m = model_of(c);
  m.b.initializer("v", Tensor::from_doubles(DType::f32, Shape({2, 3}), std::vector<double>(6, 1.0)));
  m.b.initializer("lens", Tensor::from_vector<int32_t>(Shape({2}), {4, 1}));
  edit(*m.b.model().mutable_graph()->mutable_node(0));
  StatusOr<ImportedGraph> g = import_onnx(m.b.file());
  return g.ok() ? "imported" : g.error().message;
}

TEST(OnnxRnn, RefusalsArePinned) {
  const RnnCase lstm{.op = "LSTM"};
  const std::string at = "node 'n' (LSTM, opset 14): ";
  EXPECT_EQ(import_error(lstm, [](onnx::NodeProto& n) { set_attr(n, "clip", 3.0); }),
            at + "attribute 'clip' (clipping the gates' inputs) is not supported");
  EXPECT_EQ(import_error(lstm, [](onnx::NodeProto& n) { set_attr(n, "input_forget", 1); }),
            at + "input_forget = 1 (coupled input and forget gates) is not supported");
  EXPECT_EQ(import_error(lstm, [](onnx::NodeProto& n) {
              add_strings(n, "activations", {"Sigmoid", "LeakyRelu", "Tanh"});
            }),
            at + "activation 'LeakyRelu' (weft imports Sigmoid, Tanh and Relu) is not supported");
  EXPECT_EQ(import_error(lstm, [](onnx::NodeProto& n) { add_attr(n, "activation_alpha", std::vector<float>{0.1f}); }),
            at + "attribute 'activation_alpha' (activations with parameters) is not supported");
  EXPECT_EQ(import_error(lstm, [](onnx::NodeProto& n) { add_strings(n, "activations", {"Tanh"}); }),
            at + "attribute 'activations' names 1 functions for 1 direction(s), which take 3");
  EXPECT_EQ(import_error(lstm, [](onnx::NodeProto& n) { set_attr(n, "direction", "sideways"); }),
            at + "direction is 'sideways' (forward, reverse or bidirectional)");
  EXPECT_EQ(import_error(lstm,
                         [](onnx::NodeProto& n) {
                           for (onnx::AttributeProto& a : *n.mutable_attribute()) {
                             if (a.name() == "hidden_size") a.set_i(5);
                           }
                         }),
            at + "W must be f32[1,20,3] for X f32[3,2,3] and hidden_size 5, got f32[1,16,3]");
  for (const int64_t hidden : {0, -1}) {  // was "W must be f32[1,-4,3] for ... hidden_size -1"
    EXPECT_EQ(import_error(lstm,
                           [&](onnx::NodeProto& n) {
                             for (onnx::AttributeProto& a : *n.mutable_attribute()) {
                               if (a.name() == "hidden_size") a.set_i(hidden);
                             }
                           }),
              at + "hidden_size is " + std::to_string(hidden) + " (1 or more)");
  }
  EXPECT_EQ(import_error(lstm, [](onnx::NodeProto& n) { set_attr(n, "layout", 2); }), at + "layout is 2 (0 or 1)");
  EXPECT_EQ(import_error(lstm, [](onnx::NodeProto& n) { n.set_input(0, "v"); }),
            at + "X must be a float tensor of rank 3, got f32[2,3]");
  EXPECT_EQ(import_error(lstm, [](onnx::NodeProto& n) { n.set_input(2, "v"); }),
            at + "R must have rank 3, got f32[2,3]");
  EXPECT_EQ(import_error(lstm, [](onnx::NodeProto& n) { n.set_input(4, "v"); }),
            at + "sequence_lens must be integers [2], got f32[2,3]");
  EXPECT_EQ(import_error(lstm, [](onnx::NodeProto& n) { n.set_input(4, "lens"); }),
            at + "sequence_lens[0] is 4, outside [0, 3]");
  EXPECT_EQ(import_error(lstm, [](onnx::NodeProto& n) { n.add_input("P"), n.add_input("X"); }),
            at + "it takes at most 8 inputs, got 9 (input 8 is 'X')");  // ONNX's schema (importer)
  EXPECT_EQ(import_error(lstm, [](onnx::NodeProto& n) { n.add_output("more"); }),
            at + "it has at most 3 outputs, got 4");
  EXPECT_EQ(import_error({.op = "LSTM", .steps = 0}, [](onnx::NodeProto&) {}),
            at + "a sequence of length 0 is not supported");
  EXPECT_EQ(import_error({.op = "GRU", .opset = 13}, [](onnx::NodeProto& n) { set_attr(n, "layout", 1); }),
            "node 'n' (GRU, opset 13): attribute 'layout' (from opset 14) is not supported");
  EXPECT_EQ(import_error({.op = "RNN"}, [](onnx::NodeProto& n) { set_attr(n, "input_forget", 1); }),
            "node 'n' (RNN, opset 14): attribute 'input_forget' is not supported");
}

}  // namespace ops_rnn_test
}  // namespace
}  // namespace weft::onnx_io
