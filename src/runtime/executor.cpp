#include "runtime/executor.h"

#include <algorithm>
#include <chrono>
#include <cstring>
#include <numeric>

#include "base/mapped_file.h"
#include "base/value_list.h"
#include "kernels/registry.h"
#include "runtime/session.h"

namespace ember::runtime {

struct Executor::RunState {
  uint64_t plan_id = 0;  // of the plan the tables below were made for
  AlignedBuffer arena;
  std::vector<Tensor> values;            // indexed by ValueId
  std::vector<const Tensor*> in_ptrs;    // parallel to Plan::step_inputs
  std::vector<Tensor*> out_ptrs;         // parallel to Plan::step_outputs
  std::vector<ir::ValueId> dynamic_values;  // released after each run
  // run_bound(): where outputs the caller did not bind are written.
  std::vector<AlignedBuffer> dropped_outputs;
};

struct Executor::PlanEntry {
  std::unique_ptr<Plan> plan;
  uint64_t id = 0;  // new each time `plan` is (re)built for a signature
};

namespace {

// Plans kept per executor; a model whose input shapes keep changing (a decode
// loop: one new signature per step) rebuilds the least recently used one in
// place, keeping its storage and its run states' arenas.
constexpr size_t kMaxCachedPlans = 8;

// A valid, never dereferenced address for zero-size inputs that arrive without data.
alignas(kAlignment) char g_empty_data[kAlignment];

// True when the `nbytes` at `data` overlap any input's: such an output buffer cannot be reused.
bool overlaps_any(const void* data, size_t nbytes, std::span<const Tensor* const> inputs) {
  auto lo = reinterpret_cast<uintptr_t>(data);
  uintptr_t hi = lo + nbytes;
  for (const Tensor* in : inputs) {
    if (!in || !in->data()) continue;
    auto in_lo = reinterpret_cast<uintptr_t>(in->data());
    if (in_lo < hi && lo < in_lo + in->nbytes()) return true;
  }
  return false;
}

// The bytes of constant inputs per node, each constant counted at its first reader.
std::vector<int64_t> constant_bytes_by_first_reader(const ir::Graph& graph) {
  std::vector<int64_t> bytes(graph.nodes.size(), 0);
  std::vector<bool> counted(graph.values.size(), false);
  for (size_t i = 0; i < graph.nodes.size(); ++i) {
    for (ir::ValueId id : graph.nodes[i].inputs) {
      if (id == ir::kNoValue || counted[static_cast<size_t>(id)] || !graph.value(id).constant) continue;
      counted[static_cast<size_t>(id)] = true;
      bytes[i] += static_cast<int64_t>(graph.value(id).constant->nbytes());
    }
  }
  return bytes;
}

class SubgraphExecutor : public kernels::CompiledSubgraph {
 public:
  explicit SubgraphExecutor(std::unique_ptr<Executor> e) : executor_(std::move(e)) {}
  Status run(std::span<const Tensor* const> outer_values, std::vector<Tensor>& outputs) const override {
    return executor_->run(outer_values, outputs);
  }

