#!/usr/bin/env bash
# The device check scripts' own consistency, without a GPU and without the bundle (a host
# test: bazel test //tests/cuda:lease_scripts_test). What a device call would otherwise
# find out at the cost of a lease:
#   1. every key of open_issues_check.sh names scripts that exist and are executable, and
#      is documented in its header and its error message;
#   2. every program a script runs from .gpu/ is one lease_bundle.sh packs, and every
#      .gpu/ folder or file it reads is one lease_bundle.sh writes;
#   3. every .gpu/ program, compute-sanitizer and python3 runs under `timeout` (a hang
#      cannot eat the call; --dry-run sees each step through it);
#   4. every script takes its log folder and helpers from lease_common.sh (logs written to
#      $OUT as they are made: none only copied there at the end), and a script that a key
#      runs in part (SCRIPT:default, SCRIPT:rest) has that part;
#   5. with stand-ins for the bundle's programs (they pass, print nothing of note and
#      write no losses), `open_issues_check.sh first` runs every script to its end with
#      rc=0, packs the logs into $OUT/logs.tar.gz and says the losses were not compared;
#      --budget skips the scripts past it; its refusals (an unknown key or flag, a bad
#      budget, no bundle) say what is wrong;
#   6. lease_common.sh's `timeout` kills a step that ignores SIGTERM (the training binaries
#      take a first one as "stop after this step", which a hung step never reaches), and
#      cuts a step's limit at LEASE_DEADLINE (--budget), starting none after it; its
#      `nvidia-smi` (which a wedged GPU hangs) runs under it.
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
fails=0
fail() { echo "FAIL: $*"; fails=$((fails + 1)); }

open="$here/open_issues_check.sh"
bundle="$here/lease_bundle.sh"
# The programs lease_bundle.sh packs (the basenames of its binaries=( ... ) list).
packed=$(sed -n '/^binaries=(/,/^)/p' "$bundle" | tr ' ' '\n' | grep / | sed 's|.*/||')
[ -n "$packed" ] || fail "no binaries=( ... ) list in lease_bundle.sh"

# 1. Keys.
keys=$(sed -n '/^scripts() {/,/^}/p' "$open" | grep -oE '^    [a-z0-9|]+\)' | tr -d ' )' | tr '|' '\n')
[ "$(wc -w <<<"$keys")" -ge 8 ] || fail "open_issues_check.sh: fewer than 8 keys found in scripts()"
keys_line=$(grep -E '^keys=' "$open")
for key in $keys; do
  grep -qE "^#   $key( |$)|[ (,]$key[ ,)]" <(sed -n '2,/^set -uo/p' "$open") ||
    fail "open_issues_check.sh: key $key is not in the header"
  grep -qE "[\" ]$key[,\" ]" <<<"$keys_line" || fail "open_issues_check.sh: key $key is not in \$keys"
done
entries=$(sed -n '/^scripts() {/,/^}/p' "$open" | grep -oE '[a-z_]+_check\.sh(:[a-z]+)?' | sort -u)
for entry in $entries; do
  script=${entry%%:*}
  [ -x "$here/$script" ] || fail "open_issues_check.sh runs $script, which is missing or not executable"
  case "$entry" in
    *:default|*:rest)
      grep -q "part ${entry#*:}" "$here/$script" ||
        fail "$script has no '${entry#*:}' part (open_issues_check.sh runs $entry)" ;;
  esac
done
scripts=$(for entry in $entries; do echo "${entry%%:*}"; done | sort -u)

# Logical lines (continuations joined) without comments, each prefixed with its line number.
logical() {
  awk '{ if (!cont) start = NR; sub(/^[ \t]*#.*/, ""); cont = sub(/\\$/, ""); buf = buf $0
         if (!cont) { print start ": " buf; buf = "" } }' "$1"
}

