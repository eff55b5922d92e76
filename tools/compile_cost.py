#!/usr/bin/env python3
"""Where the tree's compile time goes, counted without compiling (issue #28).

Lists every C++ compile action of a Bazel target pattern (`bazel aquery`), runs each
one's real command line with `-E` instead of `-c` in Bazel's execution root, and counts
the preprocessed lines (non-blank, line markers excluded):

  * per translation unit: the lines the compiler parses;
  * per header, inclusive: the lines parsed because that header was included (itself and
    everything it pulled in first), summed over every TU that includes it, directly or
    not; and in how many TUs;
  * per header, own: the header's own lines, summed over TUs;
  * per heavy outside header (the standard library's, /usr/include's, LLVM/MLIR's, gtest's),
    the weft file that brought it in (the nearest file of ours on the include stack),
    so a cut can be aimed at the header of ours that is the gateway.

Counts do not depend on the machine's load, so they compare before and after a change
while other builds run. To turn lines into seconds, `--time N` runs N TUs spread over
the ranking (the heaviest first) with `-fsyntax-only` and reports user+sys CPU seconds
per TU and per 1,000 lines, with the load average: on a busy machine those figures are
noise, the ratio less so. `--from REPORT --time N` times the TUs of an earlier report
without preprocessing them again. Sources and headers are read from the workspace and
bazel-out/external from Bazel's output base: a build running meanwhile in the same output
base can replace generated files under the preprocessor's feet.

The inclusive count charges a header with what it pulls in first: in a TU where
ir/graph.h comes before <map>, graph.h carries <map>'s lines. So a large figure for one
of our headers says where the lines enter, not what removing that include would save;
check the header's includes before cutting.

Generated sources (bazel-out/...) are preprocessed only where they exist: build them
first (`bazel build` of the genrules), otherwise they are listed as skipped.

Examples:
  tools/compile_cost.py                       # //..., summary to stdout
  tools/compile_cost.py --json /tmp/cost.json --time 12
  tools/compile_cost.py --pattern //passes/... --top 30
  tools/compile_cost.py --aquery /tmp/aq.json  # reuse a saved `--output=jsonproto` aquery
  tools/compile_cost.py --compare /tmp/before.json /tmp/after.json
"""

import argparse
import atexit
import collections
import concurrent.futures
import json
import os
import re
import resource
import shutil
import subprocess
import sys
import tempfile
import time



def _run_aquery(pattern):
    out = subprocess.run(
        ["bazel", "aquery", 'mnemonic("CppCompile", %s)' % pattern, "--output=jsonproto"],
        check=True, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL).stdout
    return json.loads(out)


def _bazel_info(key):
    return subprocess.run(["bazel", "info", key], check=True, stdout=subprocess.PIPE,
                          stderr=subprocess.DEVNULL, text=True).stdout.strip()


def _execution_root():
    """A directory laid out like Bazel's execution root, built in a temporary directory:
    the workspace's top-level entries, bazel-out and the output base's external/.
    Bazel re-plants its execution root at each command with the top-level folders that
    command needs, so a later narrow build leaves folders out of it."""
    workspace = _bazel_info("workspace")
    real = _bazel_info("execution_root")
    root = tempfile.mkdtemp(prefix="compile_cost_")
    atexit.register(shutil.rmtree, root, True)
    for entry in os.listdir(workspace):
        if entry.startswith("bazel-") or entry.startswith("."):
            continue
        os.symlink(os.path.join(workspace, entry), os.path.join(root, entry))
    os.symlink(os.path.join(real, "bazel-out"), os.path.join(root, "bazel-out"))
    # Every fetched repository, not only those the last command planted.
    os.symlink(os.path.join(_bazel_info("output_base"), "external"), os.path.join(root, "external"))
    return root


