// The CUDA library kernels' plans and per-element arithmetic, tested without a GPU: each
// op's plan (library_plan.h) is run through the same per-element functions the kernels
// call (index_maps.h: map_element, gather_position, gather_other) over host buffers and
// compared with the reference interpreter bit for bit. Also: which invocations run on
// the host (library.h), and the error that names them.
#include "runtime/cuda/library_plan.h"

#include <gtest/gtest.h>

#include <cstring>
#include <tuple>
#include <vector>

#include "ir/text.h"
#include "passes/infer_types.h"
#include "runtime/cuda/index_maps.h"
#include "runtime/cuda/library.h"
#include "runtime/cuda/test_util.h"
#include "runtime/reference/interpreter.h"

namespace weft::cuda {
namespace {

using test_util::random_tensor;

Graph parse(const std::string& inputs, const std::string& body) {
  StatusOr<Graph> g = parse_graph("graph @t(" + inputs + ") {\n" + body + "  return %y\n}\n", "t.wir");
  WEFT_CHECK(g.ok(), g.ok() ? "" : g.error().to_string());
  InferTypesPass infer;
  StatusOr<bool> typed = infer.run(*g);
  WEFT_CHECK(typed.ok(), typed.ok() ? "" : typed.error().to_string());
  return std::move(*g);
}

struct OneOp {
  Graph graph;
  std::vector<Tensor> inputs;
  Tensor want;
  const Node& node() const { return graph.nodes().back(); }
  std::vector<Type> types() const {
    std::vector<Type> t;
    for (ValueId v : node().operands) t.push_back(graph.type(v));
    return t;
  }
  Type result() const { return graph.type(node().result()); }
};

// Integer inputs in [0, index_limit), floats in [-1, 1).
OneOp one_op(const std::string& inputs, const std::string& body, int64_t index_limit = 3) {
  OneOp op{parse(inputs, body), {}, Tensor()};
  uint32_t seed = 1;
  for (const Input& in : op.graph.inputs()) {
    Tensor t = random_tensor(op.graph.type(in.value), seed++);
    if (!is_floating(t.dtype())) {
      for (int64_t i = 0; i < t.numel(); ++i) t.set_double(i, static_cast<double>((i * 7 + seed) % index_limit));
    }
    op.inputs.push_back(std::move(t));
  }
  StatusOr<reference::RunResult> r = reference::run(op.graph, op.inputs);
  WEFT_CHECK(r.ok(), r.ok() ? "" : r.error().to_string());
  op.want = std::move(r->outputs[0]);
  return op;
}

::testing::AssertionResult same_bytes(const Tensor& got, const Tensor& want) {
  if (got.type() != want.type()) return ::testing::AssertionFailure() << "types differ";
  if (std::memcmp(got.raw_data(), want.raw_data(), got.bytes()) != 0) {
    for (int64_t i = 0; i < got.numel(); ++i) {
      if (got.get_double(i) != want.get_double(i)) {
        return ::testing::AssertionFailure()
               << "element " << i << ": " << got.get_double(i) << " vs " << want.get_double(i);
      }
    }
    return ::testing::AssertionFailure() << "bytes differ";
  }
  return ::testing::AssertionSuccess();
}

// launch_strided_copy's kernel, on the host.
Tensor run_strided(const OneOp& op) {
  StatusOr<std::vector<StridedMap>> maps = plan_strided_copy(op.node(), op.types(), op.result());
  EXPECT_TRUE(maps.ok());
  Tensor out(op.result());
  const size_t esize = dtype_size(out.dtype());
  const uint64_t fill =
      op.node().op == Op::Pad ? dtype_bits(out.dtype(), op.node().float_attr("value")) : 0;
  for (size_t k = 0; k < maps->size(); ++k) {
    const StridedMap& m = (*maps)[k];
    const char* in = static_cast<const char*>(op.inputs[k].raw_data());
    for (int64_t e = 0; e < m.count; ++e) {
      int64_t o = 0;
      const int64_t i = map_element(m, e, o);
      EXPECT_TRUE(o >= 0 && o < out.numel());
      EXPECT_TRUE(i < op.inputs[k].numel());
      std::memcpy(static_cast<char*>(out.raw_data()) + o * esize,
                  i < 0 ? reinterpret_cast<const char*>(&fill) : in + i * esize, esize);
    }
  }
  return out;
}

TEST(LibraryPlan, MovementOpsMatchTheReference) {
  const std::vector<std::pair<std::string, std::string>> ops = {
      {"%x: f32[4,6,5]", "  %y = transpose(%x) {perm=[2, 0, 1]}\n"},
      {"%x: f64[33,17]", "  %y = transpose(%x) {perm=[1, 0]}\n"},
      {"%x: u8[2,3,4,5]", "  %y = transpose(%x) {perm=[3, 1, 0, 2]}\n"},
      {"%x: f32[6,1]", "  %y = broadcast_to(%x) {shape=[3, 6, 5]}\n"},
      {"%x: i64[1,4]", "  %y = broadcast_to(%x) {shape=[2, 3, 4]}\n"},
      {"%x: f32[9,12]", "  %y = slice(%x) {start=[1, -10], stop=[8, 12], step=[3, 2]}\n"},
      {"%x: f32[9,12]", "  %y = slice(%x) {start=[8, 0], stop=[100, 1]}\n"},
      {"%x: i32[3,4]", "  %y = pad(%x) {low=[1, 0], high=[2, 3], value=7.0}\n"},
      {"%x: f64[2,3,2]", "  %y = pad(%x) {low=[0, 2, 1], high=[1, 0, 1], value=-0.5}\n"},
      {"%a: f32[3,2,4], %b: f32[3,5,4], %c: f32[3,1,4]", "  %y = concat(%a, %b, %c) {axis=1}\n"},
      {"%a: f32[2,3], %b: f32[4,3]", "  %y = concat(%a, %b) {axis=0}\n"},
      {"%a: i64[2,3], %b: i64[2,1]", "  %y = concat(%a, %b) {axis=-1}\n"},
      {"%x: f32[4,6]", "  %y = reshape(%x) {shape=[3, 8]}\n"},
  };
  for (const auto& [inputs, body] : ops) {
    SCOPED_TRACE(body);
    const OneOp op = one_op(inputs, body);
    EXPECT_TRUE(same_bytes(run_strided(op), op.want));
  }
}

TEST(LibraryPlan, GatherAndScatterAddMatchTheReference) {
  for (const auto& [inputs, body] :
       std::vector<std::pair<std::string, std::string>>{
           {"%x: f32[3,5], %i: i64[7]", "  %y = gather(%x, %i) {axis=0}\n"},
           {"%x: f64[4,3,6], %i: i64[5]", "  %y = gather(%x, %i) {axis=1}\n"},
           {"%x: u8[4,3], %i: i64[6]", "  %y = gather(%x, %i) {axis=-1}\n"}}) {
    SCOPED_TRACE(body);
    const OneOp op = one_op(inputs, body);
    const std::vector<Type> t = op.types();
    const GatherGeometry g = plan_gather(op.node(), t[0].shape, t[1].numel());
    const IndexType it = index_type(t[1].dtype);
    Tensor out(op.result());
    const size_t esize = dtype_size(out.dtype());
    ASSERT_EQ(g.outer * g.n * g.inner, out.numel());
    for (int64_t e = 0; e < out.numel(); ++e) {
      const int64_t i = index_at(op.inputs[1].raw_data(), it, gather_position(g, e));
      std::memcpy(static_cast<char*>(out.raw_data()) + e * esize,
                  static_cast<const char*>(op.inputs[0].raw_data()) + gather_other(g, e, i) * esize,
                  esize);
    }
    EXPECT_TRUE(same_bytes(out, op.want));
  }
  // scatter_add: the base, then src added at the indices (in order here; the device adds
  // atomically, in any order: equal up to f32 rounding).
  const OneOp op = one_op("%b: f64[3,4], %i: i64[9], %s: f64[9,4]",
                          "  %y = scatter_add(%b, %i, %s) {axis=0}\n");
  const GatherGeometry g = plan_gather(op.node(), op.types()[0].shape, 9);
  Tensor out = op.inputs[0];
  for (int64_t e = 0; e < g.outer * g.n * g.inner; ++e) {
    const int64_t i = index_at(op.inputs[1].raw_data(), kIndexI64, gather_position(g, e));
    const int64_t at = gather_other(g, e, i);
    out.set_double(at, out.get_double(at) + op.inputs[2].get_double(e));
  }
  EXPECT_TRUE(same_bytes(out, op.want));
}

TEST(LibraryPlan, BroadcastMapsReadEachOperandsElement) {
  const OneOp op = one_op("%x: f64[6,37], %w: f64[37]", "  %y = pow(%x, %w)\n");
  const StridedMap a = broadcast_map(Shape{6, 37}, Shape{6, 37});
  const StridedMap b = broadcast_map(Shape{37}, Shape{6, 37});
  for (int64_t e = 0; e < 6 * 37; ++e) {
    int64_t o = 0;
    EXPECT_EQ(map_element(a, e, o), e);
    EXPECT_EQ(o, e);
    EXPECT_EQ(map_element(b, e, o), e % 37);
  }
  const StridedMap scalar = broadcast_map(Shape{}, Shape{4, 2});
  int64_t o = 0;
  for (int64_t e = 0; e < 8; ++e) EXPECT_EQ(map_element(scalar, e, o), 0);
}

TEST(LibraryPlan, DtypeBits) {
  EXPECT_EQ(dtype_bits(DType::f32, 1.0), 0x3f800000u);
  EXPECT_EQ(dtype_bits(DType::f64, 1.0), 0x3ff0000000000000u);
  EXPECT_EQ(dtype_bits(DType::bf16, 1.0), 0x3f80u);
  EXPECT_EQ(dtype_bits(DType::f16, 1.0), 0x3c00u);
  EXPECT_EQ(dtype_bits(DType::i32, 7.0), 7u);
  EXPECT_EQ(dtype_bits(DType::boolean, 1.0), 1u);
}

TEST(LibraryKind, EveryOpOfATrainingStepHasDeviceCode) {
  const std::vector<std::tuple<std::string, std::string, LibraryKind>> ops = {
      {"%x: f32[4,6]", "  %y = transpose(%x) {perm=[1, 0]}\n", LibraryKind::strided_copy},
      {"%x: f32[4,6], %l: i64[4]", "  %y = cross_entropy(%x, %l) {reduction=\"mean\"}\n",
       LibraryKind::cross_entropy},
      {"%l: i64[4]", "  %y = one_hot(%l) {depth=6, dtype=f32}\n", LibraryKind::one_hot},
      {"%a: f32[4,6], %b: f32[4,6]", "  %y = mse(%a, %b) {reduction=\"mean\"}\n", LibraryKind::mse},
      {"%x: f64[], %t: f64[]", "  %y = pow(%x, %t)\n", LibraryKind::elementwise},
      {"%x: f64[3]", "  %y = tanh(%x)\n", LibraryKind::elementwise},
      {"%k: i64[2]", "  %y = random_bernoulli(%k) {shape=[4], p=0.5, dtype=bf16}\n",
       LibraryKind::random},
      {"%x: f32[3,5], %i: i64[2]", "  %y = gather(%x, %i) {axis=0}\n", LibraryKind::gather},
      {"%x: f32[4,6], %w: f32[6,3]", "  %y = matmul(%x, %w)\n", LibraryKind::matmul},
      // Half GEMMs on tensor cores (cublasGemmEx), half pooling computed in f32.
      {"%x: f16[4,6], %w: f16[6,3]", "  %y = matmul(%x, %w)\n", LibraryKind::matmul},
      {"%x: bf16[2,3,8,8]", "  %y = max_pool2d(%x) {kernel=[2, 2]}\n", LibraryKind::pooling},
      // What the device code does not cover yet is the host.
      {"%x: f32[4,6]", "  %y = argmax(%x) {axis=1}\n", LibraryKind::host},
      {"%k: i64[2]", "  %y = random_uniform(%k) {shape=[4], dtype=f16}\n", LibraryKind::host},
      // attention's kernel: f32, head dims up to 128; the rest the lowering decomposes.
      {"%q: f32[2,3,5,128], %k: f32[2,3,7,128], %v: f32[2,3,7,64], %m: bool[2,1,1,7]",
       "  %y = attention(%q, %k, %v, %m) {scale=0.5, causal=true}\n", LibraryKind::attention},
      {"%q: f64[5,8], %k: f64[7,8], %v: f64[7,8]", "  %y = attention(%q, %k, %v) {scale=0.5}\n",
       LibraryKind::host},
      {"%q: f32[5,129], %k: f32[7,129], %v: f32[7,8]", "  %y = attention(%q, %k, %v) {scale=0.5}\n",
       LibraryKind::host},
      // attention_grad's kernel (FlashAttention-2's backward): the same limits.
      {"%q: f32[5,8], %k: f32[7,8], %v: f32[7,8], %o: f32[5,8], %d: f32[5,8]",
       "  %y, %dk, %dv = attention_grad(%q, %k, %v, %o, %d) {scale=0.5}\n",
       LibraryKind::attention_grad},
      {"%q: f32[5,129], %k: f32[7,129], %v: f32[7,8], %o: f32[5,8], %d: f32[5,8]",
       "  %y, %dk, %dv = attention_grad(%q, %k, %v, %o, %d) {scale=0.5}\n", LibraryKind::host},
  };
  for (const auto& [inputs, body, want] : ops) {
    const OneOp op = one_op(inputs, body);
    EXPECT_EQ(library_kind(op.node(), op.types(), op.result()), want) << body;
  }
}

// attention's plan: the problems flattened, and each score's mask element through the
// broadcast map (a padding mask [B, 1, 1, Sk] read for every head and row).
TEST(LibraryPlan, AttentionPlanFlattensProblemsAndMapsTheMask) {
  const OneOp op = one_op("%q: f32[2,3,5,16], %k: f32[2,3,7,16], %v: f32[2,3,7,8], %m: bool[2,1,1,7]",
                          "  %y = attention(%q, %k, %v, %m) {scale=0.25, causal=true}\n");
  std::optional<AttentionPlan> plan = plan_attention(op.node(), op.types());
  ASSERT_TRUE(plan.has_value());
  EXPECT_EQ(plan->shape.batch, 6);
  EXPECT_EQ(plan->shape.sq, 5);
  EXPECT_EQ(plan->shape.sk, 7);
  EXPECT_EQ(plan->shape.d, 16);
  EXPECT_EQ(plan->shape.dv, 8);
  EXPECT_TRUE(plan->masked && plan->causal);
  EXPECT_EQ(plan->scale, 0.25f);
  EXPECT_EQ(plan->mask_map.count, 2 * 3 * 5 * 7);
  for (int64_t e = 0; e < plan->mask_map.count; ++e) {
    int64_t out = 0;
    const int64_t in = map_element(plan->mask_map, e, out);
    EXPECT_EQ(out, e);
    EXPECT_EQ(in, (e / (3 * 5 * 7)) * 7 + e % 7) << e;  // batch b, key j
  }
}

// attention_grad's plan is attention's (the same flattening and mask map, the mask its
// sixth operand), and it refuses what the kernel does not take, saying why.
TEST(LibraryPlan, AttentionGradPlanSharesAttentionsAndSaysWhyItRefuses) {
  const OneOp fwd = one_op("%q: f32[2,3,5,16], %k: f32[2,3,7,16], %v: f32[2,3,7,8], %m: bool[2,1,1,7]",
                           "  %y = attention(%q, %k, %v, %m) {scale=0.25, causal=true}\n");
  const OneOp op = one_op(
      "%q: f32[2,3,5,16], %k: f32[2,3,7,16], %v: f32[2,3,7,8], %o: f32[2,3,5,8], "
      "%d: f32[2,3,5,8], %m: bool[2,1,1,7]",
      "  %y, %dk, %dv = attention_grad(%q, %k, %v, %o, %d, %m) {scale=0.25, causal=true}\n");
  std::optional<AttentionPlan> want = plan_attention(fwd.node(), fwd.types());
  StatusOr<AttentionPlan> plan = plan_attention_grad(op.node(), op.types());
  ASSERT_TRUE(want.has_value());
  ASSERT_TRUE(plan.ok()) << plan.error().to_string();
  const auto fields = [](const AttentionPlan& p) {
    return std::make_tuple(p.shape.batch, p.shape.sq, p.shape.sk, p.shape.d, p.shape.dv,
                           p.masked, p.causal, p.scale);
  };
  EXPECT_EQ(fields(*plan), fields(*want));
  ASSERT_EQ(plan->mask_map.count, want->mask_map.count);
  for (int64_t e = 0; e < plan->mask_map.count; ++e) {
    int64_t out = 0, want_out = 0;
    EXPECT_EQ(map_element(plan->mask_map, e, out), map_element(want->mask_map, e, want_out)) << e;
  }
  // Unmasked: no mask map.
  const OneOp plain = one_op("%q: f32[5,8], %k: f32[7,8], %v: f32[7,8], %o: f32[5,8], %d: f32[5,8]",
                             "  %y, %dk, %dv = attention_grad(%q, %k, %v, %o, %d) {scale=0.5}\n");
  StatusOr<AttentionPlan> unmasked = plan_attention_grad(plain.node(), plain.types());
  ASSERT_TRUE(unmasked.ok());
  EXPECT_FALSE(unmasked->masked || unmasked->causal);
  EXPECT_EQ(unmasked->shape.batch, 1);

  const auto refused = [](const std::string& inputs, const std::string& call) {
    const Graph g = parse(inputs, "  %y, %dk, %dv = " + call + "\n");
    const Node& node = g.nodes().back();
    std::vector<Type> types;
    for (ValueId v : node.operands) types.push_back(g.type(v));
    StatusOr<AttentionPlan> p = plan_attention_grad(node, types);
    return p.ok() ? std::string("planned") : p.error().message;
  };
  EXPECT_EQ(refused("%q: f32[5,129], %k: f32[7,129], %v: f32[7,8], %o: f32[5,8], %d: f32[5,8]",
                    "attention_grad(%q, %k, %v, %o, %d) {scale=0.5}"),
            "attention_grad: head dims 129 and 8 must be 1 to kAttentionMaxDim (128)");
  EXPECT_EQ(refused("%q: f32[5,8], %k: f32[7,8], %v: f32[7,200], %o: f32[5,200], %d: f32[5,200]",
                    "attention_grad(%q, %k, %v, %o, %d) {scale=0.5}"),
            "attention_grad: head dims 8 and 200 must be 1 to kAttentionMaxDim (128)");
  EXPECT_EQ(refused("%q: f64[5,8], %k: f64[7,8], %v: f64[7,8], %o: f64[5,8], %d: f64[5,8]",
                    "attention_grad(%q, %k, %v, %o, %d) {scale=0.5}"),
            "attention_grad: the CUDA attention kernels take f32 only, not f64");
  EXPECT_EQ(refused("%q: f32[1,1,1,1,1,1,1,1,1,5,8], %k: f32[1,1,1,1,1,1,1,1,1,7,8], "
                    "%v: f32[1,1,1,1,1,1,1,1,1,7,8], %o: f32[1,1,1,1,1,1,1,1,1,5,8], "
                    "%d: f32[1,1,1,1,1,1,1,1,1,5,8]",
                    "attention_grad(%q, %k, %v, %o, %d) {scale=0.5}"),
            "attention_grad: rank 11 is outside the CUDA kernels' 2 to " + std::to_string(kMaxRank));
}

// cross_entropy_rows' 16-byte reads (lane_share): over a warp's 32 lanes every element
// of the row is read exactly once, each vector from a 16-byte boundary, for rows that
// start at any element's address and are shorter or longer than a vector.
TEST(LaneShare, EveryElementOnceAndVectorsAligned) {
  for (const int64_t esize : {4, 8}) {
    for (int64_t c : {0, 1, 2, 3, 4, 5, 7, 31, 64, 129, 1001, 8191, 8192}) {
      for (uintptr_t start = 4096; start < 4096 + 16; start += static_cast<uintptr_t>(esize)) {
        std::vector<int> reads(static_cast<size_t>(c), 0);
        int64_t vectors = 0;
        for (int lane = 0; lane < 32; ++lane) {
          lane_share(start, c, esize, lane, [&](int64_t j) { ++reads.at(static_cast<size_t>(j)); },
                     [&](int64_t j) {
                       ++vectors;
                       EXPECT_EQ((start + static_cast<uintptr_t>(j * esize)) % 16, 0u);
                       for (int64_t k = 0; k < 16 / esize; ++k) ++reads.at(static_cast<size_t>(j + k));
                     });
        }
        for (int64_t j = 0; j < c; ++j) {
          ASSERT_EQ(reads[static_cast<size_t>(j)], 1) << "esize " << esize << " c " << c << " start % 16 "
                                                      << start % 16 << " element " << j;
        }
        // All but fewer than a vector's elements at each end are read 16 bytes at a time.
        EXPECT_GE(vectors * (16 / esize), c - 2 * (16 / esize - 1));
      }
    }
  }
}

TEST(LibraryKind, HostFallbacksAreAnErrorNamingTheOpAndLine) {
  const OneOp op = one_op("%x: f32[4,6]", "  %y = argmax(%x) {axis=1}\n");
  Program p;
  p.name = "t";
  Invocation inv;
  inv.kind = Invocation::Kind::library;
  inv.node = op.node();
  inv.label = "y";
  inv.operands = {BufferRef{Space::input, 0, 0, op.types()[0]}};
  inv.results = {BufferRef{Space::arena, -1, 0, op.result()}};
  p.code.push_back(inv);
  EXPECT_EQ(host_invocations(p), std::vector<int>{0});
  const Status s = check_device_only(p);
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.to_string(),
            "t.wir:2:3: error: program @t would run 1 op on the host (no CUDA kernel for it):\n"
            "  argmax at t.wir:2:3 (%y): f32[4,6] -> i64[4]\n"
            "set allow_host_fallback to run them on the reference interpreter on the host (a "
            "debugging path: a synchronize and two copies each)");
  const OneOp matmul = one_op("%x: f16[4,6], %w: f16[6,3]", "  %y = matmul(%x, %w)\n");
  p.code[0].node = matmul.node();
  p.code[0].operands = {BufferRef{Space::input, 0, 0, matmul.types()[0]},
                        BufferRef{Space::input, 1, 0, matmul.types()[1]}};
  p.code[0].results[0].type = matmul.result();
  EXPECT_TRUE(check_device_only(p).ok());
}

}  // namespace
}  // namespace weft::cuda
