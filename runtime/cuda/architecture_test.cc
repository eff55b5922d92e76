// The bind-time architecture check ([GPU] reach): which devices this build runs on, and
// the errors of those it does not, pinned.

#include "runtime/cuda/architecture.h"

#include <gtest/gtest.h>

#include <string>

namespace weft::cuda {
namespace {

DeviceArchitecture device(int major, int minor) { return {.ordinal = 0, .name = "GPU", .major = major, .minor = minor}; }

TEST(Architecture, EachDeviceRunsTheNewestMachineCodeItCan) {
  EXPECT_EQ(minimum_architecture(), 75);
  EXPECT_EQ(library_code_for(75), "sm_75 machine code");        // RTX 2080, T4
  EXPECT_EQ(library_code_for(80), "sm_80 machine code");        // A100
  EXPECT_EQ(library_code_for(86), "sm_86 machine code");        // RTX 3090
  EXPECT_EQ(library_code_for(87), "sm_86 machine code");        // Orin: same major, lower minor
  EXPECT_EQ(library_code_for(89), "sm_89 machine code");        // L4, RTX 4090
  EXPECT_EQ(library_code_for(90), "sm_90 machine code");        // H100, H200
  EXPECT_EQ(library_code_for(100), "sm_100 machine code");      // B200
  EXPECT_EQ(library_code_for(103), "sm_100 machine code");
  EXPECT_EQ(library_code_for(120), "sm_120 machine code");      // RTX 5090
  EXPECT_EQ(library_code_for(130), "compute_120 PTX compiled by the driver");  // a later chip
  EXPECT_EQ(library_code_for(110), "");                         // newer than sm_100, older than the PTX
  EXPECT_EQ(library_code_for(70), "");
}

TEST(Architecture, SupportedDevicesPass) {
  for (auto [major, minor] : {std::pair{7, 5}, {8, 0}, {8, 6}, {8, 9}, {9, 0}, {10, 0}, {12, 0}, {13, 0}}) {
    EXPECT_TRUE(check_architecture(device(major, minor), "").ok()) << major << "." << minor;
  }
}

TEST(Architecture, AnOlderDeviceIsRefusedByName) {
  const Status s = check_architecture({.ordinal = 1, .name = "Tesla V100-SXM2-16GB", .major = 7, .minor = 0}, "");
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.error().message,
            "CUDA device 1 (Tesla V100-SXM2-16GB, compute capability 7.0) is older than weft supports: its CUDA "
            "code needs compute capability 7.5 (Turing) or newer");
}

TEST(Architecture, ADeviceWithNoCodeInTheBuildSaysWhatItCarries) {
  const Status s = check_architecture({.ordinal = 0, .name = "NVIDIA Thor", .major = 11, .minor = 0}, "");
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.error().message,
            "CUDA device 0 (NVIDIA Thor, compute capability 11.0) has no code in this build: it carries machine "
            "code for sm_75, sm_80, sm_86, sm_89, sm_90, sm_100, sm_120 and PTX for compute_120 (add 110 to "
            "CUDA_ARCHS in third_party/cuda.bzl)");
}

TEST(Architecture, GeneratedPtxMustTargetTheDeviceOrOlder) {
  const std::string ptx = "//\n.version 7.8\n.target sm_80\n.address_size 64\n";
  EXPECT_EQ(ptx_target(ptx), 80);
  EXPECT_EQ(ptx_target(".version 7.8\n"), -1);
  EXPECT_TRUE(check_architecture(device(8, 0), ptx).ok());
  EXPECT_TRUE(check_architecture(device(9, 0), ptx).ok());
  const Status s = check_architecture({.ordinal = 0, .name = "Tesla T4", .major = 7, .minor = 5}, ptx);
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.error().message,
            "CUDA device 0 (Tesla T4, compute capability 7.5) cannot run the generated kernels: their PTX targets "
            "sm_80 (compute capability 8.0)");
}

// A program of one `op` (a matmul unless said) of `dtype` operands, at t.wir:2:3, in the
// root or a loop body.
Program one_matmul(DType dtype, bool in_body, Op op = Op::Matmul) {
  Invocation inv;
  inv.kind = Invocation::Kind::library;
  inv.node.op = op;
  inv.node.loc = Location{"t.wir", 2, 3, ""};
  inv.label = "y";
  inv.operands = {BufferRef{Space::input, 0, 0, Type{dtype, {4, 6}}}, BufferRef{Space::input, 1, 0, Type{dtype, {6, 3}}}};
  inv.results = {BufferRef{Space::arena, -1, 0, Type{dtype, {4, 3}}}};
  Program p;
  p.name = "t";
  if (!in_body) {
    p.code.push_back(inv);
    return p;
  }
  Program body;
  body.code.push_back(inv);
  p.bodies.push_back(body);
  return p;
}

TEST(Architecture, Bf16ContractionsNeedAmpereAndSaySo) {
  const DeviceArchitecture t4{.ordinal = 0, .name = "Tesla T4", .major = 7, .minor = 5};
  for (const bool in_body : {false, true}) {
    const Status s = check_features(t4, one_matmul(DType::bf16, in_body));
    ASSERT_FALSE(s.ok());
    EXPECT_EQ(s.to_string(),
              "t.wir:2:3: error: CUDA device 0 (Tesla T4, compute capability 7.5) has no bf16 tensor cores "
              "(compute capability 8.0, Ampere, and newer have them): matmul %y multiplies in bf16; on this GPU "
              "train in f16 or f32 (--precision)");
  }
  EXPECT_TRUE(check_features(t4, one_matmul(DType::f16, false)).ok());  // Turing has f16 tensor cores
  EXPECT_TRUE(check_features(t4, one_matmul(DType::f32, false)).ok());
  EXPECT_TRUE(check_features(device(8, 0), one_matmul(DType::bf16, true)).ok());
}

// --tf32 asks for TF32 tensor cores, which Turing lacks: there f32 runs as without it.
TEST(Architecture, Tf32TakesEffectFromAmpereOn) {
  EXPECT_FALSE(runs_tf32(device(7, 5)));
  EXPECT_TRUE(runs_tf32(device(8, 0)));
  EXPECT_TRUE(runs_tf32(device(8, 6)));
  EXPECT_TRUE(runs_tf32(device(9, 0)));
}

// Pooling is a contraction in the op table but runs weft's own kernels, in f32, on any
// device; a bf16 convolution is cuDNN's and needs the tensor cores.
TEST(Architecture, Bf16PoolingRunsOnTuringAndABf16ConvolutionDoesNot) {
  const DeviceArchitecture t4{.ordinal = 0, .name = "Tesla T4", .major = 7, .minor = 5};
  for (const Op pool : {Op::MaxPool2d, Op::AvgPool2d, Op::MaxPool2dBackward, Op::AvgPool2dBackward,
                        Op::MaxPool2dSelect}) {
    EXPECT_TRUE(check_features(t4, one_matmul(DType::bf16, false, pool)).ok()) << op_name(pool);
  }
  for (const Op conv : {Op::Conv, Op::ConvBackwardInput, Op::ConvBackwardWeight}) {
    const Status s = check_features(t4, one_matmul(DType::bf16, true, conv));
    ASSERT_FALSE(s.ok()) << op_name(conv);
    EXPECT_NE(s.error().message.find(std::string(op_name(conv)) + " %y multiplies in bf16"), std::string::npos)
        << s.error().message;
  }
}

}  // namespace
}  // namespace weft::cuda
