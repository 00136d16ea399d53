#pragma once
// Rewrites of an onnxruntime-genai decoder graph that generation makes before
// the session is created: which positions the LM head computes, the config's
// sliding window, and the paged form the serving engine runs.
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"
#include "genai/genai_config.h"
#include "ir/graph.h"

namespace ember::genai {

// Which positions get logits. Generation reads few of them, so the LM head (the
// MatMul / MatMulNBits behind the logits output, with at most an elementwise
// softcap after it) gets only those rows of the hidden states: a 512-token
// prefill of a 150k vocabulary skips 511 rows of the largest matrix (a quarter
// of Qwen2.5-0.5B's weights) and a 300 MB logits buffer.
enum class LogitsRows {
  kLastPosition,  // hidden[:, -1:, :]
  kGathered,      // hidden[:, p, :] for p in the int64 input kLogitsPositionsInput
};
inline constexpr std::string_view kLogitsPositionsInput = "ember/logits_positions";

// Returns false, changing nothing, when the graph has another form (every
// position then gets logits).
bool restrict_lm_head(ir::Graph& graph, const std::string& logits, LogitsRows rows);

// The total sequence lengths at which the decoder's graph changes branch: C
// for every If whose condition is Greater(x, C) (C - 1 for GreaterOrEqual)
// with a scalar integer constant C. The model builder's LongRoPE exports
// (Phi-3) switch to their long rotary caches when past + new tokens exceeds
// original_max_position_embeddings; a run of several tokens that crosses C
// rotates its earlier tokens as one-token steps would not, so decode runs that
// must match one-token steps stop short of it (Generator::decode_run_limit).
std::vector<int64_t> length_switches(const ir::Graph& graph);

// genai_config.json's sliding_window on the decoder's GroupQueryAttention
// nodes: each windowed layer (every layer when `layers` is empty) without a
// window of its own gets local_window_size = window_size. The model builder's
// Mistral export declares the window in genai_config.json only, so its graph
// alone would attend to the whole context where Mistral attends to the
// window. A windowed layer whose attention is not GroupQueryAttention is
// returned, for the warning.
std::vector<int> apply_sliding_window(ir::Graph& graph, const DecoderConfig& d);

// The paged decoder: every layer's GroupQueryAttention becomes Ember's
// PagedAttention, whose past key/value inputs (bound as present too) are that
// layer's block pools [num_blocks, kv_heads, block_size, head_size], and which
// reads three new int32 inputs shared by all layers: the token offsets of each
// sequence in the flattened batch [num_seqs + 1], each sequence's cached
// length [num_seqs] and its block table [num_seqs, max_blocks]. input_ids and
// position_ids are then [1, tokens of every sequence]. The sequence lengths
// GroupQueryAttention derived from attention_mask are no longer read (a graph
// that reads attention_mask elsewhere is refused by PagedRunner::create).
// Needs every layer's past key and value read by one GroupQueryAttention node
// (the model builder's exports).
Status make_paged_decoder(ir::Graph& graph, const DecoderConfig& d);
inline constexpr std::string_view kQueryStartInput = "ember/query_start";
inline constexpr std::string_view kPastLensInput = "ember/past_lens";
inline constexpr std::string_view kBlockTablesInput = "ember/block_tables";

}  // namespace ember::genai
