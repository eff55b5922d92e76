// Runs every case of tests/fixtures/cases.json (made independently with NumPy and
// PyTorch by tests/fixtures/make_fixtures.py) through the reference interpreter: one
// single-node graph per case (testing/fixture_cases.h), typed by the shape rules, compared
// with the expected output within the case's tolerance. Also checks that every op has a
// case.

#include <set>

#include <gtest/gtest.h>

#include "runtime/reference/interpreter.h"
#include "runtime/reference/testing/fixture_cases.h"

namespace weft::reference {
namespace {

using testing::FixtureCase;
using testing::FixtureEntry;

std::vector<FixtureEntry> load_entries() {
  StatusOr<std::vector<FixtureEntry>> loaded = testing::load_fixture_cases();
  EXPECT_TRUE(loaded.ok()) << loaded.error().to_string();
  return loaded.ok() ? std::move(*loaded) : std::vector<FixtureEntry>{};
}

const std::vector<FixtureEntry>& entries() {
  static const std::vector<FixtureEntry> all = load_entries();
  return all;
}

// Runs one case; on failure returns what went wrong.
std::string run_case(const FixtureEntry& e) {
  if (!e.built.ok()) return e.built.error().message;
  const FixtureCase& c = *e.built;
  StatusOr<RunResult> r = run(c.graph, c.inputs);
  if (!r.ok()) return r.error().to_string();
  const Tensor& got = testing::case_result(*r, c);
  std::string why;
  if (!all_close(got, c.want, c.tol, &why)) {
    return why + "\n  got:  " + tensor_to_string(got, 12) +
           "\n  want: " + tensor_to_string(c.want, 12);
  }
  return "";
}

TEST(FixturesTest, EveryCaseMatchesNumpyAndTorch) {
  ASSERT_GT(entries().size(), 0u);
  int failures = 0;
  for (const FixtureEntry& e : entries()) {
    std::string err = run_case(e);
    if (!err.empty()) {
      ++failures;
      ADD_FAILURE() << e.name << " (" << e.op << "): " << err;
    }
  }
  std::printf("%zu fixture cases, %d failed\n", entries().size(), failures);
}

TEST(FixturesTest, EveryOpHasACase) {
  std::set<std::string> covered;
  for (const FixtureEntry& e : entries()) covered.insert(e.op);
  for (Op op : all_ops()) {
    // A fused kernel computes its body with the other ops' kernels; fuse_test checks it.
    // So does a loop: frontend:loop_test (against the body applied by hand),
    // frontend:recurrent_parity_test (against PyTorch's GRU and LSTM) and
    // passes:unroll_scans_test check its semantics.
    if (op == Op::Fused || op == Op::Scan) continue;
    EXPECT_TRUE(covered.count(std::string(op_name(op))))
        << "no fixture case for " << op_name(op) << "; add one to make_fixtures.py";
  }
}

}  // namespace
}  // namespace weft::reference
