#include "genai/kv_cache.h"

#include <cstring>

namespace ember::genai {
namespace {

Tensor view_at(Tensor& buffer, Shape shape, size_t byte_offset) {
  return Tensor(buffer.dtype(), std::move(shape), static_cast<char*>(buffer.data()) + byte_offset);
}

int64_t total_bytes(const std::vector<Tensor>& tensors) {
  int64_t bytes = 0;
  for (const Tensor& t : tensors) bytes += static_cast<int64_t>(t.nbytes());
  return bytes;
}

}  // namespace

SharedBufferKvCache::SharedBufferKvCache(const KvShape& shape, int64_t rows, int64_t capacity)
    : shape_(shape), rows_(rows) {
  capacity_ = capacity;
  for (int64_t i = 0; i < shape.tensors; ++i) {
    buffers_.push_back(Tensor::allocate(shape.dtype, {rows, shape.kv_heads, capacity, shape.head_size}));
  }
  past_.resize(buffers_.size());
  for (Tensor& t : past_) present_.push_back(&t);
}

void SharedBufferKvCache::bind(int64_t row, int64_t, int64_t) {
  const size_t row_bytes = buffers_.front().nbytes() / static_cast<size_t>(rows_);
  for (size_t i = 0; i < buffers_.size(); ++i) {
    past_[i] = view_at(buffers_[i], {1, shape_.kv_heads, capacity_, shape_.head_size},
                       static_cast<size_t>(row) * row_bytes);
  }
}

void SharedBufferKvCache::bind_rows(int64_t rows) {
  for (size_t i = 0; i < buffers_.size(); ++i) {
    past_[i] = view_at(buffers_[i], {rows, shape_.kv_heads, capacity_, shape_.head_size}, 0);
  }
}

void SharedBufferKvCache::copy_row(int64_t from, int64_t to, int64_t length) {
  const size_t position = static_cast<size_t>(shape_.head_size) * dtype_size(shape_.dtype);
  const size_t head = static_cast<size_t>(capacity_) * position;
  const size_t row = static_cast<size_t>(shape_.kv_heads) * head;
  for (Tensor& t : buffers_) {
    auto* base = static_cast<char*>(t.data());
    for (int64_t h = 0; h < shape_.kv_heads; ++h) {
      std::memcpy(base + static_cast<size_t>(to) * row + static_cast<size_t>(h) * head,
                  base + static_cast<size_t>(from) * row + static_cast<size_t>(h) * head,
                  static_cast<size_t>(length) * position);
    }
  }
}

int64_t SharedBufferKvCache::bytes() const { return total_bytes(buffers_); }

DoubleBufferKvCache::DoubleBufferKvCache(const KvShape& shape, int64_t capacity) : shape_(shape) {
  capacity_ = capacity;
  for (auto& copy : buffers_) {
    for (int64_t i = 0; i < shape.tensors; ++i) {
      copy.push_back(Tensor::allocate(shape.dtype, {1, shape.kv_heads, capacity, shape.head_size}));
    }
  }
  past_.resize(static_cast<size_t>(shape.tensors));
  present_views_.resize(static_cast<size_t>(shape.tensors));
  for (Tensor& t : present_views_) present_.push_back(&t);
}

void DoubleBufferKvCache::bind(int64_t, int64_t cached, int64_t new_tokens) {
  for (size_t i = 0; i < past_.size(); ++i) {
    past_[i] = view_at(buffers_[current_][i], {1, shape_.kv_heads, cached, shape_.head_size}, 0);
    present_views_[i] = view_at(buffers_[1 - current_][i], {1, shape_.kv_heads, cached + new_tokens, shape_.head_size}, 0);
  }
}

void DoubleBufferKvCache::truncate(int64_t cached, int64_t length) {
  if (length >= cached) return;
  // [1, heads, cached, head] -> [1, heads, length, head] in place: each head
  // moves towards the front, so ascending order never overwrites unread data.
  const size_t row = static_cast<size_t>(shape_.head_size) * dtype_size(shape_.dtype);
  for (Tensor& t : buffers_[current_]) {
    auto* base = static_cast<char*>(t.data());
    for (int64_t h = 1; h < shape_.kv_heads; ++h) {
      std::memmove(base + h * length * row, base + h * cached * row, static_cast<size_t>(length) * row);
    }
  }
}

int64_t DoubleBufferKvCache::bytes() const { return total_bytes(buffers_[0]) + total_bytes(buffers_[1]); }

PagedKvCache::PagedKvCache(const KvShape& shape, int32_t num_blocks, int64_t block_size)
    : num_blocks_(num_blocks), block_size_(block_size) {
  for (int64_t i = 0; i < shape.tensors; ++i) {
    past_.push_back(Tensor::allocate_uninitialized(shape.dtype, {num_blocks, shape.kv_heads, block_size, shape.head_size}));
  }
  for (Tensor& t : past_) present_.push_back(&t);
  block_bytes_ = total_bytes(past_) / num_blocks;
}

void PagedKvCache::copy_block(BlockId from, BlockId to) {
  for (Tensor& pool : past_) {
    const size_t bytes = pool.nbytes() / static_cast<size_t>(num_blocks_);
    auto* base = static_cast<char*>(pool.data());
    std::memcpy(base + static_cast<size_t>(to) * bytes, base + static_cast<size_t>(from) * bytes, bytes);
  }
}

}  // namespace ember::genai
