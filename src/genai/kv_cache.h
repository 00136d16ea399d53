#pragma once
// Where a decoder's key/value cache lives and how it is bound to a run: one
// tensor per layer and K/V bound as the past input, and the tensor its
// present output is written to. Three strategies:
//   SharedBufferKvCache  GroupQueryAttention with past_present_share_buffer:
//                        [rows, kv_heads, capacity, head_size] per layer, bound
//                        as both past and present, so a run appends in place;
//   DoubleBufferKvCache  exports whose present is Concat(past, new): two
//                        buffers of that capacity, the run's present becomes
//                        the next run's past;
//   PagedKvCache         the serving engine's block pools [num_blocks,
//                        kv_heads, block_size, head_size], bound as both past
//                        and present of Ember's PagedAttention; which blocks
//                        a sequence holds is KvBlockPool's bookkeeping.
#include <cstdint>
#include <vector>

#include "base/tensor.h"
#include "genai/kv_block_pool.h"

namespace ember::genai {

struct KvShape {
  int64_t tensors = 0;  // 2 per layer: key, value
  int64_t kv_heads = 0;
  int64_t head_size = 0;
  DType dtype = DType::kF32;
};

class KvCache {
 public:
  virtual ~KvCache() = default;
  // What the next run binds as past input i and present output i.
  Tensor* past(size_t i) { return &past_[i]; }
  Tensor* present(size_t i) { return present_[i]; }
  virtual int64_t bytes() const = 0;

 protected:
  std::vector<Tensor> past_;
  std::vector<Tensor*> present_;
};

// The single-sequence caches of Generator: positions [0, capacity) of one row
// (or, shared, of `rows` rows batched together).
class ContiguousKvCache : public KvCache {
 public:
  int64_t capacity() const { return capacity_; }
  // Binds a run of `new_tokens` after `cached` tokens of row `row`.
  virtual void bind(int64_t row, int64_t cached, int64_t new_tokens) = 0;
  // After the run succeeded.
  virtual void commit() {}
  // Keeps the first `length` of `cached` positions.
  virtual void truncate(int64_t cached, int64_t length) = 0;

 protected:
  int64_t capacity_ = 0;
};

class SharedBufferKvCache final : public ContiguousKvCache {
 public:
  SharedBufferKvCache(const KvShape& shape, int64_t rows, int64_t capacity);
  int64_t rows() const { return rows_; }
  void bind(int64_t row, int64_t cached, int64_t new_tokens) override;
  // Binds rows [0, rows) for one batched decode step.
  void bind_rows(int64_t rows);
  // Copies the first `length` positions of row `from` into row `to` (beam search's reordering).
  void copy_row(int64_t from, int64_t to, int64_t length);
  void truncate(int64_t, int64_t) override {}
  int64_t bytes() const override;

 private:
  KvShape shape_;
  int64_t rows_ = 0;
  std::vector<Tensor> buffers_;
};

class DoubleBufferKvCache final : public ContiguousKvCache {
 public:
  DoubleBufferKvCache(const KvShape& shape, int64_t capacity);
  void bind(int64_t row, int64_t cached, int64_t new_tokens) override;
  void commit() override { current_ = 1 - current_; }
  void truncate(int64_t cached, int64_t length) override;
  int64_t bytes() const override;

 private:
  KvShape shape_;
  std::vector<Tensor> buffers_[2];
  std::vector<Tensor> present_views_;
  int current_ = 0;  // buffers_[current_] holds the cached past
};

class PagedKvCache final : public KvCache {
 public:
  // Uninitialized: pages become resident as blocks are first written.
  PagedKvCache(const KvShape& shape, int32_t num_blocks, int64_t block_size);
  int32_t num_blocks() const { return num_blocks_; }
  int64_t block_size() const { return block_size_; }
  // Bytes of one block across every layer's K and V.
  int64_t block_bytes() const { return block_bytes_; }
  int64_t bytes() const override { return block_bytes_ * num_blocks_; }
  // Copies every layer's K and V rows of block `from` into block `to`.
  void copy_block(BlockId from, BlockId to);

 private:
  int32_t num_blocks_ = 0;
  int64_t block_size_ = 0, block_bytes_ = 0;
};

}  // namespace ember::genai
