// Matrix products: MatMul (NumPy's matmul, vectors promoted), Gemm (alpha·A'·B' + beta·C, C broadcast to
// [M, N]) and the Einsum equations that are a batched matmul.
#include <algorithm>
#include <map>

#include "interop/onnx/convert.h"

namespace weft::onnx_io {
namespace {

// NumPy's 1-D promotion, which weft's matmul leaves to the caller: a vector A is a row
// [1, k], a vector B a column [k, 1], and the added axis is dropped from the product.
void matmul(NodeContext& n) {
  n.expect_attrs({});
  Emitter& e = n.e();
  ValueId a = n.input(0), b = n.input(1);
  const Shape as = e.shape(a), bs = e.shape(b);
  if (as.rank() == 0 || bs.rank() == 0) n.invalid("A and B must have rank >= 1");
  if (as.rank() >= 2 && bs.rank() >= 2) {
    n.set_output(0, e.matmul(a, b));
    return;
  }
  if (as.rank() == 1) a = e.reshape(a, {1, as[0]});
  if (bs.rank() == 1) b = e.reshape(b, {bs[0], 1});
  ValueId y = e.matmul(a, b);
  std::vector<int64_t> dims = e.shape(y).dims;
  if (bs.rank() == 1) dims.pop_back();
  if (as.rank() == 1) dims.erase(dims.end() - (bs.rank() == 1 ? 1 : 2));
  n.set_output(0, e.reshape(y, dims));
}

// Before opset 7, C broadcasts only under the `broadcast` attribute.
void gemm(NodeContext& n) {
  if (n.opset() < 7) {
    n.expect_attrs({"alpha", "beta", "transA", "transB", "broadcast"});
  } else {
    n.expect_attrs({"alpha", "beta", "transA", "transB"});
  }
  Emitter& e = n.e();
  ValueId a = n.input(0), b = n.input(1);
  if (e.rank(a) != 2 || e.rank(b) != 2) n.invalid("A and B must be matrices");
  const DType dt = e.type(a).dtype;
  ValueId y = e.op(Op::Matmul, {a, b},
                   {{"transpose_a", n.attr_int("transA", 0) != 0},
                    {"transpose_b", n.attr_int("transB", 0) != 0}});
  if (double alpha = n.attr_float("alpha", 1.0); alpha != 1.0) y = e.mul(y, e.constant(alpha, dt));
  if (n.opset() < 11 && !n.has_input(2)) n.invalid("C is required before opset 11");
  if (n.has_input(2)) {
    ValueId c = n.input(2);
    const Shape ys = e.shape(y), cs = e.shape(c);
    if (std::optional<Shape> b = broadcast_shapes(cs, ys); !b || !(*b == ys)) {
      n.invalid("C " + cs.to_string() + " does not broadcast to A'·B' " + ys.to_string());
    }
    if (n.opset() < 7 && n.attr_int("broadcast", 0) == 0 && !(cs == ys)) {
      n.invalid("C " + cs.to_string() + " must be A'·B' " + ys.to_string() + " without broadcast=1");
    }
    if (double beta = n.attr_float("beta", 1.0); beta != 1.0) c = e.mul(c, e.constant(beta, dt));
    y = e.add(y, c);
  }
  n.set_output(0, y);
}

// Einsum of one or two operands; a letter twice in an operand takes its diagonal first.
// One operand: a
// sum over the letters the output drops, then a transpose. Two operands: each letter is
// batch (both operands and the output), rows (A and the output), columns (B and the
// output) or contracted (A and B only); A becomes [batch, rows, contracted] and B
// [batch, contracted, columns], one matmul, then the output's order. Without `->`, the
// output is the ellipsis' dims, then the letters that appear once, in alphabetical order
// (ONNX's implicit mode). Letters of different sizes (broadcasting) are refused.
void einsum(NodeContext& n) {
  n.expect_attrs({"equation"});
  std::string eq;
  for (char c : n.attr_string("equation", "")) {
    if (c != ' ') eq += c;
  }
  auto refuse = [&](const std::string& why) { n.unsupported("equation '" + eq + "' (" + why + ")"); };
  const size_t arrow = eq.find("->");
  std::vector<std::string> terms;
  const std::string lhs = eq.substr(0, arrow);
  for (size_t at = 0;;) {
    const size_t comma = lhs.find(',', at);
    terms.push_back(lhs.substr(at, comma - at));
    if (comma == std::string::npos) break;
    at = comma + 1;
  }
  if (terms.size() > 2) refuse("more than two operands");
  if (static_cast<int>(terms.size()) != n.num_inputs()) n.invalid("the equation names " + std::to_string(terms.size()) + " operands");
  auto has = [](const std::string& s, char c) { return s.find(c) != std::string::npos; };
  // An ellipsis stands for the same leading dims in every operand (aligned from the
  // right), spelled here with digits, which are no einsum letters.
  std::string out = arrow == std::string::npos ? "" : eq.substr(arrow + 2);
  size_t ellipsis = 0;
  std::vector<size_t> ellipsis_of(terms.size(), 0);
  for (size_t i = 0; i < terms.size(); ++i) {
    const size_t at = terms[i].find("...");
    if (at == std::string::npos) continue;
    const int letters = static_cast<int>(terms[i].size()) - 3, rank = n.input_type(static_cast<int>(i)).shape.rank();
    if (rank < letters || rank - letters > 10) n.invalid("operand " + std::to_string(i) + "'s rank does not match the equation");
    ellipsis_of[i] = static_cast<size_t>(rank - letters);
    ellipsis = std::max(ellipsis, ellipsis_of[i]);
  }
  const std::string digits = std::string("0123456789").substr(0, ellipsis);
  for (size_t i = 0; i < terms.size(); ++i) {
    const size_t at = terms[i].find("...");
    if (at != std::string::npos) terms[i].replace(at, 3, digits.substr(ellipsis - ellipsis_of[i]));
  }
  if (const size_t at = out.find("..."); at != std::string::npos) out.replace(at, 3, digits);
  if (arrow == std::string::npos) {
    out = digits;
    for (char c = 'A'; c <= 'z'; ++c) {
      int uses = 0;
      for (const std::string& t : terms) uses += static_cast<int>(std::count(t.begin(), t.end(), c));
      if (uses == 1) out += c;
    }
  }
  for (const std::string& t : terms) {
    for (char c : t) {
      if (c == '.') refuse("an ellipsis that is not '...'");
    }
  }
  Emitter& e = n.e();
  std::map<char, int64_t> size;
  std::vector<ValueId> x;
  for (size_t i = 0; i < terms.size(); ++i) {
    x.push_back(n.input(static_cast<int>(i)));
    if (e.rank(x[i]) != static_cast<int>(terms[i].size())) n.invalid("operand " + std::to_string(i) + "'s rank does not match the equation");
    for (size_t k = 0; k < terms[i].size(); ++k) {
      const int64_t d = e.shape(x[i])[static_cast<int>(k)];
      if (size.count(terms[i][k]) && size[terms[i][k]] != d) refuse("letter '" + std::string(1, terms[i][k]) + "' broadcast");
      size[terms[i][k]] = d;
    }
  }
  for (char c : out) {
    if (!size.count(c)) n.invalid("output letter '" + std::string(1, c) + "' is in no operand");
    if (std::count(out.begin(), out.end(), c) != 1) n.invalid("output letter '" + std::string(1, c) + "' is repeated");
  }
  // A letter twice in one operand is its diagonal: those two axes moved last and
  // flattened, then the elements (n+1)·i gathered.
  for (size_t i = 0; i < terms.size(); ++i) {
    for (size_t p = 0; p < terms[i].size(); ++p) {
      const char c = terms[i][p];
      const size_t q = terms[i].find(c, p + 1);
      if (q == std::string::npos) continue;
      std::vector<int64_t> perm, dims;
      std::string rest;
      for (size_t k = 0; k < terms[i].size(); ++k) {
        if (k == p || k == q) continue;
        perm.push_back(static_cast<int64_t>(k));
        dims.push_back(size[terms[i][k]]);
        rest += terms[i][k];
      }
      perm.push_back(static_cast<int64_t>(p));
      perm.push_back(static_cast<int64_t>(q));
      const int64_t d = size[c];
      dims.push_back(d * d);
      ValueId flat = e.reshape(e.transpose(x[i], perm), dims);
      ValueId at = e.mul(e.op(Op::Iota, {}, {{"shape", std::vector<int64_t>{d}}, {"axis", int64_t{0}},
                                           {"dtype", DType::i64}}),
                         e.constant(static_cast<double>(d + 1), DType::i64));
      x[i] = e.op(Op::Gather, {flat, at}, {{"axis", static_cast<int64_t>(dims.size() - 1)}});
      terms[i] = rest + c;
      p = static_cast<size_t>(-1);  // again from the start: the letter may repeat once more
    }
  }
  auto order = [&](ValueId v, const std::string& have, const std::string& want) {
    std::vector<int64_t> perm, same;
    for (char c : want) perm.push_back(static_cast<int64_t>(have.find(c)));
    for (size_t k = 0; k < perm.size(); ++k) same.push_back(static_cast<int64_t>(k));
    return perm == same ? v : e.transpose(v, perm);
  };
  if (terms.size() == 1) {
    std::vector<int64_t> dropped;
    std::string kept;
    for (size_t k = 0; k < terms[0].size(); ++k) {
      if (has(out, terms[0][k])) kept += terms[0][k];
      else dropped.push_back(static_cast<int64_t>(k));
    }
    ValueId y = dropped.empty() ? x[0] : e.sum(x[0], dropped);
    n.set_output(0, order(y, kept, out));
    return;
  }
  const std::string &a = terms[0], &b = terms[1];
  std::string batch, rows, cols, inner;
  for (char c : a) {
    if (has(b, c)) (has(out, c) ? batch : inner) += c;
    else if (has(out, c)) rows += c;
    else refuse("a letter summed over one operand");
  }
  for (char c : b) {
    if (!has(a, c) && !has(out, c)) refuse("a letter summed over one operand");
    if (!has(a, c)) cols += c;
  }
  auto arrange = [&](ValueId v, const std::string& have, const std::vector<std::string>& groups) {
    std::vector<int64_t> dims;
    std::string want;
    for (const std::string& g : groups) {
      int64_t numel = 1;
      for (char c : g) numel *= size[c];
      dims.push_back(numel);
      want += g;
    }
    return e.reshape(order(v, have, want), dims);
  };
  ValueId p = e.matmul(arrange(x[0], a, {batch, rows, inner}), arrange(x[1], b, {batch, inner, cols}));
  const std::string got = batch + rows + cols;
  std::vector<int64_t> dims;
  for (char c : got) dims.push_back(size[c]);
  n.set_output(0, order(e.reshape(p, dims), got, out));
}

const OpConverter kOps[] = {
    {"MatMul", 1, matmul},
    {"Gemm", 1, gemm},
    {"Einsum", 12, einsum},
};

}  // namespace

std::span<const OpConverter> linalg_converters() { return kOps; }

}  // namespace weft::onnx_io
