// Prints the reference interpreter's gemm throughput on the shapes of a 784-256-256-10
// MLP at batch 128 (forward and both backward products), and the time of one
// forward+backward+SGD training step of that MLP run through the interpreter.
//
//   bazel run -c opt //runtime/reference:matmul_bench

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <vector>

#include "runtime/reference/interpreter.h"

namespace weft::reference {
// The gemm core (kernels.h, internal).
void gemm(int64_t m, int64_t n, int64_t k, const float* a, const float* b, float* c,
          bool accumulate);
}  // namespace weft::reference

namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point t0) {
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

void bench_gemm(int64_t m, int64_t n, int64_t k) {
  // Allocated as the interpreter allocates (weft::Tensor, 64-byte aligned), since the
  // relative placement of A, B and C matters (4K aliasing).
  weft::Tensor ta(weft::Type{weft::DType::f32, {m, k}}), tb(weft::Type{weft::DType::f32, {k, n}});
  weft::Tensor tc(weft::Type{weft::DType::f32, {m, n}});
  float* a = ta.data<float>();
  float* b = tb.data<float>();
  float* c = tc.data<float>();
  for (int64_t i = 0; i < m * k; ++i) a[i] = static_cast<float>(i % 7) * 0.1f;
  for (int64_t i = 0; i < k * n; ++i) b[i] = static_cast<float>(i % 5) * 0.1f;
  weft::reference::gemm(m, n, k, a, b, c, false);  // Warm up.
  double best = 1e9;
  for (int rep = 0; rep < 20; ++rep) {
    auto t0 = Clock::now();
    weft::reference::gemm(m, n, k, a, b, c, false);
    best = std::min(best, seconds_since(t0));
  }
  std::printf("gemm %4lldx%4lldx%4lld: %7.3f ms, %6.1f GFLOP/s\n", static_cast<long long>(m),
              static_cast<long long>(k), static_cast<long long>(n), best * 1e3,
              2.0 * m * n * k / best * 1e-9);
}

// One SGD step of relu MLP 784-256-256-10 with mean cross-entropy, written out by hand
// as the training-step graph autodiff would produce.
weft::Graph mlp_step() {
  using weft::DType;
  using weft::Op;
  using weft::Type;
  weft::Graph g("mlp_step");
  const int64_t n = 128;
  auto f32 = [](std::vector<int64_t> d) { return Type{DType::f32, weft::Shape(std::move(d))}; };
  auto x = g.add_input("x", f32({n, 784}));
  auto labels = g.add_input("labels", Type{DType::i64, {n}});
  auto w1 = g.add_input("w1", f32({784, 256}), weft::InputKind::param);
  auto b1 = g.add_input("b1", f32({256}), weft::InputKind::param);
  auto w2 = g.add_input("w2", f32({256, 256}), weft::InputKind::param);
  auto b2 = g.add_input("b2", f32({256}), weft::InputKind::param);
  auto w3 = g.add_input("w3", f32({256, 10}), weft::InputKind::param);
  auto b3 = g.add_input("b3", f32({10}), weft::InputKind::param);
  auto node = [&](Op op, std::vector<weft::ValueId> operands, Type t, weft::Attrs attrs = {}) {
    return g.add_node(op, std::move(operands), std::move(attrs), {}, t);
  };
  auto h1 = node(Op::Relu, {node(Op::Add, {node(Op::Matmul, {x, w1}, f32({n, 256})), b1}, f32({n, 256}))}, f32({n, 256}));
  auto h2 = node(Op::Relu, {node(Op::Add, {node(Op::Matmul, {h1, w2}, f32({n, 256})), b2}, f32({n, 256}))}, f32({n, 256}));
  auto logits = node(Op::Add, {node(Op::Matmul, {h2, w3}, f32({n, 10})), b3}, f32({n, 10}));
  g.add_output(node(Op::CrossEntropy, {logits, labels}, f32({})));
  // d logits = (softmax - onehot) / n.
  auto p = node(Op::Softmax, {logits}, f32({n, 10}));
  auto onehot = node(Op::OneHot, {labels}, f32({n, 10}), {{"depth", int64_t{10}}});
  auto scale = node(Op::Full, {}, f32({}), {{"shape", weft::IntList{}}, {"value", 1.0 / n}});
  auto dlogits = node(Op::Mul, {node(Op::Sub, {p, onehot}, f32({n, 10})), scale}, f32({n, 10}));
  auto lr = node(Op::Full, {}, f32({}), {{"shape", weft::IntList{}}, {"value", 0.01}});
  auto zero = node(Op::Full, {}, f32({}), {{"shape", weft::IntList{}}, {"value", 0.0}});
  auto tr = [&](weft::ValueId v, std::vector<int64_t> d) {
    return node(Op::Transpose, {v}, f32(std::move(d)), {{"perm", weft::IntList{1, 0}}});
  };
  auto sgd = [&](weft::ValueId param, weft::ValueId grad, Type t) {
    g.add_node(Op::Assign, {param, node(Op::Sub, {param, node(Op::Mul, {grad, lr}, t)}, t)});
  };
  auto sum0 = [&](weft::ValueId v, int64_t d) {
    return node(Op::Sum, {v}, f32({d}), {{"axes", weft::IntList{0}}});
  };
  auto relu_grad = [&](weft::ValueId dy, weft::ValueId y) {
    auto mask = node(Op::Gt, {y, zero}, Type{DType::boolean, {n, 256}});
    return node(Op::Select, {mask, dy, zero}, f32({n, 256}));
  };
  auto dw3 = node(Op::Matmul, {tr(h2, {256, n}), dlogits}, f32({256, 10}));
  auto dh2 = relu_grad(node(Op::Matmul, {dlogits, tr(w3, {10, 256})}, f32({n, 256})), h2);
  auto dw2 = node(Op::Matmul, {tr(h1, {256, n}), dh2}, f32({256, 256}));
  auto dh1 = relu_grad(node(Op::Matmul, {dh2, tr(w2, {256, 256})}, f32({n, 256})), h1);
  auto dw1 = node(Op::Matmul, {tr(x, {784, n}), dh1}, f32({784, 256}));
  sgd(w1, dw1, f32({784, 256}));
  sgd(b1, sum0(dh1, 256), f32({256}));
  sgd(w2, dw2, f32({256, 256}));
  sgd(b2, sum0(dh2, 256), f32({256}));
  sgd(w3, dw3, f32({256, 10}));
  sgd(b3, sum0(dlogits, 10), f32({10}));
  return g;
}

}  // namespace

