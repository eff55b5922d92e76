// f32 and bf16 convolutions through oneDNN's convolution primitives (forward,
// backward_data, backward_weights), which run its direct AVX-512 kernels on blocked
// layouts: on the Fashion-MNIST CNN shapes they are about twice as fast as im2col + sgemm
// (gemm_bench). bf16 reads bf16 activations and weights and accumulates in f32 (the
// AVX512_BF16 dot products); a bf16 weight gradient is summed in f32 and rounded once.
//
// Everything is created when the kernel is bound: the batch is cut into `parts`
// contiguous runs of images (as many as default_num_threads(), at least 2), and each part
// gets its own primitives, created after the binding thread's OpenMP count is set to 1
// (and left so: weft never lets oneDNN start threads) so that oneDNN plans for one
// thread; its own blocked-layout buffers, with the reorders from and to weft's NCHW /
// OIHW (NCDHW / OIDHW over three spatial dims) buffers; its own user-mode scratchpad; and its own stream. The blocked buffers,
// scratchpads and partial gradients hold nothing between runs: they are laid out in the
// kernel's scratch (BoundKernel::scratch_bytes), the one block the Executor shares
// among its kernels, and bound to it by set_data_handle. run() executes the parts on
// the pool's chunks and allocates nothing. For backward_weights each part writes its own
// gradient (part 0 into the result; in bf16, every part into f32 scratch) and the parts
// are added in index order, so results are bitwise reproducible.

#include <dnnl.hpp>

#include "runtime/cpu/contraction_internal.h"
#include "runtime/cpu/onednn_internal.h"
#include "runtime/tensor.h"

namespace weft::cpu {
namespace {

using dnnl::memory;
using onednn::add_scratchpad;
using onednn::cpu_engine;
using onednn::Part;
using onednn::Scratch;
using onednn::Step;
using onednn::user_scratchpad;
using Tag = memory::format_tag;

void add_reorder(std::vector<Step>& steps, const memory& from, const memory& to,
                 Scratch& scratch) {
  dnnl::reorder::primitive_desc pd(from, to, user_scratchpad());
  Step step{dnnl::reorder(pd), {{DNNL_ARG_FROM, from}, {DNNL_ARG_TO, to}}};
  add_scratchpad(step, pd.scratchpad_desc(), scratch);
  steps.push_back(std::move(step));
}

// The memory the primitive reads for `user`: `user` itself, or a buffer in layout `want`
// (in the scratch) filled by a reorder step added to `before`.
memory input(const memory::desc& want, const memory& user, std::vector<Step>& before,
             Scratch& scratch) {
  if (want == user.get_desc()) return user;
  memory m = scratch.make(want);
  add_reorder(before, user, m, scratch);
  return m;
}

// The memory the primitive writes for `user`; a reorder to `user` goes to `after`.
memory output(const memory::desc& want, const memory& user, std::vector<Step>& after,
              Scratch& scratch) {
  if (want == user.get_desc()) return user;
  memory m = scratch.make(want);
  add_reorder(after, m, user, scratch);
  return m;
}

class OnednnConvKernel final : public BoundKernel {
 public:
  OnednnConvKernel(ConvOp op, const ConvGeometry& g, DType dtype, const void* in0,
                   const void* in1, void* out)
      : op_(op), g_(g), bf16_(dtype == DType::bf16) {
    use_one_omp_thread();  // oneDNN plans its primitives for the creating thread's count.
    const int slots = static_cast<int>(std::min<int64_t>(std::max(default_num_threads(), 2), g.n));
    const Partition images = Partition::make(g.n, 1, slots);
    for (int s = 0; s < images.num_chunks; ++s) {
      // Parts 1, 2, ... of a weight gradient write partial sums into the scratch (every
      // part in bf16: the f32 sums are rounded once, when they are added).
      const bool partial = op == ConvOp::kBackwardWeight && (s > 0 || bf16_);
      if (partial) {
        partial_at_.push_back(scratch_.reserve(static_cast<size_t>(weight_size()) * sizeof(float)));
      }
      parts_.push_back(make_part(images.begin(s), images.end(s), in0, in1, partial ? nullptr : out,
                                 partial ? partial_at_.back() : 0));
    }
    partials_.assign(partial_at_.size(), nullptr);
    out_ = out;
  }

  int64_t scratch_bytes() const override { return scratch_.bytes; }

  Status run(ThreadPool& pool) override {
    ensure_scratch();
    onednn::run_parts(pool, parts_);
    if (!partials_.empty()) add_partials(pool);
    return Status::ok_status();
  }

