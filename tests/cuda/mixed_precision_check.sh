#!/usr/bin/env bash
# [Mixed precision] (#30) on a GPU in one short lease (about five minutes): what was
# written and tested on the host without a device.
#  1. cases_test's f16/bf16 cases against the reference interpreter, launch by launch and
#     as one CUDA graph: every half elementwise op the GPU emitter fuses, casts,
#     reductions and row kernels in each GPU form, tensor-core GEMMs (cublasGemmEx, f32
#     accumulation) with a fused epilogue, cuDNN f16/bf16 convolutions, pooling computed
#     in f32, and training steps under autocast: the MLP, a layer-norm net and a BN CNN in
#     bf16, the MLP in f16 with loss scaling (and mlp_f16_overflow_adam_step, whose scaled
#     backward overflows f16 in each of its 3 steps: every update skipped and the scale
#     halved inside the graph, as the reference decides), and a GRU and an LSTM in bf16 whose loop
#     bodies run bf16 GEMMs (gru_bf16_adam_step, lstm_bf16_adam_step: autocast inside
#     loop bodies, not yet run on a GPU; the persistent loop planner refuses bf16 bodies,
#     so their loops run as loop invocations). (The reference is the oracle the CPU backend
#     is held to, op by op: kernel_coverage_test, half_coverage_test.) Then the f32 cases
#     once more, as a regression check of the shared emitter.
#  2. executor_test (the executor itself, f32).
#  3. The bf16 training steps timed beside their f32 twins (step_bench), with the
#     costliest invocations and each GEMM's achieved TFLOP/s (--profile).
#  4. gemm_bench: tensor-core GEMM throughput, weft's call beside cuBLASLt's own best
#     heuristic algorithm on the same shapes (bf16, f16, f32 with TF32).
#  5. The ten suite models at the paper preset, one CUDA graph per step: bf16
#     (suite_bf16_bench) beside f32 (suite_bench).
#  6. TF32 (--tf32, TrainOptions::bind.tf32): cases_test's Tf32GemmsStayWithinTf32Rounding
#     runs f32 GEMM cases with ExecutorOptions::tf32 against the reference (within 1e-2;
#     codegen's targets_test checks on the host that CompileOptions::bind.tf32 sets it);
#     step_bench --tf32 (step 3) times the MLP step with it, and suite_bench --tf32 the
#     ten suite models (beside step 5's f32 and bf16).
#  7. Weight copies (#30, passes/weight_copies.h; not yet run on a GPU): the bf16/f16
#     training-step cases of step 1 keep each trained weight's low-precision copy as step
#     state (`weft.copy.NAME`, fed as the cast of the parameter by case_inputs.h, as the
#     Trainer feeds it) and write it in the merged update kernel; run alone here, their
#     match with the reference over 2-3 steps is the device check of that mechanism
#     (device_only_test checks, without a GPU, that the copies are written on the device).
# Build and copy here (about 60 MB):
#
#   bazel build //tests/cuda:cases_test //runtime/cuda:executor_test //tests/cuda:step_bench \
#       //tests/cuda:gemm_bench //tests/cuda:suite_bench //tests/cuda:suite_bf16_bench
#   mkdir -p .gpu && cp -f bazel-bin/tests/cuda/cases_test bazel-bin/runtime/cuda/executor_test \
#       bazel-bin/tests/cuda/step_bench bazel-bin/tests/cuda/gemm_bench \
#       bazel-bin/tests/cuda/suite_bench bazel-bin/tests/cuda/suite_bf16_bench .gpu/
#   # device tool: run(command="tests/cuda/mixed_precision_check.sh", carry=[".gpu"], timeout_s=420)
#
# Logs go to $OUT (else /tmp/weft-gpu). open_issues_check.sh first runs the default part:
# steps 1 (the f16/bf16 cases; the f32 ones ran in architecture_check.sh), 6's TF32 cases
# and 7, and memcheck over the bf16 cases launch by launch (53 tests); second runs the rest
# (steps 3-5 and 6's timings). Estimated (on an H200; no run yet; tests/cuda/README.md
# "Device time" says on what): default 20-40 s (182 + 8 + 1 tests, 5-10 s; memcheck over
# 53, 15-30 s); the rest 120-200 s (6 step_bench runs of 55 steps, 3-5 s each with the
# start; gemm_bench 10-20 s; three suite_bench runs over the 14 cases, 30-50 s each).
set -uo pipefail
# shellcheck source=tests/cuda/lease_common.sh
source "$(dirname "$0")/lease_common.sh"

nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader
half='*bf16*:*f16*:*half*'
if part default; then
  timeout 120 .gpu/cases_test --gtest_brief=1 --gtest_filter="$half" \
    >"$out/mp_cases_half.txt" 2>&1
  echo "== cases_test (f16/bf16) rc=$? $(line '^\[  (PASSED|FAILED)' "$out/mp_cases_half.txt")"
  grep -E "Failure|differ|Which is" -A2 "$out/mp_cases_half.txt" | head -30
fi
if whole; then
  timeout 120 .gpu/cases_test --gtest_brief=1 --gtest_filter="-$half" \
    >"$out/mp_cases_f32.txt" 2>&1
  echo "== cases_test (the rest) rc=$? $(line '^\[  (PASSED|FAILED)' "$out/mp_cases_f32.txt")"
  grep -E "Failure" -A3 "$out/mp_cases_f32.txt" | head -12
fi
if part default; then
  timeout 60 .gpu/cases_test --gtest_brief=1 --gtest_filter='*bf16_*step*:*f16_*step*' \
    >"$out/mp_weight_copies.txt" 2>&1
  echo "== weight copies: the bf16/f16 step cases rc=$? $(line '^\[  (PASSED|FAILED)' "$out/mp_weight_copies.txt")"
  grep -E "Failure|weft.copy" -A2 "$out/mp_weight_copies.txt" | head -12
  timeout 60 .gpu/cases_test --gtest_filter='*Tf32GemmsStayWithinTf32Rounding*' >"$out/mp_cases_tf32.txt" 2>&1
  echo "== cases_test (TF32) rc=$? $(line '^\[  (PASSED|FAILED)|^  tf32 ' "$out/mp_cases_tf32.txt")"
  timeout 180 compute-sanitizer --tool memcheck --error-exitcode 3 .gpu/cases_test --gtest_brief=1 \
    --gtest_filter='*bf16*_launches:*casts_half_launches' >"$out/mp_memcheck_bf16.txt" 2>&1
  echo "== memcheck (bf16 cases) rc=$? $(line 'ERROR SUMMARY|^\[  (PASSED|FAILED)' "$out/mp_memcheck_bf16.txt")"
  grep -E "Invalid|Failure" -A4 "$out/mp_memcheck_bf16.txt" | head -20
fi
if whole; then
  timeout 60 .gpu/executor_test --gtest_brief=1 >"$out/mp_executor.txt" 2>&1
  echo "== executor_test rc=$? $(line '^\[  (PASSED|FAILED)' "$out/mp_executor.txt")"
fi
part rest || exit 0

for c in mlp784_adam_step mlp784_bf16_adam_step mlp784_f16_adam_step cnn_sgd_step \
         cnn_bf16_sgd_step; do
  timeout 40 .gpu/step_bench --case=$c --steps=50 --warmup=5 --profile=6 \
    >"$out/mp_step_$c.txt" 2>&1
  echo "== step_bench --case=$c rc=$?"
  grep -E "weft cuda|TFLOP/s" "$out/mp_step_$c.txt" | sed 's/ (min .*device/ device/' | head -8
done
timeout 40 .gpu/step_bench --case=mlp784_adam_step --tf32 --steps=50 --warmup=5 \
  >"$out/mp_step_tf32.txt" 2>&1
echo "== step_bench --case=mlp784_adam_step --tf32 rc=$?"
grep -E "weft cuda" "$out/mp_step_tf32.txt" | sed 's/ (min .*device/ device/'

timeout 90 .gpu/gemm_bench --reps=20 >"$out/mp_gemm.txt" 2>&1
echo "== gemm_bench rc=$?"
cut -c1-160 "$out/mp_gemm.txt"

timeout 90 .gpu/suite_bench --steps=30 --warmup=5 >"$out/mp_suite_f32.txt" 2>&1
echo "== suite_bench (f32) rc=$?"
grep -E "weft cuda|error" "$out/mp_suite_f32.txt" | sed 's/ (min .*device/ device/' | cut -c1-170
timeout 90 .gpu/suite_bf16_bench --steps=30 --warmup=5 >"$out/mp_suite_bf16.txt" 2>&1
echo "== suite_bf16_bench rc=$?"
grep -E "weft cuda|error" "$out/mp_suite_bf16.txt" | sed 's/ (min .*device/ device/' | cut -c1-170
timeout 90 .gpu/suite_bench --tf32 --steps=30 --warmup=5 >"$out/mp_suite_tf32.txt" 2>&1
echo "== suite_bench --tf32 rc=$?"
grep -E "weft cuda|error" "$out/mp_suite_tf32.txt" | sed 's/ (min .*device/ device/' | cut -c1-170
exit 0
