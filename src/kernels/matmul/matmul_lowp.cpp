// MatMul of f16 or bf16 operands: numpy batching over the gemm_lowp.h
// microkernels (f32 accumulation, one rounding per output). A constant B is
// packed into column panels once at creation and its original bytes released;
// a run-time B is packed panel by panel on the stack inside each work unit.
#include <algorithm>
#include <memory>
#include <vector>

#include "kernels/matmul/gemm_lowp.h"
#include "kernels/matmul/gemm_ref.h"
#include "kernels/matmul/matmul_geometry.h"
#include "kernels/matmul/matmul_ops.h"
#include "threading/thread_pool.h"

namespace ember::kernels {
namespace {

// Work unit: up to kUnitRows rows x kUnitPanels panels of one batch. 8 panels
// are one M = 1 register block at AVX-512; 64 rows reuse a unit's B from L2.
constexpr int64_t kUnitPanels = 8;
constexpr int64_t kUnitRows = 64;
// Multiply-adds per thread range: one M = 1 unit at K = 2048. Measured with a
// /tmp loop over kernels::evaluate (constant B, M = 1, K = 2048, best of 10, a
// loaded machine): N = 256 (two ranges) takes 18.6 us on 1 thread and 11.4 us
// on 2 for f16, 13.0 and 14.8 us for bf16; at N = 2048, 146 / 74 us (f16) and
// 106 / 109 us (bf16: vdpbf16ps at M = 1 gained nothing from a second thread
// on this machine, nor lost much).
constexpr int64_t kMinRangeMacs = int64_t{1} << 18;
// A run-time B is packed one panel at a time on the stack: 16 x 4096 x 2 bytes
// = 128 KiB at most; deeper products take the reference path.
constexpr int64_t kMaxStackPanelK = 4096;

// A run-time B deeper than the stack panel: gemm_ref, the same f32 sums in k order.
template <typename T>
void matmul_reference(const MatMulGeometry& g, const Tensor& a, const Tensor& b, Tensor& c) {
  const GemmParams p = matrix_params(g);
  for_each_batch(g, [&](int64_t ai, int64_t bi, int64_t ci) {
    gemm_ref<T>(p, a.data_as<T>() + ai * g.m * g.k, b.data_as<T>() + bi * g.k * g.n, c.data_as<T>() + ci * g.m * g.n);
  });
}

class MatMulLowpKernel final : public OpKernel {
 public:
  // has_packed: B was constant and `packed` holds all of its matrices.
  MatMulLowpKernel(DType dtype, bool has_packed, std::vector<uint16_t> packed)
      : bf16_(dtype == DType::kBF16),
        dtype_(dtype),
        packed_(std::move(packed)),
        has_packed_(has_packed),
        gemm_(bf16_ ? gemm_lowp_table().bf16_gemm : gemm_lowp_table().f16_gemm) {}

  bool prepacked_input(size_t i) const override { return i == 1 && has_packed_; }
  int64_t packed_bytes() const override { return static_cast<int64_t>(packed_.size() * sizeof(uint16_t)); }

  Status infer(KernelContext& ctx) const override {
    EMBER_ASSIGN_OR_RETURN(MatMulGeometry g, matmul_geometry(ctx.input(0).shape(), ctx.input(1).shape()));
    ctx.set_output(0, dtype_, std::move(g.out_shape));
    return Status::ok();
  }

  Status run(KernelContext& ctx) const override;

 private:
  void run_matrix(const LowpGemmArgs& base, int64_t rows, int64_t units_begin, int64_t units_end,
                  int64_t row_blocks, const uint16_t* a, const uint16_t* b, uint16_t* c) const;
  void run_unpacked_panels(LowpGemmArgs args, const uint16_t* b, int64_t ldb, int64_t p_begin, int64_t p_end) const;

