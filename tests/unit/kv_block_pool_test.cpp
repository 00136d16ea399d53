// The paged KV cache's block bookkeeping: allocation, reference counts, prefix
// publication and matching, LRU eviction and copy-on-write.
#include <gtest/gtest.h>

#include <numeric>
#include <random>
#include <set>

#include "genai/kv_block_pool.h"

namespace ember::genai {
namespace {

std::vector<int64_t> iota_tokens(int64_t n, int64_t first = 100) {
  std::vector<int64_t> t(static_cast<size_t>(n));
  std::iota(t.begin(), t.end(), first);
  return t;
}

// Publishes blocks as a sequence holding `tokens` in `blocks` would.
void publish_all(KvBlockPool& pool, std::span<const BlockId> blocks, std::span<const int64_t> tokens) {
  uint64_t parent = KvBlockPool::kRootKey;
  const auto bs = static_cast<size_t>(pool.block_size());
  for (size_t i = 0; i < blocks.size(); ++i) {
    const auto own = tokens.subspan(i * bs, bs);
    pool.publish(blocks[i], parent, own);
    parent = KvBlockPool::prefix_key(parent, own);
  }
}

TEST(KvBlockPool, AllocatesEveryBlockOnceThenRunsOut) {
  KvBlockPool pool(5, 16);
  std::set<BlockId> seen;
  for (int i = 0; i < 5; ++i) {
    const auto b = pool.allocate();
    ASSERT_TRUE(b.has_value());
    EXPECT_TRUE(seen.insert(*b).second);
    EXPECT_EQ(pool.ref_count(*b), 1);
  }
  EXPECT_EQ(pool.available(), 0);
  EXPECT_FALSE(pool.allocate().has_value());
  pool.release(2);
  EXPECT_EQ(pool.available(), 1);
  EXPECT_EQ(pool.allocate(), std::optional<BlockId>(2));
  EXPECT_EQ(pool.stats().referenced_blocks, 5);
}

TEST(KvBlockPool, SharedBlockIsFreedByItsLastReference) {
  KvBlockPool pool(2, 4);
  const BlockId b = *pool.allocate();
  pool.retain(b);
  pool.release(b);
  EXPECT_EQ(pool.available(), 1);
  pool.release(b);
  EXPECT_EQ(pool.available(), 2);
  EXPECT_EQ(pool.stats().referenced_blocks, 0);
}

TEST(KvBlockPool, MatchesWholeBlocksOfAPublishedPrefix) {
  KvBlockPool pool(8, 4);
  const std::vector<int64_t> tokens = iota_tokens(10);  // 2 full blocks and 2 tokens
  std::vector<BlockId> blocks = {*pool.allocate(), *pool.allocate(), *pool.allocate()};
  publish_all(pool, std::span(blocks).first(2), tokens);
  for (BlockId b : blocks) pool.release(b);
  EXPECT_EQ(pool.stats().cached_blocks, 2);

  std::vector<int64_t> query = tokens;
  query.push_back(7);
  const std::vector<BlockId> hit = pool.match_prefix(query, 100);
  EXPECT_EQ(hit, std::vector<BlockId>(blocks.begin(), blocks.begin() + 2));
  for (BlockId b : hit) EXPECT_EQ(pool.ref_count(b), 1);
  EXPECT_EQ(pool.stats().cached_blocks, 0);
  // The limit applies.
  const std::vector<BlockId> one = pool.match_prefix(query, 1);
  EXPECT_EQ(one, std::vector<BlockId>{blocks[0]});
  EXPECT_EQ(pool.ref_count(blocks[0]), 2);
  const KvBlockPoolStats s = pool.stats();
  EXPECT_EQ(s.prefix_lookups, 2);
  EXPECT_EQ(s.prefix_hit_blocks, 3);
}

TEST(KvBlockPool, ADifferentTokenStopsTheMatchAtItsBlock) {
  KvBlockPool pool(8, 4);
  const std::vector<int64_t> tokens = iota_tokens(12);
  std::vector<BlockId> blocks = {*pool.allocate(), *pool.allocate(), *pool.allocate()};
  publish_all(pool, blocks, tokens);
  std::vector<int64_t> other = tokens;
  other[5] = 1;  // in block 1
  EXPECT_EQ(pool.match_prefix(other, 100), std::vector<BlockId>{blocks[0]});
  // Same tokens of block 1 after a different block 0: a different prefix.
  std::vector<int64_t> shifted = tokens;
  shifted[0] = 1;
  EXPECT_TRUE(pool.match_prefix(shifted, 100).empty());
  // Fewer tokens than a block: nothing to match.
  EXPECT_TRUE(pool.match_prefix(std::span(tokens).first(3), 100).empty());
}

TEST(KvBlockPool, EvictsTheLeastRecentlyReleasedCachedBlockLast) {
  KvBlockPool pool(3, 2);
  const std::vector<int64_t> a = {1, 2}, b = {3, 4};
  const BlockId ba = *pool.allocate(), bb = *pool.allocate();
  pool.publish(ba, KvBlockPool::kRootKey, a);
  pool.publish(bb, KvBlockPool::kRootKey, b);
  pool.release(ba);  // least recently released
  pool.release(bb);
  // The free block goes before any cached one.
  const BlockId fresh = *pool.allocate();
  EXPECT_NE(fresh, ba);
  EXPECT_NE(fresh, bb);
  EXPECT_EQ(pool.stats().evictions, 0);
  // Then the least recently released cached block.
  EXPECT_EQ(pool.allocate(), std::optional<BlockId>(ba));
  EXPECT_FALSE(pool.is_published(ba));
  EXPECT_EQ(pool.stats().evictions, 1);
  EXPECT_TRUE(pool.match_prefix(a, 10).empty());
  EXPECT_EQ(pool.match_prefix(b, 10), std::vector<BlockId>{bb});
}

TEST(KvBlockPool, AMatchRenewsABlocksPlaceInTheLru) {
  KvBlockPool pool(2, 2);
  const std::vector<int64_t> a = {1, 2}, b = {3, 4};
  const BlockId ba = *pool.allocate(), bb = *pool.allocate();
  pool.publish(ba, KvBlockPool::kRootKey, a);
  pool.publish(bb, KvBlockPool::kRootKey, b);
  pool.release(ba);
  pool.release(bb);
  ASSERT_EQ(pool.match_prefix(a, 10), std::vector<BlockId>{ba});
  pool.release(ba);  // now the most recently released
  EXPECT_EQ(pool.allocate(), std::optional<BlockId>(bb));
}

TEST(KvBlockPool, CopyOnWriteCopiesSharedOrPublishedBlocksOnly) {
  KvBlockPool pool(4, 2);
  const BlockId own = *pool.allocate();
  const auto same = pool.copy_on_write(own);
  ASSERT_TRUE(same.has_value());
  EXPECT_EQ(same->block, own);
  EXPECT_FALSE(same->copied);

  pool.retain(own);  // two holders
  const auto copy = pool.copy_on_write(own);
  ASSERT_TRUE(copy.has_value());
  EXPECT_NE(copy->block, own);
  EXPECT_TRUE(copy->copied);
  EXPECT_EQ(pool.ref_count(own), 1);
  EXPECT_EQ(pool.ref_count(copy->block), 1);

  const std::vector<int64_t> t = {5, 6};
  pool.publish(own, KvBlockPool::kRootKey, t);  // published: never written again
  const auto from_published = pool.copy_on_write(own);
  ASSERT_TRUE(from_published.has_value());
  EXPECT_TRUE(from_published->copied);
  EXPECT_EQ(pool.ref_count(own), 0);
  EXPECT_EQ(pool.stats().cached_blocks, 1);
}

TEST(KvBlockPool, CopyOnWriteWithNoBlockLeftChangesNothing) {
  KvBlockPool pool(1, 2);
  const BlockId b = *pool.allocate();
  pool.retain(b);
  EXPECT_FALSE(pool.copy_on_write(b).has_value());
  EXPECT_EQ(pool.ref_count(b), 2);
}

TEST(KvBlockPool, RandomTrafficCountsEveryBlockBack) {
  KvBlockPool pool(64, 4);
  std::mt19937 rng(7);
  std::vector<std::vector<BlockId>> held(8);
  for (int step = 0; step < 5000; ++step) {
    auto& seq = held[rng() % held.size()];
    switch (rng() % 4) {
      case 0:
        if (auto b = pool.allocate()) seq.push_back(*b);
        break;
      case 1:
        if (!seq.empty()) {
          std::vector<int64_t> t = {static_cast<int64_t>(rng() % 3), 1, 2, 3};
          pool.publish(seq.back(), KvBlockPool::kRootKey, t);
        }
        break;
      case 2: {
        std::vector<int64_t> t = {static_cast<int64_t>(rng() % 3), 1, 2, 3};
        for (BlockId b : pool.match_prefix(t, 1)) seq.push_back(b);
        break;
      }
      default:
        for (BlockId b : seq) pool.release(b);
        seq.clear();
    }
    int64_t refs = 0;
    for (const auto& s : held) refs += static_cast<int64_t>(s.size());
    const KvBlockPoolStats st = pool.stats();
    ASSERT_LE(st.referenced_blocks, refs);
    ASSERT_EQ(pool.available() + st.referenced_blocks, 64);
  }
  for (auto& s : held) {
    for (BlockId b : s) pool.release(b);
  }
  EXPECT_EQ(pool.available(), 64);
  EXPECT_EQ(pool.stats().referenced_blocks, 0);
}

}  // namespace
}  // namespace ember::genai
