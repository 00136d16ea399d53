// Shape rules of the sequence and optional ops: their outputs are kSequence /
// kOptional handles (base/value_list.h), whose elements are not tracked here.
#include "ir/shape_inference_internal.h"

namespace ember::ir::shape_inference_detail {
namespace {

Status sequence_output(OpContext& ctx) {
  for (size_t i = 0; i < ctx.outputs.size(); ++i) set_output(ctx, i, DType::kSequence, std::nullopt);
  return Status::ok();
}

Status optional_output(OpContext& ctx) {
  set_output(ctx, 0, DType::kOptional, std::nullopt);
  return Status::ok();
}

// SequenceAt, ConcatFromSequence: the element dtype and shape are the sequence's,
// known only at run time (a declared type is kept).
Status element_output(OpContext& ctx) {
  set_output(ctx, 0, DType::kUndefined, std::nullopt);
  return Status::ok();
}

Status sequence_length(OpContext& ctx) {
  set_output(ctx, 0, DType::kI64, SymShape{});
  return Status::ok();
}

Status optional_has_element(OpContext& ctx) {
  set_output(ctx, 0, DType::kBool, SymShape{});
  return Status::ok();
}

// A tensor or sequence input (not an optional) is its own element.
Status optional_get_element(OpContext& ctx) {
  if (ctx.dtype(0) != DType::kOptional && ctx.dtype(0) != DType::kUndefined) return same_as_input(ctx);
  return element_output(ctx);
}

}  // namespace

void add_sequence_rules(RuleTable& rules) {
  for (const char* op : {"SequenceEmpty", "SequenceConstruct", "SequenceInsert", "SequenceErase", "SplitToSequence",
                         "SequenceMap"}) {
    rules[op] = sequence_output;
  }
  rules["SequenceAt"] = element_output;
  rules["ConcatFromSequence"] = element_output;
  rules["SequenceLength"] = sequence_length;
  rules["Optional"] = optional_output;
  rules["OptionalHasElement"] = optional_has_element;
  rules["OptionalGetElement"] = optional_get_element;
}

}  // namespace ember::ir::shape_inference_detail
