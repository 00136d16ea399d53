#include "kernels/elementwise/fused_elementwise.h"

#include <algorithm>
#include <array>
#include <climits>
#include <cstring>
#include <memory>
#include <vector>

#include "kernels/common/convert.h"
#include "kernels/common/shape_util.h"
#include "kernels/elementwise/binary_ukernels.h"
#include "kernels/elementwise/elementwise_common.h"
#include "kernels/elementwise/unary_spec.h"
#include "threading/thread_pool.h"

namespace ember::kernels {
namespace {

// Elements per block: a block of every input and live temporary stays in L1
// (48 KiB on Zen 5) while the body runs over it.
constexpr int64_t kBlock = 512;
constexpr int kMaxInputs = 8;
constexpr int kMaxTemps = 8;
// Elements per parallel_for range. A SiLU body, 1 vs 2 threads: 8 Ki elements
// 2.64 -> 1.76 us, 4 Ki 1.38 -> 1.04 us; but work as cheap as a single Add loses
// at 4 Ki (0.57 -> 0.72 us) and breaks even at 8 Ki (method in
// docs/benchmarks/2026-11-30-thread-grains.md).
constexpr int64_t kGrain = 4 * 1024;

std::optional<BinaryKind> binary_kind(const ir::Node& node) {
  if (!node.domain.empty()) return std::nullopt;
  const std::string_view op = node.op_type;
  if (op == "Add") return BinaryKind::kAdd;
  if (op == "Sub") return BinaryKind::kSub;
  if (op == "Mul") return BinaryKind::kMul;
  if (op == "Div") return BinaryKind::kDiv;
  if (node.inputs.size() == 2 && op == "Max") return BinaryKind::kMax;
  if (node.inputs.size() == 2 && op == "Min") return BinaryKind::kMin;
  return std::nullopt;
}


// Where a step reads or writes: a kernel input, a temporary block, or the
// output block itself (f32 outputs only).
struct Operand {
  enum class Kind : uint8_t { kInput, kTemp, kOutput };
  Kind kind = Kind::kInput;
  int index = 0;
};

struct Step {
  enum class Op : uint8_t { kUnary, kBinary, kRound };
  Op op = Op::kUnary;
  UnaryF32Fn unary = nullptr;
  UnaryParams params;
  BinaryKind binary = BinaryKind::kAdd;
  DType round_to = DType::kUndefined;  // kRound: f16 or bf16
  Operand a, b, dst;
};

constexpr int kNoReg = INT_MIN;

// A step over virtual registers (one per step result) before temporaries are assigned.
struct VirtualStep {
  Step step;
  int a = kNoReg, b = kNoReg;  // >= 0: a virtual register; < 0: input -(i + 1)
};

int input_ref(int i) { return -(i + 1); }

class FusedElementwiseKernel final : public OpKernel {
 public:
  FusedElementwiseKernel(std::vector<Step> steps, Operand result, std::vector<DType> input_dtypes,
                         std::vector<bool> needs_vector, DType out_dtype)
      : steps_(std::move(steps)), result_(result), input_dtypes_(std::move(input_dtypes)),
        needs_vector_(std::move(needs_vector)), out_dtype_(out_dtype),
        convert_(convert_table()), binary_(binary_table()) {}

  Status infer(KernelContext& ctx) const override {
    Shape out;
    for (size_t i = 0; i < ctx.num_inputs(); ++i) {
      EMBER_ASSIGN_OR_RETURN(out, broadcast_shapes(out, ctx.input(i).shape()));
    }
    const int64_t n = shape_numel(out);
    for (size_t i = 0; i < ctx.num_inputs(); ++i) {
      const Shape& s = ctx.input(i).shape();
      const int64_t m = shape_numel(s);
      if (m != n && m != 1 && !elementwise::is_suffix_of(s, out)) {
        return invalid_argument("input {} of shape {} is neither the output shape {}, a scalar, nor a suffix of it", i,
                                shape_to_string(s), shape_to_string(out));
      }
    }
    ctx.set_output(0, out_dtype_, std::move(out));
    return Status::ok();
  }

