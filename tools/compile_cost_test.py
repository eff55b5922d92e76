#!/usr/bin/env python3
"""tools/compile_cost.py's counting, on preprocessed text written by hand (no compiler)."""

import os
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import compile_cost  # noqa: E402

# What `g++ -E` prints for a.cc including "x.h" (which includes <vector>, which includes
# <bits/b.h>) and then <map>: line markers, with flag 1 on entering a file and 2 on
# returning to its includer; blank lines are not counted.
_TEXT = b'''# 0 "a.cc"
# 0 "<built-in>"
# 0 "<command-line>"
# 1 "/usr/include/stdc-predef.h" 1 3 4
predef
# 0 "<command-line>" 2
# 1 "a.cc"
# 1 "x.h" 1
x1
# 1 "/usr/include/c++/12/vector" 1 3
v1
v2

# 1 "/usr/include/c++/12/bits/b.h" 1 3
b1
b2
b3
# 3 "/usr/include/c++/12/vector" 2 3
v3
# 2 "x.h" 2
x2
# 2 "a.cc" 2
# 1 "/usr/include/c++/12/map" 1 3
m1
# 3 "a.cc" 2
a1
# 10 "a.cc"
a2
'''


class CountTest(unittest.TestCase):
    def test_counts_lines_per_file(self):
        total, own, inclusive, gateway = compile_cost.count_preprocessed(_TEXT)
        self.assertEqual(total, 12)
        self.assertEqual(own["a.cc"], 2)
        self.assertEqual(own["x.h"], 2)
        self.assertEqual(own["/usr/include/c++/12/vector"], 3)
        self.assertEqual(own["/usr/include/c++/12/bits/b.h"], 3)
        # Inclusive: a file and everything entered while it is on the include stack.
        self.assertEqual(inclusive["x.h"], 8)
        self.assertEqual(inclusive["/usr/include/c++/12/vector"], 6)
        self.assertEqual(inclusive["a.cc"], 11)
        # The predefined header is entered from <command-line>, not from a.cc.
        self.assertEqual(inclusive["/usr/include/stdc-predef.h"], 1)

    def test_gateway_is_our_file_that_includes_the_outside_header(self):
        _, _, _, gateway = compile_cost.count_preprocessed(_TEXT)
        # <vector> and what it includes, charged to x.h; <map> to a.cc.
        self.assertEqual(gateway[("/usr/include/c++/12/vector", "x.h")], 6)
        self.assertEqual(gateway[("/usr/include/c++/12/map", "a.cc")], 1)
        self.assertNotIn(("/usr/include/c++/12/bits/b.h", "x.h"), gateway)

    def test_bazel_output_paths_name_one_header(self):
        self.assertEqual(compile_cost._normalize("bazel-out/k8-fastbuild/bin/bench/aot/mlp.h"),
                         "bazel-out/bin/bench/aot/mlp.h")
        self.assertEqual(compile_cost._normalize("./ir/../ir/graph.h"), "ir/graph.h")


class CommandTest(unittest.TestCase):
    def test_drops_output_and_dependency_flags(self):
        aquery = {"actions": [{"arguments": [
            "/usr/bin/gcc", "-MD", "-MF", "x.d", "-iquote", ".", "-O2", "-c", "a.cc", "-o", "a.o"]}]}
        self.assertEqual(compile_cost.compile_commands(aquery),
                         [("a.cc", ["/usr/bin/gcc", "-iquote", ".", "-O2"])])


if __name__ == "__main__":
    unittest.main()
