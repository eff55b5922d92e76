// Matrix products: MatMul (NumPy's matmul), Gemm (alpha·A'·B' + beta·C, C broadcast to
// [M, N]) and the Einsum equations that are a batched matmul.
#include <algorithm>
#include <map>

#include "interop/onnx/convert.h"

namespace weft::onnx_io {
namespace {

void matmul(NodeContext& n) {
  n.expect_attrs({});
  n.set_output(0, n.e().matmul(n.input(0), n.input(1)));
}

void gemm(NodeContext& n) {
  n.expect_attrs({"alpha", "beta", "transA", "transB"});
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
    if (double beta = n.attr_float("beta", 1.0); beta != 1.0) c = e.mul(c, e.constant(beta, dt));
    y = e.add(y, c);
  }
  n.set_output(0, y);
}

// Einsum without ellipses or diagonals (each letter once per operand). One operand: a
// sum over the letters the output drops, then a transpose. Two operands: each letter is
// batch (both operands and the output), rows (A and the output), columns (B and the
// output) or contracted (A and B only); A becomes [batch, rows, contracted] and B
// [batch, contracted, columns], one matmul, then the output's order. Without `->`, the
// output is the letters that appear once, in alphabetical order (ONNX's implicit mode).
void einsum(NodeContext& n) {
  n.expect_attrs({"equation"});
  std::string eq;
  for (char c : n.attr_string("equation", "")) {
    if (c != ' ') eq += c;
  }
  auto refuse = [&](const std::string& why) { n.unsupported("equation '" + eq + "' (" + why + ")"); };
  if (eq.find('.') != std::string::npos) refuse("an ellipsis");
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
  std::string out;
  if (arrow != std::string::npos) {
    out = eq.substr(arrow + 2);
  } else {
    for (char c = 'A'; c <= 'z'; ++c) {
      int uses = 0;
      for (const std::string& t : terms) uses += static_cast<int>(std::count(t.begin(), t.end(), c));
      if (uses == 1) out += c;
    }
  }
  for (const std::string& t : terms) {
    for (char c : t) {
      if (std::count(t.begin(), t.end(), c) != 1) refuse("a repeated letter: a diagonal");
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
    {"Gemm", 7, gemm},
    {"Einsum", 12, einsum},
};

}  // namespace

std::span<const OpConverter> linalg_converters() { return kOps; }

}  // namespace weft::onnx_io
