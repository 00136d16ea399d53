#pragma once
// The one list of ops Ember implements. The session, `ember ops`, the
// conformance report and the plugin EP's claims all read it.
#include <span>
#include <string_view>
#include <vector>

#include "base/dtype.h"
#include "kernels/kernel.h"

namespace ember::kernels {

// The newest opset of each domain the table has been reviewed against: ONNX
// 1.23.2's (tests/conformance/op_table_schema_test.py checks every ai.onnx and
// ai.onnx.ml entry against its schemas). A node of a newer opset is refused
// until its ops are reviewed and the number goes up.
constexpr int newest_opset(std::string_view domain) {
  if (domain.empty() || domain == "ai.onnx") return 28;
  if (domain == "ai.onnx.ml") return 5;
  return 1;  // com.microsoft, ai.onnx.preview, ember: one version each so far
}

// The fusion class of an op.
enum class Fusion : uint8_t { kNone, kElementwise };

struct OpEntry {
  std::string_view domain;   // "" = default ONNX domain, "com.microsoft", ...
  std::string_view op_type;
  int since_version;         // first opset of `domain` this entry covers
  int until_version;         // last opset covered, at most newest_opset(domain)
  KernelFactory create;
  // The element types the entry accepts on its inputs (the union over them);
  // create_kernel refuses any other before the factory sees it, and the plugin
  // EP claims nodes by it.
  DTypeSet types = kStandardTypes;
  // kElementwise: the elementwise fusion pass may put the node into one fused
  // loop (it also needs the node's f32 kernel: a unary table kind, a binary
  // kind, or a Cast between float types). The pass reads this field.
  Fusion fusion = Fusion::kNone;
};

// An entry from `since` up to the newest opset of `domain` the table covers.
constexpr OpEntry up_to_newest(std::string_view domain, std::string_view op_type, int since, KernelFactory create,
                               DTypeSet types = kStandardTypes, Fusion fusion = Fusion::kNone) {
  return {domain, op_type, since, newest_opset(domain), create, types, fusion};
}

class OpRegistry {
 public:
  static const OpRegistry& instance();

  // The entry implementing `op_type` at `opset` of `domain`, or nullptr.
  const OpEntry* find(std::string_view domain, std::string_view op_type, int opset) const;
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

// OK when every present input of `node` has a dtype in `entry.types`; else an
// error naming the node, the input, its dtype and the types the entry takes.
Status check_input_types(const OpEntry& entry, const ir::Node& node, std::span<const DType> input_dtypes);

// Builds the kernel for a node, with the node's label on any error.
Result<std::unique_ptr<OpKernel>> create_kernel(const KernelInit& init);

// Runs one node once on known inputs and returns owned outputs: constant folding,
// plan-time evaluation of shape tensors, and single-op tests use this.
Result<std::vector<Tensor>> evaluate(const OpKernel& kernel, std::span<const Tensor* const> inputs,
                                     size_t num_outputs);

}  // namespace ember::kernels
