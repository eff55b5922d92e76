// Matrix products: MatMul (NumPy's matmul, vectors promoted), Gemm (alpha·A'·B' + beta·C, C
// broadcast to [M, N]) and the Einsum equations that are a batched matmul.
#include <algorithm>
#include <map>

#include "interop/onnx/convert.h"

namespace weft::onnx_io {
namespace {
namespace linalg {  // this file's names, apart in the importer's unity units

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
      n.invalid("C " + cs.to_string() + " must be A'·B' " + ys.to_string() +
                " without broadcast=1");
    }
    if (double beta = n.attr_float("beta", 1.0); beta != 1.0) c = e.mul(c, e.constant(beta, dt));
    y = e.add(y, c);
  }
  n.set_output(0, y);
}

// Einsum of one or two operands, as named steps on the operands and their letters:
//  - parse: ONNX's implicit mode (no `->`) outputs the ellipsis' dims, then the letters
//    that appear once, in alphabetical order; an ellipsis stands for the same leading
//    dims in every operand (aligned from the right), spelled with digits;
//  - a letter twice in one operand is its diagonal: both axes moved last, flattened, and
//    every (n+1)-th element gathered;
//  - a letter in one operand only and not in the output is summed away;
//  - one operand is then a transpose; two are one matmul, each letter being batch (both
//    operands and the output), rows (A only), columns (B only) or contracted (A and B,
//    not the output): A as [batch, rows, contracted], B as [batch, contracted, columns].
// Letters of different sizes in the operands (broadcasting) are refused.
class Einsum {
 public:
  explicit Einsum(NodeContext& n) : n_(n), e_(n.e()) {}

  void convert() {
    parse();
    for (size_t i = 0; i < terms_.size(); ++i) {
      x_.push_back(n_.input(static_cast<int>(i)));
      if (e_.rank(x_[i]) != static_cast<int>(terms_[i].size())) {
        n_.invalid("operand " + std::to_string(i) + "'s rank does not match the equation");
      }
      for (size_t k = 0; k < terms_[i].size(); ++k) {
        const char c = terms_[i][k];
        const int64_t d = e_.shape(x_[i])[static_cast<int>(k)];
        if (size_.count(c) && size_[c] != d) refuse("letter '" + std::string(1, c) + "' broadcast");
        size_[c] = d;
      }
    }
    for (char c : out_) {
      if (!size_.count(c)) n_.invalid("output letter '" + std::string(1, c) + "' is in no operand");
      if (std::count(out_.begin(), out_.end(), c) != 1) {
        n_.invalid("output letter '" + std::string(1, c) + "' is repeated");
      }
    }
    for (size_t i = 0; i < terms_.size(); ++i) {
      while (take_diagonal(i)) {
      }
      sum_lonely_letters(i);
    }
    n_.set_output(0, terms_.size() == 1 ? order(x_[0], terms_[0], out_) : contract());
  }

 private:
  [[noreturn]] void refuse(const std::string& why) {
    n_.unsupported("equation '" + eq_ + "' (" + why + ")");
  }
  static bool has(const std::string& s, char c) { return s.find(c) != std::string::npos; }

  void parse() {
    for (char c : n_.attr_string("equation", "")) {
      if (c != ' ') eq_ += c;
    }
    const size_t arrow = eq_.find("->");
    const std::string lhs = eq_.substr(0, arrow);
    for (size_t at = 0;;) {
      const size_t comma = lhs.find(',', at);
      terms_.push_back(lhs.substr(at, comma - at));
      if (comma == std::string::npos) break;
      at = comma + 1;
    }
    if (terms_.size() > 2) refuse("more than two operands");
    if (static_cast<int>(terms_.size()) != n_.num_inputs()) {
      n_.invalid("the equation names " + std::to_string(terms_.size()) + " operands");
    }
    size_t ellipsis = 0;
    std::vector<size_t> ellipsis_of(terms_.size(), 0);
    for (size_t i = 0; i < terms_.size(); ++i) {
      if (!has(terms_[i], '.')) continue;
      const int letters = static_cast<int>(terms_[i].size()) - 3;
      const int rank = n_.input_type(static_cast<int>(i)).shape.rank();
      if (rank < letters || rank - letters > 10) {
        n_.invalid("operand " + std::to_string(i) + "'s rank does not match the equation");
      }
      ellipsis_of[i] = static_cast<size_t>(rank - letters);
      ellipsis = std::max(ellipsis, ellipsis_of[i]);
    }
    const std::string digits = std::string("0123456789").substr(0, ellipsis);
    out_ = arrow == std::string::npos ? digits : eq_.substr(arrow + 2);
    if (const size_t at = out_.find("..."); at != std::string::npos) out_.replace(at, 3, digits);
    for (size_t i = 0; i < terms_.size(); ++i) {
      const size_t at = terms_[i].find("...");
      if (at != std::string::npos) {
        terms_[i].replace(at, 3, digits.substr(ellipsis - ellipsis_of[i]));
      }
    }
    for (const std::string& t : terms_) {
      if (has(t, '.')) refuse("an ellipsis that is not '...'");
    }
    if (arrow == std::string::npos) {
      for (char c = 'A'; c <= 'z'; ++c) {
        int uses = 0;
        for (const std::string& t : terms_) {
          uses += static_cast<int>(std::count(t.begin(), t.end(), c));
        }
        if (uses == 1) out_ += c;
      }
    }
  }

