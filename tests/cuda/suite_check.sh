#!/usr/bin/env bash
# The suite on a GPU ([GPU]), one lease: weft's ten suite models' training steps
# (.gpu/suite_bench, built here: `bazel build //tests/cuda:suite_bench`) and PyTorch's
# (bench/pytorch/cuda_suite.py, its four configurations), same GPU, same minutes. Logs
# go to $OUT (or /tmp/weft-gpu).
#
#   tests/cuda/suite_check.sh [STEPS] [--no-cudnn-peer]
#   tests/cuda/suite_check.sh --profile=MODEL,MODEL...
#
# --no-cudnn-peer skips PyTorch's convolutional models under cudnn.deterministic (a
# shorter lease).
#
# --profile: where the time goes instead, model by model on both sides: weft's
# invocations launch by launch and by kind (`suite_bench --profile`), with cuDNN's
# deterministic and fastest algorithm policies, and PyTorch's CUDA kernels and cuDNN
# settings (bench/pytorch/cuda_profile.py).
set -uo pipefail
out=${OUT:-/tmp/weft-gpu}
mkdir -p "$out"
if [[ "${1:-}" == --profile=* ]]; then
  models=${1#--profile=}
  for m in ${models//,/ }; do
    for conv in deterministic fastest; do
      timeout 90 .gpu/suite_bench --case="$m" --steps=30 --warmup=5 --profile=30 --conv=$conv \
        >"$out/profile_${m}_$conv.txt" 2>&1
      echo "== suite_bench --case=$m --conv=$conv rc=$?"
      grep -E "weft cuda|profile:" "$out/profile_${m}_$conv.txt" | sed 's/ (min .*device/ device/'
    done
  done
  PYTHONUNBUFFERED=1 timeout 200 python3 bench/pytorch/cuda_profile.py --models="$models" \
    >"$out/profile_pytorch.txt" 2>&1
  echo "== cuda_profile.py rc=$?"
  grep -E "^pytorch" "$out/profile_pytorch.txt" | cut -c1-150
  exit 0
fi
steps=${1:-100}
# INIT files (bench/PROTOCOL.md): PyTorch's initial weights and data under weft's names,
# written here by run.py against the names bench/weft_worker gave where the suite was
# built (.gpu/names/MODEL.json), so both sides start from the same values and their
# first-step losses compare (tests/cuda/first_losses.py).
init=""
if [ -d .gpu/names ]; then
  init=/tmp/weft-init
  mkdir -p "$init"
  for f in .gpu/names/*.json; do
    m=$(basename "$f" .json)
    timeout 60 python3 bench/pytorch/run.py --model="$m" --preset=paper --names="$f" \
      --init-out="$init/$m.safetensors" >>"$out/init.txt" 2>&1 || echo "== INIT for $m failed"
  done
fi
timeout 200 .gpu/suite_bench --steps="$steps" --warmup=10 ${init:+--init=$init} \
  >"$out/suite_weft.txt" 2>&1
echo "== suite_bench rc=$?"
grep -E "weft cuda|error" "$out/suite_weft.txt" | sed 's/ (min .*device/ device/'
# The convolutional models with cuDNN's nondeterministic algorithms allowed too, as
# PyTorch's default allows them (weft's default keeps to deterministic ones).
for m in convnet conv_autoenc; do
  timeout 60 .gpu/suite_bench --case=$m --conv=fastest --steps="$steps" --warmup=10 ${init:+--init=$init} \
    >"$out/suite_weft_${m}_fastest.txt" 2>&1
  echo "== suite_bench --case=$m --conv=fastest rc=$?"
  grep -E "weft cuda|error" "$out/suite_weft_${m}_fastest.txt" | sed 's/ (min .*device/ device/'
done
PYTHONUNBUFFERED=1 timeout 240 python3 bench/pytorch/cuda_suite.py --steps="$steps" --warmup=10 \
  ${init:+--init=$init} >"$out/suite_pytorch.txt" 2>&1
echo "== cuda_suite.py rc=$?"
grep -E "^pytorch" "$out/suite_pytorch.txt" | cut -c1-150
if [ -n "$init" ]; then
  python3 tests/cuda/first_losses.py "$out/suite_weft.txt" "$out/suite_pytorch.txt"
  echo "== first_losses.py rc=$?"
fi
# PyTorch's convolutional models with cudnn.deterministic on: the like-for-like peer of
# weft's default.
[ "${2:-}" = --no-cudnn-peer ] && exit 0
PYTHONUNBUFFERED=1 timeout 100 python3 bench/pytorch/cuda_profile.py --models=convnet,conv_autoenc \
  --steps=50 --profile-steps=1 --top=5 >"$out/suite_pytorch_cudnn.txt" 2>&1
echo "== cuda_profile.py rc=$?"
grep -E "^pytorch" "$out/suite_pytorch_cudnn.txt" | cut -c1-150
