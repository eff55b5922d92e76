#!/usr/bin/env bash
# Vectorized generated kernels (#30, #31; codegen/emit_gpu.h) on a GPU in one short call
# (about a minute; open_issues_check.sh 30 runs it after mixed_precision_check.sh); not
# yet run (written in a session without a GPU). Every other case runs the vectorized
# kernels too (architecture_check.sh runs them all).
#  1. cases_test's `vec_*` cases against the reference interpreter, launch by launch and
#     as one CUDA graph: elementwise kernels with vector tails (f32, f64, bf16), rows that
#     allow pairs only, odd rows (scalar), per-row splats, casts; softmax rows of 8192
#     (a block per row in f32, eight bf16 per load), 2048 rows of 256 (a warp per row),
#     one row of 1027, a bf16 layer norm, row sums, 2048 rows of 2048 (a warp per row,
#     as the vocabulary's 4096 rows of 8192 below); a loop whose slots hand every other
#     iteration an unaligned address (the kernels' scalar path); the library's
#     cross-entropy rows, 16 bytes per load between a scalar head and tail
#     (runtime/cuda/library_kernels.cu): vec_cross_entropy_vocab (64 x 8192, aligned rows),
#     _odd_vocab (33 x 8191: rows start at every element mod 4), _f64_odd (17 x 1001, two
#     f64 per load), _short_rows (40 x 3: no vector).
#  2. The same cases under compute-sanitizer memcheck (an access past a row or a
#     misaligned vector load shows there).
#  3. The vocabulary softmax and log-softmax (4096 x 8192) timed, vectorized (vocab_bench)
#     and with one element per access (vocab_bench_scalar, the same cases generated with
#     WEFT_GPU_VECTOR=0): `--profile` gives the row kernel's own time. Its bandwidth
#     floor: each reads x three times (max, sum, output pass) and writes one result,
#     4 x 128 MiB, over the GPU's memory bandwidth (0.11 ms at 4.8 TB/s); #31 measured
#     0.42 ms before vectorization.
# Build and copy here:
#
#   bazel build //tests/cuda:cases_test //tests/cuda:vocab_bench //tests/cuda:vocab_bench_scalar
#   mkdir -p .gpu && cp -f bazel-bin/tests/cuda/cases_test bazel-bin/tests/cuda/vocab_bench \
#       bazel-bin/tests/cuda/vocab_bench_scalar .gpu/
#   # device tool: run(command="tests/cuda/vector_check.sh", carry=[".gpu"], timeout_s=180)
#
# Logs go to $OUT (else /tmp/weft-gpu). open_issues_check.sh first runs the default part
# (steps 1 and 2, and the cross-entropy cases alone), third the rest (step 3). Estimated
# (on an H200; no run yet; tests/cuda/README.md "Device time" says on what): default
# 15-30 s (42 + 8 tests, 3-5 s; memcheck over 42 tests, among them rows of 8192 x 64-4096,
# 10-25 s); the rest 20-30 s (4 runs of 20 steps).
set -uo pipefail
# shellcheck source=tests/cuda/lease_common.sh
source "$(dirname "$0")/lease_common.sh"

nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader
if part default; then
  timeout 120 .gpu/cases_test --gtest_filter='*vec_*' >"$out/vector_cases.txt" 2>&1
  echo "== cases_test (vec_*) rc=$? $(line '^\[  (PASSED|FAILED)' "$out/vector_cases.txt")"
  grep -E "Failure|error" -A4 "$out/vector_cases.txt" | head -40
  timeout 150 compute-sanitizer --tool memcheck --error-exitcode 3 .gpu/cases_test \
    --gtest_filter='*vec_*' >"$out/vector_memcheck.txt" 2>&1
  echo "== memcheck (vec_*) rc=$? $(line 'ERROR SUMMARY|^\[  (PASSED|FAILED)' "$out/vector_memcheck.txt")"
  # The cross-entropy rows alone (also in step 1), so their result reads at a glance.
  timeout 60 .gpu/cases_test --gtest_filter='*vec_cross_entropy*' >"$out/vector_cross_entropy.txt" 2>&1
  echo "== cases_test (vec_cross_entropy*) rc=$? $(line '^\[  (PASSED|FAILED)' "$out/vector_cross_entropy.txt")"
  grep -E "Failure" -A4 "$out/vector_cross_entropy.txt" | head -20
fi
if part rest; then
  for bench in vocab_bench vocab_bench_scalar; do
    for c in vocab_softmax vocab_log_softmax; do
      timeout 60 ".gpu/$bench" --case="$c" --steps=20 --profile=3 >"$out/vector_${bench}_$c.txt" 2>&1
      echo "== $bench $c rc=$?"
      grep -E "median|profile| ms " "$out/vector_${bench}_$c.txt" | head -8
    done
  done
fi
exit 0
