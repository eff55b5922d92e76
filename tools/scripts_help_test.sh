#!/usr/bin/env bash
# tools/setup, tools/example and tools/test answer --help before they install or build
# anything (tools/example --help ran apt-get and a build first; tools/setup took any
# unknown argument as "everything").
set -uo pipefail
fail=0
for script in tools/setup tools/example tools/test; do
  out=$("$script" --help 2>&1); rc=$?
  if [ "$rc" -ne 0 ] || ! grep -q "^# " <<<"$out"; then echo "FAIL $script --help: rc=$rc: $out"; fail=1; fi
done
out=$(tools/setup --bogus 2>&1); rc=$?
if [ "$rc" -ne 2 ] || [ "$out" != "tools/setup: unknown argument '--bogus' (see --help: --example, --peer or --fuzz)" ]; then
  echo "FAIL tools/setup --bogus: rc=$rc: $out"; fail=1
fi
[ "$fail" -eq 0 ] && echo "ok"
exit $fail
