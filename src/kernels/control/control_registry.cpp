#include <climits>

#include "kernels/control/control_ops.h"
#include "kernels/registry.h"

namespace ember::kernels {

void register_control_ops(OpRegistry& r) {
  using namespace control_ops;
  r.add({"", "If", 1, INT_MAX, &create_if});
  r.add({"", "Loop", 1, INT_MAX, &create_loop});
  r.add({"", "Scan", 8, INT_MAX, &create_scan});
  r.add({"", "SequenceMap", 17, INT_MAX, &create_sequence_map});
  r.add({"", "SequenceEmpty", 11, INT_MAX, &create_sequence_empty});
  r.add({"", "SequenceConstruct", 11, INT_MAX, &create_sequence_construct});
  r.add({"", "SequenceInsert", 11, INT_MAX, &create_sequence_insert});
  r.add({"", "SequenceErase", 11, INT_MAX, &create_sequence_erase});
  r.add({"", "SequenceAt", 11, INT_MAX, &create_sequence_at});
  r.add({"", "SequenceLength", 11, INT_MAX, &create_sequence_length});
  r.add({"", "ConcatFromSequence", 11, INT_MAX, &create_concat_from_sequence});
  r.add({"", "SplitToSequence", 11, INT_MAX, &create_split_to_sequence});
  r.add({"", "Optional", 15, INT_MAX, &create_optional});
  r.add({"", "OptionalHasElement", 15, INT_MAX, &create_optional_has_element});
  r.add({"", "OptionalGetElement", 15, INT_MAX, &create_optional_get_element});
}

}  // namespace ember::kernels
