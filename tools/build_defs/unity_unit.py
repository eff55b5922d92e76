#!/usr/bin/env python3
"""Writes one unity unit of a library's or a unity test's sources, refusing what a unit
would change (#28).

    unity_unit.py [--test] OUT SOURCE...

OUT gets each SOURCE after a `#line 1 "SOURCE"` (so `__FILE__` and the compiler's messages
name the original file and line), followed by an `#undef` of every macro the source
defines and leaves defined (a macro of one file does not reach the next).

Sources compiled apart never see each other's file-local names; in one unit they share one
scope, and where the compiler cannot tell, a unit would silently change meaning. So this
script fails, naming both files, when

  * a file-local function (in an anonymous namespace, or `static` at namespace scope) of
    one source has the name of a function, type or variable that another source of the
    unit declares at namespace scope: in one unit the two would be overloads of one
    name and a call could pick the other file's;
  * a source has a `using namespace` at namespace scope (it would reach the sources
    after it);
  * a source defines a macro before an `#include` (a setting for a header that an
    earlier source of the unit may already have included without it).

A `using namespace` inside a namespace named after its file (`cse_test` for cse_test.cc),
within the file's anonymous one, reaches no other source and is accepted.

Same-named classes, variables and aliases of different meaning are redefinitions the
compiler reports itself. What is not seen: a file-local function named like one that
only a header of another source declares. The fix for a collision is the tests' rule
(tools/build_defs/unity.bzl): the later file keeps its file-local names in a namespace
named after it, inside its anonymous one; for the other two, the library takes
`unity = False`. With `--test` (a unity_test's unit) the same checks apply; only the
advice (a test that must define a macro first is declared with `unity = False`), the
unit's first line and the pragma below differ, so a test unit whose sources define no
macro is byte for byte what it was before tests were checked.
"""

import os
import re
import sys

_DEFINE = re.compile(r"^\s*#\s*define\s+(\w+)")
_UNDEF = re.compile(r"^\s*#\s*undef\s+(\w+)")
_INCLUDE = re.compile(r"^\s*#\s*include\b")
_TOKEN = re.compile(r'R"([^(\s]*)\(.*?\)\1"|"(?:\\.|[^"\\\n])*"|\'(?:\\.|[^\'\\\n])*\'|//[^\n]*|/\*.*?\*/|[{};]|[^{};"\'/R]+|.', re.S)
_KEYWORDS = {"operator", "decltype", "alignas", "noexcept", "sizeof", "requires", "throw", "__attribute__"}


def preprocessor(text):
    """The macros the source leaves defined, and one defined before an #include, if any."""
    defined, early, included = [], None, False
    for line in text.splitlines():
        if _INCLUDE.match(line):
            included = True
        elif m := _DEFINE.match(line):
            defined.append(m.group(1))
            if not included and early is None and not re.match(r"\w+_H_?$", m.group(1)):
                early = m.group(1)
        elif m := _UNDEF.match(line):
            if m.group(1) in defined:
                defined.remove(m.group(1))
    return defined, early


def _code(text):
    """The source with comments, literals and preprocessor lines blanked (line count kept)."""
    text = re.sub(r"^[ \t]*#(?:[^\n]*\\\n)*[^\n]*", lambda m: "\n" * m.group(0).count("\n"), text, flags=re.M)
    out = []
    for m in _TOKEN.finditer(text):
        token = m.group(0)
        if token.startswith(("//", "/*", '"', "'", 'R"')) and len(token) > 1:
            out.append('""' if token[0] in "\"'R" else " ")
            out.append("\n" * token.count("\n"))
        else:
            out.append(token)
    return "".join(out)


def _declared_name(header):
    """The name a namespace-scope declaration introduces, and whether it is a function."""
    header = re.sub(r"\btemplate\s*<[^;{}]*?>\s*(?=[A-Za-z_\[])", "", header).strip()
    header = re.sub(r"\[\[.*?\]\]", " ", header)
    if m := re.match(r"(?:(?:inline|static|constexpr|const|export)\s+)*(?:struct|class|union|enum(?:\s+(?:class|struct))?)\s+(\w+)\s*(?:final\s*)?(?::[^(]*)?$", header):
        return m.group(1), False
    if m := re.match(r"using\s+(\w+)\s*=", header) or re.match(r"namespace\s+(\w+)\s*=", header):
        return m.group(1), False
    paren, equals = header.find("("), header.find("=")
    if paren >= 0 and (equals < 0 or paren < equals):
        before = header[:paren].rstrip()
        if re.search(r"::\s*~?\w+$", before) or re.search(r"::\s*operator\b", before):
            return None, True  # a member or namespace member defined out of line: not a new name
        if m := re.search(r"operator\s*(\S+|\w+)$", before):
            return "operator" + m.group(1), True
        names = re.findall(r"[A-Za-z_]\w*", before)
        names = [n for n in names if n not in _KEYWORDS]
        if names and re.fullmatch(r"[A-Z][A-Z0-9_]*", names[-1]):
            return None, False  # a macro's use (gtest's TEST, say), not a declaration
        return (names[-1], True) if names else (None, False)
    cut = min([i for i in (header.find("="), header.find("["), header.find("{")) if i >= 0] or [len(header)])
    names = re.findall(r"[A-Za-z_]\w*", header[:cut])
    return (names[-1], False) if names else (None, False)


