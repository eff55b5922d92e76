// The Program an AOT build carries as constant tables (codegen/program_source.h writes
// them, runtime/program_tables.h assembles them) is the Program that was written, field
// by field: a hand-built one that uses every part of the format, and the Programs of
// two graphs lowered again here by the JIT path's lowering.
#include <gtest/gtest.h>

#include <bit>
#include <cstdint>
#include <string>

#include "codegen/lower.h"
#include "ir/text.h"
#include "passes/pipeline.h"
#include "runtime/program.h"
#include "tests/aot/synthetic_program.h"

weft::Program synthetic_program();
std::vector<weft::GeneratedFn> synthetic_kernels();
weft::Program mlp_aot_program();
weft::Program sgd_momentum_aot_program();

// The kernels the generated synthetic source declares (it has no object file).
extern "C" void synthetic_k0(void* const*, int64_t, int64_t) {}
extern "C" void synthetic_k1(void* const*, int64_t, int64_t) {}

namespace weft {
namespace {

bool same_bits(double a, double b) { return std::bit_cast<uint64_t>(a) == std::bit_cast<uint64_t>(b); }

// Attribute equality, with doubles compared bit for bit (NaN, -0.0).
bool same_attribute(const Attribute& a, const Attribute& b) {
  if (a.index() != b.index()) return false;
  if (const double* d = std::get_if<double>(&a)) return same_bits(*d, std::get<double>(b));
  if (const FloatList* f = std::get_if<FloatList>(&a)) {
    const FloatList& g = std::get<FloatList>(b);
    if (f->size() != g.size()) return false;
    for (size_t i = 0; i < f->size(); ++i) {
      if (!same_bits((*f)[i], g[i])) return false;
    }
    return true;
  }
  return a == b;
}

void expect_same_buffers(const std::vector<BufferRef>& want, const std::vector<BufferRef>& got,
                         const std::string& what) {
  ASSERT_EQ(want.size(), got.size()) << what;
  for (size_t i = 0; i < want.size(); ++i) {
    EXPECT_TRUE(want[i] == got[i] && want[i].type == got[i].type)
        << what << "[" << i << "]: " << want[i].to_string() << " vs " << got[i].to_string();
  }
}

void expect_same_program(const Program& want, const Program& got) {
  EXPECT_EQ(want.name, got.name);
  ASSERT_EQ(want.inputs.size(), got.inputs.size());
  for (size_t i = 0; i < want.inputs.size(); ++i) {
    EXPECT_EQ(want.inputs[i].name, got.inputs[i].name);
    EXPECT_EQ(want.inputs[i].type, got.inputs[i].type) << want.inputs[i].name;
    EXPECT_EQ(want.inputs[i].kind, got.inputs[i].kind) << want.inputs[i].name;
  }
  EXPECT_EQ(want.input_offsets, got.input_offsets);
  EXPECT_EQ(want.inputs_bytes, got.inputs_bytes);
  ASSERT_EQ(want.kernels.size(), got.kernels.size());
  for (size_t k = 0; k < want.kernels.size(); ++k) {
    EXPECT_EQ(want.kernels[k].name, got.kernels[k].name);
    EXPECT_EQ(want.kernels[k].rows, got.kernels[k].rows) << want.kernels[k].name;
    EXPECT_EQ(want.kernels[k].row_length, got.kernels[k].row_length) << want.kernels[k].name;
  }
  ASSERT_EQ(want.code.size(), got.code.size());
  for (size_t i = 0; i < want.code.size(); ++i) {
    const Invocation& w = want.code[i];
    const Invocation& g = got.code[i];
    const std::string at = "invocation " + std::to_string(i) + " (" + w.label + ")";
    EXPECT_EQ(w.kind, g.kind) << at;
    EXPECT_EQ(w.node.op, g.node.op) << at;
    EXPECT_EQ(w.node.loc, g.node.loc) << at << ": " << w.node.loc.to_string() << " vs "
                                      << g.node.loc.to_string();
    ASSERT_EQ(w.node.attrs.size(), g.node.attrs.size()) << at;
    for (const auto& [name, value] : w.node.attrs) {
      auto it = g.node.attrs.find(name);
      ASSERT_NE(it, g.node.attrs.end()) << at << ": no attribute " << name;
      EXPECT_TRUE(same_attribute(value, it->second))
          << at << ": " << name << " = " << attribute_to_string(value) << " vs "
          << attribute_to_string(it->second);
    }
    EXPECT_EQ(w.kernel, g.kernel) << at;
    EXPECT_EQ(w.gemm_result, g.gemm_result) << at;
    expect_same_buffers(w.operands, g.operands, at + " operands");
    expect_same_buffers(w.results, g.results, at + " results");
    expect_same_buffers(w.clear, g.clear, at + " clear");
    EXPECT_EQ(w.label, g.label) << at;
  }
  ASSERT_EQ(want.updates.size(), got.updates.size());
  for (size_t u = 0; u < want.updates.size(); ++u) {
    EXPECT_EQ(want.updates[u].input, got.updates[u].input) << "update " << u;
    expect_same_buffers({want.updates[u].from}, {got.updates[u].from}, "update source");
  }
  expect_same_buffers(want.outputs, got.outputs, "outputs");
  EXPECT_EQ(want.arena_bytes, got.arena_bytes);
  EXPECT_EQ(want.naive_bytes, got.naive_bytes);
  EXPECT_EQ(want.lower_bound_bytes, got.lower_bound_bytes);
  EXPECT_EQ(want.to_string(), got.to_string());
}

TEST(ProgramTables, EveryPartOfTheFormatRoundTrips) {
  const Program want = testing::synthetic_program();
  expect_same_program(want, synthetic_program());
  // The comparison sees what == on doubles does not.
  EXPECT_FALSE(same_attribute(Attribute(FloatList{-0.0}), Attribute(FloatList{0.0})));
  EXPECT_FALSE(same_attribute(Attribute(0.1), Attribute(static_cast<double>(0.1f))));
  const std::vector<GeneratedFn> kernels = synthetic_kernels();
  ASSERT_EQ(kernels.size(), 2u);
  EXPECT_EQ(kernels[0], &synthetic_k0);
  EXPECT_EQ(kernels[1], &synthetic_k1);
}

Program lowered(const std::string& path) {  // as codegen/aot_compile_main.cc does
  StatusOr<Graph> g = read_graph_file(path);
  EXPECT_TRUE(g.ok()) << g.error().to_string();
  EXPECT_TRUE(default_pipeline().run(*g).ok());
  StatusOr<codegen::Lowering> l = codegen::lower_to_program(std::move(*g));
  EXPECT_TRUE(l.ok()) << l.error().to_string();
  return std::move(l->program);
}

TEST(ProgramTables, GeneratedProgramsAreTheLoweredOnes) {
  expect_same_program(lowered("examples/mlp/mlp.wir"), mlp_aot_program());
  expect_same_program(lowered("tests/aot/testdata/sgd_momentum_step.wir"),
                      sgd_momentum_aot_program());
}

}  // namespace
}  // namespace weft
