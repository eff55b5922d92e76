// End-to-end tests of the weftc binary, run as a user would (a subprocess in the
// runfiles tree), checking its exit status, what it printed and what it wrote.
// `weftc dump`: formats, --after, --dump-dir and --precision (where autocast put the
// casts, the weight copies a training step keeps).
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "ir/json.h"
#include "tools/weftc/weftc_testing.h"

namespace weft {
namespace {
namespace weftc_dump_test {  // this file's names, apart in its package's unity test

using namespace weftc_testing;

int count(const std::string& text, const std::string& what) {
  int n = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

// --dump-dir on a whole training step (forward, backward, SGD updates with their
// assigns): every pass of the cpu pipeline, in order, as .wir, .json and .dot.
TEST(Weftc, DumpDirWritesEveryPassInEveryFormat) {
  const std::string dir = temp_dir() + "/dumps";
  Result r = weftc("dump examples/fashion_mnist/mlp_train_step.wir --after=schedule-memory --dump-dir=" + dir);
  ASSERT_EQ(r.exit_code, 0) << r.out;
  std::vector<std::string> files;
  for (const auto& entry : std::filesystem::directory_iterator(dir)) files.push_back(entry.path().filename().string());
  std::sort(files.begin(), files.end());
  // NN-PASS.{dot,json,wir} for NN = 01, 02, ... in pipeline order: the default pipeline,
  // then the cpu backend's passes up to schedule-memory.
  ASSERT_EQ(files.size() % 3, 0u);
  std::vector<std::string> passes;
  for (size_t i = 0; i < files.size(); i += 3) {
    const std::string stem = files[i].substr(0, files[i].size() - 4);
    EXPECT_EQ(files[i], stem + ".dot");
    EXPECT_EQ(files[i + 1], stem + ".json");
    EXPECT_EQ(files[i + 2], stem + ".wir");
    char number[24];
    std::snprintf(number, sizeof(number), "%02zu", i / 3 + 1);
    EXPECT_EQ(stem.substr(0, 3), std::string(number) + "-") << stem;
    passes.push_back(stem);
  }
  ASSERT_GE(passes.size(), 8u);
  const std::vector<std::string> first = {"01-infer-types", "02-canonicalize", "03-fold-constants", "04-dce", "05-cse"};
  EXPECT_EQ(std::vector<std::string>(passes.begin(), passes.begin() + 5), first);
  EXPECT_EQ(passes.back().substr(3), "schedule-memory");
  EXPECT_NE(std::find_if(passes.begin(), passes.end(),
                         [](const std::string& p) { return p.substr(3) == "fuse-elementwise"; }),
            passes.end());
  // The last dump is what was printed; every dump parses back; the step keeps its assigns.
  std::ifstream last(dir + "/" + passes.back() + ".wir");
  std::string text((std::istreambuf_iterator<char>(last)), std::istreambuf_iterator<char>());
  EXPECT_EQ(text, r.out);
  EXPECT_NE(text.find("assign("), std::string::npos);
  EXPECT_NE(text.find("fused("), std::string::npos);
  for (const std::string& pass : passes) {
    std::ifstream json(dir + "/" + pass + ".json");
    std::string j((std::istreambuf_iterator<char>(json)), std::istreambuf_iterator<char>());
    EXPECT_TRUE(graph_from_json(j, pass).ok()) << pass;
    std::ifstream dot(dir + "/" + pass + ".dot");
    std::string d((std::istreambuf_iterator<char>(dot)), std::istreambuf_iterator<char>());
    EXPECT_EQ(d.rfind("digraph", 0), 0u) << pass;
  }
}

// merge-updates, lowering's last graph pass, is offered like the others (the graph the
// memory plan and the Program are made from); the reference backend lowers nothing, so
// it has no such pass; viz keeps schedule-memory as its default stage
// (VizWritesAPageAndAMemoryPicture).
TEST(Weftc, DumpAfterMergeUpdates) {
  const std::string step = "examples/fashion_mnist/mlp_train_step.wir";
  Result merged = weftc("dump " + step + " --after=merge-updates --no-locations");
  ASSERT_EQ(merged.exit_code, 0) << merged.out;
  Result scheduled = weftc("dump " + step + " --after=schedule-memory --no-locations");
  ASSERT_EQ(scheduled.exit_code, 0) << scheduled.out;
  // This step's six SGD update kernels already sit together after schedule-memory, so
  // merging them into one kernel moves no node.
  EXPECT_EQ(merged.out, scheduled.out);
  Result again = weftc("dump " + write_temp("merged.wir", merged.out) + " --after=parse --no-locations");
  EXPECT_EQ(again.out, merged.out);
  const std::string dir = temp_dir() + "/merge_dumps";
  Result r = weftc("dump " + step + " --after=merge-updates --dump-dir=" + dir);
  ASSERT_EQ(r.exit_code, 0) << r.out;
  std::vector<std::string> files;
  for (const auto& entry : std::filesystem::directory_iterator(dir)) files.push_back(entry.path().filename().string());
  std::sort(files.begin(), files.end());
  ASSERT_FALSE(files.empty());
  EXPECT_EQ(files.back().substr(2), "-merge-updates.wir");
  std::ifstream last(dir + "/" + files.back());
  EXPECT_EQ(std::string((std::istreambuf_iterator<char>(last)), std::istreambuf_iterator<char>()),
            r.out);
  r = weftc("dump " + step + " --after=merge-updates --backend=reference");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_EQ(r.out, "error: weftc dump: pass 'merge-updates' is not in the reference backend's pipeline; it runs "
                   "with --backend=cpu or --backend=cuda\n");
}

TEST(Weftc, DumpFormatsAndPasses) {
  std::string wir = kExample + "mlp.wir";
  Result r = weftc("dump " + wir + " --no-locations");
  ASSERT_EQ(r.exit_code, 0) << r.out;
  EXPECT_NE(r.out.find("  %h = matmul(%x, %w1) : f32[8,32]\n"), std::string::npos) << r.out;
  r = weftc("dump " + wir + " --format=dot");
  ASSERT_EQ(r.exit_code, 0) << r.out;
  EXPECT_EQ(r.out.rfind("digraph \"mlp\" {", 0), 0u) << r.out;
  // JSON out and back in again gives the same text.
  std::string json = temp_dir() + "/mlp.json";
  r = weftc("dump " + wir + " --format=json -o " + json);
  ASSERT_EQ(r.exit_code, 0) << r.out;
  Result from_json = weftc("dump " + json + " --after=parse");
  Result from_text = weftc("dump " + wir);
  EXPECT_EQ(from_json.out, from_text.out);
  r = weftc("dump " + wir + " --after=fuse");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.out.find("fuse"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("infer-types"), std::string::npos) << r.out;
  r = weftc("dump " + wir + " --format=svg");
  EXPECT_EQ(r.out, "error: weftc dump: unknown format 'svg'; formats: text, json, dot, ptx\n");
  // The cpu backend's passes: fused kernels print with their bodies and parse back. The
  // first Linear layer and its gelu are one contraction: the GEMM, then its epilogue.
  r = weftc("dump " + wir + " --after=fuse-elementwise --no-locations");
  ASSERT_EQ(r.exit_code, 0) << r.out;
  EXPECT_NE(r.out.find("  %a = fused(%x, %w1, %b1) {kind=\"contraction\"} : f32[8,32] ({\n"
                       "    ^body(%0: f32[8,16], %1: f32[16,32], %2: f32[32]):\n"
                       "      %t0 = matmul(%0, %1) : f32[8,32]\n"
                       "      %t1 = add(%t0, %2) : f32[8,32]\n"
                       "      %t2 = gelu(%t1) {approximate=\"tanh\"} : f32[8,32]\n"
                       "      return %t2\n"),
            std::string::npos)
      << r.out;
  EXPECT_EQ(weftc("dump " + wir + " --after=fuse-contraction-epilogue --no-locations").exit_code,
            0);
  std::string fused = write_temp("fused.wir", r.out);
  Result again = weftc("dump " + fused + " --after=parse --no-locations");
  EXPECT_EQ(again.out, r.out);
  r = weftc("dump " + wir + " --after=fuse-elementwise --backend=reference");
  EXPECT_EQ(r.exit_code, 1);
  r = weftc("dump " + wir + " --backend=tpu");
  EXPECT_EQ(r.out, "error: weftc dump: unknown backend 'tpu'; backends: cpu, cuda, reference\n");
}

// A pass only another backend runs was "unknown pass" (it is known: to that backend). (An
// empty --after, which ran the whole pipeline, is weftc_test's AnEmptyFlagValueIsRefused.)
TEST(Weftc, DumpAfterAPassOfAnotherBackendOrNone) {
  const std::string wir = kExample + "mlp.wir";
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"dump " + wir + " --after=mask-loop-exits",
       "weftc dump: pass 'mask-loop-exits' is not in the cpu backend's pipeline; it runs with --backend=cuda"},
      {"dump " + wir + " --after=fuse-elementwise --backend=reference",
       "weftc dump: pass 'fuse-elementwise' is not in the reference backend's pipeline; it runs with "
       "--backend=cpu or --backend=cuda"},
      {"viz " + wir + " --after=split-reductions -o " + temp_dir() + "/v.html",
       "weftc viz: pass 'split-reductions' is not in the cpu backend's pipeline; it runs with --backend=cuda"},
  };
  for (const auto& [command, error] : cases) {
    const Result r = weftc(command);
    EXPECT_EQ(r.exit_code, 1) << command;
    EXPECT_EQ(r.out, "error: " + error + "\n") << command;
  }
  EXPECT_EQ(weftc("dump " + wir + " --after=mask-loop-exits --backend=cuda").exit_code, 0);
}

// The passes the error of an unknown --after lists for BACKEND, in pipeline order.
std::vector<std::string> known_passes(const std::string& backend) {
  Result r = weftc("dump " + kExample + "mlp.wir --after=bogus --backend=" + backend);
  const std::string prefix = "error: unknown pass 'bogus'; known passes: ";
  EXPECT_EQ(r.out.rfind(prefix, 0), 0u) << r.out;
  std::vector<std::string> passes;
  std::string list = r.out.substr(prefix.size());
  while (!list.empty() && list.back() == '\n') list.pop_back();
  for (size_t at = 0; at <= list.size();) {
    const size_t comma = std::min(list.find(", ", at), list.size());
    passes.push_back(list.substr(at, comma - at));
    at = comma + 2;
  }
  return passes;
}

// `weftc dump --help` names the cpu pipeline's passes as --after accepts them, in order,
// and each pass the cuda pipeline adds, after the one --help says it follows (a pass
// listed for the wrong backend, such as fold-window-producers, fails here).
TEST(Weftc, DumpHelpListsThePipelinesPasses) {
  Result r = weftc("dump --help");
  ASSERT_EQ(r.exit_code, 0) << r.out;
  // The help's words between "Passes: " and " (cuda:", lines joined.
  std::string help;
  for (char c : r.out) {
    if (c != '\n' && !(c == ' ' && !help.empty() && help.back() == ' ')) help += c;
  }
  const size_t begin = help.find("Passes: ");
  const size_t end = help.find(" (cuda:", begin);
  ASSERT_NE(begin, std::string::npos) << help;
  ASSERT_NE(end, std::string::npos) << help;
  std::string listed = help.substr(begin + 8, end - begin - 8);
  const std::string then = ", then for the cpu backend ";
  ASSERT_NE(listed.find(then), std::string::npos) << listed;
  listed.replace(listed.find(then), then.size(), ", ");
  std::string cpu_list;
  const std::vector<std::string> cpu = known_passes("cpu");
  for (const std::string& pass : cpu) cpu_list += (cpu_list.empty() ? "" : ", ") + pass;
  EXPECT_EQ(listed, cpu_list);
  // cuda: the cpu's passes plus the three the help's parenthesis places.
  const std::string cuda_note = help.substr(end, help.find(')', end) - end);
  EXPECT_EQ(cuda_note,
            " (cuda: mask-loop-exits first, split-reductions before rematerialize, "
            "fold-window-producers after fold-slices");
  std::vector<std::string> expected = cpu;
  auto at = [&](const std::string& pass) { return std::find(expected.begin(), expected.end(), pass); };
  expected.insert(at("decompose-composites"), "mask-loop-exits");  // first of the lowering
  expected.insert(at("rematerialize"), "split-reductions");
  expected.insert(at("fold-slices") + 1, "fold-window-producers");
  EXPECT_EQ(known_passes("cuda"), expected);
}

// --precision=bf16 inserts the autocast stage a training step gets (Trainer::build_step:
// after canonicalize, before autodiff): both matmuls with their operands and biases cast
// to bf16 (each weight once), gelu following its bf16 operand, the logits cast back to f32
// for softmax and the loss, and the hand-written SGD update left in f32.
TEST(Weftc, DumpAfterAutocastShowsWhereTheCastsWent) {
  Result r = weftc("dump " + kExample + "mlp.wir --precision=bf16 --after=autocast --no-locations");
  ASSERT_EQ(r.exit_code, 0) << r.out;
  EXPECT_EQ(r.out, R"(graph @mlp(%x: f32[8,16], %labels: i64[8], %w1: f32[16,32] {param}, %b1: f32[32] {param}, %w2: f32[32,10] {param}, %b2: f32[10] {param}, %lr: f32[]) -> (f32[], f32[8,10]) {
  %y = one_hot(%labels) {depth=10, dtype=f32} : f32[8,10]
  %0 = cast(%x) {dtype=bf16} : bf16[8,16]
  %1 = cast(%w1) {dtype=bf16} : bf16[16,32]
  %h = matmul(%0, %1) : bf16[8,32]
  %2 = cast(%b1) {dtype=bf16} : bf16[32]
  %hb = add(%h, %2) : bf16[8,32]
  %a = gelu(%hb) {approximate="tanh"} : bf16[8,32]
  %3 = cast(%w2) {dtype=bf16} : bf16[32,10]
  %z = matmul(%a, %3) : bf16[8,10]
  %4 = cast(%b2) {dtype=bf16} : bf16[10]
  %logits = add(%z, %4) : bf16[8,10]
  %5 = cast(%logits) {dtype=f32} : f32[8,10]
  %p = softmax(%5) {axis=1} : f32[8,10]
  %loss = cross_entropy(%5, %labels) {reduction="mean"} : f32[]
  %d = sub(%p, %y) : f32[8,10]
  %g = mean(%d) {axes=[0]} : f32[10]
  %step = mul(%g, %lr) : f32[10]
  %b2_new = sub(%b2, %step) : f32[10]
  assign(%b2, %b2_new)
  return %loss, %p
}
)");
  // f16 casts the same values.
  r = weftc("dump " + kExample + "mlp.wir --precision=f16 --after=autocast --no-locations");
  ASSERT_EQ(r.exit_code, 0) << r.out;
  EXPECT_EQ(count(r.out, "{dtype=f16}"), 5) << r.out;
  EXPECT_EQ(count(r.out, " = cast(%logits) {dtype=f32} : f32[8,10]"), 1) << r.out;
  // The later stages carry them: after lowering's last pass the casts are inside the
  // fused kernels, and the two GEMMs (with their epilogues) are bf16. The first epilogue
  // (bias and GELU) computes in f32 and rounds once at its store (round-at-stores: three
  // casts, the product and the bias widened, the result narrowed); b2, which the step
  // assigns, is a weight copy written by its update kernel (the cast of b2_new) instead
  // of a cast of its own: 4 weight/input casts + 3 + the row kernel's + the copy's.
  r = weftc("dump " + kExample + "mlp.wir --precision=bf16 --after=merge-updates --no-locations");
  ASSERT_EQ(r.exit_code, 0) << r.out;
  EXPECT_EQ(count(r.out, " = cast("), 9) << r.out;
  EXPECT_EQ(count(r.out, "{kind=\"contraction\"} : bf16["), 2) << r.out;
  EXPECT_EQ(count(r.out, "%t1 = add(%3, %4) : f32[8,32]\n      %t2 = gelu(%t1) {approximate=\"tanh\"} : f32[8,32]\n      %5 = cast(%t2) {dtype=bf16} : bf16[8,32]"), 1) << r.out;
  EXPECT_EQ(count(r.out, "%weft.copy.b2: bf16[10] {state}"), 1) << r.out;
  EXPECT_EQ(count(r.out, "assign(%weft.copy.b2, "), 1) << r.out;
  // At f32 (the default, or said) nothing is cast.
  for (const std::string flag : {"", " --precision=f32"}) {
    r = weftc("dump " + kExample + "mlp.wir --after=merge-updates" + flag);
    ASSERT_EQ(r.exit_code, 0) << r.out;
    EXPECT_EQ(count(r.out, "cast("), 0) << r.out;
  }
}

// --after=weight-copies: the stage a training step runs after its optimizer update
// (passes/weight_copies.h): b2's cast becomes the state input weft.copy.b2, written with
// the cast of b2_new right after b2's update; the weights the step does not assign keep
// their casts.
TEST(Weftc, DumpAfterWeightCopiesShowsTheCopies) {
  Result r = weftc("dump " + kExample + "mlp.wir --precision=bf16 --after=weight-copies --no-locations");
  ASSERT_EQ(r.exit_code, 0) << r.out;
  EXPECT_EQ(count(r.out, "%weft.copy.b2: bf16[10] {state}) -> (f32[], f32[8,10]) {"), 1) << r.out;
  EXPECT_EQ(count(r.out, "cast(%b2)"), 0) << r.out;
  EXPECT_EQ(count(r.out, "%logits = add(%z, %weft.copy.b2) : bf16[8,10]"), 1) << r.out;
  EXPECT_EQ(count(r.out, "cast(%b2_new) {dtype=bf16} : bf16[10]\n  assign(%weft.copy.b2, "), 1) << r.out;
  EXPECT_EQ(count(r.out, "cast(%w1) {dtype=bf16}"), 1) << r.out;
}

// A loop at --precision=bf16 gets the stage a training step gets (passes/mixed_precision.h):
// after autocast the body casts its f32 carry to bf16 for the matmul in every iteration;
// after rotate-carry-casts (the Trainer runs it too) the loop casts the initial carry once
// and the body carries the bf16 copy, casting the new value at its end.
TEST(Weftc, DumpAtBf16RotatesALoopsCarryCastAsTrainingDoes) {
  const std::string wir = write_temp("rnn.wir", R"(graph @rnn(%w: f32[4,4] {param}, %h0: f32[2,4]) -> (f32[2,4]) {
  %h = scan(%w, %h0) {consts=1, carries=1, length=5} : f32[2,4] ({
    ^cell(%w1: f32[4,4], %h1: f32[2,4]):
      %m = matmul(%h1, %w1) : f32[2,4]
      %n = tanh(%m) : f32[2,4]
      return %n
  })
  return %h
}
)");
  Result r = weftc("dump " + wir + " --precision=bf16 --after=autocast --no-locations");
  ASSERT_EQ(r.exit_code, 0) << r.out;
  EXPECT_EQ(count(r.out, "carries=1"), 1) << r.out;
  EXPECT_EQ(count(r.out, "cast(%h1) {dtype=bf16}"), 1) << r.out;
  for (const std::string after : {" --after=rotate-carry-casts", ""}) {
    r = weftc("dump " + wir + " --precision=bf16 --no-locations --backend=reference" + after);
    ASSERT_EQ(r.exit_code, 0) << r.out;
    EXPECT_EQ(count(r.out, "carries=2"), 1) << after << "\n" << r.out;
    EXPECT_EQ(count(r.out, "cast(%h0) {dtype=bf16}"), 1) << after << "\n" << r.out;
    EXPECT_EQ(count(r.out, "cast(%h1)"), 0) << after << "\n" << r.out;
  }
}

