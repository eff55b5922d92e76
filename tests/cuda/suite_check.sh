#!/usr/bin/env bash
# The suite on a GPU ([GPU]), one lease: weft's ten suite models' training steps
# (.gpu/suite_bench, built here: `bazel build //tests/cuda:suite_bench`) and PyTorch's
# (bench/pytorch/cuda_suite.py, its four configurations), same GPU, same minutes. Logs
# go to $OUT (or /tmp/weft-gpu).
#
#   tests/cuda/suite_check.sh [STEPS]
set -uo pipefail
out=${OUT:-/tmp/weft-gpu}
steps=${1:-100}
mkdir -p "$out"
timeout 200 .gpu/suite_bench --steps="$steps" --warmup=10 >"$out/suite_weft.txt" 2>&1
echo "== suite_bench rc=$?"
grep -E "weft cuda|error" "$out/suite_weft.txt" | sed 's/ (min .*device/ device/'
PYTHONUNBUFFERED=1 timeout 240 python3 bench/pytorch/cuda_suite.py --steps="$steps" --warmup=10 \
  >"$out/suite_pytorch.txt" 2>&1
echo "== cuda_suite.py rc=$?"
grep -E "^pytorch" "$out/suite_pytorch.txt" | cut -c1-150
