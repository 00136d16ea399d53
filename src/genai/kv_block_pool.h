#pragma once
// The bookkeeping of a paged KV cache: one pool of fixed-size blocks (each
// block_size token positions of every layer's K and V), which of them are free,
// which sequences reference them, and which hold a cached prefix.
//
// The memory itself is the engine's per-layer tensors [num_blocks, kv_heads,
// block_size, head_size], indexed by block id; this class never touches it.
//
// Prefix caching (as vLLM's automatic prefix caching: facts, not code): a
// block that is full and written can be published under the key of the whole
// token prefix it ends, key_i = hash(key_{i-1}, tokens of block i). A later
// sequence whose tokens start with the same prefix takes those blocks by
// reference instead of recomputing them. Published blocks are never written
// again, so sharing them is read-only; a sequence that must write into a
// shared block (copy_on_write) gets a private copy first. A published block
// that no sequence references stays cached until a new allocation needs its
// space: the least recently released goes first (LRU).
#include <cstdint>
#include <list>
#include <optional>
#include <span>
#include <unordered_map>
#include <vector>

namespace ember::genai {

using BlockId = int32_t;

struct KvBlockPoolStats {
  int64_t num_blocks = 0;
  int64_t referenced_blocks = 0;  // held by at least one sequence
  int64_t cached_blocks = 0;      // published, unreferenced, reusable by a prefix match until evicted
  int64_t prefix_lookups = 0;     // match_prefix calls
  int64_t prefix_hit_blocks = 0;  // blocks those calls returned
  int64_t evictions = 0;          // cached blocks reused for new data
};

class KvBlockPool {
 public:
  KvBlockPool(int32_t num_blocks, int64_t block_size);

  int32_t num_blocks() const { return static_cast<int32_t>(blocks_.size()); }
  int64_t block_size() const { return block_size_; }
  // Blocks allocate() can hand out now: never used, freed, or cached but unreferenced.
  int32_t available() const { return static_cast<int32_t>(free_.size() + lru_.size()); }
  int32_t ref_count(BlockId block) const { return blocks_.at(static_cast<size_t>(block)).refs; }
  bool is_published(BlockId block) const { return blocks_.at(static_cast<size_t>(block)).published; }

  // A block to write, referenced once: an unpublished free block first, else
  // the least recently released cached block (its prefix entry dropped).
  // nullopt when every block is referenced.
  std::optional<BlockId> allocate();
  void retain(BlockId block);
  // Drops one reference. An unreferenced published block stays cached (most
  // recently used end of the LRU); an unpublished one becomes free.
  void release(BlockId block);

  // The key of the prefix that ends with `block_tokens` (block_size tokens) after the prefix keyed `parent`.
  static uint64_t prefix_key(uint64_t parent, std::span<const int64_t> block_tokens);
  static constexpr uint64_t kRootKey = 0x9e3779b97f4a7c15ull;

  // Publishes a full, written, referenced block as the prefix `key`, whose own
  // tokens are `block_tokens` and whose previous blocks' prefix is `parent`.
  // A block already published, or a key another block already holds, is left as it is.
  void publish(BlockId block, uint64_t parent, std::span<const int64_t> block_tokens);

  // The cached blocks holding the longest run of whole blocks at the start of
  // `tokens`, at most max_blocks; each is retained for the caller. A block
  // matches when its key, its parent key and its tokens all match, so a hash
  // collision can only shorten a match, never return another prefix's data.
  std::vector<BlockId> match_prefix(std::span<const int64_t> tokens, int64_t max_blocks);

  // A block the caller may write: `block` itself when the caller holds its only
  // reference and it is unpublished; otherwise a fresh block (the caller's
  // reference to `block` moves to it, and the caller copies the data). nullopt
  // when no block is available (nothing changes).
  struct Writable {
    BlockId block;
    bool copied;  // the caller must copy the old block's rows into `block`
  };
  std::optional<Writable> copy_on_write(BlockId block);

  KvBlockPoolStats stats() const;

 private:
  struct Block {
    int32_t refs = 0;
    bool published = false;
    uint64_t key = 0, parent = 0;
    std::vector<int64_t> tokens;  // while published
    std::list<BlockId>::iterator lru;  // while published and unreferenced
  };
  void unpublish(BlockId block);

  int64_t block_size_;
  std::vector<Block> blocks_;
  std::vector<BlockId> free_;   // unpublished, unreferenced; popped from the back
  std::list<BlockId> lru_;      // published, unreferenced; front = least recently released
  std::unordered_map<uint64_t, BlockId> by_key_;
  int64_t lookups_ = 0, hit_blocks_ = 0, evictions_ = 0;
};

}  // namespace ember::genai
