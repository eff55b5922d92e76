"""A package's tests compiled as a few translation units and linked as one binary (#28).

Parsing dominates this tree's compile time: every test source parses <gtest/gtest.h> (about
1 CPU s) and the standard library (about 0.5 s) before its own code, and a cold `tools/test`
compiles over 250 of them. A unity test compiles several of a package's test sources as
one translation unit, so those headers are parsed once per unit, and links one binary
instead of one per test (bench/RESULTS.md, "#28 fewer translation units").

Use in a package's BUILD file:

    load("//tools/build_defs:unity.bzl", "cc_test", "unity_test")

    cc_test(name = "cse_test", srcs = ["cse_test.cc"], deps = [...])   # as before
    ...
    unity_test(name = "unity_test")   # last in the file

Each `cc_test` stays a target of its own, tagged `manual`: `bazel test //pkg:cse_test`
builds and runs that one source alone (a developer's one-file rebuild), while `bazel test
//...` and `tools/test` run `unity_test`, which compiles and runs every member's cases (the
union of their deps and data). A member whose sources cannot share a unit (it needs its own
`args`, `env`, `copts`, `tags` or `main`) is declared with `unity = False`: it stays an
ordinary test.

The member sources of one unit share one scope: two members cannot both define a
file-local helper (anonymous namespace or `static`) of the same name. The compiler says
which, naming the original files; the later file then keeps its names in a namespace
named after it, inside its anonymous one (`namespace { namespace cse_test { ... } }`).
Compile errors, `__FILE__` and gtest's failure messages name the original file and line.
The members' own targets are not built by `//...`: a member that compiles only inside
its unit (it leans on a header or helper another member brought in) is caught when it is
built by name, not by CI.
"""

load("@rules_cc//cc:defs.bzl", _cc_library = "cc_library", _cc_test = "cc_test")

_MEMBER_TAG = "unity_member"
_UNIT_SCRIPT = "//tools/build_defs:unity_unit.py"
_OFF = "//tools/build_defs:unity_off"  # --define=weft_unity=off
_UNITY_TAG = "unity_test"

# Attributes a member may not set: a unity binary has one command line, one environment
# and one set of compile options for all of its members.
_UNSHARED = ["args", "env", "copts", "linkopts", "local_defines", "defines", "malloc", "shard_count", "timeout", "flaky"]

def cc_test(name, unity = True, tags = [], **kwargs):
    """A cc_test; with `unity` (the default) it is also a member of the package's unity_test."""
    if unity:
        for attribute in _UNSHARED:
            if attribute in kwargs:
                fail("%s: a unity member cannot set `%s`; declare it with unity = False" % (name, attribute))
        for rule in native.existing_rules().values():
            if _UNITY_TAG in rule["tags"]:
                fail("%s: declared after unity_test %s, which would not run it; declare it above" % (name, rule["name"]))
        if tags:
            fail("%s: a unity member cannot carry tags (%s would apply to every member: " % (name, tags) +
                 "tools/sanitize's no_sanitizer, say); declare it with unity = False")
        tags = ["manual", _MEMBER_TAG]
    _cc_test(name = name, tags = tags, **kwargs)

def _units(pattern, sources, sources_per_unit, testonly, check):
    """Splits `sources` (in name order) into as few units of at most `sources_per_unit` as
    they fill, evenly, and returns the units' file names (`pattern` % its index)."""
    units = []
    unit_count = (len(sources) + sources_per_unit - 1) // sources_per_unit
    per_unit = (len(sources) + unit_count - 1) // unit_count  # as even as the count allows
    for start in range(0, len(sources), per_unit):
        unit = pattern % len(units)

        # Each source is copied in after a #line naming it as its own compile names it, so
        # __FILE__ (the builders' source locations, gtest's messages) and the compiler's
        # errors read "pkg/file.cc:LINE" exactly as in the source's own compile; the
        # script refuses what would change meaning in one unit (its header says what).
        native.genrule(
            name = unit[:-len(".cc")] + "_src",
            srcs = sources[start:start + per_unit],
            outs = [unit],
            tools = [_UNIT_SCRIPT],
            cmd = "/usr/bin/python3 $(location %s) %s$@ $(SRCS)" % (_UNIT_SCRIPT, "" if check else "--test "),
            testonly = testonly,
        )
        units.append(unit)
    return units

def cc_library(name, srcs = [], unity = True, sources_per_unit = 8, testonly = False, **kwargs):
    """A cc_library whose `.cc` sources compile as units of at most `sources_per_unit`.

    The library keeps its name, headers, deps, options and linking (`copts`, `alwayslink`
    apply to its units as to its sources); only its object files change, one per unit.
    `unity = False`, or a build with `--define=weft_unity=off`, compiles each source alone.
    """
    sources = [source for source in srcs if source.endswith(".cc")]
    if not unity or len(sources) < 2:
        _cc_library(name = name, srcs = srcs, testonly = testonly, **kwargs)
        return
    units = _units(name + "_unit%d.cc", sorted(sources), sources_per_unit, testonly, check = True)
    rest = [source for source in srcs if not source.endswith(".cc")]
    _cc_library(
        name = name,
        srcs = select({_OFF: srcs, "//conditions:default": units + rest}),
        testonly = testonly,
        **kwargs
    )

_SIZES = ["small", "medium", "large", "enormous"]

def _union(lists):
    seen = {}
    for values in lists:
        for value in values:
            seen[value] = True
    return sorted(seen.keys())

def unity_test(name, sources_per_unit = 12, shard_count = 2):
    """One cc_test running every unity member declared above it in this package.

    The members' `.cc` sources, in name order, are split into as few units of at most
    `sources_per_unit` as they fill, evenly (so one edited test recompiles one unit, not
    the package's every test, and the units of a large package compile in parallel);
    `shard_count` processes run the cases (gtest's sharding), each with the size's timeout.
    """
    members = [
        rule
        for rule in native.existing_rules().values()
        if rule["kind"] == "cc_test" and _MEMBER_TAG in rule["tags"]
    ]
    if not members:
        fail("unity_test %s: no cc_test loaded from //tools/build_defs:unity.bzl above it" % name)
    sources = _union([[s for s in rule["srcs"] if s.endswith(".cc")] for rule in members])
    headers = _union([[s for s in rule["srcs"] if not s.endswith(".cc")] for rule in members])
    for source in sources:
        if not source.startswith(":"):
            fail("unity_test %s: member source %s is not a file of this package" % (name, source))
    # Named as a test source, so .bazelrc's options for test sources (`-O1`, by
    # `--per_file_copt=.*_test\.cc@...`) reach the units as they reach each member's own
    # compile; a unit named otherwise compiles at the libraries' -O2 (about a fifth more).
    units = _units(name + "_unit%d_test.cc", sources, sources_per_unit, testonly = True, check = False)
    _cc_test(
        name = name,
        srcs = units + headers,
        deps = _union([rule["deps"] for rule in members]),
        data = _union([rule["data"] for rule in members]),
        size = _SIZES[max([_SIZES.index(rule["size"]) for rule in members])],
        shard_count = shard_count,
        tags = [_UNITY_TAG],
    )
