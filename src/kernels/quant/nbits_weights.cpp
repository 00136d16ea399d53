#include "kernels/quant/nbits_weights.h"

#include <sys/mman.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <mutex>
#include <new>

#include "base/buffer.h"

namespace ember::kernels::quant {
namespace {

// Chunks are mapped, not touched: only the used bytes (rounded up to a huge
// page) become resident, so the size only bounds how often a chunk is mapped.
constexpr size_t kChunkBytes = size_t{32} << 20;

struct Chunk {
  uint8_t* begin = nullptr;  // 2 MiB aligned
  size_t size = 0;
  void* mapping = nullptr;  // size + kHugePage bytes
  ~Chunk() { munmap(mapping, size + kHugePage); }
};

// Anonymous memory is zero, so slices start zeroed. madvise is a hint: where
// huge pages are off or short, the chunk keeps 4 KiB pages.
std::shared_ptr<Chunk> map_chunk(size_t size) {
  const size_t mapping_size = size + kHugePage;
  void* m = mmap(nullptr, mapping_size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (m == MAP_FAILED) throw std::bad_alloc();
  auto chunk = std::make_shared<Chunk>();
  chunk->mapping = m;
  chunk->begin = reinterpret_cast<uint8_t*>((reinterpret_cast<uintptr_t>(m) + kHugePage - 1) / kHugePage * kHugePage);
  chunk->size = size;
  madvise(chunk->begin, size, MADV_HUGEPAGE);
  return chunk;
}

// The chunk that slices come from next, and its bytes in use. Weak: a chunk
// whose slices are all gone is unmapped even while it is the current one.
struct Arena {
  std::mutex mutex;
  std::weak_ptr<Chunk> current;
  size_t used = 0;
};

Arena& arena() {
  static Arena a;
  return a;
}

float read_float(DType dtype, const void* data, int64_t i) {
  if (dtype == DType::kF16) return Float16::to_float(static_cast<const uint16_t*>(data)[i]);
  return static_cast<const float*>(data)[i];
}

// Code i of a byte string packed low bits first (bits is 4 or 8).
int code_at(const uint8_t* bytes, int64_t i, int bits) {
  if (bits == 8) return bytes[i];
  const uint8_t byte = bytes[i >> 1];
  return (i & 1) ? byte >> 4 : byte & 0xF;
}

float zero_point(const NBitsWeights& w, int64_t n, int64_t block) {
  switch (w.zp_dtype) {
    case DType::kUndefined:
      return static_cast<float>(1 << (w.bits - 1));
    case DType::kU8:
      return static_cast<float>(code_at(static_cast<const uint8_t*>(w.zero_points) + n * w.zp_row_bytes, block, w.bits));
    default:
      return read_float(w.zp_dtype, w.zero_points, n * w.k_blocks + block);
  }
}

// Fills block `block` of the tile holding columns [n0, n0 + kNBitsTileCols);
// codes past K and columns past N stay zero.
void pack_q4_block(const NBitsWeights& w, const NBitsPackedGeometry& g, int64_t n0, int64_t block, uint8_t* out) {
  const int64_t len = std::min(w.block_size, w.k - block * w.block_size);
  for (int64_t c = 0; c < kNBitsTileCols && n0 + c < w.n; ++c) {
    const uint8_t* blob = w.packed + ((n0 + c) * w.k_blocks + block) * w.blob_size;
    if (len == w.block_size) {
      // A whole block: the 4 source bytes of an octet hold k = 8o .. 8o + 7, two
      // a byte, low nibble first; lane byte j takes k = 8o + j and 8o + 4 + j.
      // Byte by byte: 2.2 against 10 ms for a 896 x 4864 matrix (load time).
      for (int64_t o = 0; o < w.block_size / kNBitsOctetK; ++o) {
        const uint8_t* src = blob + o * 4;
        uint8_t* lane = out + o * 64 + c * 4;
        for (int j = 0; j < 4; ++j) {
          const int shift = (j & 1) * 4;
          lane[j] = static_cast<uint8_t>(((src[j / 2] >> shift) & 0xF) | ((src[2 + j / 2] >> shift) & 0xF) << 4);
        }
      }
      continue;
    }
    for (int64_t i = 0; i < len; ++i) {
      const int64_t octet = i / kNBitsOctetK, within = i % kNBitsOctetK;
      uint8_t& byte = out[octet * 64 + c * 4 + within % 4];
      byte = static_cast<uint8_t>(byte | code_at(blob, i, 4) << (within < 4 ? 0 : 4));
    }
  }
  uint8_t* meta = out + w.block_size / kNBitsOctetK * 64;
  for (int64_t c = 0; c < kNBitsTileCols; ++c) {
    const int64_t n = n0 + c;
    const float scale = n < w.n ? read_float(w.scale_dtype, w.scales, n * w.k_blocks + block) : 0.0f;
    std::memcpy(meta + c * sizeof(float), &scale, sizeof(float));
    const float zp = n < w.n ? zero_point(w, n, block) : 0.0f;
    uint8_t* zps = meta + kNBitsTileCols * sizeof(float);
    if (g.zero_points == NBitsZeroPoints::kF32) {
      std::memcpy(zps + c * sizeof(float), &zp, sizeof(float));
    } else if (g.zero_points == NBitsZeroPoints::kU8) {
      zps[c] = static_cast<uint8_t>(zp);
    }
  }
}

}  // namespace

NBitsPackedBytes::NBitsPackedBytes(size_t bytes) : size_(bytes) {
  const size_t need = align_up(bytes == 0 ? 1 : bytes);
  Arena& a = arena();
  std::lock_guard<std::mutex> lock(a.mutex);
  std::shared_ptr<Chunk> current = a.current.lock();
  const size_t left = current ? current->size - a.used : 0;
  if (need <= left) {
    data_ = current->begin + a.used;
    chunk_ = std::move(current);
    a.used += need;
    return;
  }
  // A new chunk; it becomes the current one unless the old one has more room left.
  std::shared_ptr<Chunk> chunk = map_chunk(std::max(kChunkBytes, align_up(need, kHugePage)));
  chunk_ = chunk;
  data_ = chunk->begin;
  if (chunk->size - need > left) {
    a.current = chunk;
    a.used = need;
  }
}

NBitsPacked nbits_pack_q4(const NBitsWeights& w) {
  NBitsPacked p;
  NBitsPackedGeometry& g = p.geometry;
  g.k = w.k;
  g.block_size = w.block_size;
  g.k_blocks = w.k_blocks;
  g.zero_points = w.zp_dtype == DType::kUndefined ? NBitsZeroPoints::kDefault
                  : w.zp_dtype == DType::kU8      ? NBitsZeroPoints::kU8
                                                  : NBitsZeroPoints::kF32;
  const int64_t zp_bytes = g.zero_points == NBitsZeroPoints::kF32  ? kNBitsTileCols * sizeof(float)
                           : g.zero_points == NBitsZeroPoints::kU8 ? kNBitsTileCols
                                                                   : 0;
  g.block_bytes = w.block_size / kNBitsOctetK * 64 + kNBitsTileCols * sizeof(float) + zp_bytes;
  g.tile_bytes = g.k_blocks * g.block_bytes;
  const int64_t tiles = (w.n + kNBitsTileCols - 1) / kNBitsTileCols;
  p.bytes = NBitsPackedBytes(static_cast<size_t>(tiles * g.tile_bytes));
  uint8_t* out = static_cast<uint8_t*>(p.bytes.data());
  for (int64_t t = 0; t < tiles; ++t) {
    for (int64_t b = 0; b < w.k_blocks; ++b) {
      pack_q4_block(w, g, t * kNBitsTileCols, b, out + t * g.tile_bytes + b * g.block_bytes);
    }
  }
  return p;
}

int64_t nbits_zp_row_bytes(int64_t k_blocks, int bits) { return (k_blocks * bits + 7) / 8; }

void nbits_dequantize_row(const NBitsWeights& w, int64_t n, int64_t k_begin, int64_t k_end, float* out) {
  int64_t k = k_begin;
  while (k < k_end) {
    const int64_t block = k / w.block_size;
    const int64_t block_end = (block + 1) * w.block_size < k_end ? (block + 1) * w.block_size : k_end;
    const uint8_t* blob = w.packed + (n * w.k_blocks + block) * w.blob_size;
    const float scale = read_float(w.scale_dtype, w.scales, n * w.k_blocks + block);
    const float zp = zero_point(w, n, block);
    for (; k < block_end; ++k) {
      *out++ = (static_cast<float>(code_at(blob, k - block * w.block_size, w.bits)) - zp) * scale;
    }
  }
}

void nbits_dot_f32_ref(const NBitsWeights& w, const float* a, int64_t k_begin, int64_t k_end, int64_t n_begin,
                       int64_t n_end, float* acc) {
  float row[kNBitsKChunk];
  const int64_t len = k_end - k_begin;
  for (int64_t n = n_begin; n < n_end; ++n) {
    nbits_dequantize_row(w, n, k_begin, k_end, row);
    float sum = 0.0f;
    for (int64_t i = 0; i < len; ++i) sum += a[i] * row[i];
    acc[n - n_begin] += sum;
  }
}

void nbits_dot_q8_ref(const NBitsWeights& w, const int8_t* q, const float* a_scales, const int32_t* sums,
                      int64_t n_begin, int64_t n_end, float* acc) {
  for (int64_t n = n_begin; n < n_end; ++n) {
    float sum = acc[n - n_begin];
    for (int64_t b = 0; b < w.k_blocks; ++b) {
      const uint8_t* blob = w.packed + (n * w.k_blocks + b) * w.blob_size;
      const int64_t len = std::min(w.block_size, w.k - b * w.block_size);
      int32_t dot = 0;
      for (int64_t i = 0; i < len; ++i) dot += q[b * w.block_size + i] * code_at(blob, i, w.bits);
      const float centered = std::fma(-zero_point(w, n, b), static_cast<float>(sums[b]), static_cast<float>(dot));
      sum = std::fma(centered, a_scales[b] * read_float(w.scale_dtype, w.scales, n * w.k_blocks + b), sum);
    }
    acc[n - n_begin] = sum;
  }
}

}  // namespace ember::kernels::quant
