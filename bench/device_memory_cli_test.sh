#!/usr/bin/env bash
# bench:device_memory from its command line: --help (exit 0), an unknown argument (the
# usage, exit 2), and one model's estimate at the cpu preset.
set -uo pipefail
tool=$1
fail=0
out=$("$tool" --help 2>&1); rc=$?
if [ "$rc" -ne 0 ] || ! grep -qF "estimated on the host (no GPU needed)" <<<"$out"; then
  echo "FAIL --help: rc=$rc: $out"; fail=1
fi
out=$("$tool" --bogus 2>&1); rc=$?
if [ "$rc" -ne 2 ] || ! grep -qF "device_memory: unknown argument --bogus" <<<"$out"; then
  echo "FAIL unknown argument: rc=$rc: $out"; fail=1
fi
# Bad values are refused, naming the flag (they used to run: --rows=-1 and a --rows past
# 64 bits as 0 rows, --models= as no model at all, exit 0).
for bad in "--rows=-1|--rows=-1: a whole number from 0 to 1000000" \
           "--rows=99999999999999999999|--rows=99999999999999999999: a whole number from 0 to 1000000" \
           "--models=|an empty model name in --models=" \
           "--models=mlp,|an empty model name in --models=mlp," \
           "--precision=f64|--precision=f64: one of f32, bf16, f16"; do
  arg=${bad%%|*}; want=${bad#*|}
  out=$("$tool" "$arg" 2>&1); rc=$?
  if [ "$rc" -ne 2 ] || ! grep -qF "device_memory: $want" <<<"$out"; then
    echo "FAIL $arg: rc=$rc: $out"; fail=1
  fi
done
out=$("$tool" --preset=cpu --models=mlp --rows=2 2>&1); rc=$?
if [ "$rc" -ne 0 ] || ! grep -q "mlp" <<<"$out" || ! grep -qi "arena" <<<"$out"; then
  echo "FAIL mlp at the cpu preset: rc=$rc: $out"; fail=1
fi
[ "$fail" -eq 0 ] && echo "ok"
exit $fail
