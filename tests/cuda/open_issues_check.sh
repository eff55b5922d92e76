#!/usr/bin/env bash
# The open issues' GPU checks in as few device calls as the lease allows, from what
# tests/cuda/lease_bundle.sh packed into .gpu/ here (its header has the device calls).
#
#   tests/cuda/open_issues_check.sh ISSUE...     e.g. 30, then 31, then 28 29 32, then suite, then 31perf
#
#   28 [Reliability]       reliability_check.sh   (about a minute)
#   29 [Architecture]      architecture_check.sh  (about three minutes)
#   32 [Distributed]       nccl_check.sh          (about two minutes)
#   30 [Mixed precision]   mixed_precision_check.sh (about five minutes), then
#                          vector_check.sh (#30/#31's vectorized kernels, about a minute)
#   31 [GPU]               loop_slots_check.sh (loops, the attention kernels and the fused
#                          attention steps, also under memcheck/racecheck: about four
#                          minutes), input_overlap_check.sh (about a minute)
#   31rnn [GPU]            persistent_loops_check.sh (#31's persistent loop kernel, opt-in:
#                          its cases on the device and captured, the loop cases and
#                          lstm_seq/gru_seq with WEFT_PERSISTENT_LOOPS off and on, memcheck,
#                          A/B step times: about four minutes)
#   31perf [GPU]           cublaslt_check.sh (#31/#30's opt-in cuBLASLt epilogues: cases,
#                          memcheck, A/B timing, a few minutes), loop_overhead_check.sh
#                          (#31's loop overhead per trip, about two minutes)
#   suite                  suite_check.sh (#30/#31's ten-model suite, about seven minutes),
#                          alone in its call
#
# The lease has 15 minutes of device time in all (start-up included): not every check
# fits one session. Correctness of the default paths first: `30` (about six minutes),
# then `31` (about five): two calls, each under the device tool's ten minutes. Then
# `31rnn` (about four: whether the persistent loop kernel can default on), `28 29 32`
# (about six), and `suite` and `31perf` (about seven and five) in later sessions.
#
# Each check's logs go to $OUT/ISSUE (or /tmp/weft-gpu/ISSUE); its summary lines are
# printed as it runs, prefixed with the issue, and a last line per issue gives its exit
# status and wall time.
set -uo pipefail
cd "$(dirname "$0")/../.."
if [ $# -eq 0 ]; then
  sed -n '2,33p' "$0" | sed 's/^# \{0,1\}//'
  exit 2
fi
if [ -f .gpu/bundle.tar.xz ] && [ .gpu/bundle.tar.xz -nt .gpu/cases_test ]; then
  tar -xJf .gpu/bundle.tar.xz -C .gpu || { echo "error: cannot unpack .gpu/bundle.tar.xz"; exit 1; }
fi
[ -f .gpu/COMMIT ] && cat .gpu/COMMIT
root=${OUT:-/tmp/weft-gpu}
for issue in "$@"; do
  case "$issue" in
    28) script=reliability_check.sh ;;
    29) script=architecture_check.sh ;;
    30) script="mixed_precision_check.sh vector_check.sh" ;;
    31) script="loop_slots_check.sh input_overlap_check.sh" ;;
    31rnn) script=persistent_loops_check.sh ;;
    31perf) script="cublaslt_check.sh loop_overhead_check.sh" ;;
    suite) script=suite_check.sh ;;
    32) script=nccl_check.sh ;;
    *) echo "error: no device check for issue '$issue' (28, 29, 30, 31, 31rnn, 31perf, 32 or suite)"; exit 2 ;;
  esac
  mkdir -p "$root/$issue"
  for one in $script; do
    start=$(date +%s)
    OUT="$root/$issue" "tests/cuda/$one" 2>&1 | sed -u "s/^/[#$issue] /"
    rc=${PIPESTATUS[0]}
    echo "[#$issue] == $one rc=$rc in $(( $(date +%s) - start )) s"
  done
done
