#!/usr/bin/env bash
# [GPU] (#31) loop slots on a GPU in one short call: every loop case (`scan_slots`: ys
# written in their slots, an LSTM-like h chained to its ys and c shifted into the ys of its
# old value, a reversed loop; the other scan cases, forward, reversed, nested, swapped,
# early exits masked; the LSTM, GRU and until_cond training steps, CTC), each launch by
# launch and as one CUDA graph against the reference interpreter, then `scan_slots` and
# the LSTM and GRU steps under compute-sanitizer memcheck (a slot written out of bounds
# would show there), and the concats stored in place by their parts' kernels
# (`stored_concat`, `scan_stored_concat`: passes/fold_concats.h). Also #31's attention
# cases (`*attention*`: attention and its three gradients causal, padded, both, odd
# lengths, head_dim 32/64, the f32 ones on the attention kernels, forward and
# FlashAttention-2's backward bound to attention_grad; a fused attention block's step; the
# `attention_fa2_*` steps, causal and padded, with the backward kernel and their twins,
# and CudaCases.FusedAttentionStepsMatchTheirTwins: three steps of each against the same
# step with WEFT_ATTENTION_GRAD_KERNEL=0 and without fuse-attention, then under memcheck
# with the single-op attention cases), and the backward kernel called directly (executor_test's
# `AttentionBackwardKernel.*`: attention_kernels_test.cc, against an f64 host reference,
# each case twice for bit-identical results; the forward kernel's y on the same cases, Sk = 0
# giving 0), also under memcheck and racecheck. About two minutes; not
# yet run (written in a session without a GPU).
# Its `rest` (open_issues_check.sh fourth; key 31 runs it too) is the A/B that
# TrainOptions::fuse_attention waits for before it can default on: each fused attention
# step (attention_block_fused_adam_step, attention_fa2_{causal,padded}_step) timed beside
# its twins (unfused; the attention_grad kernel off), one CUDA graph per step, with
# --profile. 8 step_bench runs of 220 steps on small blocks, 20-40 s.
# open_issues_check.sh 31 runs it. Build and copy here:
#
#   bazel build //tests/cuda:cases_test //runtime/cuda:executor_test
#   mkdir -p .gpu && cp -f bazel-bin/tests/cuda/cases_test bazel-bin/runtime/cuda/executor_test .gpu/
#   # device tool: run(command="tests/cuda/loop_slots_check.sh", carry=[".gpu"], timeout_s=420)
#
# Logs go to $OUT (else /tmp/weft-gpu). The default part is open_issues_check.sh first's.
# Estimated (on an H200; no run yet; tests/cuda/README.md "Device time" says on what)
# 30-60 s: 51 tests 3-6 s; memcheck over 12 and 5 tests (the LSTM/GRU and attention steps
# among them) 5-10 s each; executor_test's 2 backward-kernel tests plainly, under memcheck
# and under racecheck (the slowest: shared-memory accesses tracked) 2 + 5 + 10-30 s.
set -uo pipefail
# shellcheck source=tests/cuda/lease_common.sh
source "$(dirname "$0")/lease_common.sh"
cases='*scan*:*lstm*:*gru*:*until*:*ctc*:*skipped_slots*:*stored_concat*:*attention*:*FusedAttention*'

nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
if part default; then
  timeout 60 .gpu/cases_test --gtest_filter="$cases" >"$out/loop_slots_cases.txt" 2>&1
  echo "== cases_test ($cases) rc=$? $(line '^\[  (PASSED|FAILED)' "$out/loop_slots_cases.txt")"
  grep -E "Failure|error" -A4 "$out/loop_slots_cases.txt" | head -40
  timeout 90 compute-sanitizer --tool memcheck --error-exitcode 3 .gpu/cases_test --gtest_filter='*scan_slots*:*lstm*:*gru*:*stored_concat*:*attention_causal_padded_odd*' \
    >"$out/loop_slots_memcheck.txt" 2>&1
  echo "== memcheck rc=$? $(line 'ERROR SUMMARY|^\[  (PASSED|FAILED)' "$out/loop_slots_memcheck.txt")"
  timeout 150 compute-sanitizer --tool memcheck --error-exitcode 3 .gpu/cases_test \
    --gtest_filter='*attention_causal_d32_graph*:*attention_padded_d64_graph*:*attention_fa2_*_step_graph*:*FusedAttention*' \
    >"$out/loop_slots_attention_memcheck.txt" 2>&1
  echo "== memcheck (attention_grad kernel bound) rc=$? $(line 'ERROR SUMMARY|^\[  (PASSED|FAILED)' "$out/loop_slots_attention_memcheck.txt")"
  grep -E "Failure|Invalid|error" -A4 "$out/loop_slots_attention_memcheck.txt" | head -30
  timeout 60 .gpu/executor_test --gtest_filter='AttentionBackwardKernel.*' >"$out/loop_slots_attention_backward.txt" 2>&1
  echo "== executor_test (AttentionBackwardKernel.*) rc=$? $(line '^\[  (PASSED|FAILED)|SKIPPED' "$out/loop_slots_attention_backward.txt")"
  grep -E "Failure|error" -A4 "$out/loop_slots_attention_backward.txt" | head -40
  timeout 120 compute-sanitizer --tool memcheck --error-exitcode 3 .gpu/executor_test --gtest_filter='AttentionBackwardKernel.*' \
    >"$out/loop_slots_attention_backward_memcheck.txt" 2>&1
  echo "== memcheck (AttentionBackwardKernel.*) rc=$? $(line 'ERROR SUMMARY|^\[  (PASSED|FAILED)' "$out/loop_slots_attention_backward_memcheck.txt")"
  timeout 120 compute-sanitizer --tool racecheck --error-exitcode 3 .gpu/executor_test --gtest_filter='AttentionBackwardKernel.*' \
    >"$out/loop_slots_attention_backward_racecheck.txt" 2>&1
  echo "== racecheck (AttentionBackwardKernel.*) rc=$? $(line 'RACECHECK SUMMARY|ERROR SUMMARY|^\[  (PASSED|FAILED)' "$out/loop_slots_attention_backward_racecheck.txt")"
fi
part rest || exit 0

# The measurement TrainOptions::fuse_attention waits for (runtime/cuda/README.md): each
# fused attention step beside its twins, one CUDA graph per step, --profile showing the
# attention_grad kernel's own time against the decomposed GEMMs and row kernels.
for c in attention_block_adam_step attention_block_fused_adam_step \
         attention_fa2_causal_step attention_fa2_causal_step_kernel_off attention_fa2_causal_step_unfused \
         attention_fa2_padded_step attention_fa2_padded_step_kernel_off attention_fa2_padded_step_unfused; do
  timeout 40 .gpu/step_bench --case=$c --steps=200 --warmup=20 --profile=4 >"$out/attention_ab_$c.txt" 2>&1
  echo "== step_bench --case=$c rc=$? $(line 'weft cuda' "$out/attention_ab_$c.txt")"
done
exit 0
