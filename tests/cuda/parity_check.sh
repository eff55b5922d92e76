#!/usr/bin/env bash
# [Parity] (#19) on a GPU in one short lease: the GPU cases added for it (parameter groups
# with gradient accumulation, CTC's loss and gradient, conv over three spatial dims
# through cuDNN's Nd descriptors and over one as a plan of height 1), the data Loader's
# batch buffers pinned through the cuda backend (executor_test), and the live dashboard's
# GPU memory during an AOT CNN run (train_cuda --serve=0: a `gpu_mib` field in the
# dashboard's events).
# Build and copy here (about 20 MB with the data):
#
#   bazel build //tests/cuda:cases_test //runtime/cuda:executor_test \
#       //examples/fashion_mnist:train_cuda
#   mkdir -p .gpu/fashion-mnist .gpu/lib && cp -f bazel-bin/tests/cuda/cases_test \
#       bazel-bin/runtime/cuda/executor_test bazel-bin/examples/fashion_mnist/train_cuda .gpu/
#   cp -f /usr/share/datasets/fashion-mnist/*-ubyte.gz .gpu/fashion-mnist/
#   cp -fL /usr/lib/libgloo.so.0 /lib/x86_64-linux-gnu/{libhiredis.so.0.14,libibverbs.so.1,libcpp-httplib.so.0.11,libbrotlidec.so.1,libbrotlienc.so.1,libbrotlicommon.so.1} .gpu/lib/
#
# then on the GPU machine, from the repository root: tests/cuda/parity_check.sh
# (the device tool: carry [".gpu"]). Logs go to /tmp/weft-gpu and to $OUT when it is set.
set -uo pipefail
out=/tmp/weft-gpu
mkdir -p "$out"
export LD_LIBRARY_PATH="$PWD/.gpu/lib:${LD_LIBRARY_PATH:-}"
line() { grep -E "$1" "$2" | tr '\n' ' ' | cut -c1-400; echo; }

nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
filter='*groups_accumulate*:*ctc*:*conv*:*pool*'
timeout 120 .gpu/cases_test --gtest_brief=1 --gtest_filter="$filter" >"$out/cases.txt" 2>&1
echo "== cases_test ($filter) rc=$? $(line '^\[  (PASSED|FAILED)' "$out/cases.txt")"
grep -E "Failure|error" -A4 "$out/cases.txt" | head -30
timeout 60 .gpu/executor_test --gtest_brief=1 >"$out/executor.txt" 2>&1
echo "== executor_test rc=$? $(line '^\[  (PASSED|FAILED)' "$out/executor.txt")"
grep -E "Failure|error" -A4 "$out/executor.txt" | head -20

# The dashboard: a port of the system's choosing, read while the run trains.
.gpu/train_cuda --data=.gpu/fashion-mnist --epochs=1 --max-steps=300 --serve=0 \
  >"$out/train_cuda.txt" 2>&1 &
run=$!
url=""
for _ in $(seq 60); do
  url=$(sed -n 's/^dashboard: //p' "$out/train_cuda.txt" | head -1)
  [ -n "$url" ] && break
  sleep 0.5
done
if [ -n "$url" ]; then
  timeout 8 python3 -c '
import sys, urllib.request
with urllib.request.urlopen(sys.argv[1] + "events", timeout=6) as r:
    n = 0
    for raw in r:
        s = raw.decode()
        if "gpu_mib" in s:
            n += 1
            if n == 1: print("first event with gpu_mib:", s.strip()[:200])
        if n >= 5: break
    print("events with gpu_mib:", n)' "$url" >"$out/dashboard.txt" 2>&1
  echo "== dashboard ($url) rc=$?"; cat "$out/dashboard.txt"
else
  echo "== dashboard: no 'dashboard:' line"; tail -5 "$out/train_cuda.txt"
fi
wait "$run"
echo "== train_cuda rc=$?"
grep -iE "epoch|accuracy|error|pinned" "$out/train_cuda.txt" | tail -5 | cut -c1-200
if [ -n "${OUT:-}" ]; then
  cp -f "$out"/{cases,executor,train_cuda,dashboard}.txt "$OUT"/ 2>/dev/null
fi
