// Prints, for each suite model's training step (bench/models.h, paper sizes) lowered for
// the GPU in f32 and under bf16 autocast, how many contraction invocations cuBLASLt's
// epilogues would take with WEFT_CUBLASLT_EPILOGUE=1 (runtime/cuda/epilogue_match.h) —
// each one generated epilogue kernel fewer per step — and why the others are refused.
// Counts only, no GPU: the matcher's reach before anyone times it.
//
//   bazel run //tests/cuda:cublaslt_census

#include <cctype>
#include <cstdio>
#include <map>
#include <string>

#include "bench/models.h"
#include "codegen/cuda_program.h"
#include "frontend/training.h"
#include "runtime/cuda/epilogue_match.h"
#include "runtime/cuda/plan.h"

int main() {
  using namespace weft;
  std::map<std::string, int> reasons;
  for (const DType precision : {DType::f32, DType::bf16}) {
    for (const std::string& name : bench::bench_model_names()) {
      StatusOr<bench::BenchModel> m = bench::make_bench_model(name, bench::Preset::paper);
      if (!m.ok()) return std::fprintf(stderr, "%s: %s\n", name.c_str(), m.error().to_string().c_str()), 1;
      StatusOr<Trainer> t = Trainer::compile(m->net, m->inputs, m->loss, OptimizerSpec::adam(m->lr),
                                             {.seed = 1, .backend = "reference", .precision = precision});
      if (!t.ok()) return std::fprintf(stderr, "%s: %s\n", name.c_str(), t.error().to_string().c_str()), 1;
      StatusOr<codegen::Lowering> l = codegen::lower_to_program(t->step_graph(), codegen::cuda_lower_options());
      if (!l.ok()) return std::fprintf(stderr, "%s: %s\n", name.c_str(), l.error().to_string().c_str()), 1;
      int contractions = 0, matched = 0;
      std::map<std::string, int> kinds;
      for (const Invocation& inv : l->program.code) {
        if (inv.kind != Invocation::Kind::contraction) continue;
        ++contractions;
        cuda::MatmulPlan plan;
        StatusOr<bool> planned = cuda::plan_matmul(inv.node, inv.operands[0].type, inv.operands[1].type, plan);
        if (!planned.ok() || !*planned) {
          ++reasons["not planned for cuBLAS"];
          continue;
        }
        const cuda::LtEpilogueDecision d =
            cuda::match_lt_epilogue(inv, l->program.kernels[static_cast<size_t>(inv.kernel)].body, plan);
        if (d.match) {
          ++matched;
          ++kinds[cuda::lt_epilogue_name(d.match->epilogue)];
        } else {
          // The reason with its numbers as N (not the digits of f32, bf16), so that alike
          // refusals add up.
          std::string why;
          bool word = false;  // inside a token that starts with a letter
          for (char c : d.refused) {
            const bool digit = c >= '0' && c <= '9', letter = std::isalpha(static_cast<unsigned char>(c)) != 0;
            if (digit && !word) {
              if (why.empty() || why.back() != 'N') why += 'N';
            } else {
              why += c;
            }
            word = letter || (digit && word);
          }
          ++reasons[why];
        }
      }
      std::string what;
      for (const auto& [k, n] : kinds) what += " " + k + "=" + std::to_string(n);
      std::printf("%-5s %-18s %3zu invocations, %2d contractions, %2d to cuBLASLt%s\n",
                  std::string(dtype_name(precision)).c_str(), name.c_str(), l->program.code.size(), contractions,
                  matched, what.c_str());
    }
  }
  std::printf("refused, over both precisions:\n");
  for (const auto& [why, n] : reasons) std::printf("  %4d  %s\n", n, why.c_str());
  return 0;
}
