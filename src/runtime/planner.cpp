#include <algorithm>
#include <cstring>

#include "base/buffer.h"
#include "kernels/registry.h"
#include "runtime/plan.h"

namespace ember::runtime {
namespace {

// Nodes whose inputs are all known while planning are evaluated then, when their
// outputs are this small: the Shape -> Gather -> Concat -> Reshape chains.
constexpr int64_t kMaxPlanTimeElements = 1 << 16;

bool is_known(const ValuePlan& v) { return v.storage == Storage::kConstant; }

struct Planner {
  const PlannerInput& in;
  Plan& plan;
  PlanScratch& scratch;

  Status walk_nodes();
  Status evaluate_now(const ir::Node& node, const kernels::OpKernel& kernel);
  void assign_storage();
  void assign_offsets();
};

// Runs `kernel` on the planner's inputs and inferred outputs, into the plan's
// buffers: the node's outputs become constants of this plan.
Status Planner::evaluate_now(const ir::Node& node, const kernels::OpKernel& kernel) {
  std::vector<Tensor>& outputs = scratch.outputs;
  for (size_t i = 0; i < outputs.size(); ++i) {
    if (!scratch.output_ptrs[i]) continue;
    if (plan.buffers_used == plan.buffers.size()) plan.buffers.emplace_back();
    const size_t k = plan.buffers_used++;
    const size_t bytes = outputs[i].nbytes();
    plan.buffers[k].resize(bytes);
    outputs[i].set_data(plan.buffers[k].data());
    if (bytes) std::memset(outputs[i].data(), 0, bytes);
  }
  if (kernel.is_view()) {
    if (outputs[0].nbytes()) std::memcpy(outputs[0].data(), scratch.inputs[0]->data(), outputs[0].nbytes());
  } else {
    kernels::KernelContext ctx(scratch.inputs, scratch.output_ptrs);
    Status st = kernel.run(ctx);
    if (!st.is_ok()) return st.with_context(node.label() + ": ");
  }
  for (size_t i = 0; i < node.outputs.size(); ++i) {
    if (node.outputs[i] == ir::kNoValue) continue;
    ValuePlan& v = plan.values[static_cast<size_t>(node.outputs[i])];
    v.storage = Storage::kConstant;
    v.tensor = std::move(outputs[i]);
  }
  return Status::ok();
}

Status Planner::walk_nodes() {
  const ir::Graph& g = in.graph;
  std::vector<const Tensor*>& inputs = scratch.inputs;
  std::vector<DType>& dtypes = scratch.dtypes;
  std::vector<Tensor>& outputs = scratch.outputs;
  std::vector<Tensor*>& output_ptrs = scratch.output_ptrs;
  for (size_t n = 0; n < g.nodes.size(); ++n) {
    const ir::Node& node = g.nodes[n];
    bool dynamic = false;
    inputs.clear();
    dtypes.clear();
    for (ir::ValueId id : node.inputs) {
      if (id == ir::kNoValue) {
        inputs.push_back(nullptr);
        dtypes.push_back(DType::kUndefined);
        continue;
      }
      const ValuePlan& v = plan.values[static_cast<size_t>(id)];
      dynamic = dynamic || v.storage == Storage::kDynamic || v.storage == Storage::kUnused;
      inputs.push_back(&v.tensor);
      dtypes.push_back(v.tensor.dtype());
    }
    const kernels::OpKernel* kernel = nullptr;
    if (!dynamic) {
      EMBER_ASSIGN_OR_RETURN(kernel, in.kernel_for(static_cast<ir::NodeId>(n), dtypes));
      dynamic = kernel->allocates_outputs();  // no plannable buffers
    }
    outputs.assign(node.outputs.size(), Tensor());
    output_ptrs.clear();
    for (size_t i = 0; i < node.outputs.size(); ++i) {
      output_ptrs.push_back(node.outputs[i] == ir::kNoValue ? nullptr : &outputs[i]);
    }
    if (!dynamic) {
      kernels::KernelContext ctx(inputs, output_ptrs);
      Status st = kernel->infer_outputs(ctx);
      if (kernels::is_needs_value(st)) {
        dynamic = true;
      } else if (!st.is_ok()) {
        return st.with_context(node.label() + ": ");
      }
      // String elements own heap memory: they are allocated while running, never in the arena.
      dynamic = dynamic ||
                std::any_of(outputs.begin(), outputs.end(), [](const Tensor& t) { return t.dtype() == DType::kString; });
    }
    if (!dynamic) {
      bool inputs_known = std::all_of(node.inputs.begin(), node.inputs.end(), [&](ir::ValueId id) {
        return id == ir::kNoValue || is_known(plan.values[static_cast<size_t>(id)]);
      });
      int64_t out_elements = 0;
      for (const Tensor& t : outputs) out_elements += t.numel();
      if ((inputs_known || !kernel->reads_input_data()) && out_elements <= kMaxPlanTimeElements) {
        EMBER_RETURN_IF_ERROR(evaluate_now(node, *kernel));
        continue;
      }
    }
    Step step;
    step.node = static_cast<ir::NodeId>(n);
    step.kernel = kernel;
    step.dynamic = dynamic;
    step.view = !dynamic && kernel->is_view();
    step.first_input = static_cast<uint32_t>(plan.step_inputs.size());
    step.num_inputs = static_cast<uint32_t>(node.inputs.size());
    plan.step_inputs.insert(plan.step_inputs.end(), node.inputs.begin(), node.inputs.end());
    step.first_output = static_cast<uint32_t>(plan.step_outputs.size());
    step.num_outputs = static_cast<uint32_t>(node.outputs.size());
    plan.step_outputs.insert(plan.step_outputs.end(), node.outputs.begin(), node.outputs.end());
    for (size_t i = 0; i < node.outputs.size(); ++i) {
      if (node.outputs[i] == ir::kNoValue) continue;
      ValuePlan& v = plan.values[static_cast<size_t>(node.outputs[i])];
      v.storage = dynamic ? Storage::kDynamic : Storage::kArena;
      v.tensor = dynamic ? Tensor() : std::move(outputs[i]);
    }
    plan.has_dynamic = plan.has_dynamic || dynamic;
    plan.steps.push_back(step);
  }
  return Status::ok();
}

// Decides views, in-place reuse and graph-output buffers. A value's "root" is the
// value whose buffer it lives in; a root's buffer lives until the last reader of
// any value sharing it.
void Planner::assign_storage() {
  const ir::Graph& g = in.graph;
  size_t nv = plan.values.size();
  std::vector<int>& last_use = scratch.last_use;
  last_use.assign(nv, -1);
  for (size_t s = 0; s < plan.steps.size(); ++s) {
    const Step& step = plan.steps[s];
    for (uint32_t i = 0; i < step.num_inputs; ++i) {
      ir::ValueId id = plan.step_inputs[step.first_input + i];
      if (id != ir::kNoValue) last_use[static_cast<size_t>(id)] = static_cast<int>(s);
    }
  }
  // Graph outputs stay alive to the end and get their own buffers.
  for (size_t k = 0; k < g.outputs.size(); ++k) {
    ValuePlan& v = plan.values[static_cast<size_t>(g.outputs[k])];
    last_use[static_cast<size_t>(g.outputs[k])] = static_cast<int>(plan.steps.size());
    if ((v.storage == Storage::kArena || v.storage == Storage::kDynamic) && v.output_index < 0) {
      if (v.storage == Storage::kArena) v.storage = Storage::kOutput;
      v.output_index = static_cast<int32_t>(k);
    }
    plan.outputs_in_place = plan.outputs_in_place && v.storage == Storage::kOutput &&
                            v.output_index == static_cast<int32_t>(k);
  }
  std::vector<ir::ValueId>& root = scratch.root;
  root.resize(nv);
  for (size_t i = 0; i < nv; ++i) root[i] = static_cast<ir::ValueId>(i);
  std::vector<int>& root_end = scratch.root_end;
  root_end.assign(last_use.begin(), last_use.end());
  for (size_t s = 0; s < plan.steps.size(); ++s) {
    Step& step = plan.steps[s];
    if (step.dynamic && step.num_inputs > 0) {
      // A dynamic step may turn out to be a view of input 0: keep that buffer
      // alive to the end of the run.
      ir::ValueId src = plan.step_inputs[step.first_input];
      if (src != ir::kNoValue) {
        int& end = root_end[static_cast<size_t>(root[static_cast<size_t>(src)])];
        end = std::max(end, static_cast<int>(plan.steps.size()));
      }
    }
    if (step.dynamic || step.num_outputs == 0) continue;
    ir::ValueId out = plan.step_outputs[step.first_output];
    if (out == ir::kNoValue) continue;
    ValuePlan& ov = plan.values[static_cast<size_t>(out)];
    if (step.view) {
      if (ov.storage == Storage::kOutput) {
        step.view = false;  // a graph output owns its bytes: copy instead
        continue;
      }
      ir::ValueId src = plan.step_inputs[step.first_input];
      ir::ValueId r = root[static_cast<size_t>(src)];
      ov.storage = Storage::kView;
      ov.view_of = src;
      root[static_cast<size_t>(out)] = r;
      root_end[static_cast<size_t>(r)] = std::max(root_end[static_cast<size_t>(r)], last_use[static_cast<size_t>(out)]);
      continue;
    }
    int k = step.kernel->inplace_input();
    if (k < 0 || static_cast<uint32_t>(k) >= step.num_inputs || ov.storage != Storage::kArena) continue;
    ir::ValueId src = plan.step_inputs[step.first_input + static_cast<uint32_t>(k)];
    if (src == ir::kNoValue) continue;
    ir::ValueId r = root[static_cast<size_t>(src)];
    const ValuePlan& rv = plan.values[static_cast<size_t>(r)];
    const ValuePlan& sv = plan.values[static_cast<size_t>(src)];
    bool same_layout = sv.tensor.dtype() == ov.tensor.dtype() && sv.tensor.shape() == ov.tensor.shape();
    // Another input sharing the buffer would be overwritten while still being read.
    bool aliased = false;
    for (uint32_t j = 0; j < step.num_inputs; ++j) {
      ir::ValueId other = plan.step_inputs[step.first_input + j];
      aliased = aliased || (j != static_cast<uint32_t>(k) && other != ir::kNoValue && root[static_cast<size_t>(other)] == r);
    }
    if (rv.storage == Storage::kArena && same_layout && !aliased && root_end[static_cast<size_t>(r)] <= static_cast<int>(s)) {
      ov.storage = Storage::kView;
      ov.view_of = src;
      root[static_cast<size_t>(out)] = r;
      root_end[static_cast<size_t>(r)] = std::max(root_end[static_cast<size_t>(r)], last_use[static_cast<size_t>(out)]);
    }
  }
  // Fold alias lifetimes into the roots for offset assignment.
  last_use.swap(root_end);
}

void Planner::assign_offsets() {
  using Block = PlanScratch::Block;
  std::vector<int>& start = scratch.start;
  const std::vector<int>& last_use = scratch.last_use;
  start.assign(plan.values.size(), 0);
  for (size_t s = 0; s < plan.steps.size(); ++s) {
    const Step& step = plan.steps[s];
    for (uint32_t i = 0; i < step.num_outputs; ++i) {
      ir::ValueId id = plan.step_outputs[step.first_output + i];
      if (id != ir::kNoValue) start[static_cast<size_t>(id)] = static_cast<int>(s);
    }
  }
  std::vector<Block>& blocks = scratch.blocks;
  blocks.clear();
  for (size_t i = 0; i < plan.values.size(); ++i) {
    const ValuePlan& v = plan.values[i];
    if (v.storage != Storage::kArena) continue;
    int end = std::max(last_use[i], start[i]);
    blocks.push_back({static_cast<ir::ValueId>(i), start[i], end, align_up(std::max<size_t>(v.tensor.nbytes(), 1)), 0});
  }
  std::sort(blocks.begin(), blocks.end(), [](const Block& a, const Block& b) {
    return a.bytes != b.bytes ? a.bytes > b.bytes : a.start < b.start;
  });
  // Placed blocks by the steps they live in, and by the step they start at: the
  // placed blocks overlapping b's lifetime are those live when b starts and
  // those starting later within it, each found once. A sweep over all placed
  // blocks instead made planning quadratic: 24 decoder layers took ~5 ms.
  const size_t num_steps = plan.steps.size() + 1;
  auto& live_at = scratch.live_at;
  auto& starts_at = scratch.starts_at;
  if (live_at.size() < num_steps) {
    live_at.resize(num_steps);
    starts_at.resize(num_steps);
  }
  for (size_t s = 0; s < num_steps; ++s) {
    live_at[s].clear();
    starts_at[s].clear();
  }
  std::vector<std::pair<size_t, size_t>>& busy = scratch.busy;
  for (size_t i = 0; i < blocks.size(); ++i) {
    Block& b = blocks[i];
    busy.clear();
    for (uint32_t p : live_at[static_cast<size_t>(b.start)]) busy.emplace_back(blocks[p].offset, blocks[p].offset + blocks[p].bytes);
    for (int s = b.start + 1; s <= b.end; ++s) {
      for (uint32_t p : starts_at[static_cast<size_t>(s)]) busy.emplace_back(blocks[p].offset, blocks[p].offset + blocks[p].bytes);
    }
    std::sort(busy.begin(), busy.end());
    size_t offset = 0;
    for (auto [lo, hi] : busy) {
      if (offset + b.bytes <= lo) break;
      offset = std::max(offset, hi);
    }
    b.offset = offset;
    plan.values[static_cast<size_t>(b.id)].offset = offset;
    plan.arena_bytes = std::max(plan.arena_bytes, offset + b.bytes);
    for (int s = b.start; s <= b.end; ++s) live_at[static_cast<size_t>(s)].push_back(static_cast<uint32_t>(i));
    starts_at[static_cast<size_t>(b.start)].push_back(static_cast<uint32_t>(i));
  }
}

}  // namespace

bool Plan::matches(std::span<const Tensor* const> inputs) const {
  if (inputs.size() != input_shapes.size()) return false;
  for (size_t i = 0; i < inputs.size(); ++i) {
    if (!inputs[i]) {
      if (input_dtypes[i] != DType::kUndefined) return false;
      continue;
    }
    if (inputs[i]->dtype() != input_dtypes[i] || !(inputs[i]->shape() == input_shapes[i])) return false;
  }
  return true;
}

Status build_plan(const PlannerInput& in, std::span<const Tensor* const> inputs, Plan& plan, PlanScratch& scratch) {
  const ir::Graph& g = in.graph;
  plan.input_shapes.clear();
  plan.input_dtypes.clear();
  plan.steps.clear();
  plan.step_inputs.clear();
  plan.step_outputs.clear();
  plan.arena_bytes = 0;
  plan.has_dynamic = false;
  plan.outputs_in_place = true;
  plan.buffers_used = 0;
  plan.values.resize(g.values.size());
  for (size_t i = 0; i < g.values.size(); ++i) {
    const ir::Value& v = g.values[i];
    ValuePlan& p = plan.values[i];
    p = ValuePlan();
    if (v.constant) {
      p.storage = Storage::kConstant;
      p.tensor = *v.constant;
    }
  }
  for (size_t i = 0; i < inputs.size(); ++i) {
    plan.input_shapes.push_back(inputs[i] ? inputs[i]->shape() : Shape{});
    plan.input_dtypes.push_back(inputs[i] ? inputs[i]->dtype() : DType::kUndefined);
    if (!inputs[i]) {  // an omitted input keeps its default (a constant)
      if (!g.value(in.graph_inputs[i]).constant) {
        return invalid_argument("input '{}' is missing", g.value(in.graph_inputs[i]).name);
      }
      continue;
    }
    ValuePlan& v = plan.values[static_cast<size_t>(in.graph_inputs[i])];
    v.storage = Storage::kInput;
    v.input_index = static_cast<int32_t>(i);
    v.tensor = Tensor(inputs[i]->dtype(), inputs[i]->shape(), nullptr);
  }
  Planner planner{in, plan, scratch};
  EMBER_RETURN_IF_ERROR(planner.walk_nodes());
  planner.assign_storage();
  planner.assign_offsets();
  return Status::ok();
}

}  // namespace ember::runtime