 private:
  std::unique_ptr<Executor> executor_;
};

}  // namespace

Executor::~Executor() = default;

Result<std::unique_ptr<Executor>> Executor::create(std::shared_ptr<const ir::Graph> graph,
                                                   std::vector<ir::ValueId> inputs, ir::Graph* owned,
                                                   const LoadProgress& progress) {
  std::unique_ptr<Executor> e(new Executor());
  e->graph_ = std::move(graph);
  e->inputs_ = std::move(inputs);
  size_t n = e->graph_->nodes.size();
  e->owned_kernels_.resize(n);
  e->kernel_dtypes_.resize(n);
  e->kernels_ = std::vector<std::atomic<const kernels::OpKernel*>>(n);
  // Create every kernel whose input dtypes are declared, so bad attributes and
  // unsupported ops are reported at load; dtypes flow through the graph in order.
  std::vector<DType> dtype(e->graph_->values.size(), DType::kUndefined);
  for (size_t i = 0; i < dtype.size(); ++i) {
    const ir::Value& v = e->graph_->values[i];
    dtype[i] = v.constant ? v.constant->dtype() : v.dtype;
  }
  std::vector<int64_t> node_bytes = progress ? constant_bytes_by_first_reader(*e->graph_) : std::vector<int64_t>(n, 0);
  const int64_t total_bytes = std::accumulate(node_bytes.begin(), node_bytes.end(), int64_t{0});
  int64_t done_bytes = 0;
  std::vector<DType> in_dtypes;
  for (size_t i = 0; i < n; ++i) {
    if (progress && node_bytes[i] > 0) progress(done_bytes, total_bytes);
    done_bytes += node_bytes[i];
    const ir::Node& node = e->graph_->nodes[i];
    if (!kernels::OpRegistry::instance().find(node.domain, node.op_type, node.opset)) {
      return kernels::create_kernel({node, {}, {}, nullptr, e->graph_.get()}).status();
    }
    in_dtypes.clear();
    bool known = true;
    for (ir::ValueId id : node.inputs) {
      DType t = id == ir::kNoValue ? DType::kUndefined : dtype[static_cast<size_t>(id)];
      known = known && (id == ir::kNoValue || t != DType::kUndefined);
      in_dtypes.push_back(t);
    }
    if (!known) continue;
    EMBER_RETURN_IF_ERROR(e->kernel(static_cast<ir::NodeId>(i), in_dtypes).status());
    if (owned) e->release_prepacked_inputs(*owned, static_cast<ir::NodeId>(i));
    for (ir::ValueId out : node.outputs) {
      if (out != ir::kNoValue && e->graph_->value(out).dtype != DType::kUndefined) {
        dtype[static_cast<size_t>(out)] = e->graph_->value(out).dtype;
      }
    }
  }
  if (progress) progress(total_bytes, total_bytes);
  return e;
}

Result<const kernels::OpKernel*> Executor::kernel(ir::NodeId n, std::span<const DType> input_dtypes) const {
  const kernels::OpKernel* k = kernels_[static_cast<size_t>(n)].load(std::memory_order_acquire);
  if (!k) {
    std::lock_guard<std::mutex> lock(kernel_mutex_);
    k = kernels_[static_cast<size_t>(n)].load(std::memory_order_acquire);
    if (!k) {
      EMBER_ASSIGN_OR_RETURN(k, create_kernel(n, input_dtypes));
    }
  }
  // Written before the slot was published, so reading it after the acquire is safe.
  const std::vector<DType>& built_for = kernel_dtypes_[static_cast<size_t>(n)];
  if (!std::equal(built_for.begin(), built_for.end(), input_dtypes.begin(), input_dtypes.end())) {
    std::string built, got;
    for (DType t : built_for) built += std::string(built.empty() ? "" : ",") + std::string(dtype_name(t));
    for (DType t : input_dtypes) got += std::string(got.empty() ? "" : ",") + std::string(dtype_name(t));
    return invalid_argument("{}: built for input dtypes ({}), now given ({})", graph_->node(n).label(), built, got);
  }
  return k;
}

Result<const kernels::OpKernel*> Executor::create_kernel(ir::NodeId n, std::span<const DType> input_dtypes) const {
  const ir::Node& node = graph_->node(n);
  std::vector<const Tensor*> constants;
  for (ir::ValueId id : node.inputs) {
    const ir::Value* v = id == ir::kNoValue ? nullptr : &graph_->value(id);
    constants.push_back(v && v->constant && !v->is_graph_input ? &*v->constant : nullptr);
  }
  kernels::KernelInit init{node, input_dtypes, constants, const_cast<Executor*>(this), graph_.get()};
  EMBER_ASSIGN_OR_RETURN(auto created, kernels::create_kernel(init));
  const kernels::OpKernel* k = created.get();
  owned_kernels_[static_cast<size_t>(n)] = std::move(created);
  kernel_dtypes_[static_cast<size_t>(n)].assign(input_dtypes.begin(), input_dtypes.end());
  kernels_[static_cast<size_t>(n)].store(k, std::memory_order_release);
  return k;
}

Result<std::unique_ptr<kernels::CompiledSubgraph>> Executor::compile(std::shared_ptr<const ir::Graph> graph) {
  std::vector<ir::ValueId> inputs(graph->inputs);
  inputs.insert(inputs.end(), graph->outer_refs.begin(), graph->outer_refs.end());
  EMBER_ASSIGN_OR_RETURN(auto executor, Executor::create(std::move(graph), std::move(inputs)));
  return std::unique_ptr<kernels::CompiledSubgraph>(new SubgraphExecutor(std::move(executor)));
}

Result<std::shared_ptr<Executor::PlanEntry>> Executor::find_or_build_plan(std::span<const Tensor* const> inputs) const {
  std::lock_guard<std::mutex> lock(mutex_);
  for (size_t i = 0; i < plans_.size(); ++i) {
    if (plans_[i]->plan->matches(inputs)) {
      if (i != 0) std::rotate(plans_.begin(), plans_.begin() + static_cast<ptrdiff_t>(i), plans_.begin() + static_cast<ptrdiff_t>(i) + 1);
      return plans_[0];
    }
  }
  PlannerInput in{*graph_, inputs_, [this](ir::NodeId n, std::span<const DType> dtypes) { return kernel(n, dtypes); }};
  std::shared_ptr<PlanEntry> entry;
  if (plans_.size() == kMaxCachedPlans) {
    // Only a plan no run holds can be rebuilt: runs take their entry under mutex_.
    if (plans_.back().use_count() == 1) {
      entry = std::move(plans_.back());
    }
    plans_.pop_back();
  }
  const bool rebuilt = entry != nullptr;
  if (!entry) {
    entry = std::make_shared<PlanEntry>();
    entry->plan = std::make_unique<Plan>();
  }
  const auto start = std::chrono::steady_clock::now();
  Status st = build_plan(in, inputs, *entry->plan, plan_scratch_);
  planning_ns_ += static_cast<size_t>(
      std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() - start).count());
  EMBER_RETURN_IF_ERROR(st);
  entry->id = ++next_plan_id_;
  ++plans_built_;
  if (rebuilt) ++plans_rebuilt_;
  plans_.insert(plans_.begin(), entry);
  return entry;
}