  Status run(KernelContext& ctx) const override {
    Tensor& y = ctx.output(0);
    const int64_t n = y.numel();
    if (n == 0) return Status::ok();
    Inputs in{};
    for (size_t i = 0; i < ctx.num_inputs(); ++i) {
      const Tensor& x = ctx.input(i);
      in.data[i] = x.data();
      in.length[i] = x.numel();
      if (in.length[i] == 1 && n != 1) in.scalar[i] = read_scalar(x);
    }
    threading::parallel_for(n, kGrain, [&](int64_t begin, int64_t end) {
      for (int64_t off = begin; off < end; off += kBlock) run_block(in, n, off, std::min(kBlock, end - off), y);
    });
    return Status::ok();
  }

 private:
  struct Inputs {
    std::array<const void*, kMaxInputs> data;
    std::array<int64_t, kMaxInputs> length;
    std::array<float, kMaxInputs> scalar;
  };

  float read_scalar(const Tensor& x) const {
    float v = 0.0f;
    switch (x.dtype()) {
      case DType::kF32: std::memcpy(&v, x.data(), 4); break;
      case DType::kF16: convert_.f16_to_f32(static_cast<const uint16_t*>(x.data()), &v, 1); break;
      default: convert_.bf16_to_f32(static_cast<const uint16_t*>(x.data()), &v, 1); break;
    }
    return v;
  }

  // Elements [off, off + count) of input i as f32, converted or gathered into buf when needed.
  const float* load(const Inputs& in, size_t i, int64_t n, int64_t off, int64_t count, float* buf) const {
    const DType t = input_dtypes_[i];
    const int64_t len = in.length[i];
    if (len == n) {
      if (t == DType::kF32) return static_cast<const float*>(in.data[i]) + off;
      convert(t, static_cast<const uint16_t*>(in.data[i]) + off, buf, count);
      return buf;
    }
    // A row: copy the wrapped segments of the suffix that this block covers.
    int64_t pos = off % len;
    for (int64_t done = 0; done < count;) {
      const int64_t take = std::min(count - done, len - pos);
      if (t == DType::kF32) {
        std::memcpy(buf + done, static_cast<const float*>(in.data[i]) + pos, static_cast<size_t>(take) * 4);
      } else {
        convert(t, static_cast<const uint16_t*>(in.data[i]) + pos, buf + done, take);
      }
      done += take;
      pos = 0;
    }
    return buf;
  }

  void convert(DType t, const uint16_t* x, float* y, int64_t n) const {
    (t == DType::kF16 ? convert_.f16_to_f32 : convert_.bf16_to_f32)(x, y, n);
  }

  void run_block(const Inputs& in, int64_t n, int64_t off, int64_t count, Tensor& y) const {
    alignas(64) float temps[kMaxTemps][kBlock];
    alignas(64) float input_bufs[kMaxInputs][kBlock];
    std::array<const float*, kMaxInputs> vec{};  // block pointer of each non-scalar input
    for (size_t i = 0; i < input_dtypes_.size(); ++i) {
      if (in.length[i] != 1 || n == 1) {
        vec[i] = load(in, i, n, off, count, input_bufs[i]);
      } else if (needs_vector_[i]) {
        std::fill(input_bufs[i], input_bufs[i] + count, in.scalar[i]);
        vec[i] = input_bufs[i];
      }
    }
    float* out_f32 = out_dtype_ == DType::kF32 ? y.data_as<float>() + off : nullptr;
    auto ptr = [&](const Operand& o) -> const float* {
      switch (o.kind) {
        case Operand::Kind::kInput: return vec[o.index] ? vec[o.index] : &in.scalar[o.index];
        case Operand::Kind::kTemp: return temps[o.index];
        case Operand::Kind::kOutput: return out_f32;
      }
      return nullptr;
    };
    auto is_scalar = [&](const Operand& o) { return o.kind == Operand::Kind::kInput && !vec[o.index]; };
    for (const Step& s : steps_) {
      float* dst = s.dst.kind == Operand::Kind::kOutput ? out_f32 : temps[s.dst.index];
      switch (s.op) {
        case Step::Op::kUnary: s.unary(ptr(s.a), dst, count, s.params); break;
        case Step::Op::kRound: round_block(s.round_to, ptr(s.a), dst, count); break;
        case Step::Op::kBinary: {
          const int k = static_cast<int>(s.binary);
          if (is_scalar(s.b)) {
            binary_.vs[k](ptr(s.a), ptr(s.b), dst, count);
          } else if (is_scalar(s.a)) {
            binary_.sv[k](ptr(s.a), ptr(s.b), dst, count);
          } else {
            binary_.vv[k](ptr(s.a), ptr(s.b), dst, count);
          }
          break;
        }
      }
    }
    write_output(ptr(result_), off, count, y);
  }