def namespace_scope(text, own=None):
    """Each namespace-scope declaration of the source: (qualified name, is_function,
    file_local, line), and the lines of its namespace-scope `using namespace` directives
    but those inside a namespace named `own` within an anonymous one (the file's own
    names: no other source of a unit opens it)."""
    code = _code(text)
    declarations, directives = [], []
    scopes = []  # the open namespaces' names: "(anonymous)", or "" for `extern "C"`
    header, start = "", 1
    line = 1
    depth_in_body = 0
    pending = None  # a class's or initializer's declaration, recorded at its body: up to its `;`

    def record(header, at):
        header = " ".join(header.split())
        if not header or header.startswith(("static_assert", "extern template", "template class", "template struct")):
            return
        if re.match(r"using\s+namespace\b", header):
            if not (own in scopes and "(anonymous)" in scopes[: scopes.index(own)]):
                directives.append(at)
            return
        if header.startswith("friend"):
            return
        name, function = _declared_name(header)
        if name:
            local = "(anonymous)" in scopes or bool(re.match(r"(?:\w+\s+)*?static\b", header) and not header.startswith("static_assert"))
            scope = "::".join(part for part in scopes if part)
            declarations.append((scope + "::" + name if scope else name, function, local, at))

    function_body = False  # the body being skipped is a function's: its declaration ends there
    for m in _TOKEN.finditer(code):
        token = m.group(0)
        if depth_in_body:
            depth_in_body += {"{": 1, "}": -1}.get(token, 0)
            if depth_in_body == 0 and function_body:
                header, pending = "", None
        elif token == "{":
            text_before = " ".join(header.split())
            if re.fullmatch(r"(?:inline\s+)?namespace(?:\s+[\w:]+)?", text_before) or re.fullmatch(r'extern\s*""', text_before):
                named = re.search(r"namespace\s+([\w:]+)", text_before)
                scopes.append(named.group(1) if named else "" if "extern" in text_before else "(anonymous)")
                header = ""
            else:
                if pending is None:
                    record(text_before, start)
                    pending = text_before
                function_body = _declared_name(text_before)[1]
                depth_in_body = 1
        elif token == "}":
            if scopes:
                scopes.pop()
            header, pending = "", None
        elif token == ";":
            if pending is None:
                record(header, start)
            header, pending = "", None
        else:
            if not header.strip() and token.strip():
                start = line + token[: len(token) - len(token.lstrip())].count("\n")
            header += token
        line += token.count("\n")
    return declarations, directives


def write_unit(out, sources, test=False):
    """Writes the unit (of a unity_test's members when `test`); returns 1, after saying
    why, when a source is refused."""
    problems, seen = [], {}
    with open(out, "w") as unit:
        unit.write("// Generated by %s (tools/build_defs/unity.bzl).\n" % ("unity_test" if test else "unity_unit.py"))
        if not test:
            # GCC takes a #line'd source for a header, and warns when a class of it has a
            # member of a file-local type (codegen/emit_rows.cc's Emitter::RowLoop): a
            # header's class would differ between the files that include it; a source's
            # does not, as in the source's own compile.
            unit.write('#if defined(__GNUC__) && !defined(__clang__)\n'
                       '#pragma GCC diagnostic ignored "-Wsubobject-linkage"\n#endif\n')
        for source in sources:
            with open(source) as f:
                text = f.read()
            defined, early = preprocessor(text)
            if early:
                problems.append(f"{source}: defines {early} before an #include: in a unit an earlier "
                                "source may have included that header without it; declare the %s "
                                "with unity = False" % ("test" if test else "library"))
            own = re.sub(r"\W", "_", os.path.splitext(os.path.basename(source))[0])
            declarations, directives = namespace_scope(text, own)
            for at in directives:
                problems.append(f"{source}:{at}: `using namespace` at namespace scope would reach the "
                                "sources after it in the unit; put it inside the functions that use it, "
                                f"or inside `namespace {own}` within the file's anonymous one")
            for name, function, local, at in declarations:
                for other, (other_function, other_local, other_at) in seen.get(name, {}).items():
                    if other != source and ((local and function) or (other_local and other_function)):
                        problems.append(f"{source}:{at}: `{name}` is also declared at {other}:{other_at}, and "
                                        "a file-local function of that name would be an overload of the other "
                                        "in one unit; keep the later file's file-local names in a namespace "
                                        "named after it, inside its anonymous one")
            for name, function, local, at in declarations:
                seen.setdefault(name, {}).setdefault(source, (function, local, at))
            unit.write(f'#line 1 "{source}"\n{text}\n')
            for name in defined:
                unit.write(f"#undef {name}\n")
    if problems:
        sys.stderr.write("unity unit %s:\n  %s\n" % (out, "\n  ".join(sorted(set(problems)))))
        return 1
    return 0


if __name__ == "__main__":
    test = sys.argv[1:2] == ["--test"]
    arguments = sys.argv[2 if test else 1:]
    sys.exit(write_unit(arguments[0], arguments[1:], test))
