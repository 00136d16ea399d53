#include "kernels/matmul/matmul_geometry.h"

#include <utility>

namespace ember::kernels {

Result<MatMulGeometry> matmul_geometry(const Shape& a, const Shape& b) {
  if (a.empty() || b.empty()) {
    return invalid_argument("inputs must have rank >= 1, got A {} and B {}", shape_to_string(a), shape_to_string(b));
  }
  MatMulGeometry g;
  const size_t ra = a.size(), rb = b.size();
  g.m = ra >= 2 ? a[ra - 2] : 1;
  g.k = a[ra - 1];
  const int64_t b_k = rb >= 2 ? b[rb - 2] : b[0];
  g.n = rb >= 2 ? b[rb - 1] : 1;
  if (g.k != b_k) {
    return invalid_argument("inner dimensions differ: A {} has K={} but B {} has K={}", shape_to_string(a), g.k,
                            shape_to_string(b), b_k);
  }
  if (ra > 2) g.a_batch.assign(a.begin(), a.end() - 2);
  if (rb > 2) g.b_batch.assign(b.begin(), b.end() - 2);
  auto batch = broadcast_shapes(g.a_batch, g.b_batch);
  if (!batch.is_ok()) {
    return invalid_argument("batch dimensions of A {} and B {} do not broadcast", shape_to_string(a), shape_to_string(b));
  }
  g.batch = std::move(batch).value();
  g.out_shape = g.batch;
  if (ra >= 2) g.out_shape.push_back(g.m);
  if (rb >= 2) g.out_shape.push_back(g.n);
  return g;
}

}  // namespace ember::kernels
