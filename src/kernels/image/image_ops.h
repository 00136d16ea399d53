#pragma once
// Factories of the image kernels (resampling, decoding); image_registry.cpp lists them.
#include "kernels/kernel.h"

namespace ember::kernels::image {

using KernelResult = Result<std::unique_ptr<OpKernel>>;

// resize.cpp
KernelResult create_resize(const KernelInit& init);
KernelResult create_upsample(const KernelInit& init);
// grid_sample.cpp
KernelResult create_grid_sample(const KernelInit& init);
// affine_grid.cpp
KernelResult create_affine_grid(const KernelInit& init);
// center_crop_pad.cpp
KernelResult create_center_crop_pad(const KernelInit& init);
// col2im.cpp
KernelResult create_col2im(const KernelInit& init);
// image_decoder.cpp
KernelResult create_image_decoder(const KernelInit& init);

}  // namespace ember::kernels::image
