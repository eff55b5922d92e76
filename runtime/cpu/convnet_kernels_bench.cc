// Prints the median time per call of the library kernels that dominate the convnet
// training step (weft_worker --model=convnet --profile): max pooling and its gradient,
// the batch-norm statistics sums and the 3-channel first convolution, on a 2-thread pool.
//
//   bazel run //runtime/cpu:convnet_kernels_bench

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <functional>
#include <random>
#include <vector>

#include "runtime/cpu/bench_util.h"
#include "runtime/cpu/kernel.h"

namespace weft::cpu {
namespace {

using Clock = std::chrono::steady_clock;


struct Case {
  const char* what;
  Op op;
  Attrs attrs;
  std::vector<Type> operands;
  Type result;
};

void run_case(ThreadPool& pool, const Case& c) {
  std::mt19937 rng(1);
  std::uniform_real_distribution<float> u(-1, 1);
  std::vector<std::vector<float>> ins;
  std::vector<const void*> ptrs;
  for (const Type& t : c.operands) {
    ins.emplace_back(t.numel());
    for (float& v : ins.back()) v = u(rng);
    ptrs.push_back(ins.back().data());
  }
  std::vector<float> out(c.result.numel());
  LibraryCall call;
  call.node.op = c.op;
  call.node.attrs = c.attrs;
  call.operand_types = c.operands;
  call.result_type = c.result;
  auto k = make_library_kernel(call, ptrs, out.data());
  WEFT_CHECK(k.ok() && *k, "convnet_kernels_bench: no kernel");
  const double t = bench::seconds_per_call([&] { (void)(*k)->run(pool); }, /*repeats=*/41,
                                            /*batch_seconds=*/2e-3);
  std::printf("  %-44s %8.1f us  (%s)\n", c.what, t * 1e6, (*k)->describe().c_str());
}

}  // namespace
}  // namespace weft::cpu

int main() {
  using namespace weft;
  using namespace weft::cpu;
  ThreadPool pool(2);
  const Type x1{DType::f32, {32, 16, 32, 32}}, p1{DType::f32, {32, 16, 16, 16}};
  const Type x2{DType::f32, {32, 32, 16, 16}}, p2{DType::f32, {32, 32, 8, 8}};
  const Type img{DType::f32, {32, 3, 32, 32}}, w1{DType::f32, {16, 3, 3, 3}};
  const Attrs pool2 = {{"kernel", IntList{2, 2}}, {"padding", IntList{0, 0}}};
  const Attrs pool3 = {{"kernel", IntList{3, 3}}, {"stride", IntList{2, 2}},
                       {"padding", IntList{1, 1}}};
  const Type p3{DType::f32, {32, 16, 16, 16}};
  const Attrs stats = {{"axes", IntList{0, 2, 3}}, {"keepdims", true}};
  const Attrs conv = {{"padding", IntList{1, 1}}};
  Attrs conv_bw = conv;
  conv_bw["weight_shape"] = IntList{16, 3, 3, 3};
  const std::vector<Case> cases = {
      {"max_pool2d 2x2 [32,16,32,32]", Op::MaxPool2d, pool2, {x1}, p1},
      {"max_pool2d_backward 2x2 [32,16,32,32]", Op::MaxPool2dBackward, pool2, {x1, p1}, x1},
      {"max_pool2d_select 2x2 [32,16,32,32]", Op::MaxPool2dSelect, pool2, {x1, x1}, p1},
      {"max_pool2d 2x2 [32,32,16,16]", Op::MaxPool2d, pool2, {x2}, p2},
      {"max_pool2d_backward 2x2 [32,32,16,16]", Op::MaxPool2dBackward, pool2, {x2, p2}, x2},
      {"max_pool2d_select 2x2 [32,32,16,16]", Op::MaxPool2dSelect, pool2, {x2, x2}, p2},
      {"max_pool2d_backward 2x2 [32,128,4,4]", Op::MaxPool2dBackward, pool2,
       {{DType::f32, {32, 128, 4, 4}}, {DType::f32, {32, 128, 2, 2}}},
       {DType::f32, {32, 128, 4, 4}}},
      {"max_pool2d 3x3 s2 p1 [32,16,32,32]", Op::MaxPool2d, pool3, {x1}, p3},
      {"max_pool2d_backward 3x3 s2 p1 [32,16,32,32]", Op::MaxPool2dBackward, pool3, {x1, p3},
       x1},
      {"sum [32,16,32,32] axes (0,2,3)", Op::Sum, stats, {x1}, {DType::f32, {1, 16, 1, 1}}},
      {"sum [32,32,16,16] axes (0,2,3)", Op::Sum, stats, {x2}, {DType::f32, {1, 32, 1, 1}}},
      {"conv2d 3->16 3x3 [32,3,32,32]", Op::Conv, conv, {img, w1}, x1},
      {"conv2d_backward_weight 3->16 [32,3,32,32]", Op::ConvBackwardWeight, conv_bw, {img, x1},
       w1},
  };
  std::printf("convnet kernels, median per call (2 threads)\n");
  for (const Case& c : cases) run_case(pool, c);
  return 0;
}
