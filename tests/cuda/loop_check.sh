#!/usr/bin/env bash
# Loops on a GPU ([Control flow]) in one short lease: the GPU cases (the loop cases among
# them: forward, reverse, nested, swapped carries, a device error inside a body, LSTM, GRU and
# until_cond training steps), the ponder classifier trained ahead of time on the GPU
# (until_cond, halting per image), the CNN's AOT binary as a regression check, and the
# suite's steps (the loop models looped and `@unrolled`) against PyTorch's loop models.
# Build and copy here (about 50 MB with the data):
#
#   bazel build //tests/cuda:cases_test //tests/cuda:suite_bench //runtime/cuda:executor_test \
#       //examples/fashion_mnist:train_cuda //examples/fashion_mnist:ponder_cuda //bench:weft_worker
#   mkdir -p .gpu/fashion-mnist .gpu/names && cp -f bazel-bin/tests/cuda/{cases_test,suite_bench} \
#       bazel-bin/runtime/cuda/executor_test bazel-bin/examples/fashion_mnist/{train_cuda,ponder_cuda} .gpu/
#   cp -f /usr/share/datasets/fashion-mnist/*-ubyte.gz .gpu/fashion-mnist/
#   # The driver's libraries a GPU machine may lack (Gloo since session 18; httplib for the
#   # dashboard):
#   mkdir -p .gpu/lib && cp -fL /usr/lib/libgloo.so.0 /lib/x86_64-linux-gnu/{libhiredis.so.0.14,libibverbs.so.1,libcpp-httplib.so.0.11,libbrotlidec.so.1,libbrotlienc.so.1,libbrotlicommon.so.1} .gpu/lib/
#   for m in transformer mlp residual_tower feedback_fixed gated_routing iterative_refine gru_seq \
#       conv_autoenc lstm_seq convnet; do
#     bazel-bin/bench/weft_worker --model=$m --preset=paper --names-out=.gpu/names/$m.json; done
#
# then on the GPU machine, from the repository root: tests/cuda/loop_check.sh [EPOCHS]
# Logs go to /tmp/weft-gpu; the main ones are copied to $OUT when it is set.
set -uo pipefail
export LD_LIBRARY_PATH="$PWD/.gpu/lib:${LD_LIBRARY_PATH:-}"
out=/tmp/weft-gpu
epochs=${1:-10}
data=.gpu/fashion-mnist
loops=feedback_fixed,iterative_refine,gru_seq,lstm_seq
mkdir -p "$out"
line() { grep -E "$1" "$2" | tr '\n' ' ' | cut -c1-400; echo; }

nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
timeout 90 .gpu/cases_test --gtest_brief=1 >"$out/cases.txt" 2>&1
echo "== cases_test rc=$? $(line '^\[  (PASSED|FAILED)' "$out/cases.txt")"
grep -E "Failure|error" -A4 "$out/cases.txt" | head -30
grep -E "^  (scan|lstm|gru|until)" "$out/cases.txt" | head -14
timeout 60 .gpu/executor_test --gtest_brief=1 >"$out/executor.txt" 2>&1
echo "== executor_test rc=$? $(line '^\[  (PASSED|FAILED)' "$out/executor.txt")"

timeout 150 .gpu/ponder_cuda --data="$data" --epochs="$epochs" >"$out/ponder_cuda.txt" 2>&1
echo "== ponder_cuda rc=$?"
grep -vE "^\s*$" "$out/ponder_cuda.txt" | grep -iE "epoch|accuracy|error|step|param" | tail -14 | cut -c1-200
timeout 60 .gpu/train_cuda --data="$data" --epochs=3 >"$out/train_cuda.txt" 2>&1
echo "== train_cuda rc=$?"
grep -iE "epoch|accuracy|error" "$out/train_cuda.txt" | tail -4 | cut -c1-200

# INIT files (bench/PROTOCOL.md), written here against weft's names, in parallel.
init=/tmp/weft-init
mkdir -p "$init"
for f in .gpu/names/*.json; do
  m=$(basename "$f" .json)
  (timeout 90 python3 bench/pytorch/run.py --model="$m" --preset=paper --names="$f" \
    --init-out="$init/$m.safetensors" >"$out/init_$m.txt" 2>&1 || echo "== INIT for $m failed") &
done
wait
timeout 240 .gpu/suite_bench --steps=50 --warmup=10 --init="$init" >"$out/suite_weft.txt" 2>&1
echo "== suite_bench rc=$?"
grep -E "weft cuda|error|rror:" "$out/suite_weft.txt" | grep -v "starts from" |
  sed -E 's/ \(min [^;]*; / (/; s/ [0-9]+ generated kernels, [0-9]+ on the host;//' | cut -c1-190
PYTHONUNBUFFERED=1 timeout 150 python3 bench/pytorch/cuda_suite.py --models="$loops" \
  --configs=eager,fused,cuda_graph --steps=50 --warmup=10 --init="$init" >"$out/suite_pytorch.txt" 2>&1
echo "== cuda_suite.py rc=$?"
grep -E "^pytorch" "$out/suite_pytorch.txt" | cut -c1-150
python3 tests/cuda/first_losses.py "$out/suite_weft.txt" "$out/suite_pytorch.txt"
echo "== first_losses.py rc=$?"
if [ -n "${OUT:-}" ]; then
  cp -f "$out"/{cases,ponder_cuda,train_cuda,suite_weft,suite_pytorch}.txt "$OUT"/ 2>/dev/null
fi