void Executor::release_prepacked_inputs(ir::Graph& owned, ir::NodeId n) {
  const ir::Node& node = owned.node(n);
  for (ir::ValueId id : node.inputs) {
    if (id == ir::kNoValue) continue;
    ir::Value& v = owned.value(id);
    if (!v.constant || !v.constant->data() || v.is_graph_input || v.is_graph_output) continue;
    bool all_packed = true;
    for (ir::NodeId c : v.consumers) {
      const kernels::OpKernel* k = kernels_[static_cast<size_t>(c)].load(std::memory_order_acquire);
      const ir::Node& reader = owned.node(c);
      for (size_t slot = 0; all_packed && slot < reader.inputs.size(); ++slot) {
        if (reader.inputs[slot] != id) continue;
        all_packed = k && slot < reader.num_explicit_inputs && k->prepacked_input(slot);
      }
    }
    if (!all_packed) continue;
    released_bytes_ += v.constant->nbytes();
    release_mapped_pages(v.constant->data(), v.constant->nbytes());
    v.constant = Tensor(v.constant->dtype(), v.constant->shape(), nullptr);
  }
}

ExecutorStats Executor::stats() const {
  std::lock_guard<std::mutex> lock(mutex_);
  ExecutorStats s;
  s.released_bytes = released_bytes_;
  for (const auto& slot : kernels_) {
    // Published slots only: a run may be creating a kernel right now (under kernel_mutex_).
    const kernels::OpKernel* k = slot.load(std::memory_order_acquire);
    s.packed_bytes += k ? static_cast<size_t>(k->packed_bytes()) : 0;
  }
  for (const auto& state : free_states_) s.idle_arena_capacity += state->arena.capacity();
  s.plans_built = plans_built_;
  s.plans_cached = plans_.size();
  s.plans_rebuilt = plans_rebuilt_;
  s.planning_ns = planning_ns_;
  if (!plans_.empty()) {
    const Plan& p = *plans_.front()->plan;
    s.arena_bytes = p.arena_bytes;
    s.steps = p.steps.size();
    for (const Step& step : p.steps) s.dynamic_steps += step.dynamic ? 1 : 0;
  }
  return s;
}

