// End-to-end tests of the weftc binary, run as a user would (a subprocess in the
// runfiles tree), checking its exit status, what it printed and what it wrote.
// `weftc check`: one located error per malformed file, and --backend=cuda's list of ops
// that would run on the host.
#include <gtest/gtest.h>

#include <algorithm>
#include <string>

#include "tools/weftc/weftc_testing.h"

namespace weft {
namespace {
namespace weftc_check_test {  // this file's names, apart in its package's unity test

using namespace weftc_testing;

TEST(Weftc, CheckReportsOneLocatedErrorPerMalformedFile) {
  struct Case {
    const char* name;
    const char* text;
    const char* expected;
  };
  const Case cases[] = {
      {"truncated.wir", "graph @g(%x: f32[2]) {\n  %y = neg(%x)\n",
       "truncated.wir:3:1: error: unexpected end of file; expected a statement or 'return'"},
      {"unknown_op.wir", "graph @g(%x: f32[2]) {\n  %y = negate(%x)\n  return %y\n}\n",
       "unknown_op.wir:2:8: error: unknown op 'negate'"},
      {"arity.wir", "graph @g(%x: f32[2]) {\n  %y = add(%x)\n  return %y\n}\n",
       "arity.wir:2:8: error: 'add' takes 2 operands, but 1 was given"},
      {"undefined.wir", "graph @g(%x: f32[2]) {\n  %y = add(%x, %z)\n  return %y\n}\n",
       "undefined.wir:2:16: error: use of undefined value '%z'"},
      {"shape.wir",
       "graph @g(%x: f32[2,3], %w: f32[4,5]) {\n  %y = matmul(%x, %w)\n  return %y\n}\n",
       "shape.wir:2:3: error: matmul: contraction dims differ: lhs f32[2,3] has 3 columns but rhs "
       "f32[4,5] has 4 rows"},
  };
  for (const Case& c : cases) {
    std::string path = write_temp(c.name, c.text);
    Result r = weftc("check " + path, "cd " + temp_dir() + " &&");
    EXPECT_EQ(r.exit_code, 1) << c.name;
    // Exactly one line, starting with FILE:LINE:COL: error:
    EXPECT_EQ(std::count(r.out.begin(), r.out.end(), '\n'), 1) << r.out;
    EXPECT_EQ(r.out, temp_dir() + "/" + c.expected + "\n");
  }
}

// `weftc check --backend=cuda` lowers for the GPU (no GPU needed) and names every op that
// would run on the host, at its line.
TEST(Weftc, CheckBackendCudaNamesOpsThatWouldRunOnTheHost) {
  Result r = weftc("check " + kExample + "mlp.wir --backend=cuda");
  EXPECT_EQ(r.exit_code, 0) << r.out;
  EXPECT_NE(r.out.find("mlp.wir: cuda: every op runs on the GPU ("), std::string::npos) << r.out;
  // argmax has no CUDA kernel (a stated gap of runtime/cuda/library.h), nor has an f16
  // random_uniform.
  const std::string path = write_temp("host.wir",
                                      "graph @g(%x: f32[4,6], %k: i64[2]) {\n"
                                      "  %y = argmax(%x) {axis=1}\n"
                                      "  %u = random_uniform(%k) {shape=[4], dtype=f16}\n"
                                      "  return %y, %u\n}\n");
  r = weftc("check host.wir --backend=cuda", "cd " + temp_dir() + " &&");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.out.find("host.wir:2:3: error: program @g would run 2 ops on the host (no CUDA "
                       "kernel for it):\n  argmax at host.wir:2:3 (%y): f32[4,6] -> i64[4]\n"
                       "  random_uniform at host.wir:3:3"),
            std::string::npos)
      << r.out;
  r = weftc("check " + path + " --backend=cpu");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.out.find("error: weftc check: --backend=cpu is not checked; --backend=cuda checks "
                       "that every op runs on the GPU"),
            std::string::npos)
      << r.out;
}

}  // namespace weftc_check_test
}  // namespace
}  // namespace weft
