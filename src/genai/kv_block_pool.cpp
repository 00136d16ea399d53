#include "genai/kv_block_pool.h"

#include <algorithm>
#include <cassert>
#include <numeric>

namespace ember::genai {
namespace {

// splitmix64's finalizer (Steele, Lea, Flood: "Fast splittable pseudorandom number generators", 2014).
uint64_t mix(uint64_t x) {
  x ^= x >> 30;
  x *= 0xbf58476d1ce4e5b9ull;
  x ^= x >> 27;
  x *= 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

}  // namespace

KvBlockPool::KvBlockPool(int32_t num_blocks, int64_t block_size)
    : block_size_(block_size), blocks_(static_cast<size_t>(std::max(num_blocks, 0))) {
  free_.resize(blocks_.size());
  // Popped from the back: block 0 first.
  std::iota(free_.rbegin(), free_.rend(), BlockId{0});
}

std::optional<BlockId> KvBlockPool::allocate() {
  BlockId id;
  if (!free_.empty()) {
    id = free_.back();
    free_.pop_back();
  } else if (!lru_.empty()) {
    id = lru_.front();
    unpublish(id);
    ++evictions_;
  } else {
    return std::nullopt;
  }
  blocks_[static_cast<size_t>(id)].refs = 1;
  return id;
}

void KvBlockPool::retain(BlockId block) {
  Block& b = blocks_.at(static_cast<size_t>(block));
  if (b.refs == 0) {
    assert(b.published);
    lru_.erase(b.lru);
  }
  ++b.refs;
}

void KvBlockPool::release(BlockId block) {
  Block& b = blocks_.at(static_cast<size_t>(block));
  assert(b.refs > 0);
  if (--b.refs > 0) return;
  if (b.published) {
    b.lru = lru_.insert(lru_.end(), block);
  } else {
    free_.push_back(block);
  }
}

uint64_t KvBlockPool::prefix_key(uint64_t parent, std::span<const int64_t> block_tokens) {
  uint64_t h = mix(parent);
  for (int64_t t : block_tokens) h = mix(h ^ static_cast<uint64_t>(t));
  return h;
}

void KvBlockPool::publish(BlockId block, uint64_t parent, std::span<const int64_t> block_tokens) {
  assert(static_cast<int64_t>(block_tokens.size()) == block_size_);
  Block& b = blocks_.at(static_cast<size_t>(block));
  if (b.published) return;
  const uint64_t key = prefix_key(parent, block_tokens);
  if (!by_key_.emplace(key, block).second) return;
  b.published = true;
  b.key = key;
  b.parent = parent;
  b.tokens.assign(block_tokens.begin(), block_tokens.end());
  if (b.refs == 0) b.lru = lru_.insert(lru_.end(), block);
}

void KvBlockPool::unpublish(BlockId block) {
  Block& b = blocks_[static_cast<size_t>(block)];
  if (b.refs == 0) lru_.erase(b.lru);
  by_key_.erase(b.key);
  b.published = false;
  b.tokens.clear();
}

std::vector<BlockId> KvBlockPool::match_prefix(std::span<const int64_t> tokens, int64_t max_blocks) {
  ++lookups_;
  std::vector<BlockId> matched;
  uint64_t parent = kRootKey;
  const auto bs = static_cast<size_t>(block_size_);
  for (size_t begin = 0; begin + bs <= tokens.size() && static_cast<int64_t>(matched.size()) < max_blocks;
       begin += bs) {
    const std::span<const int64_t> own = tokens.subspan(begin, bs);
    const uint64_t key = prefix_key(parent, own);
    auto it = by_key_.find(key);
    if (it == by_key_.end()) break;
    const Block& b = blocks_[static_cast<size_t>(it->second)];
    if (b.parent != parent || !std::equal(own.begin(), own.end(), b.tokens.begin(), b.tokens.end())) break;
    retain(it->second);
    matched.push_back(it->second);
    parent = key;
  }
  hit_blocks_ += static_cast<int64_t>(matched.size());
  return matched;
}

std::optional<KvBlockPool::Writable> KvBlockPool::copy_on_write(BlockId block) {
  const Block& b = blocks_.at(static_cast<size_t>(block));
  if (b.refs == 1 && !b.published) return Writable{block, false};
  const std::optional<BlockId> fresh = allocate();
  if (!fresh) return std::nullopt;
  release(block);
  return Writable{*fresh, true};
}

KvBlockPoolStats KvBlockPool::stats() const {
  KvBlockPoolStats s;
  s.num_blocks = num_blocks();
  s.cached_blocks = static_cast<int64_t>(lru_.size());
  s.referenced_blocks = s.num_blocks - s.cached_blocks - static_cast<int64_t>(free_.size());
  s.prefix_lookups = lookups_;
  s.prefix_hit_blocks = hit_blocks_;
  s.evictions = evictions_;
  return s;
}

}  // namespace ember::genai
