#include "kernels/elementwise/elementwise_common.h"
#include "kernels/elementwise/fused_elementwise.h"

namespace ember::kernels {

void register_bias_add_ops(OpRegistry& r);  // bias_add.cpp

void register_elementwise_ops(OpRegistry& r) {
  register_unary_ops(r);
  register_activation_ops(r);
  register_binary_ops(r);
  register_compare_logical_ops(r);
  register_variadic_ops(r);
  register_where_ops(r);
  register_fused_elementwise_ops(r);
  register_cast_ops(r);
  register_bias_add_ops(r);
}

}  // namespace ember::kernels
