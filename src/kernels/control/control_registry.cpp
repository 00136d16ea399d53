#include "kernels/control/control_ops.h"
#include "kernels/registry.h"

namespace ember::kernels {

void register_control_ops(OpRegistry& r) {
  using namespace control_ops;
  // Control flow and the sequence/optional ops carry tensors, sequences and optionals.
  constexpr DTypeSet kValues = kStandardTypes | kContainerTypes;
  r.add(up_to_newest("", "If", 1, &create_if, kValues));
  r.add(up_to_newest("", "Loop", 1, &create_loop, kValues));
  r.add(up_to_newest("", "Scan", 8, &create_scan, kValues));
  r.add(up_to_newest("", "SequenceMap", 17, &create_sequence_map, kValues));
  r.add(up_to_newest("", "SequenceEmpty", 11, &create_sequence_empty, kValues));
  r.add(up_to_newest("", "SequenceConstruct", 11, &create_sequence_construct, kValues));
  r.add(up_to_newest("", "SequenceInsert", 11, &create_sequence_insert, kValues));
  r.add(up_to_newest("", "SequenceErase", 11, &create_sequence_erase, kValues));
  r.add(up_to_newest("", "SequenceAt", 11, &create_sequence_at, kValues));
  r.add(up_to_newest("", "SequenceLength", 11, &create_sequence_length, kValues));
  r.add(up_to_newest("", "ConcatFromSequence", 11, &create_concat_from_sequence, kValues));
  r.add(up_to_newest("", "SplitToSequence", 11, &create_split_to_sequence, kValues));
  r.add(up_to_newest("", "Optional", 15, &create_optional, kValues));
  r.add(up_to_newest("", "OptionalHasElement", 15, &create_optional_has_element, kValues));
  r.add(up_to_newest("", "OptionalGetElement", 15, &create_optional_get_element, kValues));
}

}  // namespace ember::kernels