  std::string describe() const override {
    return "onednn " + std::string(bf16_ ? "bf16 " : "") + conv_describe(op_, g_) + " " + impl_;
  }

  /// Whether oneDNN chose its reference (non-JIT) implementation.
  bool uses_reference() const { return impl_.rfind("ref", 0) == 0; }

 private:
  int64_t weight_size() const { return g_.o * g_.patch(); }

  // The weight gradient: f32 adds the other parts' sums to part 0's (the result); bf16
  // adds every part's f32 sum in index order and rounds once.
  void add_partials(ThreadPool& pool) {
    pool.parallel_for(weight_size(), 4096, [&](int64_t begin, int64_t end) {
      if (!bf16_) {
        float* out = static_cast<float*>(out_);
        for (const float* partial : partials_) {
          for (int64_t i = begin; i < end; ++i) out[i] += partial[i];
        }
        return;
      }
      uint16_t* out = static_cast<uint16_t*>(out_);
      for (int64_t i = begin; i < end; ++i) {
        float sum = partials_[0][i];
        for (size_t p = 1; p < partials_.size(); ++p) sum += partials_[p][i];
        out[i] = float_to_bf16(sum);
      }
    });
  }

  void bind_scratch(std::byte* scratch) override {
    scratch_.bind(scratch);
    for (size_t i = 0; i < partials_.size(); ++i) {
      partials_[i] = reinterpret_cast<float*>(scratch + partial_at_[i]);
    }
  }