std::unique_ptr<Executor::RunState> Executor::acquire_state(const PlanEntry& entry) const {
  std::unique_ptr<RunState> state;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (!free_states_.empty()) {
      auto made_for = std::find_if(free_states_.begin(), free_states_.end(),
                                   [&](const auto& s) { return s->plan_id == entry.id; });
      if (made_for == free_states_.end()) made_for = free_states_.end() - 1;
      state = std::move(*made_for);
      free_states_.erase(made_for);
      if (state->plan_id == entry.id) return state;
    }
  }
  // A new state, or one made for another plan: its vectors and arena keep their capacity.
  if (!state) state = std::make_unique<RunState>();
  const Plan& plan = *entry.plan;
  state->plan_id = entry.id;
  state->arena.resize(plan.arena_bytes);
  auto* base = static_cast<char*>(state->arena.data());
  state->values.resize(plan.values.size());
  state->dynamic_values.clear();
  for (size_t i = 0; i < plan.values.size(); ++i) {
    const ValuePlan& v = plan.values[i];
    state->values[i] = v.tensor;
    if (v.storage == Storage::kArena) state->values[i].set_data(base + v.offset);
    if (v.storage == Storage::kDynamic) state->dynamic_values.push_back(static_cast<ir::ValueId>(i));
  }
  state->in_ptrs.clear();
  state->out_ptrs.clear();
  for (ir::ValueId id : plan.step_inputs) state->in_ptrs.push_back(id == ir::kNoValue ? nullptr : &state->values[static_cast<size_t>(id)]);
  for (ir::ValueId id : plan.step_outputs) state->out_ptrs.push_back(id == ir::kNoValue ? nullptr : &state->values[static_cast<size_t>(id)]);
  return state;
}

void Executor::release_state(std::unique_ptr<RunState> state) const {
  std::lock_guard<std::mutex> lock(mutex_);
  free_states_.push_back(std::move(state));
}

Status Executor::run_step(const Plan& plan, const Step& step, RunState& state) const {
  for (uint32_t i = 0; i < step.num_outputs; ++i) {
    ir::ValueId id = plan.step_outputs[step.first_output + i];
    if (id == ir::kNoValue) continue;
    const ValuePlan& v = plan.values[static_cast<size_t>(id)];
    if (v.storage == Storage::kView) state.values[static_cast<size_t>(id)].set_data(state.values[static_cast<size_t>(v.view_of)].data());
  }
  if (step.view) return Status::ok();
  kernels::KernelContext ctx({state.in_ptrs.data() + step.first_input, step.num_inputs},
                             {state.out_ptrs.data() + step.first_output, step.num_outputs});
  Status st = step.kernel->run(ctx);
  if (!st.is_ok()) return st.with_context(graph_->node(step.node).label() + ": ");
  return st;
}

