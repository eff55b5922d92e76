#!/usr/bin/env bash
# [GPU] (#31) input overlap on a GPU in one short call: the next batch's host-to-device
# copy on the executor's copy stream while the current step runs
# (runtime/cuda/executor_prefetch.cc). runtime/cuda:executor_test's cases: the outputs of
# prefetched inputs (the data Loader's pinned buffers, two held at a time) bitwise equal to
# set_input's plain copies over seven steps with changing batches, as one CUDA graph and
# launch by launch; a step that runs to its end with the next batch's copy held back on
# its stream (events); a set_input of another tensor; then those but the held stream under
# compute-sanitizer memcheck (which may serialize the two streams); and the A/B: the AOT
# CNN (train_cuda, 1 epoch) with the prefetch and with WEFT_INPUT_PREFETCH=0, whose
# per-step losses must be identical and whose `done:` lines give the two times. About a
# minute; not yet run (written in a session without a GPU). open_issues_check.sh 31 runs
# it. Build and copy here (tests/cuda/lease_bundle.sh packs the same binaries and data):
#
#   bazel build //runtime/cuda:executor_test //examples/fashion_mnist:train_cuda
#   mkdir -p .gpu && cp -f bazel-bin/runtime/cuda/executor_test \
#       bazel-bin/examples/fashion_mnist/train_cuda .gpu/
#   python3 tests/cuda/nccl_check_data.py /usr/share/datasets/fashion-mnist .gpu/fashion-mnist-20k 20000 10000
#   # device tool: run(command="tests/cuda/input_overlap_check.sh", carry=[".gpu"], timeout_s=240)
#
# Logs go to $OUT (else /tmp/weft-gpu). All of it is open_issues_check.sh first's (the
# prefetch is on by default; the A/B's identical losses are its correctness check).
# Estimated (on an H200; no run yet) 15-25 s: 5 tests 2 s, memcheck over 3 4-6 s, two
# 1-epoch train_cuda runs on 20,000 examples, about 5 s each (0.3 s per 60,000-example
# epoch and a start of a few seconds, 2026-11-28).
set -uo pipefail
# train_cuda links Gloo and the dashboard's libraries, carried in .gpu/lib.
export LD_LIBRARY_PATH="$PWD/.gpu/lib:${LD_LIBRARY_PATH:-}"
# shellcheck source=tests/cuda/lease_common.sh
source "$(dirname "$0")/lease_common.sh"
cases='*Prefetch*:*NextBatchsCopy*:*PinnedLoader*'

nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
part default || exit 0
timeout 60 .gpu/executor_test --gtest_filter="$cases" >"$out/input_overlap_cases.txt" 2>&1
echo "== executor_test ($cases) rc=$? $(line '^\[  (PASSED|FAILED|SKIPPED)' "$out/input_overlap_cases.txt")"
grep -E "Failure|error" -A4 "$out/input_overlap_cases.txt" | head -40
timeout 90 compute-sanitizer --tool memcheck --error-exitcode 3 .gpu/executor_test \
  --gtest_filter='*PrefetchedInputs*:*AnotherTensorCopies*:*PinnedLoader*' \
  >"$out/input_overlap_memcheck.txt" 2>&1
echo "== memcheck rc=$? $(line 'ERROR SUMMARY|^\[  (PASSED|FAILED)' "$out/input_overlap_memcheck.txt")"
for prefetch in 1 0; do
  rm -f "$out/input_overlap_losses_$prefetch.csv"
  WEFT_INPUT_PREFETCH=$prefetch timeout 90 .gpu/train_cuda --data=.gpu/fashion-mnist-20k --epochs=1 \
    --metrics-csv="$out/input_overlap_losses_$prefetch.csv" >"$out/input_overlap_train_$prefetch.txt" 2>&1
  echo "== train_cuda WEFT_INPUT_PREFETCH=$prefetch rc=$? $(line 'epoch [0-9]+/|done|rror' "$out/input_overlap_train_$prefetch.txt")"
done
# epoch, step, loss: the same bits with and without the prefetch. But the CNN's cuDNN
# algorithms are chosen by timing them in each process (ConvPolicy::deterministic's
# fastest, as PyTorch's cudnn.benchmark), so the two runs may take different ones, whose
# sums round differently: a difference that starts in the last bits and grows over the
# steps is that, while a batch taken wrong moves a loss by far more at once (DIFFER: a
# relative difference above 1e-4 within the first 20 steps).
a="$out/input_overlap_losses_1.csv" b="$out/input_overlap_losses_0.csv"
if [ ! -s "$a" ] || [ ! -s "$b" ]; then
  echo "== losses with and without the prefetch: not compared (a run wrote no losses)"
elif cmp -s <(cut -d, -f1-3 "$a") <(cut -d, -f1-3 "$b"); then
  echo "== losses with and without the prefetch: identical ($(wc -l <"$a") lines)"
else
  paste -d, <(cut -d, -f2,3 "$a") <(cut -d, -f3 "$b") | tail -n +2 | awk -F, '
    { d = $2 - $3; if (d < 0) d = -d; w = $3 < 0 ? -$3 : $3; r = d / (w + 1e-30)
      if (d > 0 && first == "") first = $1
      if (NR <= 20 && r > early) early = r
      if (d > worst) worst = d
      n++ }
    END { printf "== losses with and without the prefetch: %s (first at step %s; largest relative difference in the first 20 steps %.2g, largest |difference| %.3g over %d steps; cuDNN times its algorithms in each process)\n",
                 (early > 1e-4 ? "DIFFER" : "differ in the last bits only"), first, early, worst, n }'
fi
exit 0
