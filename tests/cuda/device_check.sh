#!/usr/bin/env bash
# The GPU checks of one device lease ([GPU]), run from the repository root on a GPU
# machine with the self-contained binaries built here and copied to .gpu/
# (tests/cuda/README.md). Logs go to $OUT (or /tmp/weft-gpu); the summary is printed last.
#
#   tests/cuda/device_check.sh [quick]
set -uo pipefail
out=${OUT:-/tmp/weft-gpu}
mkdir -p "$out"
summary=()
note() { summary+=("$1"); echo "== $1"; }

nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader | tee "$out/gpu.txt"
note "gpu: $(head -1 "$out/gpu.txt")"

# Every case against the reference interpreter, launch by launch and as one CUDA graph.
timeout 240 .gpu/cases_test --gtest_brief=1 >"$out/cases.txt" 2>&1
note "cases_test rc=$? $(grep -E '^\[  (PASSED|FAILED)' "$out/cases.txt" | tr '\n' ' ')"
grep -E "FAILED|Failure" "$out/cases.txt" | head -20
timeout 60 .gpu/executor_test --gtest_brief=1 >"$out/executor.txt" 2>&1
note "executor_test rc=$? $(grep -E '^\[  (PASSED|FAILED)' "$out/executor.txt" | tr '\n' ' ')"
grep -E "FAILED|Failure" "$out/executor.txt" | head -10

# Step times: weft (graph and launches) and PyTorch's four configurations, same minute.
timeout 120 .gpu/step_bench --steps=200 --warmup=20 >"$out/step.txt" 2>&1
note "step_bench rc=$?"
cat "$out/step.txt"
PYTHONUNBUFFERED=1 timeout 240 python3 bench/pytorch/cuda_mlp.py --steps=200 --warmup=20 >"$out/pytorch.txt" 2>&1
note "cuda_mlp.py rc=$?"
cat "$out/pytorch.txt"
timeout 60 .gpu/step_bench --steps=200 --warmup=20 --case=mlp784_adam_step >"$out/step2.txt" 2>&1
note "step_bench again: $(grep -o 'median [0-9.]* ms' "$out/step2.txt" | tr '\n' ' ')"

if [[ "${1:-}" != "quick" ]]; then
  # memcheck over the cases (graph and launches), racecheck on the shared-memory reductions.
  timeout 200 compute-sanitizer --tool memcheck --error-exitcode=9 .gpu/cases_test --gtest_brief=1 \
    >"$out/memcheck.txt" 2>&1
  note "memcheck rc=$? $(grep -E 'ERROR SUMMARY' "$out/memcheck.txt" | tail -1)"
  timeout 70 compute-sanitizer --tool racecheck --error-exitcode=9 .gpu/cases_test --gtest_brief=1 \
    --gtest_filter='*cross_entropy*:*mse*:*softmax*:*layer_norm*:*sum*' >"$out/racecheck.txt" 2>&1
  note "racecheck rc=$? $(grep -E 'RACECHECK SUMMARY|ERROR SUMMARY' "$out/racecheck.txt" | tail -1)"
fi

echo
echo "==== summary"
printf '%s\n' "${summary[@]}"
