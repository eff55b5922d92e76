// The vectorized kernels' cases of gen_cases (gen_cases.h; #30, #31): generated GPU
// kernels with 16-byte accesses, their narrower and scalar paths, the library's
// cross-entropy rows, and the vocabulary softmax timed by vocab_bench.

#include <string>
#include <tuple>
#include <vector>

#include "tests/cuda/gen_cases.h"

namespace weft::gen_cases {
namespace {

// A softmax row's max, shifted exponentials and their sum (%m, %d, %e, %s) over %x.
constexpr const char* kSumExp =
    "  %m = max(%x) {axes=[-1], keepdims=true}\n  %d = sub(%x, %m)\n  %e = exp(%d)\n"
    "  %s = sum(%e) {axes=[-1], keepdims=true}\n";

}  // namespace

/// Vectorized generated kernels (#30, #31; codegen/emit_gpu.h): 16 bytes per access
/// where each row starts on a multiple of the vector, narrower vectors or scalar code
/// elsewhere. Elementwise kernels with a tail (a single row of 1037, 301 f64, 1003 bf16),
/// rows that allow pairs only (6, bf16 10), odd rows (19: scalar), a per-row splat;
/// softmax rows of 8192 (the vocabulary's: a block per row for 64 rows in f32 and bf16,
/// eight bf16 per load), 2048 rows of 2048 and of 256 (a warp per row), one
/// row of 1027 (a vector tail in every lane's row), a bf16 layer norm and row sums; and a
/// loop whose xs slots of 24 bytes hand every other iteration an unaligned address (the
/// kernels' scalar path); then the library's cross-entropy rows (16-byte loads, scalar
/// head and tail: 8192, an odd 8191, f64 1001, rows of 3). Appended last, so every
/// earlier case keeps its index and its seeded inputs.
std::vector<GraphCase> vector_cases() {
  const std::string softmax = std::string(kSumExp) + "  %p = div(%e, %s)\n";
  const std::string layer_norm =
      "  %m = mean(%x) {axes=[-1], keepdims=true}\n  %d = sub(%x, %m)\n  %q = mul(%d, %d)\n"
      "  %v = mean(%q) {axes=[-1], keepdims=true}\n  %r = rsqrt(%v)\n  %n = mul(%d, %r)\n"
      "  %y = mul(%n, %g)\n";
  // name, inputs, body, results
  const std::vector<std::tuple<std::string, std::string, std::string, std::string>> table = {
      {"vec_tail_f32", "%x: f32[1037], %y: f32[1037]", "  %z = mul(%x, %y)\n  %w = tanh(%z)\n", "%w, %z"},
      {"vec_tail_f64", "%x: f64[301], %y: f64[301]", "  %z = sub(%x, %y)\n", "%z"},
      {"vec_tail_bf16", "%x: bf16[1003], %y: bf16[1003]",
       "  %z = mul(%x, %y)\n  %w = gelu(%z) {approximate=\"tanh\"}\n", "%w"},
      {"vec_rows_bf16", "%x: bf16[24,72], %b: bf16[72]", "  %z = add(%x, %b)\n  %w = exp(%z)\n", "%w"},
      {"vec_pairs_f32", "%x: f32[33,6], %b: f32[6]", "  %z = add(%x, %b)\n", "%z"},
      {"vec_pairs_bf16", "%x: bf16[9,10], %b: bf16[10]", "  %z = mul(%x, %b)\n", "%z"},
      {"vec_odd_rows_f32", "%x: f32[7,19], %b: f32[19]", "  %z = add(%x, %b)\n", "%z"},
      {"vec_splat_f32", "%x: f32[40,64], %s: f32[40,1]", "  %z = mul(%x, %s)\n  %w = sub(%z, %s)\n", "%w"},
      {"vec_cast_to_bf16", "%x: f32[16,100]", "  %y = cast(%x) {dtype=bf16}\n  %z = cast(%y) {dtype=f32}\n",
       "%y, %z"},
      {"vec_softmax_vocab_f32", "%x: f32[64,8192]", softmax, "%p"},
      {"vec_softmax_vocab_bf16", "%x: bf16[64,8192]", softmax, "%p"},
      {"vec_softmax_warp_rows", "%x: f32[2048,256]", softmax, "%p, %s"},
      {"vec_softmax_warp_long_rows", "%x: f32[2048,2048]", softmax, "%p"},
      {"vec_softmax_one_row", "%x: f32[1,1027]", softmax, "%p"},
      {"vec_layer_norm_bf16", "%x: bf16[32,768], %g: bf16[768]", layer_norm, "%y"},
      {"vec_row_sums", "%x: f32[3000,64], %y: f32[100,1000]",
       "  %s = sum(%x) {axes=[1]}\n  %t = max(%y) {axes=[1]}\n", "%s, %t"},
  };
  std::vector<GraphCase> cases;
  for (const auto& [name, inputs, body, outs] : table) {
    cases.push_back({name, parse(graph_text(name, inputs, body, outs))});
  }
  cases.push_back({"vec_scan_unaligned_slots", parse(R"(graph @vec_scan_unaligned_slots(%h0: f32[1,6], %xs: f32[5,1,6]) {
  %h, %ys = scan(%h0, %xs) {carries=1, consts=0, length=5} : f32[1,6], f32[5,1,6] ({
    ^cell(%ch: f32[1,6], %cx: f32[1,6]):
      %a = add(%ch, %cx) : f32[1,6]
      %n = tanh(%a) : f32[1,6]
      %y = mul(%n, %cx) : f32[1,6]
      return %n, %y
  })
  return %h, %ys
}
)")});
  // The library's cross_entropy rows (runtime/cuda/library_kernels.cu), 16 bytes per load
  // between a scalar head and tail: the vocabulary's 8192 (every row aligned), an odd
  // vocabulary of 8191 (rows start at every element mod 4: each head length), f64 rows of
  // 1001 (two per load), rows of 3 (shorter than a vector: head and tail only).
  const std::vector<std::tuple<std::string, std::string, std::string>> cross_entropy = {
      {"vec_cross_entropy_vocab", "%x: f32[64,8192], %l: i64[64]", "mean"},
      {"vec_cross_entropy_odd_vocab", "%x: f32[33,8191], %l: i64[33]", "none"},
      {"vec_cross_entropy_f64_odd", "%x: f64[17,1001], %l: i64[17]", "sum"},
      {"vec_cross_entropy_short_rows", "%x: f32[40,3], %l: i64[40]", "none"},
  };
  for (const auto& [name, inputs, reduction] : cross_entropy) {
    const std::string body = "  %y = cross_entropy(%x, %l) {reduction=\"" + reduction + "\"}\n";
    cases.push_back({name, parse(graph_text(name, inputs, body, "%y"))});
  }
  return cases;
}

/// The vocabulary's softmax and log-softmax, 4096 rows of 8192 (#31's 0.42 ms): a warp
/// per row. Two steps each, so step_bench times them (`vocab_bench`, and
/// `vocab_bench_scalar` with the kernels generated at WEFT_GPU_VECTOR=0); the per-row
/// sums first, so the step's first output (step_bench reads it) is small. Too large for
/// cases_test's host reference in every device script: vector_cases has the same
/// warp-per-row kernel over 2048 rows of 2048.
std::vector<GraphCase> vocab_cases() {
  std::vector<GraphCase> cases;
  cases.push_back({"vocab_softmax", parse(graph_text("vocab_softmax", "%x: f32[4096,8192]",
                                                     std::string(kSumExp) + "  %p = div(%e, %s)\n", "%s, %p")),
                   /*steps=*/2});
  cases.push_back({"vocab_log_softmax",
                   parse(graph_text("vocab_log_softmax", "%x: f32[4096,8192]",
                                    std::string(kSumExp) + "  %l = log(%s)\n  %y = sub(%d, %l)\n", "%s, %y")),
                   /*steps=*/2});
  return cases;
}

}  // namespace weft::gen_cases
