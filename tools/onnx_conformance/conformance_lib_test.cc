// The conformance runner on cases of its own (written here, so these tests need no
// installed data): the numpy-style comparison, one case end to end on the reference
// interpreter and the CPU backend, worker processes, the table, expected.json and the
// flags, with their messages pinned.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <limits>
#include <sstream>

#include <unistd.h>

#include <nlohmann/json.hpp>

#include "interop/onnx/testing/onnx_builder.h"
#include "tools/onnx_conformance/cli.h"
#include "tools/onnx_conformance/conformance.h"
#include "tools/onnx_conformance/report.h"
#include "tools/onnx_conformance/runner.h"

namespace weft::onnx_conformance {
namespace {
namespace fs = std::filesystem;

Tensor f32(Shape s, std::vector<float> v) { return Tensor::from_vector<float>(std::move(s), v); }

// ---- The comparison

TEST(CompareTensors, WithinTheTolerancesIsClose) {
  // |a - e| <= 1e-7 + 1e-3 * |e|: 1000.9 is within 1000's 1.0000001, 1001.1 is not.
  EXPECT_TRUE(compare_tensors(f32({2}, {1000.9f, 0}), f32({2}, {1000, 0})).close);
  const Comparison c = compare_tensors(f32({2, 2}, {0, 1001.5f, 3, 4}), f32({2, 2}, {0, 1000, 3, 4.5}));
  EXPECT_FALSE(c.close);
  EXPECT_EQ(c.detail, "2 of 4 elements differ; the largest |error| is 1.5 at [0,1]: 1001.5 where 1000 was expected");
  EXPECT_DOUBLE_EQ(c.max_error, 1.5);
}

TEST(CompareTensors, ElementsShownToEveryFloatsDigit) {
  const Comparison c = compare_tensors(f32({1}, {1.0000001f}), f32({1}, {1}), {.rtol = 0, .atol = 0});
  EXPECT_EQ(c.detail, "1 of 1 element differs; the largest |error| is 1.19209e-07 at [0]: 1.00000012 where 1 was expected");
}

TEST(CompareTensors, AbsoluteToleranceNearZero) {
  EXPECT_TRUE(compare_tensors(f32({1}, {5e-8f}), f32({1}, {0})).close);
  EXPECT_FALSE(compare_tensors(f32({1}, {2e-7f}), f32({1}, {0})).close);
  EXPECT_TRUE(compare_tensors(f32({1}, {2e-7f}), f32({1}, {0}), {.rtol = 0, .atol = 1e-6}).close);
}

TEST(CompareTensors, NanEqualsNanAndInfinityOnlyItself) {
  const float nan = std::numeric_limits<float>::quiet_NaN(), inf = std::numeric_limits<float>::infinity();
  EXPECT_TRUE(compare_tensors(f32({3}, {nan, inf, -inf}), f32({3}, {nan, inf, -inf})).close);
  const Comparison c = compare_tensors(f32({2}, {1, inf}), f32({2}, {nan, -inf}));
  EXPECT_FALSE(c.close);
  EXPECT_EQ(c.detail, "2 of 2 elements differ; the largest |error| is inf at [0]: 1 where nan was expected");
  EXPECT_TRUE(std::isinf(c.max_error));
}

TEST(CompareTensors, IntegersAndBoolsExactly) {
  // 2^53 + 1 is not a double: compared as an integer it still differs from 2^53.
  const int64_t big = (int64_t{1} << 53);
  EXPECT_FALSE(compare_tensors(Tensor::from_vector<int64_t>({1}, {big + 1}),
                               Tensor::from_vector<int64_t>({1}, {big})).close);
  EXPECT_TRUE(compare_tensors(Tensor::from_vector<int64_t>({2}, {big + 1, -3}),
                              Tensor::from_vector<int64_t>({2}, {big + 1, -3})).close);
  const Comparison c = compare_tensors(Tensor::from_vector<bool>({2}, {true, false}),
                                       Tensor::from_vector<bool>({2}, {true, true}));
  EXPECT_EQ(c.detail, "1 of 2 elements differs; the largest |error| is 1 at [1]: 0 where 1 was expected");
}

TEST(CompareTensors, DtypeAndShapeMustMatch) {
  Comparison c = compare_tensors(f32({2, 3}, std::vector<float>(6)), f32({3, 2}, std::vector<float>(6)));
  EXPECT_EQ(c.detail, "f32[2,3] where f32[3,2] was expected");
  c = compare_tensors(Tensor::from_vector<double>({1}, {1}), f32({1}, {1}));
  EXPECT_EQ(c.detail, "f64[1] where f32[1] was expected");
  EXPECT_TRUE(std::isinf(c.max_error));
}

TEST(ReasonGroup, DropsWhatNamesOneCase) {
  EXPECT_EQ(reason_group("node 'Conv_3' (Conv, opset 11): the op type is not supported\nmore"),
            "Conv: the op type is not supported");
  EXPECT_EQ(reason_group("test data: /usr/x/node/test_abs/test_data_set_0/input_0.pb: tensor 'x': bad"),
            "test data: input_N.pb: tensor: bad");
  EXPECT_EQ(reason_group("input 'seq' is a sequence; weft's values are tensors"),
            "input is a sequence; weft's values are tensors");
}

// ---- Cases written here

// A case folder `root/category/name` holding `b`'s model and one data set.
Case write_case(const fs::path& root, const std::string& category, const std::string& name,
                onnx_io::OnnxBuilder& b, const std::vector<Tensor>& inputs,
                const std::vector<Tensor>& outputs) {
  const fs::path dir = root / category / name;
  fs::create_directories(dir / "test_data_set_0");
  std::ofstream(dir / "model.onnx", std::ios::binary) << b.model().SerializeAsString();
  auto write = [&](const std::string& prefix, const std::vector<Tensor>& ts) {
    for (size_t i = 0; i < ts.size(); ++i) {
      onnx::TensorProto p;
      onnx_io::tensor_to_proto(ts[i], &p);
      std::ofstream(dir / "test_data_set_0" / (prefix + "_" + std::to_string(i) + ".pb"), std::ios::binary)
          << p.SerializeAsString();
    }
  };
  write("input", inputs);
  write("output", outputs);
  return {category, name, dir.string()};
}

fs::path fresh_dir(const std::string& name) {
  const char* tmp = std::getenv("TEST_TMPDIR");
  const fs::path dir = fs::path(tmp ? tmp : "/tmp") / name;
  fs::remove_all(dir);
  fs::create_directories(dir);
  return dir;
}

// Relu on x = [-1, 2, -3, 4]; `expected` is what the case says it gives.
Case relu_case(const fs::path& root, const std::string& name, std::vector<float> expected) {
  onnx_io::OnnxBuilder b;
  b.input("x", DType::f32, {4});
  b.node("Relu", {"x"}, {"y"});
  b.output("y", DType::f32);
  return write_case(root, "node", name, b, {f32({4}, {-1, 2, -3, 4})}, {f32({4}, expected)});
}

Case unknown_op_case(const fs::path& root) {
  onnx_io::OnnxBuilder b;
  b.input("x", DType::f32, {4});
  b.node("NoSuchOp", {"x"}, {"y"}, "odd");
  b.output("y", DType::f32);
  return write_case(root, "node", "test_unknown", b, {f32({4}, {1, 2, 3, 4})}, {f32({4}, {1, 2, 3, 4})});
}

// In this process only the reference interpreter runs: the CPU backend starts threads,
// and the tests below fork workers (RunCases runs the CPU backend in them).
TEST(RunCase, PassesWhenTheOutputsAgree) {
  const fs::path root = fresh_dir("pass");
  const CaseResult r = run_case(relu_case(root, "test_relu", {0, 2, 0, 4}), {"reference"});
  EXPECT_EQ(r.op_types, std::vector<std::string>{"Relu"});
  EXPECT_EQ(r.backends.at("reference").verdict, Verdict::passed) << r.backends.at("reference").detail;
}

TEST(RunCase, ShapesFedAtRunTimeAreFixedAtImportAndRecorded) {
  // Reshape's shape as a graph input: weft needs it at import, so the runner fixes the
  // data set's non-float inputs and says which.
  const fs::path root = fresh_dir("fixed");
  onnx_io::OnnxBuilder b(13);
  b.input("x", DType::f32, {2, 2});
  b.input("shape", DType::i64, {1});
  b.node("Reshape", {"x", "shape"}, {"y"});
  b.output("y", DType::f32);
  const Case c = write_case(root, "node", "test_reshape_input", b,
                            {f32({2, 2}, {1, 2, 3, 4}), Tensor::from_vector<int64_t>({1}, {4})},
                            {f32({4}, {1, 2, 3, 4})});
  CaseResult r = run_case(c, {"reference"});
  EXPECT_EQ(r.backends.at("reference").verdict, Verdict::passed) << r.backends.at("reference").detail;
  EXPECT_EQ(r.fixed_inputs, "shape");
  StatusOr<CaseResult> back = case_result_from_json(case_result_to_json(r));
  ASSERT_TRUE(back.ok());
  EXPECT_EQ(back->fixed_inputs, "shape");
}

TEST(RunCase, WrongNumbersFail) {
  const fs::path root = fresh_dir("fail");
  const CaseResult r = run_case(relu_case(root, "test_relu", {0, 2, 0, 4.5}), {"reference"});
  const BackendResult& v = r.backends.at("reference");
  EXPECT_EQ(v.verdict, Verdict::failed);
  EXPECT_EQ(v.detail,
            "test_data_set_0: output 0: 1 of 4 elements differs; the largest |error| is 0.5 at [3]: "
            "4 where 4.5 was expected");
  EXPECT_DOUBLE_EQ(v.max_error, 0.5);
}

TEST(RunCase, RefusalsCarryWeftsReason) {
  const fs::path root = fresh_dir("refuse");
  CaseResult r = run_case(unknown_op_case(root), {"reference"});
  EXPECT_EQ(r.backends.at("reference").verdict, Verdict::refused);
  EXPECT_EQ(r.backends.at("reference").detail, "node 'odd' (NoSuchOp, opset 17): the op type is not supported");

  // A data set that gives the model the wrong number of inputs.
  onnx_io::OnnxBuilder b;
  b.input("x", DType::f32, {1});
  b.node("Relu", {"x"}, {"y"});
  b.output("y", DType::f32);
  r = run_case(write_case(root, "node", "test_two_inputs", b, {f32({1}, {1}), f32({1}, {1})}, {f32({1}, {1})}),
               {"reference"});
  EXPECT_EQ(r.backends.at("reference").detail, "test_data_set_0 gives 2 inputs, the model takes 1");

  // A sequence in the model's interface.
  onnx_io::OnnxBuilder s;
  s.input("x", DType::f32, {1});
  s.node("SequenceConstruct", {"x"}, {"seq"});
  s.output("seq", DType::f32);
  onnx::TypeProto seq;
  *seq.mutable_sequence_type()->mutable_elem_type() = s.model().graph().output(0).type();
  *s.model().mutable_graph()->mutable_output(0)->mutable_type() = seq;
  r = run_case(write_case(root, "node", "test_sequence", s, {f32({1}, {1})}, {}), {"reference"});
  EXPECT_EQ(r.backends.at("reference").detail, "output 'seq' is a sequence; weft's values are tensors");

  r = run_case(relu_case(root, "test_relu", {0, 2, 0, 4}), {"tpu"});
  EXPECT_EQ(r.backends.at("tpu").detail, "unknown backend 'tpu'; backends: cpu, cuda, reference");
}

TEST(FindCases, ByCategoryAndFilter) {
  const fs::path root = fresh_dir("find");
  relu_case(root, "test_relu_b", {0, 2, 0, 4});
  relu_case(root, "test_relu_a", {0, 2, 0, 4});
  unknown_op_case(root);
  fs::create_directories(root / "simple");
  StatusOr<std::vector<Case>> cases = find_cases(root.string(), {"node", "simple"}, "relu");
  ASSERT_TRUE(cases.ok()) << cases.error().message;
  ASSERT_EQ(cases->size(), 2u);
  EXPECT_EQ((*cases)[0].name, "test_relu_a");

  cases = find_cases(root.string(), {"nodes"}, "");
  EXPECT_EQ(cases.error().message,
            "unknown category 'nodes'; categories: node, pytorch-converted, pytorch-operator, simple");
  cases = find_cases(root.string(), {"pytorch-operator"}, "");
  EXPECT_EQ(cases.error().message, "no folder '" + (root / "pytorch-operator").string() +
                                       "' (tools/setup installs libonnx-testdata; --data-dir chooses another)");
}

TEST(RunCases, WorkersReturnResultsInCaseOrder) {
  const fs::path root = fresh_dir("workers");
  const std::vector<Case> cases = {relu_case(root, "test_a", {0, 2, 0, 4}), unknown_op_case(root),
                                   relu_case(root, "test_c", {0, 0, 0, 0})};
  int reported = 0;
  RunnerOptions o{.jobs = 2, .timeout_s = 120};
  o.on_result = [&](const CaseResult&) { ++reported; };
  const std::vector<CaseResult> r = run_cases(cases, {{"reference", "cpu"}}, o);
  ASSERT_EQ(r.size(), 3u);
  EXPECT_EQ(reported, 3);
  EXPECT_EQ(r[0].backends.at("reference").verdict, Verdict::passed);
  EXPECT_EQ(r[0].backends.at("cpu").verdict, Verdict::passed) << r[0].backends.at("cpu").detail;
  EXPECT_EQ(r[1].backends.at("reference").verdict, Verdict::refused);
  EXPECT_EQ(r[1].op_types, std::vector<std::string>{"NoSuchOp"});
  EXPECT_EQ(r[2].name, "test_c");
  EXPECT_EQ(r[2].backends.at("reference").verdict, Verdict::failed);
  EXPECT_EQ(r[2].backends.at("cpu").detail,
            "test_data_set_0: output 0: 2 of 4 elements differ; the largest |error| is 4 at [3]: 4 where 0 was "
            "expected");
}

TEST(RunCases, ACrashOrAHangFailsOnlyItsOwnJob) {
  const std::vector<Case> cases = {{"node", "test_ok", ""}, {"node", "test_abort", ""},
                                   {"node", "test_hang", ""}, {"node", "test_after", ""}};
  RunnerOptions o{.jobs = 2, .timeout_s = 1};
  o.run_one = [](const Case& c, const std::vector<std::string>& backends, Tolerance) {
    CaseResult r{c.category, c.name, {"Relu"}, {}};
    if (c.name == "test_abort" && backends[0] == "cpu") {
      std::fprintf(stderr, "a first line\nweft: internal error: the last line\n");
      std::abort();
    }
    if (c.name == "test_hang" && backends[0] == "reference") ::sleep(30);
    r.backends[backends[0]] = {Verdict::passed, "", 0};
    return r;
  };
  const std::vector<CaseResult> r = run_cases(cases, {{"reference", "cpu"}}, o);
  ASSERT_EQ(r.size(), 4u);
  EXPECT_EQ(r[0].backends.at("cpu").verdict, Verdict::passed);
  EXPECT_EQ(r[1].backends.at("reference").verdict, Verdict::passed);
  EXPECT_EQ(r[1].backends.at("cpu").verdict, Verdict::failed);
  EXPECT_EQ(r[1].backends.at("cpu").detail, "crashed (Aborted): weft: internal error: the last line");
  EXPECT_EQ(r[2].backends.at("reference").detail, "timed out after 1 s (--timeout)");
  EXPECT_EQ(r[2].backends.at("cpu").verdict, Verdict::passed);
  EXPECT_EQ(r[3].backends.at("reference").verdict, Verdict::passed);
  EXPECT_EQ(r[3].backends.at("cpu").verdict, Verdict::passed);
}

// ---- The report

std::vector<CaseResult> sample_results() {
  CaseResult a{"node", "test_a", {"Relu"}, {}};
  a.backends["reference"] = {Verdict::passed, "", 0};
  a.backends["cpu"] = {Verdict::failed, "test_data_set_0: output 0: off", 0.25};
  CaseResult b{"node", "test_b", {"Conv", "Relu"}, {}};
  b.backends["reference"] = {Verdict::refused, "node 'c1' (Conv, opset 11): the op type is not supported", 0};
  b.backends["cpu"] = b.backends["reference"];
  CaseResult c{"simple", "test_c", {"Conv"}, {}};
  c.backends["reference"] = {Verdict::refused, "node 'c9' (Conv, opset 13): the op type is not supported", 0};
  c.backends["cpu"] = c.backends["reference"];
  return {a, b, c};
}

TEST(Report, TableCountsPerCategoryAndOpType) {
  const std::string t = format_table(sample_results(), {"reference", "cpu"});
  std::istringstream lines(t);
  std::vector<std::string> rows;
  for (std::string line; std::getline(lines, line);) rows.push_back(line);
  ASSERT_GE(rows.size(), 8u) << t;
  EXPECT_EQ(rows[2], "category node                              1       0       1         0       1       1  "
                     "cpu worst test_a (|error| 0.25)");
  EXPECT_EQ(rows[3], "category simple                            0       0       1         0       0       1  "
                     "refused: Conv: the op type is not supported");
  EXPECT_EQ(rows[5], "  Conv                                     0       0       2         0       0       2  "
                     "refused: Conv: the op type is not supported");
  EXPECT_EQ(rows[7], "total                                      1       0       2         0       1       2  "
                     "cpu worst test_a (|error| 0.25)");
  EXPECT_NE(t.find("failures on cpu:\n  node/test_a: test_data_set_0: output 0: off\n"), std::string::npos) << t;
  EXPECT_NE(t.find("refusals on reference, by reason:\n     2  Conv: the op type is not supported\n"),
            std::string::npos) << t;
}

TEST(Report, CaseResultsRoundTripThroughJson) {
  CaseResult r = sample_results()[0];
  r.backends["cuda"] = {Verdict::failed, "crashed", std::numeric_limits<double>::infinity()};
  StatusOr<CaseResult> back = case_result_from_json(case_result_to_json(r));
  ASSERT_TRUE(back.ok()) << back.error().message;
  EXPECT_EQ(back->op_types, r.op_types);
  EXPECT_EQ(back->backends.at("cpu").detail, "test_data_set_0: output 0: off");
  EXPECT_DOUBLE_EQ(back->backends.at("cpu").max_error, 0.25);
  EXPECT_TRUE(std::isinf(back->backends.at("cuda").max_error));
  EXPECT_EQ(back->backends.at("reference").verdict, Verdict::passed);
  EXPECT_FALSE(case_result_from_json("{\"category\": 1}").ok());
}

TEST(Report, ResultsJsonHoldsTheTablesCounts) {
  const nlohmann::json j = nlohmann::json::parse(results_json(sample_results(), {"reference", "cpu"}));
  EXPECT_EQ(j["categories"]["node"]["cpu"],
            nlohmann::json::parse(R"({"passed": 0, "failed": 1, "refused": 1})"));
  EXPECT_EQ(j["op_types"]["Conv"]["reference"]["refused"], 2);
  EXPECT_EQ(j["total"]["reference"]["refusal_reasons"]["Conv: the op type is not supported"], 2);
  EXPECT_EQ(j["cases"][0]["backends"]["cpu"]["max_error"], 0.25);
  EXPECT_EQ(j["cases"][1]["op_types"], nlohmann::json::parse(R"(["Conv", "Relu"])"));
}

TEST(Expected, RoundTripAndDrift) {
  const fs::path dir = fresh_dir("expected");
  const std::string path = (dir / "expected.json").string();
  Expected e = expected_from(sample_results(), {"reference", "cpu"});
  EXPECT_EQ(e.passing["reference"]["node"], std::set<std::string>{"test_a"});
  EXPECT_TRUE(e.passing["cpu"]["simple"].empty());
  std::ofstream(path) << expected_json(e);
  StatusOr<Expected> back = read_expected(path);
  ASSERT_TRUE(back.ok()) << back.error().message;
  EXPECT_EQ(back->passing, e.passing);

  // test_a regresses on the reference; a case listed for cpu passes nowhere new.
  std::vector<CaseResult> now = sample_results();
  now[0].backends["reference"] = {Verdict::refused, "node 'r' (Relu, opset 17): no", 0};
  now[2].backends["cpu"] = {Verdict::passed, "", 0};
  const Drift d = compare_with_expected(*back, now);
  EXPECT_EQ(d.regressions, std::vector<std::string>{"reference node/test_a: refused: node 'r' (Relu, opset 17): no"});
  EXPECT_EQ(d.new_passes, std::vector<std::string>{"cpu simple/test_c"});

  // Merging replaces the categories run and keeps the others.
  Expected update;
  update.passing["cpu"]["simple"] = {"test_c"};
  const Expected merged = merge_expected(*back, update);
  EXPECT_EQ(merged.passing.at("cpu").at("simple"), std::set<std::string>{"test_c"});
  EXPECT_EQ(merged.passing.at("reference").at("node"), std::set<std::string>{"test_a"});

  std::ofstream(path) << "{\"passing\": 3}";
  EXPECT_EQ(read_expected(path).error().message.substr(0, path.size() + 32),
            path + ": not an expected-results file: ");
  EXPECT_EQ(read_expected((dir / "none.json").string()).error().message,
            "cannot read the expected results " + (dir / "none.json").string() +
                ": cannot open for reading: No such file or directory");
}

// ---- The command line

TEST(Cli, Flags) {
  StatusOr<CliOptions> o = parse_cli({"--categories=node,simple", "--filter", "relu", "--backends=reference",
                                      "--jobs=3", "--verbose", "--rtol=0", "--atol=1e-5"});
  ASSERT_TRUE(o.ok()) << o.error().message;
  EXPECT_EQ(o->categories, (std::vector<std::string>{"node", "simple"}));
  EXPECT_EQ(o->filter, "relu");
  EXPECT_EQ(o->backends, std::vector<std::string>{"reference"});
  EXPECT_EQ(o->jobs, 3);
  EXPECT_EQ(o->tolerance.rtol, 0);
  EXPECT_EQ(o->tolerance.atol, 1e-5);
  EXPECT_TRUE(o->verbose);
  EXPECT_EQ(o->data_dir, kDefaultDataDir);
}

TEST(Cli, HelpDescribesEveryFlag) {
  for (const char* flag : {"--data-dir=", "--categories=", "--filter=", "--backends=", "--json=", "--expected=",
                           "--rtol=", "--atol=", "--update-expected", "--jobs=", "--timeout=", "--in-process", "--verbose"}) {
    EXPECT_NE(std::string(kHelp).find(std::string("\n  ") + flag), std::string::npos) << flag;
  }
  EXPECT_TRUE(parse_cli({"--help"})->help);
  EXPECT_TRUE(parse_cli({"-h"})->help);
}

TEST(Cli, ErrorsNameTheFlag) {
  auto error = [](std::vector<std::string> argv) {
    StatusOr<CliOptions> o = parse_cli(argv);
    return o.ok() ? std::string("ok") : o.error().message;
  };
  EXPECT_EQ(error({"--bogus"}),
            "onnx_conformance: unknown flag '--bogus'; flags: --data-dir, --categories, --filter, --backends, "
            "--json, --expected, --rtol, --atol, --jobs, --timeout, --update-expected, --in-process, --verbose, --help");
  EXPECT_EQ(error({"node"}), "onnx_conformance: unexpected argument 'node' (see --help)");
  EXPECT_EQ(error({"--jobs=0"}), "onnx_conformance: --jobs expects a whole number in [1, 64], got '0'");
  EXPECT_EQ(error({"--timeout=1.5"}), "onnx_conformance: --timeout expects a whole number in [1, 86400], got '1.5'");
  EXPECT_EQ(error({"--rtol=-1"}), "onnx_conformance: --rtol expects a number >= 0, got '-1'");
  EXPECT_EQ(error({"--atol=x"}), "onnx_conformance: --atol expects a number >= 0, got 'x'");
  EXPECT_EQ(error({"--json"}), "onnx_conformance: --json needs a value");
  EXPECT_EQ(error({"--verbose=yes"}), "onnx_conformance: --verbose takes no value");
  EXPECT_EQ(error({"--categories="}), "onnx_conformance: --categories names no category");
  EXPECT_EQ(error({"--backends=,"}), "onnx_conformance: --backends names no backend");
  EXPECT_EQ(error({"--update-expected", "--filter=x"}),
            "onnx_conformance: --update-expected records whole categories; leave out --filter");
}

TEST(Cli, RunsPrintsAndUpdatesExpected) {
  const fs::path root = fresh_dir("cli");
  relu_case(root, "test_relu", {0, 2, 0, 4});
  unknown_op_case(root);
  const std::string expected = (root / "expected.json").string();
  std::ostringstream out, err;
  StatusOr<CliOptions> o = parse_cli({"--data-dir=" + root.string(), "--categories=node", "--backends=reference",
                                      "--expected=" + expected, "--update-expected", "--jobs=1"});
  ASSERT_TRUE(o.ok()) << o.error().message;
  EXPECT_EQ(run_cli(*o, out, err), 0) << err.str();
  EXPECT_NE(out.str().find("wrote " + expected), std::string::npos) << out.str();
  EXPECT_EQ(read_expected(expected)->passing.at("reference").at("node"), std::set<std::string>{"test_relu"});

  // Now the case's expected output changes: a regression, exit status 1.
  relu_case(root, "test_relu", {1, 2, 0, 4});
  o->update_expected = false;
  out.str("");
  EXPECT_EQ(run_cli(*o, out, err), 1);
  EXPECT_NE(out.str().find(": 1 regressions, 0 new passes\n  REGRESSION reference node/test_relu: failed: "),
            std::string::npos) << out.str();

  o->json_path = (root / "no_such_dir" / "r.json").string();
  std::ostringstream err2;
  EXPECT_EQ(run_cli(*o, out, err2), 1);
  EXPECT_EQ(err2.str(), "onnx_conformance: cannot write --json=" + o->json_path + ": the directory " +
                            (root / "no_such_dir").string() + " does not exist\n");
}

}  // namespace
}  // namespace weft::onnx_conformance
