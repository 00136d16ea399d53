// GroupQueryAttention over a contiguous shared past/present buffer against
// PagedAttention over a pool of shuffled 16-row blocks, on the same problem:
// Qwen2-0.5B's attention (14 query heads, 2 KV heads, head size 64, f32). A
// decode step (one new token after context - 1 cached ones) at 128, 1024 and
// 4096 keys, and a 512-token prompt chunk after 0 and 1024 cached tokens, at 1
// and 2 threads. The pair's ratio is PagedAttention's cost of reading keys
// through the block table (decode), and of running every row with the decode
// algorithm for batch invariance instead of GQA's GEMMs (prompt chunks).
#include <algorithm>
#include <memory>
#include <numeric>
#include <random>
#include <string>
#include <vector>

#include "base/tensor.h"
#include "ir/graph.h"
#include "kernels/kernel.h"
#include "kernels/registry.h"
#include "micro_util.h"
#include "threading/thread_pool.h"

namespace ember::bench {
namespace {

constexpr int64_t kHeads = 14, kKvHeads = 2, kHeadSize = 64, kBlockSize = 16;

Tensor random_f32(Shape shape, std::mt19937& rng) {
  Tensor t = Tensor::allocate(DType::kF32, std::move(shape));
  std::uniform_real_distribution<float> d(-1.0f, 1.0f);
  for (int64_t i = 0; i < t.numel(); ++i) t.data_as<float>()[i] = d(rng);
  return t;
}

Tensor ints(Shape shape, std::vector<int32_t> v) {
  Tensor t = Tensor::allocate(DType::kI32, std::move(shape));
  std::copy(v.begin(), v.end(), t.data_as<int32_t>());
  return t;
}

// One op bound to its tensors, run in place: outputs 1 and 2 are inputs `cache_k`, `cache_v`.
struct BoundOp {
  std::unique_ptr<kernels::OpKernel> kernel;
  std::vector<Tensor> inputs;  // index = op input; an empty tensor is an omitted input
  Tensor out;
  size_t cache_k = 0, cache_v = 0;

  void build(const char* domain, const char* op) {
    ir::Node node;
    node.op_type = op;
    node.domain = domain;
    node.opset = 1;
    node.attributes.resize(2);
    node.attributes[0].name = "num_heads";
    node.attributes[0].type = ir::AttrType::kInt;
    node.attributes[0].i = kHeads;
    node.attributes[1].name = "kv_num_heads";
    node.attributes[1].type = ir::AttrType::kInt;
    node.attributes[1].i = kKvHeads;
    node.num_explicit_inputs = inputs.size();
    std::vector<DType> dtypes;
    for (const Tensor& t : inputs) dtypes.push_back(t.data() ? t.dtype() : DType::kUndefined);
    const std::vector<const Tensor*> constants(inputs.size(), nullptr);
    kernel = std::move(kernels::create_kernel(kernels::KernelInit{node, dtypes, constants, nullptr})).value();
  }
  void run() {
    std::vector<const Tensor*> in;
    for (const Tensor& t : inputs) in.push_back(t.data() ? &t : nullptr);
    const std::vector<Tensor*> outs = {&out, &inputs[cache_k], &inputs[cache_v]};
    kernels::KernelContext ctx(in, outs);
    if (!kernel->run(ctx).is_ok()) std::abort();
  }
};

// GQA: query/key/value of `fresh` tokens after `past`, shared [1, Nkv, past + fresh, H] caches.
BoundOp gqa(int64_t past, int64_t fresh) {
  std::mt19937 rng(1);
  const int64_t total = past + fresh;
  BoundOp op;
  op.inputs.push_back(random_f32({1, fresh, kHeads * kHeadSize}, rng));
  op.inputs.push_back(random_f32({1, fresh, kKvHeads * kHeadSize}, rng));
  op.inputs.push_back(random_f32({1, fresh, kKvHeads * kHeadSize}, rng));
  op.inputs.push_back(random_f32({1, kKvHeads, total, kHeadSize}, rng));
  op.inputs.push_back(random_f32({1, kKvHeads, total, kHeadSize}, rng));
  op.inputs.push_back(ints({1}, {static_cast<int32_t>(total - 1)}));
  op.inputs.push_back(ints(Shape{}, {static_cast<int32_t>(total)}));
  op.cache_k = 3;
  op.cache_v = 4;
  op.out = Tensor::allocate(DType::kF32, {1, fresh, kHeads * kHeadSize});
  op.build("com.microsoft", "GroupQueryAttention");
  return op;
}

// PagedAttention: the same problem, the sequence's blocks shuffled in the pool.
BoundOp paged(int64_t past, int64_t fresh) {
  std::mt19937 rng(1);
  const int64_t total = past + fresh, blocks = (total + kBlockSize - 1) / kBlockSize;
  BoundOp op;
  op.inputs.push_back(random_f32({1, fresh, kHeads * kHeadSize}, rng));
  op.inputs.push_back(random_f32({1, fresh, kKvHeads * kHeadSize}, rng));
  op.inputs.push_back(random_f32({1, fresh, kKvHeads * kHeadSize}, rng));
  op.inputs.push_back(random_f32({blocks, kKvHeads, kBlockSize, kHeadSize}, rng));
  op.inputs.push_back(random_f32({blocks, kKvHeads, kBlockSize, kHeadSize}, rng));
  op.inputs.push_back(ints({2}, {0, static_cast<int32_t>(fresh)}));
  op.inputs.push_back(ints({1}, {static_cast<int32_t>(past)}));
  std::vector<int32_t> table(static_cast<size_t>(blocks));
  std::iota(table.begin(), table.end(), 0);
  std::shuffle(table.begin(), table.end(), rng);
  op.inputs.push_back(ints({1, blocks}, table));
  op.cache_k = 3;
  op.cache_v = 4;
  op.out = Tensor::allocate(DType::kF32, {1, fresh, kHeads * kHeadSize});
  op.build("ember", "PagedAttention");
  return op;
}

void register_case(const std::string& shape, int64_t past, int64_t fresh) {
  for (int threads : {1, 2}) {
    for (bool is_paged : {false, true}) {
      const std::string name = std::string("attention/") + (is_paged ? "paged" : "gqa") + "/" + shape +
                               "/threads:" + std::to_string(threads);
      benchmark::RegisterBenchmark(name.c_str(), [=](benchmark::State& state) {
        BoundOp op = is_paged ? paged(past, fresh) : gqa(past, fresh);
        threading::ScopedThreadLimit limit(threads);
        for (auto _ : state) op.run();
        state.SetItemsProcessed(state.iterations() * fresh);
      })->UseRealTime();
    }
  }
}

}  // namespace

void register_attention_benchmarks() {
  for (int64_t context : {128, 1024, 4096}) register_case("decode_ctx" + std::to_string(context), context - 1, 1);
  register_case("prompt512_past0", 0, 512);
  register_case("prompt512_past1024", 1024, 512);
}

}  // namespace ember::bench