Status Executor::run_dynamic_step(const Plan& plan, const Step& step, RunState& state) const {
  const ir::Node& node = graph_->node(step.node);
  std::span<const Tensor* const> ins(state.in_ptrs.data() + step.first_input, step.num_inputs);
  std::span<Tensor* const> outs(state.out_ptrs.data() + step.first_output, step.num_outputs);
  const kernels::OpKernel* k = step.kernel;
  if (!k) {
    std::vector<DType> dtypes;
    for (const Tensor* t : ins) dtypes.push_back(t ? t->dtype() : DType::kUndefined);
    EMBER_ASSIGN_OR_RETURN(k, kernel(step.node, dtypes));
  }
  kernels::KernelContext ctx(ins, outs);
  Status st = k->infer_outputs(ctx);
  if (!st.is_ok()) return st.with_context(node.label() + ": ");
  if (k->is_view()) {
    outs[0]->set_data(const_cast<void*>(ins[0]->data()));
    return Status::ok();
  }
  if (!k->allocates_outputs()) {
    for (Tensor* out : outs) {
      if (out) *out = Tensor::allocate_uninitialized(out->dtype(), out->shape());
    }
  }
  st = k->run(ctx);
  if (!st.is_ok()) return st.with_context(node.label() + ": ");
  return st;
}

Status Executor::check_counts(std::span<const Tensor* const> inputs, size_t num_outputs) const {
  if (inputs.size() != inputs_.size()) {
    return invalid_argument("expected {} inputs, got {}", inputs_.size(), inputs.size());
  }
  if (num_outputs != graph_->outputs.size()) {
    return invalid_argument("expected {} outputs, got {}", graph_->outputs.size(), num_outputs);
  }
  return Status::ok();
}

Status Executor::run(std::span<const Tensor* const> inputs, std::vector<Tensor>& outputs) const {
  EMBER_RETURN_IF_ERROR(check_counts(inputs, graph_->outputs.size()));  // `outputs` is resized
  return run_impl(inputs, &outputs, {});
}

Status Executor::run_bound(std::span<const Tensor* const> inputs, std::span<Tensor* const> outputs) const {
  EMBER_RETURN_IF_ERROR(check_counts(inputs, outputs.size()));
  return run_impl(inputs, nullptr, outputs);
}

void Executor::planned_outputs(const Plan& plan, std::span<PlannedOutput> outputs) const {
  for (size_t k = 0; k < outputs.size(); ++k) {
    const ValuePlan& v = plan.values[static_cast<size_t>(graph_->outputs[k])];
    // A data-dependent output's dtype is the graph's (shape inference), not the plan's.
    outputs[k].dtype = v.storage == Storage::kDynamic ? graph_->value(graph_->outputs[k]).dtype : v.tensor.dtype();
    outputs[k].known = v.storage != Storage::kDynamic;
    outputs[k].shape = outputs[k].known ? v.tensor.shape() : Shape{};
  }
}

Result<std::unique_ptr<Executor::Prepared>> Executor::prepare(std::span<const Tensor* const> inputs,
                                                              std::span<PlannedOutput> outputs) const {
  EMBER_RETURN_IF_ERROR(check_counts(inputs, outputs.size()));
  EMBER_ASSIGN_OR_RETURN(std::shared_ptr<PlanEntry> entry, find_or_build_plan(inputs));
  planned_outputs(*entry->plan, outputs);
  std::unique_ptr<RunState> state = acquire_state(*entry);
  return std::unique_ptr<Prepared>(new Prepared(*this, std::move(entry), std::move(state)));
}

