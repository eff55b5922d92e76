#!/usr/bin/env bash
# [Distributed] (#32) NCCL on a GPU in one short lease (about two minutes): what was
# written and tested on the host without a device (runtime/cuda/README.md, "NCCL").
#  1. nccl_step_test: the MLP step with its gradients' all_reduce ops
#     (mlp784_adam_all_reduce_step) through NCCL with one rank — buckets staged, reduced
#     by ncclAllReduce on the communication stream, joined back, inside the step's one
#     CUDA graph — bitwise equal to the same step without NCCL after 10 steps, with the
#     default buckets and with 4 KiB ones, and launch by launch; a local rank without its
#     GPU refused. Run twice: plainly, and with the torchrun variables of a world of one
#     (LOCAL_RANK=0 WORLD_SIZE=1 RANK=0).
#  2. cases_test's all_reduce case against the reference interpreter (graph and
#     launches), then executor_test (the executor's schedule walk, profile_step).
#  3. nccl_bandwidth: ncclAllReduce (f32 sum, in place) for 1 to 256 MiB buffers: time,
#     algbw and NCCL-tests' busbw = algbw · 2(n-1)/n, which is 0 for one rank (one GPU
#     is lent: NCCL refuses two ranks on one device), so algbw is the figure to record.
# Build and copy here (about 30 MB; NCCL is the machine's own, 2.28.3 in
# /usr/lib/x86_64-linux-gnu on the H200 machines):
#
#   bazel build //tests/cuda:nccl_step_test //tests/cuda:nccl_bandwidth //tests/cuda:cases_test \
#       //runtime/cuda:executor_test
#   mkdir -p .gpu && cp -f bazel-bin/tests/cuda/{nccl_step_test,nccl_bandwidth,cases_test} \
#       bazel-bin/runtime/cuda/executor_test .gpu/
#   # device tool: run(command="tests/cuda/nccl_check.sh", carry=[".gpu"], timeout_s=300)
#
# Logs go to /tmp/weft-gpu and, when $OUT is set, to $OUT.
set -uo pipefail
out=${OUT:-/tmp/weft-gpu}
mkdir -p "$out"
line() { grep -E "$1" "$2" | tr '\n' ' ' | cut -c1-400; echo; }

nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
ls -l /usr/lib/x86_64-linux-gnu/libnccl.so* 2>/dev/null | head -2
timeout 90 .gpu/nccl_step_test --gtest_brief=0 >"$out/nccl_step.txt" 2>&1
echo "== nccl_step_test rc=$? $(line '^\[  (PASSED|FAILED|SKIPPED)' "$out/nccl_step.txt")"
grep -E "Failure|error|Which is|stage into bucket 0|^bucket|NCCL" "$out/nccl_step.txt" | head -24 | cut -c1-200
LOCAL_RANK=0 WORLD_SIZE=1 RANK=0 timeout 90 .gpu/nccl_step_test --gtest_brief=1 >"$out/nccl_step_torchrun.txt" 2>&1
echo "== nccl_step_test (LOCAL_RANK=0 WORLD_SIZE=1) rc=$? $(line '^\[  (PASSED|FAILED)' "$out/nccl_step_torchrun.txt")"

timeout 90 .gpu/cases_test --gtest_brief=1 --gtest_filter='*all_reduce*' >"$out/cases_all_reduce.txt" 2>&1
echo "== cases_test (all_reduce) rc=$? $(line '^\[  (PASSED|FAILED)' "$out/cases_all_reduce.txt")"
grep -E "Failure|error" -A4 "$out/cases_all_reduce.txt" | head -12
timeout 60 .gpu/executor_test --gtest_brief=1 >"$out/executor.txt" 2>&1
echo "== executor_test rc=$? $(line '^\[  (PASSED|FAILED)' "$out/executor.txt")"

timeout 60 .gpu/nccl_bandwidth --iters=20 >"$out/nccl_bandwidth.txt" 2>&1
echo "== nccl_bandwidth rc=$?"
cat "$out/nccl_bandwidth.txt" | cut -c1-200