  /// Takes the diagonal of operand i's first repeated letter; false if none repeats.
  bool take_diagonal(size_t i) {
    std::string& t = terms_[i];
    size_t p = 0, q = std::string::npos;
    for (; p < t.size() && q == std::string::npos; ++p) q = t.find(t[p], p + 1);
    if (q == std::string::npos) return false;
    --p;
    const char c = t[p];
    std::string rest;
    for (size_t k = 0; k < t.size(); ++k) {
      if (k != p && k != q) rest += t[k];
    }
    const int64_t d = size_[c];
    ValueId flat = e_.reshape(order(x_[i], t, rest + c + c), dims_of(rest, {d * d}));
    ValueId at = e_.mul(
        e_.op(Op::Iota, {},
              {{"shape", std::vector<int64_t>{d}}, {"axis", int64_t{0}}, {"dtype", DType::i64}}),
        e_.constant(static_cast<double>(d + 1), DType::i64));
    x_[i] = e_.op(Op::Gather, {flat, at}, {{"axis", static_cast<int64_t>(rest.size())}});
    t = rest + c;
    return true;
  }

  /// Sums operand i over the letters that neither the other operand nor the output has.
  void sum_lonely_letters(size_t i) {
    const std::string& other = terms_.size() == 2 ? terms_[1 - i] : "";
    std::vector<int64_t> axes;
    std::string kept;
    for (size_t k = 0; k < terms_[i].size(); ++k) {
      const char c = terms_[i][k];
      if (has(other, c) || has(out_, c)) {
        kept += c;
      } else {
        axes.push_back(static_cast<int64_t>(k));
      }
    }
    if (axes.empty()) return;
    x_[i] = e_.sum(x_[i], axes);
    terms_[i] = kept;
  }

  ValueId contract() {
    const std::string &a = terms_[0], &b = terms_[1];
    std::string batch, rows, cols, inner;
    for (char c : a) (has(b, c) ? (has(out_, c) ? batch : inner) : rows) += c;
    for (char c : b) {
      if (!has(a, c)) cols += c;
    }
    auto arrange = [&](ValueId v, const std::string& have, const std::string& g1,
                       const std::string& g2, const std::string& g3) {
      return e_.reshape(order(v, have, g1 + g2 + g3), {numel(g1), numel(g2), numel(g3)});
    };
    ValueId p =
        e_.matmul(arrange(x_[0], a, batch, rows, inner), arrange(x_[1], b, batch, inner, cols));
    const std::string got = batch + rows + cols;
    return order(e_.reshape(p, dims_of(got, {})), got, out_);
  }

  /// v (letters `have`) transposed to the order of `want`, a reordering of `have` (a
  /// letter `have` holds twice takes its first axis, then its second).
  ValueId order(ValueId v, const std::string& have, const std::string& want) {
    std::vector<int64_t> perm, same;
    std::string left = have;
    for (char c : want) {
      const size_t k = left.find(c);
      perm.push_back(static_cast<int64_t>(k));
      left[k] = '\0';  // a letter twice (a diagonal) takes its two axes in turn
    }
    for (size_t k = 0; k < perm.size(); ++k) same.push_back(static_cast<int64_t>(k));
    return perm == same ? v : e_.transpose(v, perm);
  }

  int64_t numel(const std::string& letters) {
    int64_t n = 1;
    for (char c : letters) n *= size_[c];
    return n;
  }
  std::vector<int64_t> dims_of(const std::string& letters, std::vector<int64_t> tail) {
    std::vector<int64_t> dims;
    for (char c : letters) dims.push_back(size_[c]);
    dims.insert(dims.end(), tail.begin(), tail.end());
    return dims;
  }

  NodeContext& n_;
  Emitter& e_;
  std::string eq_, out_;
  std::vector<std::string> terms_;
  std::vector<ValueId> x_;
  std::map<char, int64_t> size_;
};

void einsum(NodeContext& n) {
  n.expect_attrs({"equation"});
  Einsum(n).convert();
}

const OpConverter kOps[] = {
    {"MatMul", 1, matmul},
    {"Gemm", 1, gemm},
    {"Einsum", 12, einsum},
};

}  // namespace linalg
}  // namespace

std::span<const OpConverter> linalg_converters() { return linalg::kOps; }

}  // namespace weft::onnx_io
