#!/usr/bin/env bash
# cuBLASLt's GEMM epilogues (#31, #30; runtime/cuda/epilogue_match.h, gemm_lt.cc) on a GPU
# in one short call (a few minutes; open_issues_check.sh 31perf runs it first). Not yet run:
# written in a session without a GPU. The path is opt-in (WEFT_CUBLASLT_EPILOGUE=1) until
# this check has measured it.
#  1. cases_test's `cublaslt_*` cases (bias, relu+bias with a transposed weight, gelu(tanh)+bias,
#     a batch folded into the rows, a strided batch, two strided batches of odd extents
#     (their later entries only 2- or 4-byte aligned); f32, bf16, f16; erf GELU and a
#     residual, which the matcher refuses) against the reference interpreter, launch by
#     launch and as one CUDA graph, with the switch off (the generated epilogue) and on
#     (one cublasLtMatmul), and CudaCublasLt.* (with the switch on: each matched case binds
#     as "cublasLt ...", each refused one does not; its describe() lines are printed).
#     CudaCublasLt.ANanPreActivationSurvivesTheReluBiasEpilogue feeds a NaN through three
#     relu_bias contractions (f32, bf16, f16) and prints "NaN survives: yes|no" per switch
#     value (echoed below). Decision rule: weft's relu keeps NaN, so if cuBLASLt's
#     RELU_BIAS epilogue answers "no" (the test fails with the switch on only),
#     epilogue_match.h must refuse relu and relu_bias epilogues before the switch defaults on.
#  2. The same cases under compute-sanitizer memcheck with the switch on (the bias read,
#     the workspace, the strided batch).
#  3. The A/B: step_bench over cublaslt_bench_gelu_tanh_{f32,bf16} (256x1024 · 1024x1024 + bias,
#     GELU tanh) with the switch off and on, --profile showing the GEMM and, switched off,
#     the epilogue kernel's own time. The default (runtime/cuda/README.md) follows from
#     the two medians: on where cuBLASLt's one call beats GEMM + epilogue kernel.
#     Then the MLP training cases with the switch on (a regression check: in a training
#     step only the logits' Linear matches, cublaslt_match_test says why).
# Build and copy here:
#
#   bazel build //tests/cuda:cases_test //tests/cuda:step_bench
#   mkdir -p .gpu && cp -f bazel-bin/tests/cuda/cases_test bazel-bin/tests/cuda/step_bench .gpu/
#   # device tool: run(command="tests/cuda/cublaslt_check.sh", carry=[".gpu"], timeout_s=300)
#
# Logs go to $OUT (else /tmp/weft-gpu). The whole script is opt-in work (open_issues_check.sh
# third and 31perf). Estimated (on an H200; no run yet) 100-160 s: 40 tests twice 5-10 s
# each, memcheck over 40 20-50 s, 4 step_bench runs of 220 steps 3-5 s each, 12 MLP tests.
set -uo pipefail
# shellcheck source=tests/cuda/lease_common.sh
source "$(dirname "$0")/lease_common.sh"

nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
for on in 0 1; do
  WEFT_CUBLASLT_EPILOGUE=$on timeout 120 .gpu/cases_test --gtest_filter='*cublaslt_*:CudaCublasLt.*' \
    >"$out/cublaslt_cases_$on.txt" 2>&1
  echo "== cases_test (cublaslt_*) WEFT_CUBLASLT_EPILOGUE=$on rc=$? $(line '^\[  (PASSED|FAILED|SKIPPED)' "$out/cublaslt_cases_$on.txt")"
  grep -E "Failure|error" -A4 "$out/cublaslt_cases_$on.txt" | head -30
done
grep -E "^  cublaslt_" "$out/cublaslt_cases_1.txt" | grep -E "cublas" | head -20
echo "== NaN through relu_bias (the relu epilogue decision; 'no' with the switch on: refuse relu epilogues)"
grep -h "NaN survives" "$out/cublaslt_cases_0.txt" "$out/cublaslt_cases_1.txt"
WEFT_CUBLASLT_EPILOGUE=1 timeout 120 compute-sanitizer --tool memcheck --error-exitcode 3 .gpu/cases_test \
  --gtest_filter='*cublaslt_*:CudaCublasLt.*' >"$out/cublaslt_memcheck.txt" 2>&1
echo "== memcheck (cublaslt_*, switch on) rc=$? $(line 'ERROR SUMMARY|^\[  (PASSED|FAILED)' "$out/cublaslt_memcheck.txt")"
for c in cublaslt_bench_gelu_tanh_f32 cublaslt_bench_gelu_tanh_bf16; do
  for on in 0 1; do
    WEFT_CUBLASLT_EPILOGUE=$on timeout 40 .gpu/step_bench --case=$c --steps=200 --warmup=20 --profile=4 \
      >"$out/cublaslt_bench_${c}_$on.txt" 2>&1
    echo "== step_bench $c WEFT_CUBLASLT_EPILOGUE=$on rc=$?"
    grep -E "median|cublas|generated| ms " "$out/cublaslt_bench_${c}_$on.txt" | head -8
  done
done
WEFT_CUBLASLT_EPILOGUE=1 timeout 120 .gpu/cases_test --gtest_filter='*mlp*' >"$out/cublaslt_mlp.txt" 2>&1
echo "== cases_test (*mlp*) WEFT_CUBLASLT_EPILOGUE=1 rc=$? $(line '^\[  (PASSED|FAILED)' "$out/cublaslt_mlp.txt")"
grep -E "Failure" -A4 "$out/cublaslt_mlp.txt" | head -20
exit 0
