#!/usr/bin/env bash
# [GPU] (#31) input overlap on a GPU in one short call: the next batch's host-to-device
# copy on the executor's copy stream while the current step runs
# (runtime/cuda/executor_prefetch.cc). runtime/cuda:executor_test's cases: the outputs of
# prefetched inputs (the data Loader's pinned buffers, two held at a time) bitwise equal to
# set_input's plain copies over seven steps with changing batches, as one CUDA graph and
# launch by launch; a step that runs to its end with the next batch's copy held back on
# its stream (events); a set_input of another tensor; then those but the held stream under
# compute-sanitizer memcheck (which may serialize the two streams). Under a minute; not yet run
# (written in a session without a GPU). open_issues_check.sh 31 runs it. Build and copy
# here (tests/cuda/lease_bundle.sh packs the same binary):
#
#   bazel build //runtime/cuda:executor_test
#   mkdir -p .gpu && cp -f bazel-bin/runtime/cuda/executor_test .gpu/
#   # device tool: run(command="tests/cuda/input_overlap_check.sh", carry=[".gpu"], timeout_s=120)
#
# Logs go to /tmp/weft-gpu and, when $OUT is set, to $OUT.
set -uo pipefail
out=/tmp/weft-gpu
mkdir -p "$out"
cases='*Prefetch*:*NextBatchsCopy*:*PinnedLoader*'
line() { grep -E "$1" "$2" | tr '\n' ' ' | cut -c1-400; echo; }

nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
timeout 60 .gpu/executor_test --gtest_filter="$cases" >"$out/input_overlap_cases.txt" 2>&1
echo "== executor_test ($cases) rc=$? $(line '^\[  (PASSED|FAILED|SKIPPED)' "$out/input_overlap_cases.txt")"
grep -E "Failure|error" -A4 "$out/input_overlap_cases.txt" | head -40
timeout 90 compute-sanitizer --tool memcheck --error-exitcode 3 .gpu/executor_test \
  --gtest_filter='*PrefetchedInputs*:*AnotherTensorCopies*:*PinnedLoader*' \
  >"$out/input_overlap_memcheck.txt" 2>&1
echo "== memcheck rc=$? $(line 'ERROR SUMMARY|^\[  (PASSED|FAILED)' "$out/input_overlap_memcheck.txt")"
if [ -n "${OUT:-}" ]; then cp -f "$out"/input_overlap_*.txt "$OUT"/ 2>/dev/null; fi