Executor::Prepared::Prepared(const Executor& executor, std::shared_ptr<PlanEntry> entry,
                             std::unique_ptr<RunState> state)
    : executor_(executor), entry_(std::move(entry)), state_(std::move(state)) {
  const Plan& plan = *entry_->plan;
  if (plan.steps.size() != 1 || plan.has_dynamic || !plan.outputs_in_place) return;
  const Step& step = plan.steps[0];
  if (step.dynamic || step.view || !step.kernel) return;
  for (uint32_t i = 0; i < step.num_inputs; ++i) {
    const ir::ValueId id = plan.step_inputs[step.first_input + i];
    const ValuePlan* v = id == ir::kNoValue ? nullptr : &plan.values[static_cast<size_t>(id)];
    if (v && v->storage != Storage::kInput && v->storage != Storage::kConstant) return;
    in_slot_.push_back(v && v->storage == Storage::kInput ? v->input_index : -1);
    step_in_.push_back(v && v->storage == Storage::kConstant ? &v->tensor : nullptr);
  }
  for (uint32_t k = 0; k < step.num_outputs; ++k) {
    const ir::ValueId id = plan.step_outputs[step.first_output + k];
    const ValuePlan* v = id == ir::kNoValue ? nullptr : &plan.values[static_cast<size_t>(id)];
    if (v && v->storage != Storage::kOutput) return;
    out_slot_.push_back(v ? v->output_index : -1);
    step_out_.push_back(nullptr);
    planned_out_.push_back(v ? &v->tensor : nullptr);
  }
  direct_ = true;
}

bool Executor::Prepared::run_direct(std::span<const Tensor* const> inputs, std::span<Tensor* const> outputs,
                                    Status& st) {
  const Plan& plan = *entry_->plan;
  for (size_t i = 0; i < in_slot_.size(); ++i) {
    if (in_slot_[i] < 0) continue;
    const Tensor* t = inputs[static_cast<size_t>(in_slot_[i])];
    if (!t || !t->data()) return false;  // omitted (its default is a constant of the plan) or zero-size
    step_in_[i] = t;
  }
  for (size_t k = 0; k < out_slot_.size(); ++k) {
    if (out_slot_[k] < 0) continue;
    Tensor* out = outputs[static_cast<size_t>(out_slot_[k])];
    const Tensor& planned = *planned_out_[k];
    if (!out || !out->data() || out->dtype() != planned.dtype() || !(out->shape() == planned.shape()) ||
        overlaps_any(out->data(), out->nbytes(), inputs)) {
      return false;
    }
    step_out_[k] = out;
  }
  kernels::KernelContext ctx(step_in_, step_out_);
  const Step& step = plan.steps[0];
  st = step.kernel->run(ctx);
  if (!st.is_ok()) st = st.with_context(executor_.graph_->node(step.node).label() + ": ");
  return true;
}

Executor::Prepared::~Prepared() { executor_.release_state(std::move(state_)); }

Status Executor::Prepared::check(std::span<const Tensor* const> inputs) const {
  if (!entry_->plan->matches(inputs)) {
    return invalid_argument("the inputs' dtypes or shapes differ from those this run was prepared for");
  }
  return Status::ok();
}

Status Executor::Prepared::run(std::span<const Tensor* const> inputs, std::vector<Tensor>& outputs) {
  EMBER_RETURN_IF_ERROR(check(inputs));
  return executor_.execute(*entry_->plan, inputs, &outputs, {}, *state_);
}

Status Executor::Prepared::run_bound(std::span<const Tensor* const> inputs, std::span<Tensor* const> outputs) {
  EMBER_RETURN_IF_ERROR(executor_.check_counts(inputs, outputs.size()));
  EMBER_RETURN_IF_ERROR(check(inputs));
  Status st;
  if (direct_ && run_direct(inputs, outputs, st)) return st;
  return executor_.execute(*entry_->plan, inputs, nullptr, outputs, *state_);
}

Status Executor::run_impl(std::span<const Tensor* const> inputs, std::vector<Tensor>* owned,
                          std::span<Tensor* const> bound) const {
  EMBER_ASSIGN_OR_RETURN(std::shared_ptr<PlanEntry> entry, find_or_build_plan(inputs));
  std::unique_ptr<RunState> state = acquire_state(*entry);
  Status st = execute(*entry->plan, inputs, owned, bound, *state);
  release_state(std::move(state));
  return st;
}

