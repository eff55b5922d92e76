#!/usr/bin/env bash
# [GPU] (#31) loops as one persistent launch (runtime/cuda/persistent_loop.h, opt-in with
# WEFT_PERSISTENT_LOOPS=1) on a GPU in one short call. Not yet run: written in a session
# without a GPU. A few minutes.
#  0. runtime/cuda's persistent_loop_test: a hand-built loop (a matmul and a PTX add per
#     iteration) binds as "persistent loop 5x over @cell" with the switch on and per trip
#     without it, both equal to the host's loop launch by launch and as one CUDA graph;
#     then under compute-sanitizer memcheck. runtime/cuda's recurrent_kernel_test: every
#     case of recurrent_testing.h (RNN, LSTM, backward shapes, tiling edges, split k)
#     launched and captured in a CUDA graph replayed twice, against the host oracle; every
#     case again in bf16 and f16 (LowPrecisionCasesMatchTheOracleOnTheGpu: the first run of
#     mma.sync m16n8k16 on tensor cores, then the SIMT matmul on converted values, each
#     with the planned and 2 k ranges; expects tensor_cores planned on sm_80+); the tiling
#     cases on 2 blocks of 256 threads as the emulation runs them (TilingCasesOnTwoBlocks…:
#     whole 128-row and 64-column panels, 8 × 8 mma tiles per panel, which the planned
#     264-block launches, a few columns per block, never reach); a launch
#     past 48 KiB of dynamic shared memory (LaunchesPast48KiBOfSharedMemoryOnTheGpu: 96
#     KiB per block in f32, 56 KiB in bf16/f16, plainly and captured in a graph; the
#     cudaFuncSetAttribute that plan_recurrent_launch makes, which no other launch of this
#     default part needs); then, those two left out, under memcheck and racecheck (the
#     grid barrier, the shared-memory stage; the bf16 cases make these runs about twice
#     as long as before, near their 150 s timeout).
#  1. cases_test's loop cases (`*scan*`, `*lstm*`, `*gru*`, `*until*`: forward, reversed,
#     nested, swapped, shifted and chained carries, the LSTM and GRU training steps)
#     against the reference interpreter, launch by launch and as one CUDA graph, with the
#     switch off and on (a loop the plan refuses binds per trip as before: the cases pass
#     either way; which loops became one launch is step 3's). Among them the bf16 steps
#     lstm_bf16_adam_step and gru_bf16_adam_step (autocast's loops: casts in the bodies,
#     f32 carries, bf16 weights and xs; every loop of theirs plans on the host,
#     runtime/cuda's recurrent_plan_test), their lines printed apart: the first run of a
#     real bf16 loop as one launch, its matmuls on tensor cores.
#  2. The same loop cases under compute-sanitizer memcheck with the switch on.
#  3. The suite's lstm_seq and gru_seq (paper sizes): suite_bench --check (three steps
#     against the reference interpreter: the loss and each parameter's and optimizer
#     slot's largest relative difference) with the switch off and on, then their median
#     step times as one CUDA graph and launch by launch, off and on (the A/B that decides
#     the default, runtime/cuda/README.md), --profile showing each loop's line: "persistent
#     loop Nx over @BODY (... one launch of B blocks x T threads ...)" where it is one
#     launch, else "loop Nx ... not persistent: WHY".
#  4. The same models' bf16 steps (suite_bf16_bench: autocast's loops at paper sizes),
#     timed off and on with --profile (50 steps each; no --check: step 1's bf16 cases
#     check the bf16 loops against the reference interpreter).
#  5. (session 27, rgelu) feedback_fixed and iterative_refine, whose loops now plan too
#     (gelu as a cell op, the layer norm's row kernels as row phases, the eps a const
#     hoisted out of the loop: runtime/cuda's recurrent_plan_test): steps 3 and 4's timings off and
#     on with --profile (f32 and bf16; the first GPU run of a row phase inside a real
#     loop), and feedback_fixed's --check off and on (iterative_refine's --check is left
#     out: its host reference, 1024 wide, would take most of a call). Their f32 loop bodies
#     have no gen_cases case; recurrent_kernel_test's "layer-normed rnn (row phase)" case
#     (step 0) is the row phase's check against the host oracle.
# Build and copy here:
#
#   bazel build //tests/cuda:cases_test //tests/cuda:suite_bench //tests/cuda:suite_bf16_bench \
#     //runtime/cuda:persistent_loop_test //runtime/cuda:recurrent_kernel_test
#   mkdir -p .gpu && cp -f bazel-bin/tests/cuda/cases_test bazel-bin/tests/cuda/suite_bench \
#     bazel-bin/tests/cuda/suite_bf16_bench bazel-bin/runtime/cuda/persistent_loop_test \
#     bazel-bin/runtime/cuda/recurrent_kernel_test .gpu/
#   # device tool: run(command="tests/cuda/persistent_loops_check.sh", carry=[".gpu"], timeout_s=360)
#
# open_issues_check.sh 31rnn runs it whole (tests/cuda/lease_bundle.sh packs these
# binaries); `first` runs its default part (step 0's two tests, plainly: the kernel's own
# cases), `second` the rest. Logs go to $OUT (as they are written, so that a run cut short
# by the device tool's limit still returns them), else to /tmp/weft-gpu. A run that times
# out (rc 124: most likely a grid barrier that never releases, every block not resident)
# skips the later runs with the switch on and the persistent kernel's sanitizer runs, each
# of which would hang as long. Step 3 times the steps before it checks them: a step that
# ran 110 times each way has no hang, so a --check cut at its limit is the host reference
# (lstm_seq's three steps, looped and unrolled, take 83 s of host time on a
# loaded 2-core machine here), not a hang, and skips nothing.
# Estimated (on an H200; no run yet): default part 15-30 s (two gtest binaries; 150 s if
# both hang); the rest 200-420 s: the sanitizer runs 60-120 s, the loop cases on and
# their memcheck 20-40 s, the A/B 8 runs of 110 steps of 2-20 ms 40-80 s, the bf16 A/B
# 8 runs of 55 steps 25-50 s, the checks 50-130 s (feedback_fixed's host reference a
# few seconds: 128 × 512, ten iterations)
# (host reference: gru_seq 18 s, lstm_seq 83 s for both forms on the 2-core machine
# at load 100-125; the GPU machine's cores are faster and idle).
set -uo pipefail
cd "$(dirname "$0")/../.."
# shellcheck source=tests/cuda/lease_common.sh
source tests/cuda/lease_common.sh
hung=""  # the first run that timed out
timed_out() { if [ "$1" -eq 124 ] && [ -z "$hung" ]; then hung=$2; fi; }
skip() { echo "== $1 skipped: $hung timed out (a grid barrier that never releases?)"; }
cases='*scan*:*lstm*:*gru*:*until*'

nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
for t in persistent_loop_test recurrent_kernel_test; do
  [ -x ".gpu/$t" ] || echo "error: no .gpu/$t (tests/cuda/lease_bundle.sh packs it)"
done
if part default; then
  timeout 60 .gpu/persistent_loop_test >"$out/persistent_loop_test.txt" 2>&1
  rc=$?
  echo "== persistent_loop_test rc=$rc $(line '^\[  (PASSED|FAILED|SKIPPED)' "$out/persistent_loop_test.txt")"
  grep -E "Failure|error|persistent loop|loop 5x" -A3 "$out/persistent_loop_test.txt" | head -20
  timed_out $rc persistent_loop_test
  timeout 90 .gpu/recurrent_kernel_test >"$out/persistent_kernel_test.txt" 2>&1
  rc=$?
  echo "== recurrent_kernel_test rc=$rc $(line '^\[  (PASSED|FAILED|SKIPPED)' "$out/persistent_kernel_test.txt")"
  grep -E "Failure|error" -A4 "$out/persistent_kernel_test.txt" | head -20
  timed_out $rc recurrent_kernel_test
fi
part rest || exit 0
if [ "${LEASE_PART:-}" = rest ]; then
  # A hang probe (the first call ran these tests, but its verdict does not reach this
  # call): a grid barrier that never releases costs one limit here, not one per run below.
  timeout 60 .gpu/recurrent_kernel_test --gtest_brief=1 >"$out/persistent_kernel_probe.txt" 2>&1
  rc=$?
  echo "== recurrent_kernel_test (hang probe) rc=$rc $(line '^\[  (PASSED|FAILED)' "$out/persistent_kernel_probe.txt")"
  timed_out $rc "recurrent_kernel_test (hang probe)"
fi
if [ -n "$hung" ]; then
  skip "memcheck (persistent_loop_test)"
else
  timeout 90 compute-sanitizer --tool memcheck --error-exitcode 3 .gpu/persistent_loop_test \
    >"$out/persistent_loop_test_memcheck.txt" 2>&1
  rc=$?
  echo "== memcheck (persistent_loop_test) rc=$rc $(line 'ERROR SUMMARY|^\[  (PASSED|FAILED)' "$out/persistent_loop_test_memcheck.txt")"
  timed_out $rc "memcheck (persistent_loop_test)"
