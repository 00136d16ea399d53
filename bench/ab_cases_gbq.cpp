// com.microsoft GatherBlockQuantized cases: the 4-bit embedding lookup of LLM
// exports.
#include "case_builder.h"

namespace ember::bench {

// Token embeddings of 1 (decode) and 128 (prefill) ids from a constant 4-bit,
// block-32 table without zero points, f32 scales: Qwen2.5-0.5B's vocabulary x
// hidden (151936 x 896) and Llama-3.2-1B's (128256 x 2048). Both sides compute
// one f32 product per value, so outputs must match exactly.
void add_gbq_cases(std::vector<BenchCase>& cases) {
  constexpr int64_t kBlock = 32;
  constexpr struct {
    const char* tag;
    int64_t vocab, hidden;
  } kTables[] = {{"qwen0.5b", 151936, 896}, {"llama1b", 128256, 2048}};
  for (const auto& t : kTables) {
    for (int64_t tokens : {1, 128}) {
      const int64_t vocab = t.vocab, hidden = t.hidden;
      std::string name = fmt::format("GatherBlockQuantized/q4b{}/{}/{}x{}", kBlock, t.tag, tokens, hidden);
      cases.push_back({name,
                       fmt::format("com.microsoft.GatherBlockQuantized of {} int64 id{} from a constant 4-bit block-{} "
                                   "uint8[{},{}] table, float32 scales, no zero points",
                                   tokens, tokens == 1 ? "" : "s", kBlock, vocab, hidden / 2),
                       [vocab, hidden, tokens, name] {
                         CaseBuilder c(name);
                         c.model().set_opset(kMs, 1);
                         c.int_weight("table", DType::kU8, {vocab, hidden / 2}, 256);
                         c.weight("scales", DType::kF32, {vocab, hidden / kBlock}, 0.001f, 0.01f);
                         c.index_input("ids", {tokens}, vocab);
                         c.model().add_node("GatherBlockQuantized", {"table", "ids", "scales"}, {"y"},
                                            {attr_int("gather_axis", 0), attr_int("quantize_axis", 1),
                                             attr_int("block_size", kBlock), attr_int("bits", 4)},
                                            kMs);
                         c.output("y", DType::kF32);
                         return c.finish(1, Tolerance{0.0, 0.0});
                       }});
    }
  }
}

}  // namespace ember::bench
