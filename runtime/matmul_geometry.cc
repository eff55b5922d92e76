#include "runtime/matmul_geometry.h"

#include <utility>

namespace weft {

StatusOr<std::optional<MatmulGeometry>> matmul_geometry(const Node& node, const Type& ta,
                                                        const Type& tb) {
  using Result = std::optional<MatmulGeometry>;
  if (node.op != Op::Matmul || ta.dtype != tb.dtype ||
      (ta.dtype != DType::f32 && ta.dtype != DType::f64) || ta.shape.rank() == 0 ||
      tb.shape.rank() == 0) {
    return Result();
  }
  MatmulGeometry g;
  g.trans_a = node.bool_attr("transpose_a");
  g.trans_b = node.bool_attr("transpose_b");
  if ((g.trans_a && ta.shape.rank() < 2) || (g.trans_b && tb.shape.rank() < 2)) return Result();
  // ad and bd are the operands as multiplied (op(a), op(b)).
  std::vector<int64_t> ad = ta.shape.dims, bd = tb.shape.dims;
  if (g.trans_a) std::swap(ad[ad.size() - 2], ad[ad.size() - 1]);
  if (g.trans_b) std::swap(bd[bd.size() - 2], bd[bd.size() - 1]);
  if (ad.size() == 1) ad.insert(ad.begin(), 1);
  if (bd.size() == 1) bd.push_back(1);
  g.m = ad[ad.size() - 2];
  g.k = ad.back();
  g.n = bd.back();
  if (bd[bd.size() - 2] != g.k) {
    return Error{"contracted dimensions differ: " + ta.to_string() + " and " + tb.to_string()};
  }
  const std::vector<int64_t> a_batch(ad.begin(), ad.end() - 2), b_batch(bd.begin(), bd.end() - 2);
  const std::optional<Shape> batch = broadcast_shapes(Shape(a_batch), Shape(b_batch));
  if (!batch) {
    return Error{"batch dimensions of " + ta.to_string() + " and " + tb.to_string() +
                 " do not broadcast"};
  }
  g.batch = *batch;
  g.a_entries = broadcast_entries(a_batch, *batch);
  g.b_entries = broadcast_entries(b_batch, *batch);
  return Result(std::move(g));
}

}  // namespace weft
