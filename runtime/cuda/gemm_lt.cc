// A contraction as one cublasLtMatmul with cuBLASLt's epilogue (#31, #30; opt-in with
// WEFT_CUBLASLT_EPILOGUE=1, not yet run on a GPU: tests/cuda/cublaslt_check.sh). What
// matches, and why cuBLASLt's bias is weft's row bias, is epilogue_match.h's; the call
// is plan.h's one column-major call (the same m, n, k, leading dimensions and strided
// batch as cublasGemmEx would get), with D = C written in place (beta 0).
//
// Bound once: the descriptors, the layouts and the algorithm (cublasLtMatmulAlgoGetHeuristic,
// told each matrix's real alignment, every batch entry's, and the largest workspace
// allowed; it reads the bias pointer's from the descriptor) are made here at
// bind time; each step only enqueues cublasLtMatmul on the step's stream with the shared
// workspace block (Device::workspace, sized by workspace_bytes() before the step is
// captured). With its workspace given, cublasLtMatmul allocates nothing and may be
// captured in a CUDA graph (the step is one).
//
// Math: f16/bf16 with f32 compute and f32 alpha/beta (CUBLAS_COMPUTE_32F, the bias in
// C's dtype, the result rounded once — after the bias and activation, where the
// generated epilogue rounds C first); f32 with CUBLAS_COMPUTE_32F (cuBLASLt uses TF32
// only when asked, CUBLAS_COMPUTE_32F_FAST_TF32, which ExecutorOptions::tf32 selects).

#include <cstdint>
#include <memory>
#include <string>
#include <type_traits>
#include <utility>

#include "runtime/cuda/device.h"

namespace weft::cuda {
namespace {

cublasLtEpilogue_t lt_epilogue(LtEpilogue e) {
  switch (e) {
    case LtEpilogue::bias: return CUBLASLT_EPILOGUE_BIAS;
    case LtEpilogue::relu_bias: return CUBLASLT_EPILOGUE_RELU_BIAS;
    case LtEpilogue::gelu_bias: return CUBLASLT_EPILOGUE_GELU_BIAS;
  }
  return CUBLASLT_EPILOGUE_DEFAULT;
}

// `m`'s cuBLASLt layout (epilogue_match.h's lt_layouts).
Status make_layout(cublasLtMatrixLayout_t& layout, cudaDataType_t type, const LtMatrix& m) {
  WEFT_RETURN_IF_ERROR(cublas_status(
      cublasLtMatrixLayoutCreate(&layout, type, static_cast<uint64_t>(m.rows), static_cast<uint64_t>(m.cols), m.ld),
      "cublasLtMatrixLayoutCreate"));
  if (m.count == 1) return Status::ok_status();
  const int32_t batch = static_cast<int32_t>(m.count);
  WEFT_RETURN_IF_ERROR(cublas_status(
      cublasLtMatrixLayoutSetAttribute(layout, CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT, &batch, sizeof(batch)),
      "cublasLtMatrixLayoutSetAttribute (batch count)"));
  return cublas_status(
      cublasLtMatrixLayoutSetAttribute(layout, CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET, &m.stride, sizeof(m.stride)),
      "cublasLtMatrixLayoutSetAttribute (batch stride)");
}

template <typename T>
Status set_desc(cublasLtMatmulDesc_t desc, cublasLtMatmulDescAttributes_t attr, const T& value,
                const char* what) {
  return cublas_status(cublasLtMatmulDescSetAttribute(desc, attr, &value, sizeof(value)),
                       std::string("cublasLtMatmulDescSetAttribute (") + what + ")");
}

template <typename T>
Status set_pref(cublasLtMatmulPreference_t pref, cublasLtMatmulPreferenceAttributes_t attr,
                const T& value, const char* what) {
  return cublas_status(cublasLtMatmulPreferenceSetAttribute(pref, attr, &value, sizeof(value)),
                       std::string("cublasLtMatmulPreferenceSetAttribute (") + what + ")");
}

class LtContractionBound : public Executor::Bound {
 public:
  LtContractionBound(MatmulPlan plan, DType dtype, LtEpilogue epilogue)
      : plan_(std::move(plan)), dtype_(dtype), epilogue_(epilogue) {}
  ~LtContractionBound() override {
    // Host objects: destroyed without the device.
    for (cublasLtMatrixLayout_t l : {first_layout_, second_layout_, c_layout_}) {
      if (l) cublasLtMatrixLayoutDestroy(l);
    }
    if (desc_) cublasLtMatmulDescDestroy(desc_);
  }

