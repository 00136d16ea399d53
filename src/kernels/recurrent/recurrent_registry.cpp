#include "kernels/recurrent/recurrent_ops.h"
#include "kernels/registry.h"

namespace ember::kernels {

// Each factory reads node.opset for the version-dependent attributes (layout from 14).
void register_recurrent_ops(OpRegistry& r) {
  r.add(up_to_newest("", "RNN", 1, create_rnn, kFloatTypes | kIntTypes));
  r.add(up_to_newest("", "GRU", 1, create_gru, kFloatTypes | kIntTypes));
  r.add(up_to_newest("", "LSTM", 1, create_lstm, kFloatTypes | kIntTypes));
}

}  // namespace ember::kernels
