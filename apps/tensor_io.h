#pragma once
// Tensor files and random inputs for the command line.
#include <random>
#include <string>

#include "base/status.h"
#include "base/tensor.h"
#include "runtime/session.h"

namespace ember::cli {

// Reads a TensorProto (.pb) or NumPy (.npy) file, chosen by extension; a .pb
// file for a value of `kind` kSequence or kOptional is a SequenceProto or an
// OptionalProto.
Result<Tensor> read_tensor_file(const std::string& path, DType kind = DType::kUndefined);

// "NAME=VALUE" -> {NAME, VALUE}.
Result<std::pair<std::string, std::string>> split_assignment(const std::string& text, const char* what);

// A tensor of `info`'s declared shape (symbolic dims from `dims`), filled with
// uniform values in [-1, 1) for floats and [0, 4) for integers.
Result<Tensor> random_input(const runtime::IoInfo& info, const std::vector<std::pair<std::string, int64_t>>& dims,
                            std::mt19937& rng);

}  // namespace ember::cli
