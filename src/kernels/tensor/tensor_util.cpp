#include "kernels/tensor/tensor_util.h"

#include <algorithm>
#include <cstdint>

#include "threading/thread_pool.h"

namespace ember::kernels::tensor_ops {
namespace {

template <typename U>
void copy_run(const U* src, int64_t src_stride, U* dst, int64_t dst_stride, int64_t n) {
  for (int64_t i = 0; i < n; ++i) dst[i * dst_stride] = src[i * src_stride];
}

// One inner run of `n` elements; the element type only fixes the move width.
void copy_inner(const std::byte* src, int64_t src_stride, std::byte* dst, int64_t dst_stride, int64_t n,
                size_t elem_size) {
  if (src_stride == 1 && dst_stride == 1) {
    std::memcpy(dst, src, static_cast<size_t>(n) * elem_size);
    return;
  }
  if (src_stride == 0 && dst_stride == 1) {
    fill_elements(dst, n, src, elem_size);
    return;
  }
  switch (elem_size) {
    case 1:
      copy_run(reinterpret_cast<const uint8_t*>(src), src_stride, reinterpret_cast<uint8_t*>(dst), dst_stride, n);
      break;
    case 2:
      copy_run(reinterpret_cast<const uint16_t*>(src), src_stride, reinterpret_cast<uint16_t*>(dst), dst_stride, n);
      break;
    case 4:
      copy_run(reinterpret_cast<const uint32_t*>(src), src_stride, reinterpret_cast<uint32_t*>(dst), dst_stride, n);
      break;
    default:
      copy_run(reinterpret_cast<const uint64_t*>(src), src_stride, reinterpret_cast<uint64_t*>(dst), dst_stride, n);
      break;
  }
}

template <typename U>
void fill_run(U* dst, int64_t n, const void* value) {
  U v;
  std::memcpy(&v, value, sizeof(U));
  for (int64_t i = 0; i < n; ++i) dst[i] = v;
}

}  // namespace

StridedLayout coalesce(std::span<const int64_t> shape, std::span<const int64_t> src_strides,
                       std::span<const int64_t> dst_strides) {
  StridedLayout l;
  for (size_t d = 0; d < shape.size(); ++d) {
    if (shape[d] == 0) {
      StridedLayout empty;
      empty.shape.push_back(0);
      empty.src_strides.push_back(0);
      empty.dst_strides.push_back(0);
      return empty;
    }
    if (shape[d] == 1) continue;
    size_t last = l.shape.size();
    if (last > 0 && l.src_strides[last - 1] == src_strides[d] * shape[d] &&
        l.dst_strides[last - 1] == dst_strides[d] * shape[d]) {
      l.shape[last - 1] *= shape[d];
      l.src_strides[last - 1] = src_strides[d];
      l.dst_strides[last - 1] = dst_strides[d];
      continue;
    }
    l.shape.push_back(shape[d]);
    l.src_strides.push_back(src_strides[d]);
    l.dst_strides.push_back(dst_strides[d]);
  }
  return l;
}

void copy_layout(const void* src, void* dst, const StridedLayout& l, size_t elem_size) {
  const auto* s = static_cast<const std::byte*>(src);
  auto* d = static_cast<std::byte*>(dst);
  if (l.shape.empty()) {
    std::memcpy(d, s, elem_size);
    return;
  }
  size_t inner = l.shape.size() - 1;
  int64_t n = l.shape[inner];
  int64_t ss = l.src_strides[inner];
  int64_t ds = l.dst_strides[inner];
  if (n == 0) return;
  auto esize = static_cast<int64_t>(elem_size);
  const int64_t rows = outer_count(l, inner);
  const int64_t grain = std::max<int64_t>(1, kParallelCopyBytes / (n * esize));
  threading::parallel_for(rows, grain, [&](int64_t begin, int64_t end) {
    for_each_outer_range(l, inner, begin, end, [&](int64_t so, int64_t doff) {
      copy_inner(s + so * esize, ss, d + doff * esize, ds, n, elem_size);
    });
  });
}

void copy_strided(const void* src, std::span<const int64_t> src_strides, void* dst,
                  std::span<const int64_t> dst_strides, std::span<const int64_t> shape, size_t elem_size) {
  copy_layout(src, dst, coalesce(shape, src_strides, dst_strides), elem_size);
}

void fill_elements(void* dst, int64_t count, const void* value, size_t elem_size) {
  switch (elem_size) {
    case 1:
      fill_run(static_cast<uint8_t*>(dst), count, value);
      break;
    case 2:
      fill_run(static_cast<uint16_t*>(dst), count, value);
      break;
    case 4:
      fill_run(static_cast<uint32_t*>(dst), count, value);
      break;
    default:
      fill_run(static_cast<uint64_t*>(dst), count, value);
      break;
  }
}

Status check_movable_dtype(DType t, std::string_view what) {
  if (t == DType::kString) return not_implemented("{}: string tensors are not supported", what);
  if (dtype_size(t) == 0) return invalid_argument("{}: unsupported dtype {}", what, dtype_name(t));
  return Status::ok();
}

Status require_input(const KernelInit& init, size_t i, std::string_view what) {
  if (!has_input(init, i)) return invalid_model("{} is required", what);
  return Status::ok();
}

Result<IndexVec> read_index_input(const Tensor& t, std::string_view what) {
  if (!dtype_is_int(t.dtype())) return invalid_argument("{} must be an integer tensor, got {}", what, t.describe());
  if (t.rank() > 1) return invalid_argument("{} must be 0-D or 1-D, got {}", what, t.describe());
  IndexVec out(static_cast<size_t>(t.numel()));
  for (int64_t i = 0; i < t.numel(); ++i) out[static_cast<size_t>(i)] = read_int(t, i);
  return out;
}

}  // namespace ember::kernels::tensor_ops
