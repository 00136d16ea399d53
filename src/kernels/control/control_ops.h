#pragma once
// Control flow (If, Loop, Scan, SequenceMap) and sequence / optional values:
// factories for the registry, and what the subgraph-running kernels share.
#include <memory>
#include <string_view>
#include <vector>

#include "kernels/kernel.h"

namespace ember::kernels::control_ops {

using KernelResult = Result<std::unique_ptr<OpKernel>>;

// A subgraph attribute compiled by the runtime. Its executor takes the
// subgraph's own inputs, then its outer references: `outer_input` gives, for
// each outer reference, its index among the node's inputs.
struct BoundSubgraph {
  std::shared_ptr<const ir::Graph> graph;
  std::unique_ptr<CompiledSubgraph> compiled;
  std::vector<size_t> outer_input;

  // Runs on `inputs` (the subgraph's own inputs) and the node's outer values.
  Status run(const KernelContext& ctx, std::vector<const Tensor*>& inputs, std::vector<Tensor>& outputs) const;
};

// Compiles attribute `attr` of `init.node`, which must take `num_inputs` inputs
// (any number when negative).
Result<BoundSubgraph> bind_subgraph(const KernelInit& init, std::string_view attr, int num_inputs);

// A contiguous copy of slice `index` of `t` along `axis`, without that axis.
Tensor slice_along(const Tensor& t, size_t axis, int64_t index);
// Stacks equally shaped tensors along a new `axis`: [n] + ... (n may be 0 when
// `shape` gives the parts' shape).
Tensor stack_along(const std::vector<Tensor>& parts, size_t axis, DType dtype, const Shape& part_shape);

KernelResult create_if(const KernelInit& init);
KernelResult create_loop(const KernelInit& init);
KernelResult create_scan(const KernelInit& init);
KernelResult create_sequence_map(const KernelInit& init);

KernelResult create_sequence_empty(const KernelInit& init);
KernelResult create_sequence_construct(const KernelInit& init);
KernelResult create_sequence_insert(const KernelInit& init);
KernelResult create_sequence_erase(const KernelInit& init);
KernelResult create_sequence_at(const KernelInit& init);
KernelResult create_sequence_length(const KernelInit& init);
KernelResult create_concat_from_sequence(const KernelInit& init);
KernelResult create_split_to_sequence(const KernelInit& init);

KernelResult create_optional(const KernelInit& init);
KernelResult create_optional_has_element(const KernelInit& init);
KernelResult create_optional_get_element(const KernelInit& init);
// Identity of a sequence or optional (tensor Identity is a view in kernels/tensor).
KernelResult create_container_identity(const KernelInit& init);

}  // namespace ember::kernels::control_ops