  // Images [b0, b1) writing into `out`, or (out == nullptr) into the scratch at
  // `partial_at`.
  Part make_part(int64_t b0, int64_t b1, const void* in0, const void* in1, void* out,
                 int64_t partial_at) {
    const ConvGeometry& g = g_;
    const int64_t n = b1 - b0;
    // A convolution over [D, H, W] is 5-D to oneDNN; one over [H, W] or [W] stays 4-D
    // (with h = 1 for [W]), the layouts its 2-D kernels are tuned for.
    const bool volumetric = g.spatial == 3;
    auto dims = [&](std::initializer_list<int64_t> lead, int64_t d, int64_t h, int64_t w) {
      memory::dims out(lead);
      if (volumetric) out.push_back(d);
      out.push_back(h);
      out.push_back(w);
      return out;
    };
    const memory::dims x_dims = dims({n, g.c}, g.d, g.h, g.w);
    const memory::dims y_dims = dims({n, g.o}, g.od, g.oh, g.ow);
    const memory::dims w_dims = g.groups == 1 ? dims({g.o, g.c}, g.kd, g.kh, g.kw)
                                              : dims({g.groups, g.og(), g.cg()}, g.kd, g.kh, g.kw);
    const Tag w_tag = volumetric ? (g.groups == 1 ? Tag::oidhw : Tag::goidhw)
                                 : (g.groups == 1 ? Tag::oihw : Tag::goihw);
    const Tag act_tag = volumetric ? Tag::ncdhw : Tag::nchw;
    const auto f32 = memory::data_type::f32;
    const auto dt = bf16_ ? memory::data_type::bf16 : f32;
    const memory::desc x_any(x_dims, dt, Tag::any), y_any(y_dims, dt, Tag::any);
    const memory::desc w_any(w_dims, dt, Tag::any);
    const memory::desc dw_any(w_dims, f32, Tag::any);  // A weight gradient sums in f32.
    auto spatial = [&](int64_t d, int64_t h, int64_t w) {
      return volumetric ? memory::dims{d, h, w} : memory::dims{h, w};
    };
    const memory::dims strides = spatial(g.sd, g.sh, g.sw);
    const memory::dims dilates = spatial(g.dd - 1, g.dh - 1, g.dw - 1);
    const memory::dims pad = spatial(g.pd, g.ph, g.pw);
    // Slices of weft's buffers for images [b0, b1).
    auto user = [&](const memory::dims& dims, Tag tag, const void* p, int64_t offset) {
      if (p == nullptr) {  // A partial gradient in the scratch, bound with it.
        memory m({dims, f32, tag}, cpu_engine(), DNNL_MEMORY_NONE);
        scratch_.memories.emplace_back(m, partial_at);
        return m;
      }
      const size_t esize = bf16_ ? 2 : 4;
      return memory({dims, dt, tag}, cpu_engine(),
                    const_cast<char*>(static_cast<const char*>(p)) + offset * esize);
    };
    const int64_t x_img = g.c * g.volume(), y_img = g.o * g.pixels();
    dnnl::convolution_forward::primitive_desc fwd(
        {dnnl::prop_kind::forward_training, dnnl::algorithm::convolution_direct, x_any, w_any,
         y_any, strides, dilates, pad, pad},
        user_scratchpad(), cpu_engine());
    Part part;
    std::vector<Step> after;
    Step conv;
    memory::desc scratchpad;
    switch (op_) {
      case ConvOp::kForward: {
        conv.args[DNNL_ARG_SRC] = input(fwd.src_desc(), user(x_dims, act_tag, in0, b0 * x_img), part.steps, scratch_);
        conv.args[DNNL_ARG_WEIGHTS] = input(fwd.weights_desc(), user(w_dims, w_tag, in1, 0), part.steps, scratch_);
        conv.args[DNNL_ARG_DST] = output(fwd.dst_desc(), user(y_dims, act_tag, out, b0 * y_img), after, scratch_);
        conv.primitive = dnnl::convolution_forward(fwd);
        scratchpad = fwd.scratchpad_desc();
        impl_ = fwd.impl_info_str();
        break;
      }
      case ConvOp::kBackwardInput: {
        dnnl::convolution_backward_data::primitive_desc pd(
            {dnnl::algorithm::convolution_direct, x_any, w_any, y_any, strides, dilates, pad, pad},
            user_scratchpad(), cpu_engine(), fwd);
        conv.args[DNNL_ARG_DIFF_DST] = input(pd.diff_dst_desc(), user(y_dims, act_tag, in0, b0 * y_img), part.steps, scratch_);
        conv.args[DNNL_ARG_WEIGHTS] = input(pd.weights_desc(), user(w_dims, w_tag, in1, 0), part.steps, scratch_);
        conv.args[DNNL_ARG_DIFF_SRC] = output(pd.diff_src_desc(), user(x_dims, act_tag, out, b0 * x_img), after, scratch_);
        conv.primitive = dnnl::convolution_backward_data(pd);
        scratchpad = pd.scratchpad_desc();
        impl_ = pd.impl_info_str();
        break;
      }
      case ConvOp::kBackwardWeight: {
        dnnl::convolution_backward_weights::primitive_desc pd(
            {dnnl::algorithm::convolution_direct, x_any, dw_any, y_any, strides, dilates, pad, pad},
            user_scratchpad(), cpu_engine(), fwd);
        conv.args[DNNL_ARG_SRC] = input(pd.src_desc(), user(x_dims, act_tag, in0, b0 * x_img), part.steps, scratch_);
        conv.args[DNNL_ARG_DIFF_DST] = input(pd.diff_dst_desc(), user(y_dims, act_tag, in1, b0 * y_img), part.steps, scratch_);
        conv.args[DNNL_ARG_DIFF_WEIGHTS] = output(pd.diff_weights_desc(), user(w_dims, w_tag, out, 0), after, scratch_);
        conv.primitive = dnnl::convolution_backward_weights(pd);
        scratchpad = pd.scratchpad_desc();
        impl_ = pd.impl_info_str();
        break;
      }
    }
    add_scratchpad(conv, scratchpad, scratch_);
    part.steps.push_back(std::move(conv));
    for (Step& s : after) part.steps.push_back(std::move(s));
    return part;
  }

  ConvOp op_;
  ConvGeometry g_;
  bool bf16_ = false;  // bf16 activations and weights (f32 accumulation), else f32.
  void* out_ = nullptr;
  std::string impl_;
  std::vector<Part> parts_;
  Scratch scratch_;                  // Blocked buffers, scratchpads and partials.
  std::vector<int64_t> partial_at_;  // Where the weight gradients of parts 1, 2, ... are,
  std::vector<float*> partials_;     // and (once bound) their addresses.
};

}  // namespace

std::unique_ptr<BoundKernel> make_onednn_conv_kernel(ConvOp op, const ConvGeometry& g,
                                                     DType dtype, const void* in0,
                                                     const void* in1, void* out) {
  if (g.n == 0) return nullptr;
  try {
    auto kernel = std::make_unique<OnednnConvKernel>(op, g, dtype, in0, in1, out);
    // oneDNN's reference convolution (no JIT kernel for this ISA or shape) would be far
    // slower than converting to f32: the caller takes that path instead.
    if (dtype == DType::bf16 && kernel->uses_reference()) return nullptr;
    return kernel;
  } catch (const dnnl::error&) {
    return nullptr;  // No oneDNN implementation: the caller uses im2col + GEMM.
  }
}

}  // namespace weft::cpu
