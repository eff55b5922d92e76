#!/usr/bin/env bash
# The device checks' programs refuse arguments they do not know, before any device work
# (no GPU needed): a mistyped --case or flag in a tests/cuda/*_check.sh script fails at
# once with a message instead of a silent run of nothing or of the wrong thing; --help
# says what each does, exit status 0.
set -uo pipefail
step_bench=$1 nccl_bandwidth=$2
fail=0
expect() {  # expect WHAT RC PATTERN -- COMMAND...
  local what=$1 want_rc=$2 pattern=$3
  shift 4
  local out rc
  out=$("$@" 2>&1)
  rc=$?
  if [ "$rc" -ne "$want_rc" ] || ! grep -qF -- "$pattern" <<<"$out"; then
    echo "FAIL $what: rc=$rc (want $want_rc), output: $out"
    fail=1
  else
    echo "ok   $what"
  fi
}
expect "step_bench unknown case" 2 \
  "step_bench: --case=no_such_case names no case (step_bench --program lists the training cases)" -- \
  "$step_bench" --case=no_such_case
expect "step_bench unknown flag" 2 "usage: step_bench" -- "$step_bench" --stepz=3
expect "step_bench known case lists its program" 0 "program @" -- "$step_bench" --case=mlp_adam_step --program
expect "step_bench --help" 0 "  --check=CASE     run CASE's step on the GPU" -- "$step_bench" --help
expect "nccl_bandwidth unknown argument" 2 \
  "usage: nccl_bandwidth [--iters=N] (unknown argument '--iterz=3'); LOCAL_RANK picks the GPU" -- \
  "$nccl_bandwidth" --iterz=3
expect "nccl_bandwidth --help" 0 "NCCL all-reduce bandwidth on this rank's GPU" -- "$nccl_bandwidth" --help
exit $fail