int main() {
  bench_gemm(128, 256, 784);  // Forward, first layer.
  bench_gemm(784, 256, 128);  // Weight gradient, first layer.
  bench_gemm(128, 256, 256);
  bench_gemm(256, 256, 256);
  weft::Graph g = mlp_step();
  std::vector<weft::Tensor> inputs;
  for (const weft::Input& in : g.inputs()) {
    weft::Tensor t(g.type(in.value));
    for (int64_t i = 0; i < t.numel(); ++i) {
      t.set_double(i, t.dtype() == weft::DType::i64 ? static_cast<double>(i % 10)
                                                    : ((i * 37) % 101) * 0.001 - 0.05);
    }
    inputs.push_back(std::move(t));
  }
  std::vector<double> times;
  for (int rep = 0; rep < 20; ++rep) {
    auto t0 = Clock::now();
    auto r = weft::reference::run(g, inputs);
    times.push_back(seconds_since(t0));
    if (!r.ok()) {
      std::printf("error: %s\n", r.error().to_string().c_str());
      return 1;
    }
    for (auto& [name, value] : r->updated) {
      for (size_t i = 0; i < g.inputs().size(); ++i) {
        if (g.value(g.inputs()[i].value).name == name) inputs[i] = value;
      }
    }
  }
  std::sort(times.begin(), times.end());
  std::printf("MLP 784-256-256-10 batch 128, forward+backward+SGD: median %.1f ms/step\n",
              times[times.size() / 2] * 1e3);
  return 0;
}
