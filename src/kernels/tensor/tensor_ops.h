#pragma once
// Factories of the shape and data-movement kernels; tensor_registry.cpp lists them.
#include "kernels/kernel.h"

namespace ember::kernels::tensor_ops {

using KernelResult = Result<std::unique_ptr<OpKernel>>;

// shape_ops.cpp
KernelResult create_shape(const KernelInit& init);
KernelResult create_size(const KernelInit& init);
KernelResult create_reshape(const KernelInit& init);
KernelResult create_flatten(const KernelInit& init);
KernelResult create_squeeze(const KernelInit& init);
KernelResult create_unsqueeze(const KernelInit& init);
KernelResult create_identity(const KernelInit& init);
// transpose.cpp
KernelResult create_transpose(const KernelInit& init);
// concat_split.cpp
KernelResult create_concat(const KernelInit& init);
KernelResult create_split(const KernelInit& init);
// slice.cpp
KernelResult create_slice(const KernelInit& init);
// expand_tile.cpp
KernelResult create_expand(const KernelInit& init);
KernelResult create_tile(const KernelInit& init);
// pad.cpp
KernelResult create_pad(const KernelInit& init);
// generators.cpp
KernelResult create_range(const KernelInit& init);
KernelResult create_constant_of_shape(const KernelInit& init);
KernelResult create_eye_like(const KernelInit& init);
KernelResult create_trilu(const KernelInit& init);
// space_depth.cpp
KernelResult create_depth_to_space(const KernelInit& init);
KernelResult create_space_to_depth(const KernelInit& init);
// reverse_sequence.cpp
KernelResult create_reverse_sequence(const KernelInit& init);

}  // namespace ember::kernels::tensor_ops