  void round_block(DType t, const float* x, float* y, int64_t count) const {
    uint16_t half[kBlock];
    if (t == DType::kF16) {
      convert_.f32_to_f16(x, half, count);
      convert_.f16_to_f32(half, y, count);
    } else {
      convert_.f32_to_bf16(x, half, count);
      convert_.bf16_to_f32(half, y, count);
    }
  }

  void write_output(const float* r, int64_t off, int64_t count, Tensor& y) const {
    switch (out_dtype_) {
      case DType::kF32:
        if (r != y.data_as<float>() + off) std::memcpy(y.data_as<float>() + off, r, static_cast<size_t>(count) * 4);
        break;
      case DType::kF16: convert_.f32_to_f16(r, static_cast<uint16_t*>(y.data()) + off, count); break;
      default: convert_.f32_to_bf16(r, static_cast<uint16_t*>(y.data()) + off, count); break;
    }
  }

  std::vector<Step> steps_;
  Operand result_;
  std::vector<DType> input_dtypes_;
  // Inputs read by unary/rounding steps or returned as they are: a scalar one is
  // broadcast to a block (binary steps take scalars directly).
  std::vector<bool> needs_vector_;
  DType out_dtype_;
  const ConvertTable& convert_;
  const BinaryTable& binary_;
};

// Builds the virtual program of `body`: one step per node, Casts to f32 as
// aliases. Value dtypes follow from the inputs' (elementwise ops keep their
// input's dtype; Cast gives `to`) and land in `dtype_of_value`.
Result<std::vector<VirtualStep>> build_virtual_steps(const ir::Graph& body, std::span<const DType> input_dtypes,
                                                     std::vector<int>& reg_of_value, std::vector<DType>& dtype_of_value,
                                                     const UnaryTable& unary) {
  reg_of_value.assign(body.values.size(), kNoReg);
  dtype_of_value.assign(body.values.size(), DType::kUndefined);
  for (size_t i = 0; i < body.inputs.size(); ++i) {
    reg_of_value[static_cast<size_t>(body.inputs[i])] = input_ref(static_cast<int>(i));
    dtype_of_value[static_cast<size_t>(body.inputs[i])] = input_dtypes[i];
  }
  std::vector<VirtualStep> steps;
  for (const ir::Node& node : body.nodes) {
    if (node.outputs.size() != 1) return invalid_argument("body node {} must have one output", node.label());
    auto operand = [&](size_t k) -> Result<int> {
      if (k >= node.inputs.size() || node.inputs[k] == ir::kNoValue) {
        return invalid_argument("body node {} lacks input {}", node.label(), k);
      }
      const int r = reg_of_value[static_cast<size_t>(node.inputs[k])];
      if (r == kNoReg) return invalid_argument("body node {} reads a value defined later", node.label());
      return r;
    };
    int& out_reg = reg_of_value[static_cast<size_t>(node.outputs[0])];
    DType& out_dtype = dtype_of_value[static_cast<size_t>(node.outputs[0])];
    out_dtype = node.inputs.empty() ? DType::kUndefined : dtype_of_value[static_cast<size_t>(node.inputs[0])];
    VirtualStep v;
    if (node.op_type == "Cast" && node.domain.empty()) {
      EMBER_ASSIGN_OR_RETURN(int src, operand(0));
      ir::AttrReader attrs(node);
      const DType to = static_cast<DType>(attrs.get_int("to", 0));
      EMBER_RETURN_IF_ERROR(attrs.status());
      if (!is_fusible_dtype(to)) return invalid_argument("body node {} casts to {}", node.label(), dtype_name(to));
      out_dtype = to;
      if (to == DType::kF32) {
        out_reg = src;  // the source already holds 16-bit-rounded values: an exact alias
        continue;
      }
      v.step.op = Step::Op::kRound;
      v.step.round_to = to;
      v.a = src;
    } else if (auto kind = binary_kind(node)) {
      v.step.op = Step::Op::kBinary;
      v.step.binary = *kind;
      EMBER_ASSIGN_OR_RETURN(v.a, operand(0));
      EMBER_ASSIGN_OR_RETURN(v.b, operand(1));
    } else {
      EMBER_ASSIGN_OR_RETURN(std::optional<UnarySpec> spec, unary_spec(node));
      if (!spec) return invalid_argument("body node {} is not a fusible elementwise op", node.label());
      v.step.op = Step::Op::kUnary;
      v.step.unary = unary.get(spec->kind);
      v.step.params = spec->params;
      EMBER_ASSIGN_OR_RETURN(v.a, operand(0));
    }
    out_reg = static_cast<int>(steps.size());
    steps.push_back(v);
    if (v.step.op != Step::Op::kRound && (out_dtype == DType::kF16 || out_dtype == DType::kBF16)) {
      // The unfused op rounds its result to its 16-bit dtype (and overflows
      // there); so does the body, so that later steps see the same values.
      VirtualStep round;
      round.step.op = Step::Op::kRound;
      round.step.round_to = out_dtype;
      round.a = out_reg;
      out_reg = static_cast<int>(steps.size());
      steps.push_back(round);
    }
  }
  return steps;
}

// Sigmoid(t) feeding only Mul(t, .) becomes one SiLU step: x * sigmoid(x) in one pass.
void fuse_silu(std::vector<VirtualStep>& steps, std::vector<int>& uses, const UnaryTable& unary) {
  const UnaryF32Fn sigmoid = unary.get(UnaryKind::kSigmoid);
  for (size_t i = 0; i < steps.size(); ++i) {
    VirtualStep& mul = steps[i];
    if (mul.step.op != Step::Op::kBinary || mul.step.binary != BinaryKind::kMul) continue;
    for (int side = 0; side < 2; ++side) {
      const int s = side == 0 ? mul.a : mul.b;
      const int other = side == 0 ? mul.b : mul.a;
      if (s < 0 || uses[static_cast<size_t>(s)] != 1) continue;
      const VirtualStep& sig = steps[static_cast<size_t>(s)];
      if (sig.step.op != Step::Op::kUnary || sig.step.unary != sigmoid || sig.a != other) continue;
      uses[static_cast<size_t>(s)] = 0;  // the Sigmoid step is dropped below
      mul.step = Step{};
      mul.step.op = Step::Op::kUnary;
      mul.step.unary = unary.get(UnaryKind::kSilu);
      mul.a = other;
      mul.b = kNoReg;
      break;
    }
  }
}

Result<std::unique_ptr<OpKernel>> create_fused_elementwise(const KernelInit& init) {
  ir::AttrReader attrs(init.node);
  std::shared_ptr<ir::Graph> body = attrs.get_graph("body");
  EMBER_RETURN_IF_ERROR(attrs.status());
  if (!body) return invalid_argument("missing the 'body' graph attribute");
  if (body->outputs.size() != 1) return invalid_argument("the body must have one output");
  if (body->inputs.size() != init.input_dtypes.size() || body->inputs.size() > kMaxInputs) {
    return invalid_argument("the body has {} inputs for {} node inputs (at most {})", body->inputs.size(),
                            init.input_dtypes.size(), kMaxInputs);
  }
  std::vector<DType> dtypes(init.input_dtypes.begin(), init.input_dtypes.end());
  for (size_t i = 0; i < dtypes.size(); ++i) {
    if (!is_fusible_dtype(dtypes[i])) {
      return invalid_argument("input {} has dtype {}; fused elementwise bodies take f32, f16 or bf16", i,
                              dtype_name(dtypes[i]));
    }
  }
  const UnaryTable& unary = unary_table();
  std::vector<int> reg_of_value;
  std::vector<DType> dtype_of_value;
  EMBER_ASSIGN_OR_RETURN(std::vector<VirtualStep> vsteps,
                         build_virtual_steps(*body, dtypes, reg_of_value, dtype_of_value, unary));
  const DType out_dtype = dtype_of_value[static_cast<size_t>(body->outputs[0])];
  if (!is_fusible_dtype(out_dtype)) return invalid_argument("the body's output must be f32, f16 or bf16");
  const int result_reg = reg_of_value[static_cast<size_t>(body->outputs[0])];
  if (result_reg == kNoReg) return invalid_argument("the body's output is not computed");

  std::vector<int> uses(vsteps.size(), 0);
  for (const VirtualStep& v : vsteps) {
    if (v.a >= 0) ++uses[static_cast<size_t>(v.a)];
    if (v.b >= 0) ++uses[static_cast<size_t>(v.b)];
  }
  if (result_reg >= 0) ++uses[static_cast<size_t>(result_reg)];
  fuse_silu(vsteps, uses, unary);

  // Temporaries by liveness: a register's temp is freed after its last reader.
  std::vector<int> last_use(vsteps.size(), -1);
  for (size_t i = 0; i < vsteps.size(); ++i) {
    if (uses[i] == 0) continue;
    for (int r : {vsteps[i].a, vsteps[i].b}) {
      if (r >= 0) last_use[static_cast<size_t>(r)] = static_cast<int>(i);
    }
  }
  std::vector<Operand> where(vsteps.size());
  std::vector<int> free_temps;
  for (int t = kMaxTemps - 1; t >= 0; --t) free_temps.push_back(t);
  std::vector<Step> steps;
  std::vector<bool> scalar_unsafe(dtypes.size(), false);  // inputs a unary or rounding step reads
  auto resolve = [&](int r) {
    return r < 0 ? Operand{Operand::Kind::kInput, -r - 1} : where[static_cast<size_t>(r)];
  };
  for (size_t i = 0; i < vsteps.size(); ++i) {
    if (uses[i] == 0) continue;  // a Sigmoid folded into SiLU
    const VirtualStep& v = vsteps[i];
    Step s = v.step;
    s.a = resolve(v.a);
    // Unary and rounding steps read whole blocks; a binary step takes at most
    // one scalar operand, so one of two inputs is made a block.
    if (v.a < 0 && (s.op != Step::Op::kBinary || v.b < 0)) scalar_unsafe[static_cast<size_t>(-v.a - 1)] = true;
    if (v.b != kNoReg) s.b = resolve(v.b);
    for (int r : {v.a, v.b}) {
      if (r >= 0 && last_use[static_cast<size_t>(r)] == static_cast<int>(i) && r != result_reg &&
          where[static_cast<size_t>(r)].kind == Operand::Kind::kTemp && !(r == v.b && v.a == v.b)) {
        free_temps.push_back(where[static_cast<size_t>(r)].index);
      }
    }
    if (static_cast<int>(i) == result_reg && out_dtype == DType::kF32) {
      s.dst = Operand{Operand::Kind::kOutput, 0};
    } else {
      if (free_temps.empty()) return invalid_argument("the body needs more than {} live temporaries", kMaxTemps);
      s.dst = Operand{Operand::Kind::kTemp, free_temps.back()};
      free_temps.pop_back();
    }
    where[i] = s.dst;
    steps.push_back(s);
  }
  if (result_reg < 0) scalar_unsafe[static_cast<size_t>(-result_reg - 1)] = true;
  return std::unique_ptr<OpKernel>(
      std::make_unique<FusedElementwiseKernel>(std::move(steps), resolve(result_reg), std::move(dtypes),
                                               std::move(scalar_unsafe), out_dtype));
}

}  // namespace

bool is_fusible_dtype(DType t) { return t == DType::kF32 || t == DType::kF16 || t == DType::kBF16; }

bool is_fusible_elementwise(const ir::Node& node) {
  const OpEntry* entry = OpRegistry::instance().find(node.domain, node.op_type, node.opset);
  if (!entry || entry->fusion != Fusion::kElementwise || node.outputs.size() != 1) return false;
  if (node.op_type == "Cast" && node.domain.empty()) return node.inputs.size() == 1;
  // Before opset 7, binary ops broadcast along an `axis` attribute, not numpy-style.
  if (binary_kind(node)) return node.inputs.size() == 2 && node.opset >= 7;
  if (node.inputs.size() != 1) return false;
  auto spec = unary_spec(node);
  return spec.is_ok() && spec->has_value();
}

void register_fused_elementwise_ops(OpRegistry& r) {
  r.add(up_to_newest(kEmberDomain, kFusedElementwiseOp, 1, create_fused_elementwise));
}

}  // namespace ember::kernels
