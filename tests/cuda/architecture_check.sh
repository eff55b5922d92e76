#!/usr/bin/env bash
# [Architecture] (#29) on a GPU in one short lease: nothing the refactor touched changed on
# the device — every GPU case (the CUDA library's elementwise choice now read from the op
# table, softplus among the generated kernels), the executor (its binder's buffer_address),
# the AOT CUDA training binary built through the Target registry (devices.bzl) running the
# driver's one training loop (training/driver/training_run.h), and its runtime test. Three
# minutes at most. Build and copy here (with 20,000 Fashion-MNIST examples, about 25 MB):
#
#   bazel build //tests/cuda:cases_test //runtime/cuda:executor_test \
#       //examples/fashion_mnist:train_cuda //examples/fashion_mnist:train_cuda_runtime_test
#   mkdir -p .gpu && cp -f bazel-bin/tests/cuda/cases_test \
#       bazel-bin/runtime/cuda/executor_test bazel-bin/examples/fashion_mnist/train_cuda \
#       bazel-bin/examples/fashion_mnist/train_cuda_runtime_test .gpu/
#   python3 tests/cuda/nccl_check_data.py /usr/share/datasets/fashion-mnist .gpu/fashion-mnist-20k 20000 10000
#   # The driver's libraries a GPU machine may lack (Gloo since session 18; httplib for the
#   # dashboard):
#   mkdir -p .gpu/lib && cp -fL /usr/lib/libgloo.so.0 /lib/x86_64-linux-gnu/{libhiredis.so.0.14,libibverbs.so.1,libcpp-httplib.so.0.11,libbrotlidec.so.1,libbrotlienc.so.1,libbrotlicommon.so.1} .gpu/lib/
#   # device tool: run(command="tests/cuda/architecture_check.sh", carry=[".gpu"], timeout_s=300)
#
# Its `rest` (open_issues_check.sh third, last; key 29 runs it too): the sanitizers over
# what `first` leaves out. #31's "the GPU cases pass under memcheck" was last shown at
# 19c2f86 (311 tests, device_check.sh); since then `first` memchecks only the bf16/f16,
# vectorized, loop-slot, attention and skipped-slot cases. So: memcheck over every other
# case, launch by launch (a graph replays the same kernels), and racecheck over the
# kernels that share memory within a block — the reduction and row kernels (softmax,
# layer norm, sums, the losses' rows), vectorized since 19c2f86 — launch by launch.
#
# Logs go to $OUT (else /tmp/weft-gpu). The default part is open_issues_check.sh first's
# (the default paths' correctness). Estimated 30-45 s on an H200: cases_test's 592 tests
# about 15-30 s (299 took 5.4 s of test time on 2026-11-26, mostly module loads; the
# reference interpreter takes under 1 s of host time over all the cases), executor_test
# and the runtime test 2-3 s each, train_cuda's 2 epochs on 20,000 examples about 8 s
# (0.3 s per 60,000-example epoch after a start of a few seconds, 2026-11-28). The rest:
# memcheck over 156 tests at 0.2-0.5 s each, 35-80 s; racecheck over 38
# (slower: every shared-memory access tracked), 30-90 s.
set -uo pipefail
export LD_LIBRARY_PATH="$PWD/.gpu/lib:${LD_LIBRARY_PATH:-}"
# shellcheck source=tests/cuda/lease_common.sh
source "$(dirname "$0")/lease_common.sh"

nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
if part default; then
  timeout 150 .gpu/cases_test --gtest_brief=1 >"$out/arch_cases.txt" 2>&1
  echo "== cases_test rc=$? $(line '^\[  (PASSED|FAILED)' "$out/arch_cases.txt")"
  grep -E "Failure" -A3 "$out/arch_cases.txt" | head -12
  timeout 60 .gpu/executor_test --gtest_brief=1 >"$out/arch_executor.txt" 2>&1
  echo "== executor_test rc=$? $(line '^\[  (PASSED|FAILED)' "$out/arch_executor.txt")"
  timeout 60 .gpu/train_cuda_runtime_test --gtest_brief=1 >"$out/arch_runtime.txt" 2>&1
  echo "== train_cuda_runtime_test rc=$? $(line '^\[  (PASSED|FAILED)' "$out/arch_runtime.txt")"
  timeout 90 .gpu/train_cuda --data=.gpu/fashion-mnist-20k --epochs=2 >"$out/arch_train.txt" 2>&1
  echo "== train_cuda 2 epochs rc=$? $(line 'test accuracy|done|rror' "$out/arch_train.txt")"
fi
part rest || exit 0

# Every case `first` does not memcheck elsewhere (mixed_precision_check.sh: the half cases;
# vector_check.sh: vec_*; loop_slots_check.sh: slots, LSTM/GRU, attention;
# reliability_check.sh: skipped slots; cublaslt_check.sh: cublaslt_*).
seen='*bf16*:*f16*:*vec_*:*scan_slots*:*lstm*:*gru*:*stored_concat*:*attention*:*FusedAttention*:*skipped_slots*:*cublaslt*'
timeout 200 compute-sanitizer --tool memcheck --error-exitcode 3 .gpu/cases_test --gtest_brief=1 \
  --gtest_filter="*_launches-$seen" >"$out/arch_memcheck.txt" 2>&1
echo "== memcheck (every other case, launch by launch) rc=$? $(line 'ERROR SUMMARY|^\[  (PASSED|FAILED)' "$out/arch_memcheck.txt")"
grep -E "Invalid|Failure" -A4 "$out/arch_memcheck.txt" | head -30
rows='*cross_entropy*_launches:*mse*_launches:*softmax*_launches:*layer_norm*_launches:*sum*_launches:*mean*_launches'
timeout 150 compute-sanitizer --tool racecheck --error-exitcode 3 .gpu/cases_test --gtest_brief=1 \
  --gtest_filter="$rows" >"$out/arch_racecheck.txt" 2>&1
echo "== racecheck (reduction and row kernels) rc=$? $(line 'RACECHECK SUMMARY|ERROR SUMMARY|^\[  (PASSED|FAILED)' "$out/arch_racecheck.txt")"
grep -E "Race|hazard|Failure" -A4 "$out/arch_racecheck.txt" | head -30
exit 0
