#!/usr/bin/env bash
# [Reliability] (#28) on a GPU in one short lease: the loops whose skipped slots hold NaN
# and inf (`skipped_slots_gradient`: a reversed `active` loop and a `stop` loop, masked on
# the GPU, and the gradients of the weight and bias they share), with the other loop
# cases, each launch by launch and as one CUDA graph against the reference interpreter,
# then under compute-sanitizer memcheck. A minute at most. Build and copy here:
#
#   bazel build //tests/cuda:cases_test
#   mkdir -p .gpu && cp -f bazel-bin/tests/cuda/cases_test .gpu/
#   # device tool: run(command="tests/cuda/reliability_check.sh", carry=[".gpu"], timeout_s=240)
#
# Logs go to $OUT (else /tmp/weft-gpu). All of it is open_issues_check.sh first's.
# Estimated 10-15 s: 18 tests, then memcheck over the 2 skipped-slot tests (compute-
# sanitizer's start and its instrumented module load dominate).
set -uo pipefail
# shellcheck source=tests/cuda/lease_common.sh
source "$(dirname "$0")/lease_common.sh"
cases='*skipped_slots*:*scan*:*ctc*'

nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
if part default; then
  timeout 90 .gpu/cases_test --gtest_filter="$cases" >"$out/reliability_cases.txt" 2>&1
  echo "== cases_test ($cases) rc=$? $(line '^\[  (PASSED|FAILED)' "$out/reliability_cases.txt")"
  grep -E "Failure|^  skipped_slots" -A4 "$out/reliability_cases.txt" | head -40
  timeout 120 compute-sanitizer --tool memcheck --error-exitcode 3 .gpu/cases_test --gtest_filter='*skipped_slots*' \
    >"$out/reliability_memcheck.txt" 2>&1
  echo "== memcheck rc=$? $(line 'ERROR SUMMARY|^\[  (PASSED|FAILED)' "$out/reliability_memcheck.txt")"
fi
exit 0