  bool bf16_;
  DType dtype_;
  std::vector<uint16_t> packed_;  // every B matrix of a constant B, one after another
  bool has_packed_;
  void (*gemm_)(const LowpGemmArgs&);
};

// Packs panels [p_begin, p_end) of a run-time B one at a time into a stack
// buffer and runs the microkernel on each.
void MatMulLowpKernel::run_unpacked_panels(LowpGemmArgs args, const uint16_t* b, int64_t ldb, int64_t p_begin,
                                           int64_t p_end) const {
  alignas(64) uint16_t panel[kMaxStackPanelK * kLowpPanelCols];
  const int64_t n = args.n;
  uint16_t* c = args.c;
  args.panels = panel;
  args.panel_stride = lowp_panel_stride(bf16_, args.k);
  for (int64_t p = p_begin; p < p_end; ++p) {
    const int64_t j0 = p * kLowpPanelCols;
    args.n = std::min(kLowpPanelCols, n - j0);
    args.c = c + j0;
    pack_lowp_panels(bf16_, b + j0, ldb, args.k, args.n, panel);
    gemm_(args);
  }
}

Status MatMulLowpKernel::run(KernelContext& ctx) const {
  EMBER_ASSIGN_OR_RETURN(MatMulGeometry g, matmul_geometry(ctx.input(0).shape(), ctx.input(1).shape()));
  const auto* a = static_cast<const uint16_t*>(ctx.input(0).data());
  auto* c = static_cast<uint16_t*>(ctx.output(0).data());
  const int64_t batches = shape_numel(g.batch);
  if (batches == 0 || g.m == 0 || g.n == 0) return Status::ok();
  if (!has_packed_ && g.k > kMaxStackPanelK) {
    if (bf16_) {
      matmul_reference<BFloat16>(g, ctx.input(0), ctx.input(1), ctx.output(0));
    } else {
      matmul_reference<Float16>(g, ctx.input(0), ctx.input(1), ctx.output(0));
    }
    return Status::ok();
  }
  const auto* b = has_packed_ ? packed_.data() : static_cast<const uint16_t*>(ctx.input(1).data());
  const int64_t panels = (g.n + kLowpPanelCols - 1) / kLowpPanelCols;
  const int64_t b_size = has_packed_ ? panels * lowp_panel_stride(bf16_, g.k) : g.k * g.n;
  const bool tall = is_tall(g);
  const int64_t rows = tall ? g.m * batches : g.m;
  const int64_t matrices = tall ? 1 : batches;
  // A thread range may start mid-batch: the matrix indices of a batch come
  // from its flat index instead of for_each_batch's odometer.
  const Shape a_strides = broadcast_strides(g.a_batch, g.batch);
  const Shape b_strides = broadcast_strides(g.b_batch, g.batch);
  const int64_t panel_blocks = (panels + kUnitPanels - 1) / kUnitPanels;
  const int64_t row_blocks = (rows + kUnitRows - 1) / kUnitRows;
  const int64_t unit_macs = std::min(rows, kUnitRows) * kUnitPanels * kLowpPanelCols * std::max<int64_t>(g.k, 1);
  const int64_t grain = std::max<int64_t>(1, kMinRangeMacs / unit_macs);
  LowpGemmArgs base;
  base.lda = g.k;
  base.ldc = g.n;
  base.n = g.n;
  base.k = g.k;
  base.panel_stride = lowp_panel_stride(bf16_, g.k);
  const int64_t units_per_matrix = panel_blocks * row_blocks;
  threading::parallel_for(matrices * units_per_matrix, grain, [&](int64_t begin, int64_t end) {
    for (int64_t u = begin; u < end;) {
      const int64_t t = u / units_per_matrix;
      const int64_t u_end = std::min(end, (t + 1) * units_per_matrix);
      int64_t ai = t, bi = 0;
      if (!tall) {
        ai = 0;
        for (int64_t d = static_cast<int64_t>(g.batch.size()) - 1, rest = t; d >= 0; --d) {
          const int64_t idx = rest % g.batch[d];
          rest /= g.batch[d];
          ai += idx * a_strides[d];
          bi += idx * b_strides[d];
        }
      }
      run_matrix(base, rows, u - t * units_per_matrix, u_end - t * units_per_matrix, row_blocks,
                 a + ai * g.m * g.k, b + bi * b_size, c + t * g.m * g.n);
      u = u_end;
    }
  });
  return Status::ok();
}

// Units [units_begin, units_end) of one matrix, panel block major so that
// consecutive units share their B panels.
void MatMulLowpKernel::run_matrix(const LowpGemmArgs& base, int64_t rows, int64_t units_begin, int64_t units_end,
                                  int64_t row_blocks, const uint16_t* a, const uint16_t* b, uint16_t* c) const {
  const int64_t panels = (base.n + kLowpPanelCols - 1) / kLowpPanelCols;
  for (int64_t u = units_begin; u < units_end; ++u) {
    const int64_t pb = u / row_blocks, rb = u % row_blocks;
    const int64_t p_begin = pb * kUnitPanels, p_end = std::min(panels, p_begin + kUnitPanels);
    const int64_t r_begin = rb * kUnitRows;
    LowpGemmArgs args = base;
    args.a = a + r_begin * base.lda;
    args.m = std::min(kUnitRows, rows - r_begin);
    args.c = c + r_begin * base.ldc + p_begin * kLowpPanelCols;
    if (!has_packed_) {
      args.c = c + r_begin * base.ldc;
      run_unpacked_panels(args, b, base.n, p_begin, p_end);
      continue;
    }
    args.panels = b + p_begin * base.panel_stride;
    args.n = std::min(base.n, p_end * kLowpPanelCols) - p_begin * kLowpPanelCols;
    gemm_(args);
  }
}

}  // namespace

Result<std::unique_ptr<OpKernel>> create_matmul_lowp(const KernelInit& init) {
  const DType dtype = init.input_dtypes[0];
  if (dtype != DType::kF16 && dtype != DType::kBF16) {
    return internal_error("create_matmul_lowp: dtype {} is not f16 or bf16", dtype_name(dtype));
  }
  const Tensor* b = init.constant_inputs.size() > 1 ? init.constant_inputs[1] : nullptr;
  if (b == nullptr || b->data() == nullptr || b->rank() < 1) {
    return std::unique_ptr<OpKernel>(std::make_unique<MatMulLowpKernel>(dtype, false, std::vector<uint16_t>{}));
  }
  const bool bf16 = dtype == DType::kBF16;
  const Shape& s = b->shape();
  const int64_t k = s.size() == 1 ? s[0] : s[s.size() - 2];
  const int64_t n = s.size() == 1 ? 1 : s.back();
  const int64_t matrices = k * n == 0 ? 0 : b->numel() / (k * n);
  const int64_t panels = (n + kLowpPanelCols - 1) / kLowpPanelCols;
  const int64_t b_size = panels * lowp_panel_stride(bf16, k);
  std::vector<uint16_t> packed(static_cast<size_t>(matrices * b_size));
  const auto* src = static_cast<const uint16_t*>(b->data());
  for (int64_t t = 0; t < matrices; ++t) pack_lowp_panels(bf16, src + t * k * n, n, k, n, packed.data() + t * b_size);
  return std::unique_ptr<OpKernel>(std::make_unique<MatMulLowpKernel>(dtype, true, std::move(packed)));
}

}  // namespace ember::kernels
