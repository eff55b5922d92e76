#!/usr/bin/env bash
# The AOT CUDA checks of one device lease ([GPU]): the self-contained binaries that
# weft_binary(backend = "cuda") builds, copied with Fashion-MNIST to .gpu/ on this
# machine, run from the repository root on the GPU machine. Logs go to $OUT (or
# /tmp/weft-aot-gpu); the summary is printed last. Here (no GPU):
#
#   bazel build --jobs=1 //examples/fashion_mnist:train_mlp_cuda \
#       //examples/fashion_mnist:train_cuda //examples/fashion_mnist:train_mlp_cuda_runtime_test \
#       //examples/fashion_mnist:train_cuda_runtime_test
#   mkdir -p .gpu/fashion-mnist
#   cp -f bazel-bin/examples/fashion_mnist/{train_mlp_cuda,train_cuda}{,_runtime_test} .gpu/
#   cp -f /usr/share/datasets/fashion-mnist/*-ubyte.gz .gpu/fashion-mnist/
#
# then on the GPU machine: tools/aot/device_check.sh [EPOCHS]
set -uo pipefail
out=${OUT:-/tmp/weft-aot-gpu}
epochs=${1:-2}
data=.gpu/fashion-mnist
mkdir -p "$out"
summary=()
note() { summary+=("$1"); echo "== $1"; }

nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader | tee "$out/gpu.txt"
note "gpu: $(head -1 "$out/gpu.txt")"
for b in train_mlp_cuda train_cuda; do
  timeout 60 ".gpu/${b}_runtime_test" >"$out/${b}_runtime_test.txt" 2>&1
  note "${b}_runtime_test rc=$? $(grep -E '^\[  (PASSED|FAILED|SKIPPED)' "$out/${b}_runtime_test.txt" | tr '\n' ' ')"
  grep -E "Failure|Skipped|first step" -A2 "$out/${b}_runtime_test.txt" | head -12
done
# Both examples end to end: every op of their steps runs on the device.
timeout 300 .gpu/train_mlp_cuda --data="$data" --epochs="$epochs" --metrics-csv="$out/mlp.csv" \
  --checkpoint-out="$out/mlp.safetensors" >"$out/train_mlp_cuda.txt" 2>&1
note "train_mlp_cuda rc=$? $(grep -E '^epoch|^error' "$out/train_mlp_cuda.txt" | tr '\n' ' ')"
# The BN CNN (cuDNN convolutions, weft's pooling kernels).
timeout 300 .gpu/train_cuda --data="$data" --epochs="$epochs" >"$out/train_cuda.txt" 2>&1
note "train_cuda rc=$? $(grep -E '^epoch|^error' "$out/train_cuda.txt" | head -3 | tr '\n' ' ')"

echo
printf '%s\n' "${summary[@]}"