Status Executor::execute(const Plan& plan, std::span<const Tensor* const> inputs, std::vector<Tensor>* owned,
                         std::span<Tensor* const> bound, RunState& state) const {
  for (size_t i = 0; i < inputs.size(); ++i) {
    if (!inputs[i]) continue;
    void* data = const_cast<void*>(inputs[i]->data());
    state.values[static_cast<size_t>(inputs_[i])].set_data(data ? data : g_empty_data);
  }
  const auto& graph_outputs = graph_->outputs;
  std::vector<Tensor> displaced;
  Status st;
  if (owned) {
    std::vector<Tensor>& outputs = *owned;
    outputs.resize(graph_outputs.size());
    for (size_t k = 0; k < graph_outputs.size(); ++k) {
      const ValuePlan& v = plan.values[static_cast<size_t>(graph_outputs[k])];
      if (v.storage != Storage::kOutput || v.output_index != static_cast<int32_t>(k)) continue;
      Tensor& out = outputs[k];
      bool is_input = overlaps_any(out.data(), out.nbytes(), inputs);
      if (out.owns_unique_storage() && out.nbytes() == v.tensor.nbytes() && out.dtype() == v.tensor.dtype() && !is_input) {
        out.set_shape(v.tensor.shape());
      } else {
        // A caller may pass last run's output as this run's input: keep its bytes alive.
        if (is_input) displaced.push_back(std::move(out));
        out = Tensor::allocate_uninitialized(v.tensor.dtype(), v.tensor.shape());
      }
      state.values[static_cast<size_t>(graph_outputs[k])].set_data(out.data());
    }
  } else {
    st = bind_outputs(plan, inputs, bound, state);
  }
  for (size_t s = 0; st.is_ok() && s < plan.steps.size(); ++s) {
    const Step& step = plan.steps[s];
    st = step.dynamic ? run_dynamic_step(plan, step, state) : run_step(plan, step, state);
  }
  if (st.is_ok()) {
    if (owned) {
      give_outputs(plan, *owned, state);
    } else if (!plan.outputs_in_place) {
      st = copy_bound_outputs(plan, bound, state);
    }
  }
  for (ir::ValueId id : state.dynamic_values) state.values[static_cast<size_t>(id)] = Tensor();
  return st;
}

// Points each planned output buffer at the caller's tensor (or at a buffer of
// the state when the caller does not want it). Outputs the plan does not
// compute into their own buffer are checked here when their shape is known
// and copied after the run.
// A bound output written by its kernel into an input's buffer is only right when
// no other node reads that input's data and the output's kernel writes it in
// place over that input (OpKernel::may_share_buffer).
Status Executor::check_shared_buffer(ir::ValueId output, const void* data, size_t nbytes,
                                     std::span<const Tensor* const> inputs) const {
  const ir::Value& value = graph_->value(output);
  for (size_t i = 0; i < inputs.size(); ++i) {
    if (!inputs[i] || !overlaps_any(data, nbytes, inputs.subspan(i, 1))) continue;
    const ir::Value& in = graph_->value(inputs_[i]);
    bool ok = value.producer >= 0;
    for (ir::NodeId c : in.consumers) {
      if (c == value.producer) continue;
      const kernels::OpKernel* reader = kernels_[static_cast<size_t>(c)].load(std::memory_order_acquire);
      ok = ok && reader && !reader->reads_input_data();  // Shape, Size: only the shape
    }
    if (ok) {
      const ir::Node& node = graph_->node(value.producer);
      const kernels::OpKernel* k = kernels_[static_cast<size_t>(value.producer)].load(std::memory_order_acquire);
      const auto in_at = std::find(node.inputs.begin(), node.inputs.end(), inputs_[i]) - node.inputs.begin();
      const auto out_at = std::find(node.outputs.begin(), node.outputs.end(), output) - node.outputs.begin();
      ok = k && k->may_share_buffer(static_cast<size_t>(out_at), static_cast<size_t>(in_at));
    }
    if (!ok) {
      return invalid_argument("output '{}' is bound to the buffer of input '{}', but only a node that alone reads that "
                              "input's data and writes this output in place over it may share it",
                              value.name, in.name);
    }
  }
  return Status::ok();
}