def compile_commands(aquery):
    """(source, argv) for each CppCompile action, argv without -c/-o/-MD/-MF."""
    result = []
    for action in aquery.get("actions", []):
        argv = action["arguments"]
        source = argv[argv.index("-c") + 1]
        cleaned, skip = [], False
        for i, arg in enumerate(argv):
            if skip:
                skip = False
                continue
            if arg in ("-MF", "-o"):
                skip = True
                continue
            if arg in ("-c", "-MD") or arg == source and argv[i - 1] == "-c":
                continue
            cleaned.append(arg)
        result.append((source, cleaned))
    return result


def _is_ours(path):
    return not (path.startswith("/") or path.startswith("external/") or path.startswith("<"))


def _normalize(path):
    # Bazel's sandbox and execroot spellings of the same header become one name.
    path = os.path.normpath(path)
    if "/bin/" in path and path.startswith("bazel-out/"):
        path = "bazel-out/bin/" + path.split("/bin/", 1)[1]
    return path


_MARKERS = re.compile(rb'^# (\d+) "((?:[^"\\]|\\.)*)"((?: \d)*)[ \t]*$', re.M)
_NONBLANK = re.compile(rb'^[ \t]*\S', re.M)


def count_preprocessed(text):
    """Counts one TU's preprocessed text: total, own and inclusive lines per file,
    and for each outside header entered from one of our files, that gateway file."""
    own = collections.Counter()
    inclusive = collections.Counter()
    gateway = collections.Counter()  # (outside header, our file that included it) -> lines
    stack = []  # include stack of file names
    gates = []  # parallel to stack: (outside header, our includer) of the frame, or None
    total = 0

    def account(lines):
        nonlocal total
        if not lines or not stack:
            return
        total += lines
        own[stack[-1]] += lines
        for name in set(stack):
            inclusive[name] += lines
        if gates[-1] is not None:
            gateway[gates[-1]] += lines

    position = 0
    for m in _MARKERS.finditer(text):
        account(len(_NONBLANK.findall(text, position, m.start())))
        position = m.end()
        name = _normalize(m.group(2).decode("utf-8", "replace"))
        flags = m.group(3).split()
        if b"1" in flags:  # entering an included file
            parent = stack[-1] if stack else None
            gate = gates[-1] if gates else None
            if gate is None and parent is not None and _is_ours(parent) and not _is_ours(name):
                gate = (name, parent)
            stack.append(name)
            gates.append(gate)
        elif b"2" in flags:  # returning to an includer
            while stack and stack[-1] != name:
                stack.pop()
                gates.pop()
            if not stack:
                stack, gates = [name], [None]
        elif not stack:
            stack, gates = [name], [None]
        elif len(stack) == 1:  # the TU's own name after <built-in>/<command-line>
            stack[-1] = name
    account(len(_NONBLANK.findall(text, position)))
    return total, own, inclusive, gateway