for script in $scripts; do
  f="$here/$script"
  # 2. Programs and files from .gpu/.
  for name in $(logical "$f" | grep -oE '\.gpu/[A-Za-z0-9_.$-]+' | sed 's|\.gpu/||' | sort -u); do
    case "$name" in
      '$'*) continue ;;  # a loop's variable (vocab_bench and vocab_bench_scalar, say)
      lib|fashion-mnist-20k|fashion-mnist-small|suite_libs.tar.gz|COMMIT|bundle.tar.xz) continue ;;
    esac
    grep -qx "$name" <<<"$packed" || fail "$script runs .gpu/$name, which lease_bundle.sh does not pack"
  done
  # 3. Every device step under timeout.
  while IFS= read -r l; do
    n=${l%%:*} body=${l#*: }
    for word in '\.gpu/[a-z_]+ ' 'compute-sanitizer ' 'python3 '; do
      cmd=$(grep -oE "(^|[;&|(]|then|do|else)[ ]*([A-Z_]+=[^ ]+ )*[\"]?$word" <<<"$body")
      [ -n "$cmd" ] && fail "$script:$n: '$(sed 's/^[;&|( ]*//' <<<"$cmd" | head -1)' not under timeout"
    done
    if grep -qE '(^|[;&|]|then|do)[ ]*([A-Z_]+=[^ ]+ )*timeout ' <<<"$body"; then
      grep -qE 'timeout [0-9]+[sm]? ' <<<"$body" || fail "$script:$n: timeout without a limit"
    fi
  done < <(logical "$f")
  # 4. Logs and helpers.
  grep -q 'source .*lease_common\.sh' "$f" || fail "$script does not source lease_common.sh"
  grep -qE '^out=' "$f" && fail "$script sets its own log folder (lease_common.sh's \$out)"
  grep -qE 'cp .*"?\$OUT"?' "$f" && fail "$script copies its logs to \$OUT at the end"
done
for f in "$here"/lease_common.sh "$here"/lease_dry_run.sh; do
  [ -f "$f" ] || fail "$f missing"
done

# 5. A run of `first` with stand-ins for the bundle and the GPU machine's tools.
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
mkdir -p "$tmp/repo/tests/cuda" "$tmp/repo/.gpu/lib" "$tmp/repo/.gpu/fashion-mnist-20k" "$tmp/repo/.gpu/fashion-mnist-small" "$tmp/bin" "$tmp/out"
cp "$here"/*.sh "$tmp/repo/tests/cuda/"
cat >"$tmp/stand_in" <<'EOF'
#!/usr/bin/env bash
# A bundled program's stand-in: lists one test, passes, writes no losses.
for a in "$@"; do
  case "$a" in
    --gtest_list_tests) printf 'Suite.\n  Test\n'; exit 0 ;;
    --program) echo "program @model"; exit 0 ;;
  esac
done
echo "[  PASSED  ] 1 test."
EOF
chmod +x "$tmp/stand_in"
for name in $packed; do cp "$tmp/stand_in" "$tmp/repo/.gpu/$name"; done
printf '#!/bin/sh\necho "NVIDIA stand-in, 0"\n' >"$tmp/bin/nvidia-smi"
printf '#!/usr/bin/env bash\nwhile [[ "$1" == --* ]]; do shift 2; done\n"$@"\necho "========= ERROR SUMMARY: 0 errors"\n' >"$tmp/bin/compute-sanitizer"
chmod +x "$tmp/bin/nvidia-smi" "$tmp/bin/compute-sanitizer"
log="$tmp/first.txt"
(cd "$tmp/repo" && PATH="$tmp/bin:$PATH" OUT="$tmp/out" timeout 300 tests/cuda/open_issues_check.sh first) >"$log" 2>&1
rc=$?
[ $rc -eq 0 ] || fail "open_issues_check.sh first with stand-ins: rc=$rc"
for entry in $(sed -n '/^    first)/,/;;/p' "$open" | grep -oE '[a-z_]+_check\.sh:[a-z]+'); do
  grep -qF "[first] == ${entry%%:*} (${entry#*:}) rc=0 " "$log" ||
    fail "open_issues_check.sh first: no 'rc=0' line for $entry"
done
grep -q 'losses with and without the prefetch: not compared' "$log" ||
  fail "input_overlap_check.sh: losses said compared where neither run wrote any"
grep -q 'identical' "$log" && fail "a check reports identical losses that no run wrote"
tar -tzf "$tmp/out/logs.tar.gz" 2>/dev/null | grep -q '^first/arch_cases.txt$' ||
  fail "no first/arch_cases.txt in \$OUT/logs.tar.gz"
[ -s "$tmp/out/summary.txt" ] || fail "no \$OUT/summary.txt"
[ "$(find "$tmp/out" -type f | wc -l)" -le 8 ] || fail "more than 8 files in \$OUT (the device tool brings back 8)"
# expect RC TEXT ARGS...: open_issues_check.sh ARGS exits RC and prints TEXT.
expect() {
  local want_rc=$1 text=$2 got rc
  shift 2
  got=$(cd "$tmp/repo" && PATH="$tmp/bin:$PATH" OUT="$tmp/out" timeout 120 tests/cuda/open_issues_check.sh "$@" 2>&1)
  rc=$?
  [ $rc -eq "$want_rc" ] || fail "open_issues_check.sh $*: rc=$rc, not $want_rc"
  grep -qF -- "$text" <<<"$got" || fail "open_issues_check.sh $*: no '$text' in:
$(tail -15 <<<"$got")"
}
expect 2 "error: no device check '31x' (first, second, third, fourth, suite, mixedsuite, 28, 29, 30, 31, 31rnn, 31perf, 32 or all)" 31x
expect 2 "error: unknown flag '--budjet=5' (--dry-run, --budget=SECONDS)" --budjet=5 28
expect 2 "error: --budget takes seconds, not '5m'" --budget=5m 28
expect 0 "[28] == reliability_check.sh skipped: the budget of 0 s is spent" --budget=0 28
expect 0 "0 problem(s)" --dry-run 28
rm -f "$tmp/repo/.gpu/cases_test"
expect 1 "error: no .gpu/cases_test: run tests/cuda/lease_bundle.sh here and carry .gpu" 28

# 6. The steps' timeout.
# elapsed RC_WANT MAX_S ENV... -- COMMAND...: lease_common.sh's `timeout` (kill-after 1 s)
# ends COMMAND with RC_WANT within MAX_S seconds.
elapsed() {
  local want=$1 max=$2 start rc took
  shift 2
  start=$(date +%s)
  (OUT="$tmp/common" && source "$here/lease_common.sh" && lease_kill_after=1 lease_smi_limit=1 && "$@") \
    >"$tmp/common.txt" 2>&1
  rc=$? took=$(( $(date +%s) - start ))
  [ $rc -eq "$want" ] && [ $took -le "$max" ] ||
    fail "lease_common.sh's timeout: '$*' ended with rc=$rc after $took s, not $want within $max s"
}
elapsed 137 8 timeout 1 bash -c 'trap "" TERM; sleep 20'
LEASE_DEADLINE=$(( $(date +%s) + 2 )) elapsed 124 8 timeout 30 sleep 20
LEASE_DEADLINE=$(( $(date +%s) - 1 )) elapsed 124 2 timeout 30 touch "$tmp/started"
[ -e "$tmp/started" ] && fail "lease_common.sh's timeout started a step past LEASE_DEADLINE"
grep -q "not run: the call's deadline" "$tmp/common.txt" || fail "lease_common.sh's timeout: no 'not run' line past the deadline"
elapsed 0 8 timeout 5 true
mkdir -p "$tmp/wedged"
printf '#!/bin/sh\nsleep 30\n' >"$tmp/wedged/nvidia-smi"
chmod +x "$tmp/wedged/nvidia-smi"
PATH="$tmp/wedged:$PATH" elapsed 124 8 nvidia-smi --query-gpu=name --format=csv

if [ $fails -gt 0 ]; then
  echo "--- open_issues_check.sh first with stand-ins:"
  tail -40 "$log"
  echo "$fails problem(s)"
  exit 1
fi
echo "PASS"
