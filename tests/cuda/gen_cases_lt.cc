// cuBLASLt's epilogues' cases of gen_cases (gen_cases.h; #31, #30): contractions whose
// epilogue cuBLASLt applies inside the GEMM with WEFT_CUBLASLT_EPILOGUE=1
// (runtime/cuda/epilogue_match.h), and two it refuses, run against the reference
// interpreter with the switch off (the generated epilogue) and on (cublaslt_check.sh).

#include <string>
#include <tuple>
#include <vector>

#include "tests/cuda/gen_cases.h"

namespace weft::gen_cases {

/// Per dtype (f32, bf16; f16 for GELU): y = C + bias, relu(C + bias) with a transposed
/// weight (a Linear's [out, in]), gelu_tanh(C + bias), a batch folded into the GEMM's
/// rows, a strided batch (one bias for every entry); refused, so the generated epilogue
/// runs either way: erf GELU, and a residual after the activation. Then two larger
/// GELU(tanh) Linears of two steps each (256 x 1024 · 1024 x 1024), which step_bench
/// times for the A/B (cublaslt_check.sh), and two strided batches of odd extents (f16,
/// f32), whose later entries and leading dimensions are not 16-byte aligned. Appended last, so every earlier case keeps
/// its index and its seeded inputs. The weights and biases are parameters, so
/// case_inputs.h draws them at a Linear's scale (±1/√fan-in, biases ±0.5) and the results
/// stay near 1: in bf16 cuBLASLt rounds once where the reference rounds C, C + bias and
/// the activation, up to 1.5 units in the last place apart, which cases_test's bf16
/// tolerance (8e-3 · (1 + |y|)) holds only for |y| below about 2. Simulated in PyTorch
/// (f64 products, bf16 roundings) at these shapes and scales: the worst element over 20
/// draws used 0.88 of the tolerance (the two-step bench cases, whose tolerance doubles,
/// 0.47); with the data's ±2 weights, 1.02 and 1.23.
std::vector<GraphCase> cublaslt_cases() {
  std::vector<GraphCase> cases;
  const auto add = [&](const std::string& name, const std::string& inputs, const std::string& body,
                       int steps = 1) {
    cases.push_back({name, parse(graph_text(name, inputs, body, "%y")), steps});
  };
  const std::string bias_add = "  %m = matmul(%x, %w)\n  %y = add(%m, %b)\n";
  const std::string pre = "  %m = matmul(%x, %w)\n  %s = add(%m, %b)\n";
  for (const std::string t : {"f32", "bf16"}) {
    const std::string linear = "%x: " + t + "[32,48], %w: " + t + "[48,24] {param}, %b: " + t + "[24] {param}";
    add("cublaslt_bias_" + t, linear, bias_add);
    add("cublaslt_relu_bias_tb_" + t, "%x: " + t + "[32,48], %w: " + t + "[24,48] {param}, %b: " + t + "[24] {param}",
        "  %m = matmul(%x, %w) {transpose_b=true}\n  %s = add(%b, %m)\n  %y = relu(%s)\n");
    add("cublaslt_gelu_tanh_bias_" + t, linear, pre + "  %y = gelu(%s) {approximate=\"tanh\"}\n");
    add("cublaslt_folded_relu_bias_" + t, "%x: " + t + "[4,16,48], %w: " + t + "[48,24] {param}, %b: " + t + "[24] {param}",
        pre + "  %y = relu(%s)\n");
    add("cublaslt_strided_gelu_tanh_bias_" + t, "%x: " + t + "[3,16,48], %w: " + t + "[3,48,24] {param}, %b: " + t + "[24] {param}",
        pre + "  %y = gelu(%s) {approximate=\"tanh\"}\n");
    add("cublaslt_refused_gelu_erf_" + t, linear, pre + "  %y = gelu(%s)\n");
    add("cublaslt_refused_residual_" + t, linear + ", %r: " + t + "[32,24]",
        pre + "  %t = relu(%s)\n  %y = add(%t, %r)\n");
  }
  add("cublaslt_gelu_tanh_bias_f16", "%x: f16[32,48], %w: f16[48,24] {param}, %b: f16[24] {param}",
      pre + "  %y = gelu(%s) {approximate=\"tanh\"}\n");
  for (const std::string t : {"f32", "bf16"}) {
    add("cublaslt_bench_gelu_tanh_" + t, "%x: " + t + "[256,1024], %w: " + t + "[1024,1024] {param}, %b: " + t + "[1024] {param}",
        pre + "  %y = gelu(%s) {approximate=\"tanh\"}\n", /*steps=*/2);
  }
  // Strided batches of odd extents: every batch entry but the first, each leading
  // dimension and the bias end only 2-byte (f16) or 4-byte (f32) aligned, where gemm_lt.cc
  // tells the heuristic the alignment of each matrix's first entry only.
  add("cublaslt_odd_strided_relu_bias_f16", "%x: f16[3,5,7], %w: f16[3,7,9] {param}, %b: f16[9] {param}",
      pre + "  %y = relu(%s)\n");
  add("cublaslt_odd_strided_bias_tb_f32", "%x: f32[3,5,7], %w: f32[3,9,7] {param}, %b: f32[9] {param}",
      "  %m = matmul(%x, %w) {transpose_b=true}\n  %y = add(%m, %b)\n");
  return cases;
}

}  // namespace weft::gen_cases