def _preprocess(job):
    source, argv, root = job
    if not os.path.exists(os.path.join(root, source)):
        return source, None, "missing (a generated source not built?)"
    proc = subprocess.run(argv + ["-E", source, "-o", "-"], cwd=root,
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    if proc.returncode != 0:
        return source, None, proc.stderr.decode("utf-8", "replace")[-400:]
    return source, count_preprocessed(proc.stdout), None


def _syntax_time(root, argv, source):
    """CPU seconds of one -fsyntax-only run, or None when it failed (a TU whose sources
    moved, or an execution root that a running build is re-planting)."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    proc = subprocess.run(argv + ["-fsyntax-only", source], cwd=root, check=False,
                          stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if proc.returncode != 0:
        return None
    return (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def time_sample(tus, commands, root, n):
    """-fsyntax-only CPU seconds of n TUs spread over the ranking by lines."""
    argv_of = {}
    for s, a in commands:
        argv_of.setdefault(s, a)
    ranked = sorted((k for k in tus if "#" not in k and k in argv_of), key=lambda k: -tus[k])
    # Evenly spaced over the ranking, the heaviest first: a sample to fit seconds to lines.
    step = max(1.0, len(ranked) / n)
    sample = list(dict.fromkeys(ranked[int(i * step)] for i in range(min(n, len(ranked)))))
    timings = []
    for source in sample:
        load = os.getloadavg()[0]
        seconds = _syntax_time(root, argv_of[source], source)
        if seconds is None:
            print("compile_cost: -fsyntax-only failed on %s, left out" % source, file=sys.stderr)
            continue
        timings.append({"tu": source, "lines": tus[source], "cpu_s": round(seconds, 2),
                        "load1": round(load, 2)})
    return timings


def measure(args):
    aquery = json.load(open(args.aquery)) if args.aquery else _run_aquery(args.pattern)
    root = args.execroot or _execution_root()
    commands = compile_commands(aquery)
    tus, skipped = {}, {}
    headers_own = collections.Counter()
    headers_inc = collections.Counter()
    headers_tus = collections.Counter()
    gateways = collections.Counter()
    jobs = [(s, a, root) for s, a in commands]
    with concurrent.futures.ThreadPoolExecutor(max_workers=args.jobs) as pool:
        for source, counts, error in pool.map(_preprocess, jobs):
            if counts is None:
                skipped[source] = error
                continue
            total, own, inclusive, gateway = counts
            # The same source compiled twice (two configurations or libraries) counts twice:
            # Bazel compiles it twice.
            key = source
            n = 2
            while key in tus:
                key = "%s#%d" % (source, n)
                n += 1
            tus[key] = total
            for name, lines in own.items():
                headers_own[name] += lines
            for name, lines in inclusive.items():
                if name != _normalize(source):
                    headers_inc[name] += lines
                    headers_tus[name] += 1
            for (header, gate), lines in gateway.items():
                gateways["%s <- %s" % (header, gate)] += lines
    report = {
        "pattern": args.pattern,
        "tus": tus,
        "skipped": skipped,
        "headers_inclusive": dict(headers_inc),
        "headers_own": dict(headers_own),
        "headers_tu_count": dict(headers_tus),
        "gateways": dict(gateways),
    }
    if args.time:
        report["timings"] = time_sample(tus, commands, root, args.time)
    return report


def _fmt(n):
    return "{:,}".format(n)


def summarize(report, top):
    tus = report["tus"]
    total = sum(tus.values())
    print("translation units: %d preprocessed, %d skipped; %s lines in all (mean %s)"
          % (len(tus), len(report["skipped"]), _fmt(total), _fmt(total // max(1, len(tus)))))
    for source, error in sorted(report["skipped"].items())[:5]:
        print("  skipped %s: %s" % (source, error.strip().splitlines()[-1] if error.strip() else ""))
    if len(report["skipped"]) > 5:
        print("  ... %d more skipped" % (len(report["skipped"]) - 5))
    by_folder = collections.Counter()
    for source, lines in tus.items():
        by_folder[source.split("/")[0] if not source.startswith("bazel-out") else "generated"] += lines
    print("\nlines by top-level folder:")
    for folder, lines in by_folder.most_common():
        print("  %-12s %14s" % (folder, _fmt(lines)))
    repeats = collections.Counter(source.split("#")[0] for source in tus)
    repeated = [(n, s) for s, n in repeats.items() if n > 1]
    if repeated:
        print("\nsources compiled more than once (one action each; lines of one):")
        for n, source in sorted(repeated, key=lambda x: (-x[0] * tus[x[1]], x[1])):
            print("  %2d x %10s  %s" % (n, _fmt(tus[source]), source))
    print("\nheaviest translation units (lines):")
    for source, lines in sorted(tus.items(), key=lambda kv: -kv[1])[:top]:
        print("  %10s  %s" % (_fmt(lines), source))
    inc, cnt, own = report["headers_inclusive"], report["headers_tu_count"], report["headers_own"]
    print("\nheaders by inclusive contribution (lines summed over TUs, TUs, own lines):")
    for name, lines in sorted(inc.items(), key=lambda kv: -kv[1])[:top]:
        print("  %14s %5d %12s  %s" % (_fmt(lines), cnt[name], _fmt(own.get(name, 0)), name))
    print("\nour headers by inclusive contribution:")
    ours = [(n, l) for n, l in inc.items() if _is_ours(n)]
    for name, lines in sorted(ours, key=lambda kv: -kv[1])[:top]:
        print("  %14s %5d %12s  %s" % (_fmt(lines), cnt[name], _fmt(own.get(name, 0)), name))
    print("\noutside headers by the file of ours that first includes them (lines):")
    for key, lines in sorted(report["gateways"].items(), key=lambda kv: -kv[1])[:top]:
        print("  %14s  %s" % (_fmt(lines), key))
    if report.get("timings"):
        t = report["timings"]
        lines = sum(x["lines"] for x in t)
        cpu = sum(x["cpu_s"] for x in t)
        print("\n-fsyntax-only CPU seconds (user+sys), load average at start of each:")
        for x in t:
            print("  %6.2f s %10s lines  load %5.2f  %s" % (x["cpu_s"], _fmt(x["lines"]), x["load1"], x["tu"]))
        if lines:
            print("  %.3f CPU s per 1,000 lines over the sample" % (1000 * cpu / lines))


def compare(before_path, after_path, top):
    before, after = json.load(open(before_path)), json.load(open(after_path))
    b, a = sum(before["tus"].values()), sum(after["tus"].values())
    print("summed lines: %s -> %s (%+.1f%%), TUs %d -> %d"
          % (_fmt(b), _fmt(a), 100.0 * (a - b) / max(1, b), len(before["tus"]), len(after["tus"])))
    names = set(before["headers_inclusive"]) | set(after["headers_inclusive"])
    delta = sorted(((after["headers_inclusive"].get(n, 0) - before["headers_inclusive"].get(n, 0), n)
                    for n in names))
    print("\nlargest changes by header (inclusive lines, before -> after):")
    for d, n in delta[:top]:
        print("  %+14s  %s -> %s  %s" % (_fmt(d), _fmt(before["headers_inclusive"].get(n, 0)),
                                        _fmt(after["headers_inclusive"].get(n, 0)), n))
    tu_delta = sorted((after["tus"].get(s, 0) - before["tus"].get(s, 0), s)
                      for s in set(before["tus"]) | set(after["tus"]))
    print("\nlargest changes by translation unit (lines):")
    for d, s in tu_delta[:top]:
        print("  %+12s  %s" % (_fmt(d), s))


def main():
    parser = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0],
        epilog=__doc__.split("\n\n", 1)[1],
        formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--pattern", default="//...", help="Bazel target pattern (default //...)")
    parser.add_argument("--aquery", help="a saved `bazel aquery ... --output=jsonproto` file")
    parser.add_argument("--execroot",
                        help="where to run the compiler (default: the workspace's folders with "
                             "Bazel's bazel-out and external beside them, in a temporary folder)")
    parser.add_argument("--jobs", type=int, default=2, help="preprocessors run at once (default 2)")
    parser.add_argument("--json", help="write the full report here")
    parser.add_argument("--top", type=int, default=20, help="rows per table (default 20)")
    parser.add_argument("--time", type=int, default=0, metavar="N",
                        help="time -fsyntax-only on N TUs spread over the ranking by lines, the "
                             "heaviest first (CPU seconds, user+sys)")
    parser.add_argument("--from", dest="source_report", metavar="REPORT",
                        help="reuse an earlier --json report's line counts (with --time)")
    parser.add_argument("--compare", nargs=2, metavar=("BEFORE", "AFTER"),
                        help="compare two --json reports instead of measuring")
    args = parser.parse_args()
    if args.compare:
        compare(args.compare[0], args.compare[1], args.top)
        return 0
    started = time.time()
    if args.source_report:
        report = json.load(open(args.source_report))
        aquery = json.load(open(args.aquery)) if args.aquery else _run_aquery(args.pattern)
        report["timings"] = time_sample(report["tus"], compile_commands(aquery),
                                        args.execroot or _execution_root(), args.time)
    else:
        report = measure(args)
    report["elapsed_s"] = round(time.time() - started, 1)
    report["loadavg"] = os.getloadavg()
    if args.json:
        with open(args.json, "w") as f:
            json.dump(report, f, indent=0)
    summarize(report, args.top)
    return 0


if __name__ == "__main__":
    sys.exit(main())
