#!/usr/bin/env bash
# [GPU] (#31) loop overhead per iteration on a GPU in one short call: the suite's loop
# models (gru_seq, lstm_seq, feedback_fixed, iterative_refine) from their AOT CUDA
# libraries (paper preset), per model the loop trips per step and the step as one CUDA
# graph and launch by launch, and per loop invocation the overhead per trip by the direct
# method of bench/loops_overhead.h: the step's loop line (CUDA events) minus `length` runs
# of its body bound alone, divided by `length`. About a minute; not yet run (written in a
# session without a GPU). open_issues_check.sh 31 runs it. Build and copy here:
#
#   bazel build //bench:loops_cuda
#   mkdir -p .gpu && cp -f bazel-bin/bench/loops_cuda .gpu/
#   # device tool: run(command="tests/cuda/loop_overhead_check.sh", carry=[".gpu"], timeout_s=240)
#
# (tests/cuda/lease_bundle.sh packs loops_cuda with the other binaries.) Logs go to
# /tmp/weft-gpu and, when $OUT is set, to $OUT.
set -uo pipefail
cd "$(dirname "$0")/../.."
out=/tmp/weft-gpu
mkdir -p "$out"

nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
if [ ! -x .gpu/loops_cuda ]; then
  echo "error: no .gpu/loops_cuda (build and copy it: this script's header)"
  exit 1
fi
timeout 180 .gpu/loops_cuda --steps=20 >"$out/loop_overhead.txt" 2>&1
rc=$?
# The figures: one line per model, one per loop invocation.
grep -E "trips per step|per trip" "$out/loop_overhead.txt" | cut -c1-220
[ "$rc" -eq 0 ] || tail -20 "$out/loop_overhead.txt"
echo "== loops_cuda rc=$rc"
if [ -n "${OUT:-}" ]; then cp -f "$out"/loop_overhead.txt "$OUT"/ 2>/dev/null; fi
exit "$rc"
