#pragma once
// Where a decoder session's inputs and outputs are, by genai_config.json's
// names: the part of binding that every runner of the decoder shares (the
// single-sequence Generator and the serving engine's paged runner).
#include <span>
#include <string_view>
#include <vector>

#include "base/status.h"
#include "genai/genai_config.h"
#include "runtime/session.h"

namespace ember::genai {

struct DecoderIo {
  // Positions in the session's inputs() / outputs(); -1 when absent.
  int input_ids = -1, attention_mask = -1, position_ids = -1, logits = -1;
  std::vector<int> past, present;  // 2 per layer: key, value
  DType kv_dtype = DType::kUndefined;
};

// The position of `name` in `infos`, or -1.
int find_io(const std::vector<runtime::IoInfo>& infos, std::string_view name);

// Checks that the session has input_ids, float32 logits and every layer's past
// and present key and value, that the past inputs declare [batch, kv_heads,
// sequence, head_size] as the config says, and that every other input without
// a default is one of `extra_inputs` (the runner feeds those itself).
Result<DecoderIo> bind_decoder_io(const GenaiConfig& config, const runtime::Session& session,
                                  std::span<const std::string_view> extra_inputs = {});

}  // namespace ember::genai
