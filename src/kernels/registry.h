#pragma once
// The one list of ops Ember implements. The session, `ember info`, the
// conformance report and (later) the plugin EP all read it.
#include <climits>
#include <string_view>
#include <vector>

#include "kernels/kernel.h"

namespace ember::kernels {

struct OpEntry {
  std::string_view domain;   // "" = default ONNX domain, "com.microsoft", ...
  std::string_view op_type;
  int since_version;         // first opset of `domain` this entry covers
  int until_version;         // last opset covered (INT_MAX: up to the newest)
  KernelFactory create;
  // The factory accepts string tensors among its inputs; other ops are refused
  // at creation when an input is a string (their kernels copy raw bytes).
  bool strings = false;
};

class OpRegistry {
 public:
  static const OpRegistry& instance();

  // The entry implementing `op_type` at `opset` of `domain`, or nullptr.
  const OpEntry* find(std::string_view domain, std::string_view op_type, int opset) const;
  // True if any opset of the op is implemented (to tell "unsupported op" from "unsupported opset").
  bool knows(std::string_view domain, std::string_view op_type) const;
  const std::vector<OpEntry>& entries() const { return entries_; }

  void add(OpEntry e) { entries_.push_back(e); }

 private:
  std::vector<OpEntry> entries_;
};

// One call per op family; each adds its entries to the registry.
void register_elementwise_ops(OpRegistry& r);      // kernels/elementwise/
void register_tensor_ops(OpRegistry& r);           // kernels/tensor/: shape and data movement
void register_gather_scatter_ops(OpRegistry& r);   // kernels/tensor/: indexing ops
void register_reduce_ops(OpRegistry& r);           // kernels/reduce/: reductions, softmax family
void register_matmul_ops(OpRegistry& r);           // kernels/matmul/
void register_norm_ops(OpRegistry& r);             // kernels/norm/
void register_control_ops(OpRegistry& r);          // kernels/control/
void register_quant_ops(OpRegistry& r);            // kernels/quant/
void register_attention_ops(OpRegistry& r);        // kernels/attention/
void register_random_ops(OpRegistry& r);           // kernels/random/: random generators, Dropout
void register_recurrent_ops(OpRegistry& r);        // kernels/recurrent/: RNN, GRU, LSTM
void register_signal_ops(OpRegistry& r);           // kernels/signal/: DFT, STFT, windows, MelWeightMatrix
void register_string_ops(OpRegistry& r);           // kernels/string/: string tensors, text featurizers
void register_ml_ops(OpRegistry& r);               // kernels/ml/: the ai.onnx.ml domain
void register_conv_ops(OpRegistry& r);             // kernels/conv/: ConvTranspose, DeformConv, LpPool, GlobalLpPool, MaxUnpool, LRN, ConvInteger, QLinearConv, RoiAlign
void register_image_ops(OpRegistry& r);            // kernels/image/: Resize, Upsample, GridSample, AffineGrid, CenterCropPad, Col2Im, ImageDecoder

// Builds the kernel for a node, with the node's label on any error.
Result<std::unique_ptr<OpKernel>> create_kernel(const KernelInit& init);

// Runs one node once on known inputs and returns owned outputs: constant folding,
// plan-time evaluation of shape tensors, and single-op tests use this.
Result<std::vector<Tensor>> evaluate(const OpKernel& kernel, std::span<const Tensor* const> inputs,
                                     size_t num_outputs);

}  // namespace ember::kernels
