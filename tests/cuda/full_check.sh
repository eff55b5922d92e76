#!/usr/bin/env bash
# Everything a lease checks on a GPU ([GPU]) in one command, most important first: the
# GPU tests, the AOT CUDA training binary on Fashion-MNIST, the ten-model suite against
# PyTorch, then the PyTorch CNN peer. Build and copy here (about 58 MB with the data):
#
#   bazel build //tests/cuda:cases_test //tests/cuda:suite_bench //runtime/cuda:executor_test \
#       //examples/fashion_mnist:train_cuda //examples/fashion_mnist:train_cuda_runtime_test \
#       //examples/fashion_mnist:train_mlp_cuda
#   mkdir -p .gpu/fashion-mnist && cp -f bazel-bin/tests/cuda/{cases_test,suite_bench} \
#       bazel-bin/runtime/cuda/executor_test bazel-bin/examples/fashion_mnist/train_cuda \
#       bazel-bin/examples/fashion_mnist/train_cuda_runtime_test \
#       bazel-bin/examples/fashion_mnist/train_mlp_cuda .gpu/
#   cp -f /usr/share/datasets/fashion-mnist/*-ubyte.gz .gpu/fashion-mnist/
#   # The driver's libraries a GPU machine may lack (Gloo since session 18; httplib for the
#   # dashboard):
#   mkdir -p .gpu/lib && cp -fL /usr/lib/libgloo.so.0 /lib/x86_64-linux-gnu/{libhiredis.so.0.14,libibverbs.so.1,libcpp-httplib.so.0.11,libbrotlidec.so.1,libbrotlienc.so.1,libbrotlicommon.so.1} .gpu/lib/
#   mkdir -p .gpu/names && for m in transformer mlp residual_tower feedback_fixed \
#       gated_routing iterative_refine gru_seq conv_autoenc lstm_seq convnet; do \
#     bazel-bin/bench/weft_worker --model=$m --preset=paper --names-out=.gpu/names/$m.json; done
#
# then on the GPU machine, from the repository root: tests/cuda/full_check.sh [EPOCHS]
set -uo pipefail
export LD_LIBRARY_PATH="$PWD/.gpu/lib:${LD_LIBRARY_PATH:-}"
out=${OUT:-/tmp/weft-gpu}
epochs=${1:-10}
data=.gpu/fashion-mnist
mkdir -p "$out"
line() { grep -E "$1" "$2" | tr '\n' ' ' | cut -c1-400; echo; }

nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
timeout 60 .gpu/cases_test --gtest_brief=1 >"$out/cases.txt" 2>&1
echo "== cases_test rc=$? $(line '^\[  (PASSED|FAILED)' "$out/cases.txt")"
grep -E "Failure" -A3 "$out/cases.txt" | head -12
timeout 60 .gpu/executor_test --gtest_brief=1 >"$out/executor.txt" 2>&1
echo "== executor_test rc=$? $(line '^\[  (PASSED|FAILED)' "$out/executor.txt")"
timeout 60 .gpu/train_cuda_runtime_test >"$out/runtime_test.txt" 2>&1
echo "== train_cuda_runtime_test rc=$? $(line '^\[  (PASSED|FAILED|SKIPPED)|first step' "$out/runtime_test.txt")"

timeout 120 .gpu/train_cuda --data="$data" --epochs="$epochs" --metrics-csv="$out/train_cuda.csv" \
  >"$out/train_cuda.txt" 2>&1
echo "== train_cuda rc=$?"
grep -vE "^\s*$" "$out/train_cuda.txt" | grep -iE "epoch|accuracy|error|step" | tail -14 | cut -c1-200

tests/cuda/suite_check.sh 100

timeout 60 .gpu/train_mlp_cuda --data="$data" --epochs=2 >"$out/train_mlp_cuda.txt" 2>&1
echo "== train_mlp_cuda rc=$?"
grep -iE "epoch|accuracy|error" "$out/train_mlp_cuda.txt" | tail -3 | cut -c1-200
PYTHONUNBUFFERED=1 timeout 90 python3 bench/pytorch/cnn_epoch.py --device=cuda --fused=1 \
  --data="$data" --epochs=2 >"$out/pytorch_cnn.txt" 2>&1
echo "== pytorch cnn_epoch.py (cuda, fused Adam) rc=$?"
tail -2 "$out/pytorch_cnn.txt" | cut -c1-200
