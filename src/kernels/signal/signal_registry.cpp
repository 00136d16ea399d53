#include "kernels/registry.h"
#include "kernels/signal/signal_ops.h"

namespace ember::kernels {

// DFT reads node.opset: opset 20 takes the axis as an input.
void register_signal_ops(OpRegistry& r) {
  r.add({"", "DFT", 17, INT_MAX, create_dft});
  r.add({"", "STFT", 17, INT_MAX, create_stft});
  r.add({"", "HannWindow", 17, INT_MAX, create_window});
  r.add({"", "HammingWindow", 17, INT_MAX, create_window});
  r.add({"", "BlackmanWindow", 17, INT_MAX, create_window});
  r.add({"", "MelWeightMatrix", 17, INT_MAX, create_mel_weight_matrix});
}

}  // namespace ember::kernels