fi
# The sanitizers over the tests as they stood when their 150 s were estimated (session 28's
# two tests, the tiling cases on 2 blocks and the launch past 48 KiB, some 50 launches
# more, are left out: each launch costs the sanitizers a fixed time, and the runs were
# already estimated near their limit; `first` runs them plainly).
sanitized='-RecurrentKernel.TilingCasesOnTwoBlocksMatchTheOracleOnTheGpu:RecurrentKernel.LaunchesPast48KiBOfSharedMemoryOnTheGpu'
for tool in memcheck racecheck; do
  if [ -n "$hung" ]; then skip "$tool (recurrent_kernel_test)"; continue; fi
  timeout 150 compute-sanitizer --tool $tool --error-exitcode 3 .gpu/recurrent_kernel_test \
    --gtest_filter="$sanitized" >"$out/persistent_kernel_$tool.txt" 2>&1
  rc=$?
  echo "== $tool (recurrent_kernel_test) rc=$rc $(line 'ERROR SUMMARY|RACECHECK SUMMARY|^\[  (PASSED|FAILED)' "$out/persistent_kernel_$tool.txt")"
  timed_out $rc "$tool (recurrent_kernel_test)"
done
# The switch off is the default path, which `first` checks (all the cases); its own key
# runs it here too.
ons="0 1"
[ "${LEASE_PART:-}" = rest ] && ons=1
for on in $ons; do
  if [ $on = 1 ] && [ -n "$hung" ]; then skip "cases_test WEFT_PERSISTENT_LOOPS=1"; continue; fi
  WEFT_PERSISTENT_LOOPS=$on timeout 90 .gpu/cases_test --gtest_filter="$cases" >"$out/persistent_cases_$on.txt" 2>&1
  rc=$?
  echo "== cases_test ($cases) WEFT_PERSISTENT_LOOPS=$on rc=$rc $(line '^\[  (PASSED|FAILED)' "$out/persistent_cases_$on.txt")"
  echo "   bf16 loops: $(line '^\[ +(OK|FAILED) +\].*(lstm|gru)_bf16_adam_step' "$out/persistent_cases_$on.txt")"
  grep -E "Failure|error" -A4 "$out/persistent_cases_$on.txt" | head -30
  [ $on = 1 ] && timed_out $rc "cases_test WEFT_PERSISTENT_LOOPS=1"
done
if [ -n "$hung" ]; then
  skip "memcheck ($cases, switch on)"
else
  WEFT_PERSISTENT_LOOPS=1 timeout 120 compute-sanitizer --tool memcheck --error-exitcode 3 .gpu/cases_test \
    --gtest_filter="$cases" >"$out/persistent_memcheck.txt" 2>&1
  rc=$?
  echo "== memcheck ($cases, switch on) rc=$rc $(line 'ERROR SUMMARY|^\[  (PASSED|FAILED)' "$out/persistent_memcheck.txt")"
  grep -E "Invalid|error" -A4 "$out/persistent_memcheck.txt" | head -20
  timed_out $rc "memcheck ($cases, switch on)"
fi
if [ ! -x .gpu/suite_bench ]; then
  echo "error: no .gpu/suite_bench (tests/cuda/lease_bundle.sh packs it)"
  exit 1
fi
# The f32 steps (100 steps), then the bf16 ones (step 4: 50 steps); 60 s each.
for bench in suite_bench suite_bf16_bench; do
  if [ ! -x .gpu/$bench ]; then echo "error: no .gpu/$bench (tests/cuda/lease_bundle.sh packs it)"; continue; fi
  steps=100 warmup=10
  [ $bench = suite_bf16_bench ] && steps=50 warmup=5
  for model in lstm_seq gru_seq feedback_fixed iterative_refine; do
    for on in 0 1; do
      if [ $on = 1 ] && [ -n "$hung" ]; then skip "$bench --case=$model WEFT_PERSISTENT_LOOPS=1"; continue; fi
      WEFT_PERSISTENT_LOOPS=$on timeout 60 .gpu/$bench --case=$model --steps=$steps --warmup=$warmup --profile=6 \
        >"$out/persistent_${bench}_${model}_$on.txt" 2>&1
      rc=$?
      echo "== $bench --case=$model WEFT_PERSISTENT_LOOPS=$on rc=$rc"
      grep -E "median| ms |loop" "$out/persistent_${bench}_${model}_$on.txt" | cut -c1-300 | head -12
      [ $on = 1 ] && timed_out $rc "$bench --case=$model WEFT_PERSISTENT_LOOPS=1"
    done
  done
done
for model in feedback_fixed gru_seq lstm_seq; do
  for on in $ons; do
    if [ $on = 1 ] && [ -n "$hung" ]; then skip "suite_bench --check=$model WEFT_PERSISTENT_LOOPS=1"; continue; fi
    WEFT_PERSISTENT_LOOPS=$on timeout 150 .gpu/suite_bench --check=$model >"$out/persistent_check_${model}_$on.txt" 2>&1
    echo "== suite_bench --check=$model WEFT_PERSISTENT_LOOPS=$on rc=$? $(grep -c DIFFERS "$out/persistent_check_${model}_$on.txt") DIFFERS"
    grep -E "loss|DIFFERS" "$out/persistent_check_${model}_$on.txt" | head -12
  done
done
exit 0