  /// The descriptors, layouts and the heuristic's algorithm; false when it has none.
  StatusOr<bool> bind(cublasLtHandle_t handle, const void* a, const void* b, const void* bias, void* c) {
    const CublasGemm& g = plan_.calls[0];
    const size_t esize = dtype_size(dtype_);
    first_ = static_cast<const char*>(b) + g.first_offset * esize;   // cuBLAS's first is B
    second_ = static_cast<const char*>(a) + g.second_offset * esize;
    c_ = static_cast<char*>(c) + g.c_offset * esize;
    const cublasComputeType_t compute =
        plan_.math == ContractionMath::tf32 ? CUBLAS_COMPUTE_32F_FAST_TF32 : CUBLAS_COMPUTE_32F;
    WEFT_RETURN_IF_ERROR(cublas_status(cublasLtMatmulDescCreate(&desc_, compute, CUDA_R_32F),
                                       "cublasLtMatmulDescCreate"));
    const int32_t ta = g.trans_first ? CUBLAS_OP_T : CUBLAS_OP_N;
    const int32_t tb = g.trans_second ? CUBLAS_OP_T : CUBLAS_OP_N;
    const uint32_t epi = lt_epilogue(epilogue_);
    const int32_t bias_type = gemm_data_type(dtype_);
    WEFT_RETURN_IF_ERROR(set_desc(desc_, CUBLASLT_MATMUL_DESC_TRANSA, ta, "transa"));
    WEFT_RETURN_IF_ERROR(set_desc(desc_, CUBLASLT_MATMUL_DESC_TRANSB, tb, "transb"));
    WEFT_RETURN_IF_ERROR(set_desc(desc_, CUBLASLT_MATMUL_DESC_EPILOGUE, epi, "epilogue"));
    WEFT_RETURN_IF_ERROR(set_desc(desc_, CUBLASLT_MATMUL_DESC_BIAS_POINTER, bias, "bias pointer"));
    WEFT_RETURN_IF_ERROR(set_desc(desc_, CUBLASLT_MATMUL_DESC_BIAS_DATA_TYPE, bias_type, "bias type"));
    const cudaDataType_t t = gemm_data_type(dtype_);
    const LtLayouts layouts = lt_layouts(g);
    WEFT_RETURN_IF_ERROR(make_layout(first_layout_, t, layouts.first));
    WEFT_RETURN_IF_ERROR(make_layout(second_layout_, t, layouts.second));
    WEFT_RETURN_IF_ERROR(make_layout(c_layout_, t, layouts.c));

    cublasLtMatmulPreference_t pref = nullptr;
    WEFT_RETURN_IF_ERROR(cublas_status(cublasLtMatmulPreferenceCreate(&pref), "cublasLtMatmulPreferenceCreate"));
    const std::unique_ptr<std::remove_pointer_t<cublasLtMatmulPreference_t>, decltype(&cublasLtMatmulPreferenceDestroy)>
        owned(pref, &cublasLtMatmulPreferenceDestroy);
    WEFT_RETURN_IF_ERROR(set_pref(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, uint64_t{kCublasWorkspaceBytes}, "workspace"));
    // Split-K partial sums stay in f32, as cuBLAS's calls disallow reduced-precision
    // reductions (gemm.cc): for a half C, no reduction in C's type (OUTPUT_TYPE, and
    // INPLACE, which accumulates in the output buffer).
    const uint32_t reductions = dtype_ == DType::f32 ? static_cast<uint32_t>(CUBLASLT_REDUCTION_SCHEME_MASK)
                                                     : static_cast<uint32_t>(CUBLASLT_REDUCTION_SCHEME_COMPUTE_TYPE);
    WEFT_RETURN_IF_ERROR(set_pref(pref, CUBLASLT_MATMUL_PREF_REDUCTION_SCHEME_MASK, reductions, "reductions"));
    // Every batch entry's alignment (epilogue_match.h, lt_alignment), not only the
    // first's. The bias pointer's the heuristic reads from the descriptor itself.
    const auto aligned = [&](const void* p, const LtMatrix& m) {
      return lt_alignment(reinterpret_cast<uintptr_t>(p), m, esize);
    };
    const uint32_t c_alignment = aligned(c_, layouts.c);
    WEFT_RETURN_IF_ERROR(set_pref(pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES, aligned(first_, layouts.first), "alignment A"));
    WEFT_RETURN_IF_ERROR(set_pref(pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES, aligned(second_, layouts.second), "alignment B"));
    WEFT_RETURN_IF_ERROR(set_pref(pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES, c_alignment, "alignment C"));
    WEFT_RETURN_IF_ERROR(set_pref(pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES, c_alignment, "alignment D"));
    cublasLtMatmulHeuristicResult_t result = {};
    int found = 0;
    const cublasStatus_t s = cublasLtMatmulAlgoGetHeuristic(handle, desc_, first_layout_, second_layout_, c_layout_,
                                                            c_layout_, pref, 1, &result, &found);
    // NOT_SUPPORTED: no algorithm for this problem (a bias pointer cuBLASLt cannot
    // align, an epilogue it lacks for this type). A result counts only with its own
    // state SUCCESS (cublasLt.h: "inspect heuristicResultsArray[...].state"): any other
    // is no algorithm either, found now rather than by cublasLtMatmul in a captured step.
    if (s == CUBLAS_STATUS_NOT_SUPPORTED) return false;
    WEFT_RETURN_IF_ERROR(cublas_status(s, "cublasLtMatmulAlgoGetHeuristic"));
    if (found == 0 || result.state != CUBLAS_STATUS_SUCCESS) return false;
    algo_ = result.algo;
    workspace_ = result.workspaceSize;
    return true;
  }

