#!/usr/bin/env bash
# bench:weft_aot_cuda_worker's bf16 libraries (#30), checked on the host (no GPU needed:
# --names-out reads the tables only). Every model is accepted with --precision=bf16, and
# its bf16 library names the same parameters, inputs and target, with the same shapes, as
# its f32 one: the suite writes one INIT file from the f32 names (its names step passes
# no --precision) and the bf16 timed run loads it. f16, which bench/aot does not build for
# the GPU, is refused naming what is built. The transformer's fused-attention library too.
set -uo pipefail
worker=$1
fail=0
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
# The worker's own list of its models (its message for an unknown one).
models=$("$worker" --model=none 2>&1 | sed -n 's/.*; models: //p' | tr -d ',')
[ "$(wc -w <<<"$models")" -eq 10 ] || { echo "FAIL: the worker lists '$models', not ten models"; fail=1; }
for m in $models; do
  for p in f32 bf16; do
    if ! "$worker" --model=$m --preset=paper --precision=$p --names-out="$tmp/$m.$p.json" >"$tmp/log" 2>&1; then
      echo "FAIL $m --precision=$p: $(tail -1 "$tmp/log")"; fail=1
    fi
  done
  cmp -s "$tmp/$m.f32.json" "$tmp/$m.bf16.json" || { echo "FAIL $m: bf16's names differ from f32's"; fail=1; }
  grep -q '"name": "input.0"' "$tmp/$m.bf16.json" || { echo "FAIL $m: no input.0 in the names"; fail=1; }
done
# The transformer's fused-attention library (transformer_cuda_fa, #31) names the same
# parameters and inputs as its default one; a model without attention is refused.
if ! "$worker" --model=transformer --preset=paper --fuse-attention --names-out="$tmp/fa.json" >"$tmp/log" 2>&1; then
  echo "FAIL transformer --fuse-attention: $(tail -1 "$tmp/log")"; fail=1
fi
cmp -s "$tmp/transformer.f32.json" "$tmp/fa.json" || { echo "FAIL transformer: the fused-attention library's names differ"; fail=1; }
out=$("$worker" --model=gru_seq --preset=paper --fuse-attention --names-out="$tmp/x.json" 2>&1); rc=$?
want="weft_aot_worker: error: --fuse-attention: gru_seq has no attention (softmax(q·kᵀ·scale + mask)·v) to fuse; bench/aot builds a fused-attention library of transformer only"
if [ $rc -ne 1 ] || [ "$out" != "$want" ]; then
  echo "FAIL gru_seq --fuse-attention: rc=$rc: $out"; fail=1
fi
out=$("$worker" --model=mlp --preset=paper --precision=f16 --names-out="$tmp/f16.json" 2>&1); rc=$?
want="weft_aot_worker: error: --precision=f16: bench/aot builds the suite's models in f32, and transformer, mlp, residual_tower, feedback_fixed, gated_routing, iterative_refine, gru_seq, conv_autoenc, lstm_seq, convnet also in bf16"
if [ $rc -ne 1 ] || [ "$out" != "$want" ]; then
  echo "FAIL f16: rc=$rc: $out"; fail=1
fi
[ $fail -eq 0 ] && echo PASS
exit $fail
