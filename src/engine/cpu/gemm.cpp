// SPDX-License-Identifier: Apache-2.0
#include "engine/cpu/gemm.hpp"

#include <cblas.h>
#include <fmt/format.h>
#include <omp.h>

#include <dnnl.hpp>
#include <stdexcept>

#include "engine/cpu/kernels.hpp"
#include "engine/param_store.hpp"

namespace gpuvs::engine::cpu {

namespace {
// Below this many FLOPs a GEMM runs on one thread. Measured on the seed shapes (bench_gemm_libraries,
// bench_seed_step) on a 2-core VM: waking a second OpenMP thread costs tens of microseconds, more than
// the 6.4 MFLOP batch-32 GEMMs gain from it (~35 us on one core).
constexpr double kSerialFlops = 1e7;

// Runs a scope with OpenMP limited to one thread (oneDNN sizes its work split from this value at both
// primitive creation and execution), restoring the caller's setting after.
class SerialScope {
 public:
  explicit SerialScope(bool active) : saved_(active ? omp_get_max_threads() : 0) {
    if (active) omp_set_num_threads(1);
  }
  ~SerialScope() {
    if (saved_ > 0) omp_set_num_threads(saved_);
  }
  SerialScope(const SerialScope&) = delete;
  SerialScope& operator=(const SerialScope&) = delete;

 private:
  int saved_;
};

dnnl::engine& cpu_engine() {
  static dnnl::engine eng(dnnl::engine::kind::cpu, 0);
  return eng;
}
dnnl::stream& cpu_stream() {
  static dnnl::stream s(cpu_engine());
  return s;
}
}  // namespace

struct GemmPlan::Impl {
  GemmLibrary lib;
  ir::DType dtype;
  GemmShape s;
  const void* a;
  const void* b;
  const void* bias;
  void* c;
  ir::Act act;
  bool serial = false;
  // oneDNN state, created once.
  dnnl::matmul prim;
  std::unordered_map<int, dnnl::memory> args;
  AlignedBuffer scratch;
  std::string impl_name;

  void plan_onednn() {
    using dt = dnnl::memory::data_type;
    const auto M = s.m, N = s.n, K = s.k;
    const dt in = dtype == ir::DType::bf16 ? dt::bf16 : dt::f32;  // bf16 inputs accumulate and store in f32
    const dnnl::memory::desc a_md({M, K}, in, s.trans_a ? dnnl::memory::dims{1, M} : dnnl::memory::dims{K, 1});
    const dnnl::memory::desc b_md({K, N}, in, s.trans_b ? dnnl::memory::dims{1, K} : dnnl::memory::dims{N, 1});
    const dnnl::memory::desc c_md({M, N}, dt::f32, dnnl::memory::dims{N, 1});
    const dnnl::memory::desc bias_md = bias ? dnnl::memory::desc({1, N}, dt::f32, dnnl::memory::dims{N, 1})
                                            : dnnl::memory::desc();
    dnnl::primitive_attr attr;
    attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);  // we own the scratchpad: no allocation per run
    if (act != ir::Act::none) {
      dnnl::post_ops po;
      const auto alg = act == ir::Act::relu   ? dnnl::algorithm::eltwise_relu
                       : act == ir::Act::tanh ? dnnl::algorithm::eltwise_tanh
                                                 : dnnl::algorithm::eltwise_logistic;
      po.append_eltwise(1.0f, alg, 0.0f, 0.0f);
      attr.set_post_ops(po);
    }
    const dnnl::matmul::desc desc = bias ? dnnl::matmul::desc(a_md, b_md, bias_md, c_md)
                                         : dnnl::matmul::desc(a_md, b_md, c_md);
    const dnnl::matmul::primitive_desc pd(desc, attr, cpu_engine());
    prim = dnnl::matmul(pd);
    impl_name = fmt::format("onednn:{}", pd.impl_info_str());
    scratch = AlignedBuffer(pd.scratchpad_desc().get_size());
    auto& eng = cpu_engine();
    args = {{DNNL_ARG_SRC, dnnl::memory(a_md, eng, const_cast<void*>(a))},
            {DNNL_ARG_WEIGHTS, dnnl::memory(b_md, eng, const_cast<void*>(b))},
            {DNNL_ARG_DST, dnnl::memory(c_md, eng, c)},
            {DNNL_ARG_SCRATCHPAD, dnnl::memory(pd.scratchpad_desc(), eng, scratch.data())}};
    if (bias) args.emplace(DNNL_ARG_BIAS, dnnl::memory(bias_md, eng, const_cast<void*>(bias)));
  }

  template <class T>
  void run_blas() {
    const auto M = static_cast<blasint>(s.m), N = static_cast<blasint>(s.n), K = static_cast<blasint>(s.k);
    const blasint lda = s.trans_a ? M : K, ldb = s.trans_b ? K : N;
    const auto ta = s.trans_a ? CblasTrans : CblasNoTrans, tb = s.trans_b ? CblasTrans : CblasNoTrans;
    if constexpr (std::is_same_v<T, float>)
      cblas_sgemm(CblasRowMajor, ta, tb, M, N, K, 1.0f, static_cast<const float*>(a), lda,
                  static_cast<const float*>(b), ldb, 0.0f, static_cast<float*>(c), N);
    else
      cblas_dgemm(CblasRowMajor, ta, tb, M, N, K, 1.0, static_cast<const double*>(a), lda,
                  static_cast<const double*>(b), ldb, 0.0, static_cast<double*>(c), N);
    bias_act_epilogue<T>(static_cast<T*>(c), static_cast<const T*>(bias), s.m, s.n, act);
  }
};

GemmPlan::GemmPlan(GemmLibrary lib, ir::DType dtype, const GemmShape& shape, const void* a, const void* b,
                   const void* bias, void* c, ir::Act act)
    : impl_(new Impl{lib, dtype, shape, a, b, bias, c, act,
                     2.0 * static_cast<double>(shape.m * shape.n * shape.k) < kSerialFlops, {}, {}, {}, {}}) {
  if (dtype == ir::DType::i32) throw std::invalid_argument("gemm: integer matmul is not supported");
  if (dtype == ir::DType::bf16 && lib != GemmLibrary::onednn)
    throw std::invalid_argument("gemm: bf16 inputs need the oneDNN library");
  const SerialScope scope(impl_->serial);
  if ((dtype == ir::DType::f32 || dtype == ir::DType::bf16) && lib == GemmLibrary::onednn) impl_->plan_onednn();
  else impl_->impl_name = dtype == ir::DType::f32 ? "openblas:sgemm+epilogue" : "openblas:dgemm+epilogue";
}

GemmPlan::~GemmPlan() = default;

void GemmPlan::run() {
  const SerialScope scope(impl_->serial);
  if (impl_->dtype == ir::DType::f64) return impl_->run_blas<double>();
  if (impl_->lib == GemmLibrary::openblas) return impl_->run_blas<float>();
  impl_->prim.execute(cpu_stream(), impl_->args);
  cpu_stream().wait();
}

std::string GemmPlan::impl() const { return impl_->impl_name + (impl_->serial ? " (1 thread)" : ""); }

}  // namespace gpuvs::engine::cpu