Status Executor::bind_outputs(const Plan& plan, std::span<const Tensor* const> inputs, std::span<Tensor* const> bound,
                              RunState& state) const {
  const auto& graph_outputs = graph_->outputs;
  state.dropped_outputs.resize(graph_outputs.size());
  for (size_t k = 0; k < graph_outputs.size(); ++k) {
    const ValuePlan& v = plan.values[static_cast<size_t>(graph_outputs[k])];
    Tensor* out = bound[k];
    if (out && v.storage != Storage::kDynamic &&
        (out->dtype() != v.tensor.dtype() || !(out->shape() == v.tensor.shape()))) {
      return invalid_argument("output '{}' is bound to {}, but this run computes {}",
                              graph_->value(graph_outputs[k]).name, out->describe(), v.tensor.describe());
    }
    const size_t nbytes = out ? out->nbytes() : 0;
    if (nbytes > 0 && !out->data()) {
      return invalid_argument("output '{}' is bound to {} without data", graph_->value(graph_outputs[k]).name,
                              out->describe());
    }
    if (v.storage != Storage::kOutput || v.output_index != static_cast<int32_t>(k)) continue;
    if (nbytes > 0) EMBER_RETURN_IF_ERROR(check_shared_buffer(graph_outputs[k], out->data(), nbytes, inputs));
    void* data = out ? out->data() : nullptr;
    if (!out) {
      state.dropped_outputs[k].resize(v.tensor.nbytes());
      data = state.dropped_outputs[k].data();
    }
    state.values[static_cast<size_t>(graph_outputs[k])].set_data(data ? data : g_empty_data);
  }
  return Status::ok();
}

Status Executor::copy_bound_outputs(const Plan& plan, std::span<Tensor* const> bound, RunState& state) const {
  const auto& graph_outputs = graph_->outputs;
  for (size_t k = 0; k < graph_outputs.size(); ++k) {
    const ValuePlan& v = plan.values[static_cast<size_t>(graph_outputs[k])];
    Tensor* out = bound[k];
    if (!out || (v.storage == Storage::kOutput && v.output_index == static_cast<int32_t>(k))) continue;
    const Tensor& value = state.values[static_cast<size_t>(graph_outputs[k])];
    if (out->dtype() != value.dtype() || !(out->shape() == value.shape())) {
      return invalid_argument("output '{}' is bound to {}, but this run computed {}",
                              graph_->value(graph_outputs[k]).name, out->describe(), value.describe());
    }
    // A sequence or optional has no bytes to copy: the bound tensor becomes the run's handle.
    if (dtype_is_container(value.dtype())) {
      *out = value.owns_storage() ? value : value.clone();
      continue;
    }
    if (value.dtype() == DType::kString) {
      std::copy_n(value.data_as<std::string>(), value.numel(), out->data_as<std::string>());
    } else if (value.nbytes() && out->data() != value.data()) {
      std::memmove(out->data(), value.data(), value.nbytes());
    }
  }
  return Status::ok();
}

void Executor::give_outputs(const Plan& plan, std::vector<Tensor>& outputs, RunState& state) const {
  const auto& graph_outputs = graph_->outputs;
  for (size_t k = 0; k < graph_outputs.size(); ++k) {
    const ValuePlan& v = plan.values[static_cast<size_t>(graph_outputs[k])];
    if (v.output_index == static_cast<int32_t>(k) && v.storage == Storage::kOutput) continue;
    Tensor& value = state.values[static_cast<size_t>(graph_outputs[k])];
    if (v.output_index >= 0 && v.output_index != static_cast<int32_t>(k)) {
      outputs[k] = outputs[static_cast<size_t>(v.output_index)].clone();  // the same value listed twice
    } else if (v.output_index == static_cast<int32_t>(k) && value.owns_unique_storage()) {
      outputs[k] = std::move(value);
    } else {
      outputs[k] = value.clone();
    }
  }
}

}  // namespace ember::runtime
