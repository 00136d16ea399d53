#include "kernels/recurrent/recurrent_ops.h"
#include "kernels/registry.h"

namespace ember::kernels {

// Each factory reads node.opset for the version-dependent attributes (layout from 14).
void register_recurrent_ops(OpRegistry& r) {
  r.add({"", "RNN", 1, INT_MAX, create_rnn});
  r.add({"", "GRU", 1, INT_MAX, create_gru});
  r.add({"", "LSTM", 1, INT_MAX, create_lstm});
}

}  // namespace ember::kernels
