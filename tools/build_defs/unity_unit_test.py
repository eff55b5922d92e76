#!/usr/bin/env python3
"""unity_unit.py's units and refusals, on sources written here (no compiler, no Bazel)."""

import os
import subprocess
import sys
import tempfile
import unittest

_SCRIPT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "unity_unit.py")


class UnityUnitTest(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.TemporaryDirectory()
        self.addCleanup(self.dir.cleanup)

    def unit(self, sources, *flags):
        """Runs the script on {name: text}; returns (exit status, unit text, stderr)."""
        paths = []
        for name, text in sources.items():
            path = os.path.join(self.dir.name, name)
            with open(path, "w") as f:
                f.write(text)
            paths.append(path)
        out = os.path.join(self.dir.name, "unit.cc")
        run = subprocess.run([sys.executable, _SCRIPT, *flags, out, *paths], capture_output=True, text=True)
        with open(out) as f:
            return run.returncode, f.read(), run.stderr.replace(self.dir.name + "/", "")

    def test_file_local_overloads_in_one_namespace_are_refused(self):
        status, _, err = self.unit({
            "a.cc": "namespace weft {\nnamespace {\nint f(int x) { return x; }\n}  // namespace\n}\n",
            "b.cc": "namespace weft {\nnamespace {\n\ndouble f(double x) { return x; }\n}\n}\n",
        })
        self.assertEqual(status, 1)
        self.assertIn("b.cc:4: `weft::(anonymous)::f` is also declared at a.cc:3, and a file-local "
                      "function of that name would be an overload of the other in one unit; keep the "
                      "later file's file-local names in a namespace named after it, inside its "
                      "anonymous one", err)

    def test_a_static_function_against_the_other_files_declaration(self):
        status, _, err = self.unit({
            "a.cc": "namespace weft {\nvoid run(int);\n}\n",
            "b.cc": "namespace weft {\nstatic void run(double) {}\n}\n",
        })
        self.assertEqual(status, 1)
        self.assertIn("b.cc:2: `weft::run` is also declared at a.cc:2", err)

    def test_names_apart_are_accepted(self):
        status, text, err = self.unit({
            "a.cc": "namespace weft {\nnamespace {\nint f(int x) { return x; }\n"
                    "struct S { int f() { return 1; } };\n}\nint S_f();\n}\n",
            # The tests' rule: the later file's names in a namespace named after it.
            "b.cc": "namespace weft {\nnamespace {\nnamespace b {\ndouble f(double x) { return x; }\n}\n}\n"
                    "// int f(int);  a comment\nconst char* s = \"namespace { int f(int); }\";\n"
                    "int Thing::f(int) { return 0; }\nTEST(Suite, f) {}\n}\n",
            "c.cc": "namespace other {\nnamespace {\nint f(int x) { return x; }\n}\n}\n",
        })
        self.assertEqual((status, err), (0, ""))
        self.assertIn('#line 1 "' + self.dir.name + '/b.cc"\nnamespace weft {', text)

    def test_a_using_directive_at_namespace_scope_is_refused(self):
        status, _, err = self.unit({
            "a.cc": "namespace weft {\nvoid g() { using namespace std; }\n}\n",
            "b.cc": "#include <string>\nnamespace weft {\n\nusing namespace std;\n}\n",
        })
        self.assertEqual(status, 1)
        self.assertEqual(err.count("using namespace"), 1)
        self.assertIn("b.cc:4: `using namespace` at namespace scope would reach the sources after "
                      "it in the unit; put it inside the functions that use it", err)

    def test_a_macro_before_an_include_is_refused_and_later_ones_undefined(self):
        status, _, err = self.unit({
            "a.cc": "#define EIGEN_NO_DEBUG\n#include <vector>\n",
            "b.cc": "#include <vector>\n#define TWICE(x) ((x) * 2)\n#define ONCE 1\n#undef ONCE\n",
        })
        self.assertEqual(status, 1)
        self.assertIn("a.cc: defines EIGEN_NO_DEBUG before an #include: in a unit an earlier source "
                      "may have included that header without it; declare the library with unity = False", err)
        status, text, err = self.unit({"b.cc": "#include <vector>\n#define TWICE(x) ((x) * 2)\n#define ONCE 1\n#undef ONCE\n"})
        self.assertEqual((status, err), (0, ""))
        self.assertTrue(text.endswith("#undef ONCE\n\n#undef TWICE\n"), text)
        self.assertIn('#pragma GCC diagnostic ignored "-Wsubobject-linkage"', text)

    def test_test_units_are_checked_as_library_units_are(self):
        # Session 31 found test units with each of these; the advice names the test.
        status, _, err = self.unit({
            "a_test.cc": "namespace weft {\nnamespace {\nint build(int x) { return x; }\n}\n}\n",
            "b_test.cc": "namespace weft {\nnamespace {\nusing namespace std;\ndouble build(double x) { return x; }\n}\n}\n",
            "c_test.cc": "#define WEFT_SETTING 1\n#include <vector>\n",
        }, "--test")
        self.assertEqual(status, 1)
        self.assertIn("b_test.cc:4: `weft::(anonymous)::build` is also declared at a_test.cc:3", err)
        self.assertIn("b_test.cc:3: `using namespace` at namespace scope would reach the sources after "
                      "it in the unit; put it inside the functions that use it, or inside "
                      "`namespace b_test` within the file's anonymous one", err)
        self.assertIn("c_test.cc: defines WEFT_SETTING before an #include: in a unit an earlier source "
                      "may have included that header without it; declare the test with unity = False", err)

    def test_a_test_files_own_names_are_accepted_in_its_unit(self):
        # The tests' rule: a file's local names (and its using directives) in a namespace
        # named after it, inside its anonymous one; a unit without macros keeps its form.
        sources = {
            "a_test.cc": "namespace weft {\nnamespace {\nint build(int x) { return x; }\n}\n}\n",
            "b_test.cc": "namespace weft {\nnamespace {\nnamespace b_test {  // this file's names\n"
                         "using namespace std;\ndouble build(double x) { return x; }\n}\n}\n}\n",
        }
        status, text, err = self.unit(sources, "--test")
        self.assertEqual((status, err), (0, ""))
        expected = "// Generated by unity_test (tools/build_defs/unity.bzl).\n"
        for name, source in sources.items():
            expected += '#line 1 "%s/%s"\n%s\n' % (self.dir.name, name, source)
        self.assertEqual(text, expected)

    def test_a_using_directive_in_another_files_namespace_is_refused(self):
        status, _, err = self.unit({
            "a_test.cc": "namespace {\nnamespace helpers {\nusing namespace std;\n}\n}\n",
        }, "--test")
        self.assertEqual(status, 1)
        self.assertIn("a_test.cc:3: `using namespace` at namespace scope", err)

    def test_a_test_units_macros_end_with_their_file(self):
        status, text, err = self.unit({"a_test.cc": "#include <vector>\n#define SKIP_WITHOUT_GPU 1\n"}, "--test")
        self.assertEqual((status, err), (0, ""))
        self.assertTrue(text.endswith("#define SKIP_WITHOUT_GPU 1\n\n#undef SKIP_WITHOUT_GPU\n"), text)
        self.assertNotIn("#pragma", text)

if __name__ == "__main__":
    unittest.main()
