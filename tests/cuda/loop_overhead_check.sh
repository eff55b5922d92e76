#!/usr/bin/env bash
# [GPU] (#31) loop overhead per iteration on a GPU in one short call: the suite's loop
# models (gru_seq, lstm_seq, feedback_fixed, iterative_refine) from their AOT CUDA
# libraries (paper preset), per model the loop trips per step and the step as one CUDA
# graph and launch by launch, and per loop invocation the overhead per trip by the direct
# method of bench/loops_overhead.h: the step's loop line (CUDA events) minus `length` runs
# of its body bound alone, divided by `length`. Then, where the lease bundle's
# suite_bench is in .gpu, the difference method on the same models: suite_bench's median
# step looped and `MODEL@unrolled` (tests/cuda/README.md), as one CUDA graph and launch by
# launch, (looped − unrolled) / loops_cuda's trips per step. About two minutes; not yet
# run (written in a session without a GPU). open_issues_check.sh 31perf runs it. Build and
# copy here:
#
#   bazel build //bench:loops_cuda
#   mkdir -p .gpu && cp -f bazel-bin/bench/loops_cuda .gpu/
#   # device tool: run(command="tests/cuda/loop_overhead_check.sh", carry=[".gpu"], timeout_s=240)
#
# (tests/cuda/lease_bundle.sh packs loops_cuda with the other binaries, suite_bench among
# them.)
# Logs go to $OUT (else /tmp/weft-gpu). Estimated (on an H200; no run yet) 60-120 s.
set -uo pipefail
cd "$(dirname "$0")/../.."
# shellcheck source=tests/cuda/lease_common.sh
source tests/cuda/lease_common.sh

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

if [ "$rc" -eq 0 ] && [ -x .gpu/suite_bench ]; then
  echo "difference method: (looped - unrolled) / trips per step, suite_bench medians of 20 steps"
  for m in gru_seq lstm_seq feedback_fixed iterative_refine; do
    trips=$(awk -v m="$m" '$1 == m && $2 == "trips" { print $5 + 0; exit }' "$out/loop_overhead.txt")
    log="$out/loop_overhead_$m.txt"
    timeout 120 .gpu/suite_bench --case="$m" --steps=20 --warmup=3 >"$log" 2>&1
    timeout 120 .gpu/suite_bench --case="$m@unrolled" --steps=20 --warmup=3 >>"$log" 2>&1
    # "weft cuda  NAME  one CUDA graph|launches  median X ms/step ..."
    awk -v m="$m" -v trips="${trips:-0}" '
      $1 == "weft" && $2 == "cuda" {
        for (i = 1; i <= NF; i++) if ($i == "median") v = $(i + 1)
        how = $4 == "one" ? "graph" : "launches"
        if ($3 == m) looped[how] = v; else if ($3 == m "@unrolled") unrolled[how] = v
      }
      END {
        for (how in looped) if ((how in unrolled) && trips > 0)
          printf "%-17s %-8s looped %.3f ms, unrolled %.3f ms: %.3f us per trip (%d trips)\n", m, how,
                 looped[how], unrolled[how], (looped[how] - unrolled[how]) * 1000 / trips, trips
      }' "$log"
  done
fi
exit "$rc"
