// The issue's goal "an imported model's step is as fast as the same model written with
// the builder (same IR after canonicalization)": the suite's mlp and transformer,
// exported as ONNX and imported back (testing/imported_twin.h), compile to cpu steps with
// the same histogram as the builder's (kernels, invocations of each kind and op), but for
// what ONNX's Gather means beyond weft's: its indices may be negative, counted from the
// end, which the importer computes on the token ids (lt, add, select: one generated
// kernel and two constants) where the builder's embedding reads them as they are. The
// transformer's GELU, which opset 17 spells with Erf, is one gelu again (fuse_gelu.h), so
// its 18 GEMMs keep their fused epilogues. Step times: imported_step_bench.
#include <gtest/gtest.h>


#include "interop/onnx/testing/imported_twin.h"
#include "tests/testing/subprocess.h"

namespace weft::onnx_io {
namespace {
namespace imported_ir_test {  // this file's names, apart in its package's unity test

std::string listing(const std::map<std::string, int64_t>& h) {
  std::string out;
  for (const auto& [key, count] : h) out += key + "=" + std::to_string(count) + " ";
  return out;
}

struct Case {
  std::string model;
  int64_t gathers;  ///< Gathers of indices known only at run time (embeddings).
};

// The builder's histogram plus what `gathers` runtime-index ONNX Gathers add.
std::map<std::string, int64_t> with_negative_index_wrap(std::map<std::string, int64_t> h, int64_t gathers) {
  h["generated"] += gathers;
  h["kernels"] += gathers;
  h["library:full"] += 2 * gathers;
  h["invocations"] += 3 * gathers;
  return h;
}

class ImportedIr : public ::testing::TestWithParam<Case> {};

TEST_P(ImportedIr, TheImportedStepLowersAsTheBuildersDoes) {
  StatusOr<Twins> t = compile_twins(GetParam().model, testing::test_tmpdir());
  ASSERT_TRUE(t.ok()) << t.error().to_string();
  const auto builder = step_histogram(t->builder.compiled_step()->program());
  const auto imported = step_histogram(t->imported.compiled_step()->program());
  EXPECT_EQ(imported, with_negative_index_wrap(builder, GetParam().gathers))
      << "imported: " << listing(imported) << "\nbuilder:  " << listing(builder);
}

INSTANTIATE_TEST_SUITE_P(Suite, ImportedIr, ::testing::Values(Case{"mlp", 0}, Case{"transformer", 1}),
                         [](const auto& info) { return info.param.model; });

}  // namespace imported_ir_test
}  // namespace
}  // namespace weft::onnx_io
