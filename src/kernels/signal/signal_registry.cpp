#include "kernels/registry.h"
#include "kernels/signal/signal_ops.h"

namespace ember::kernels {

// DFT reads node.opset: opset 20 takes the axis as an input.
void register_signal_ops(OpRegistry& r) {
  r.add(up_to_newest("", "DFT", 17, create_dft, kFloatTypes | kIntTypes));
  r.add(up_to_newest("", "STFT", 17, create_stft, kFloatTypes | kIntTypes));
  r.add(up_to_newest("", "HannWindow", 17, create_window, kIntTypes));
  r.add(up_to_newest("", "HammingWindow", 17, create_window, kIntTypes));
  r.add(up_to_newest("", "BlackmanWindow", 17, create_window, kIntTypes));
  r.add(up_to_newest("", "MelWeightMatrix", 17, create_mel_weight_matrix, kFloatTypes | kIntTypes));
}

}  // namespace ember::kernels