TEST(Weftc, PrecisionErrors) {
  const std::string wir = kExample + "mlp.wir";
  for (const std::string command : {"dump", "viz", "grad --wrt=w1"}) {
    Result r = weftc(command + " " + wir + " --precision=f64");
    EXPECT_EQ(r.exit_code, 1);
    EXPECT_EQ(r.out, "error: weftc " + command.substr(0, command.find(' ')) +
                         ": --precision expects f32, bf16 or f16, got 'f64'\n");
  }
  Result r = weftc("run " + wir + example_inputs() + " --out o --precision=BF16");
  EXPECT_EQ(r.out, "error: weftc run: --precision expects f32, bf16 or f16, got 'BF16'\n");
  r = weftc("dump " + wir + " --precision=bf16 --after=autocat --backend=reference");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_EQ(r.out, "error: unknown pass 'autocat'; known passes: autocast, rotate-carry-casts, "
                   "weight-copies, infer-types, canonicalize, fold-constants, dce, cse\n");
  r = weftc("dump " + wir + " --after=autocast");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_EQ(r.out, "error: weftc dump: --after=autocast shows the casts of --precision=bf16 or "
                   "--precision=f16; at f32 there are none\n");
  r = weftc("dump " + wir + " --after=weight-copies");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_EQ(r.out, "error: weftc dump: --after=weight-copies shows the weight copies of "
                   "--precision=bf16 or --precision=f16; at f32 there are none\n");
}

}  // namespace weftc_dump_test
}  // namespace
}  // namespace weft