  Status run(Executor::Device& d, int) override {
    const float one = 1, zero = 0;
    return cublas_status(cublasLtMatmul(d.cublaslt, desc_, &one, first_, first_layout_, second_, second_layout_,
                                        &zero, c_, c_layout_, c_, c_layout_, &algo_, d.workspace,
                                        d.workspace_bytes, d.stream),
                         "cublasLtMatmul");
  }
  std::string describe() const override {
    return "cublasLt " + plan_.describe(dtype_) + " + " + lt_epilogue_name(epilogue_) + " epilogue";
  }
  size_t workspace_bytes() const override { return workspace_; }

 private:
  MatmulPlan plan_;
  DType dtype_;
  LtEpilogue epilogue_;
  const void* first_ = nullptr;
  const void* second_ = nullptr;
  void* c_ = nullptr;
  cublasLtMatmulDesc_t desc_ = nullptr;
  cublasLtMatrixLayout_t first_layout_ = nullptr, second_layout_ = nullptr, c_layout_ = nullptr;
  cublasLtMatmulAlgo_t algo_ = {};
  size_t workspace_ = 0;
};

}  // namespace

StatusOr<BoundPtr> lt_contraction_bound(Executor::Device& d, const MatmulPlan& plan, DType dtype,
                                        LtEpilogue epilogue, const void* a, const void* b,
                                        const void* bias, void* c) {
  auto bound = std::make_unique<LtContractionBound>(plan, dtype, epilogue);
  WEFT_ASSIGN_OR_RETURN(bool found, bound->bind(d.cublaslt, a, b, bias, c));
  if (!found) return BoundPtr();
  return BoundPtr(std::move(bound));
}

}  // namespace weft::cuda
