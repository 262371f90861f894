// SPDX-License-Identifier: Apache-2.0
// The CUDA engine: a TrainDevice (device params and optimizer slots shared by every executor of a run,
// the caching allocator in growth or preallocate mode, one stream, one cuBLASLt handle) and its executors.
// An executor is built once per graph — every buffer allocated, every GEMM's cuBLASLt algorithm chosen —
// and `run` only launches: eagerly, or by replaying the step captured once as a CUDA graph. GEMMs are
// cuBLASLt with the bias (and ReLU) fused as an epilogue; the other ops are kernels.cu. Row-major
// tensors are handed to column-major cuBLASLt as their transposes: C^T = op(B)^T op(A)^T.
#include <cublasLt.h>
#include <cuda_runtime.h>
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "core/error.hpp"
#include "engine/cuda/gemm_mapping.hpp"
#include "engine/cuda/kernels.cuh"
#include "engine/data.hpp"
#include "engine/memory/caching_allocator.hpp"
#include "gpu/cuda/collective.hpp"
#include "gpu/cuda/common.hpp"
#include "gpu/plugin_api.hpp"

namespace gpuvs::engine::cuda {

namespace {

using ir::DType;
using ir::Node;
using ir::NodeId;
using ir::OpKind;

void lt(cublasStatus_t s, const char* what) {
  if (s != CUBLAS_STATUS_SUCCESS) throw RuntimeFailure(fmt::format("{}: cuBLAS status {}", what, static_cast<int>(s)));
}
void ck(cudaError_t e, const char* what) {
  if (e != cudaSuccess) throw RuntimeFailure(fmt::format("{}: {}", what, cudaGetErrorString(e)));
}

class CudaRaw final : public RawAllocator {
 public:
  explicit CudaRaw(int device) : device_(device) {
    std::size_t free_b = 0;
    ck(cudaMemGetInfo(&free_b, &total_), "cudaMemGetInfo");
  }
  void* allocate(std::size_t bytes) override {
    void* p = nullptr;
    if (cudaMalloc(&p, bytes) != cudaSuccess) {
      (void)cudaGetLastError();
      return nullptr;
    }
    return p;
  }
  void deallocate(void* p, std::size_t) override { cudaFree(p); }
  std::size_t capacity() const override { return total_; }
  std::string name() const override { return fmt::format("cuda:{}", device_); }

 private:
  int device_;
  std::size_t total_ = 0;
};

math::Act to_act(ir::Act a) {
  switch (a) {
    case ir::Act::none: return math::Act::none;
    case ir::Act::relu: return math::Act::relu;
    case ir::Act::tanh: return math::Act::tanh;
    case ir::Act::sigmoid: return math::Act::sigmoid;
    case ir::Act::gelu: return math::Act::gelu;
    default: throw InputError("the CUDA engine has no kernel for this activation yet (relu, tanh, sigmoid, gelu)");
  }
}

class Device;

class CudaExecutor final : public Executor {
 public:
  CudaExecutor(Device& dev, const ir::Graph& g, ParamStore& store, const ExecutorOptions& opt);
  ~CudaExecutor() override;
  void* input(std::string_view name) override;
  void run(const StepContext& ctx) override;
  double scalar(std::string_view output) const override;
  std::vector<double> read(NodeId id) const override;
  std::size_t workspace_bytes() const override { return workspace_; }
  const std::vector<double>& node_seconds() const override { return seconds_; }
  std::string describe() const override;
  const ir::Graph& graph() const override { return g_; }
  bool gather_rows(const Dataset& data, const std::int64_t* rows, std::int64_t count) override;
  bool bind_epoch(const Dataset& data, const std::int64_t* order, std::int64_t count, std::int64_t offset, std::int64_t stride,
                  const StepContext& first) override;
  void run_accumulate(const StepContext& ctx, std::int64_t rows) override;
  StepTotals totals() override;
  void reset_totals() override;
  bool asynchronous() const override { return queued_; }

 private:
  // How a step is launched. sync: run() — the step scalars and the batch go up from pinned host memory,
  // loss and accuracy come back, the host waits. queued: run_accumulate() on a bound epoch — nothing
  // crosses the bus: the batch is gathered at the device's cursor, the step index lives on the device,
  // and a last kernel adds loss and accuracy to the device's running totals; the host does not wait.
  // A captured graph replays one mode's launches.
  enum class Mode { sync, queued };
  struct Gemm {
    cublasLtMatmulDesc_t desc = nullptr;
    cublasLtMatrixLayout_t a = nullptr, b = nullptr, d = nullptr;
    cublasLtMatmulAlgo_t algo{};
    bool post_act = false;  // activation not fusable: a kernel after the GEMM
    void* left16 = nullptr;   // AMP: 16-bit copies of the GEMM's inputs, cast every step
    void* right16 = nullptr;
  };
  void* alloc(std::size_t bytes);
  void plan_gemm(const Node& n);
  void launch_step(Mode m);
  void launch_all(Mode m);
  void exec(const Node& n, Mode m);

  Device& dev_;
  const ir::Graph g_;
  ExecutorOptions opt_;
  std::vector<void*> value_, aux_;
  std::vector<void*> owned_;
  std::map<NodeId, Gemm> gemm_;
  std::map<NodeId, void*> staging_;  // pinned host buffers of input nodes
  std::vector<std::pair<NodeId, float*>> scalars_;  // outputs copied to pinned host each step
  float* scalar_host_ = nullptr;
  StepState* step_host_ = nullptr;
  StepState* step_dev_ = nullptr;   // the sync mode's step scalars (queued mode reads the device's)
  const StepState* step_ = nullptr;  // what this launch's kernels read
  Mode mode_ = Mode::sync;          // of the captured graph and of mode_runs_
  int mode_runs_ = 0;
  // Queued mode (bind_epoch): this executor's running totals and cursor on the device.
  RunningTotals* totals_dev_ = nullptr;
  bool queued_ = false;
  std::int64_t queued_steps_ = 0;  // queued since reset_totals
  std::int64_t bound_offset_ = 0, bound_stride_ = 0, bound_rows_ = 0;  // bound_rows_: the graph's batch
  std::int64_t* order_dev_ = nullptr;  // the bound epoch's row order (made once: captured graphs hold its address)
  std::int64_t order_count_ = 0;
  const float* epoch_x_ = nullptr;
  const std::int32_t* epoch_y_ = nullptr;
  AdamTensor* adam_dev_ = nullptr;
  int adam_count_ = 0;
  std::int64_t adam_total_ = 0;
  ir::AdamConfig adam_cfg_;
  bool adam_done_ = false;
  std::size_t workspace_ = 0;
  cudaGraphExec_t graph_exec_ = nullptr;
  std::vector<double> seconds_;
  std::vector<cudaEvent_t> ev_;
  // Device-resident data: the batch's row indices go up (8 bytes a row) and a kernel gathers the rows.
  // Data parallel: gradients live in one arena in the order backward produces them, cut into buckets of
  // about 25 MB (PyTorch DDP's default); a bucket is averaged across replicas as soon as its last gradient
  // is produced.
  struct Bucket {
    float* begin;
    std::int64_t floats;
  };
  static constexpr std::size_t kBucketBytes = 25u << 20;
  std::map<NodeId, std::size_t> grad_offset_;  // gradient node -> byte offset in the arena
  std::map<NodeId, std::size_t> bucket_end_;   // last gradient node of a bucket -> bucket index
  std::vector<Bucket> buckets_;
  char* grad_arena_ = nullptr;
  std::vector<cudaEvent_t> grad_ready_, grad_done_;
  bool gathered_ = false;
  const float* data_x_ = nullptr;
  const std::int32_t* data_y_ = nullptr;
  std::int64_t* rows_host_ = nullptr;
  std::int64_t* rows_dev_ = nullptr;
  std::int64_t batch_rows_ = 0, features_ = 0;
  std::int32_t* labels_ = nullptr;  // the "labels" input's device buffer, filled by the gather
};

class Device final : public gpu::TrainDevice {
 public:
  explicit Device(const gpu::TrainDeviceOptions& o) : opt_(o) {
    if (o.precision == gpu::GpuPrecision::amp_bf16 || o.precision == gpu::GpuPrecision::amp_fp16) {
      int major = 0;
      ck(cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, o.device), "cudaDeviceGetAttribute");
      if (o.precision == gpu::GpuPrecision::amp_bf16 && major < 8)
        throw InputError("--precision amp-bf16 needs compute capability 8.0 or later (use amp-fp16)");
    }
    ck(cudaSetDevice(o.device), "cudaSetDevice");
    cudaDeviceProp prop{};
    ck(cudaGetDeviceProperties(&prop, o.device), "cudaGetDeviceProperties");
    name_ = prop.name;
    raw_ = std::make_unique<CudaRaw>(o.device);
    alloc_ = std::make_unique<CachingAllocator>(*raw_, o.memory, o.fraction);
    ck(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking), "cudaStreamCreate");
    lt(cublasLtCreate(&lt_), "cublasLtCreate");
    workspace_ = alloc_->allocate(kWorkspace);
    scale_ = static_cast<math::LossScale*>(alloc_->allocate(sizeof(math::LossScale)));
    const math::LossScale initial{32768.0f, 0, 0, 0};  // 2^15, PyTorch's GradScaler default
    upload(scale_, &initial, sizeof initial, "loss scale");
    state_ = static_cast<StepState*>(alloc_->allocate(sizeof(StepState)));
  }
  // Copies ordered on this device's stream and finished on return. (A plain cudaMemcpy runs on the legacy
  // default stream, which a non-blocking stream does not wait for, and may return before a pageable
  // upload has landed.)
  void upload(void* dst, const void* src, std::size_t bytes, const char* what) const {
    ck(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyHostToDevice, stream_), what);
    ck(cudaStreamSynchronize(stream_), what);
  }
  void download(void* dst, const void* src, std::size_t bytes, const char* what) const {
    ck(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToHost, stream_), what);
    ck(cudaStreamSynchronize(stream_), what);
  }
  /// Joins a data-parallel group: gradients are averaged with `c` on a second stream.
  void join(std::unique_ptr<gpu::cuda::Collective> c) {
    ck(cudaSetDevice(opt_.device), "cudaSetDevice");
    coll_ = std::move(c);
    ck(cudaStreamCreateWithFlags(&comm_stream_, cudaStreamNonBlocking), "cudaStreamCreate");
  }
  gpu::cuda::Collective* collective() const { return coll_.get(); }
  cudaStream_t comm_stream() const { return comm_stream_; }
  int device() const { return opt_.device; }

  ~Device() override {
    cudaSetDevice(opt_.device);
    cudaStreamSynchronize(stream_);
    if (comm_stream_) {
      cudaStreamSynchronize(comm_stream_);
      cudaStreamDestroy(comm_stream_);
    }
    coll_.reset();
    for (auto& [name, t] : tensors_) alloc_->deallocate(t.ptr);
    alloc_->deallocate(workspace_);
    alloc_->deallocate(scale_);
    alloc_->deallocate(state_);
    if (data_x_) alloc_->deallocate(data_x_);
    if (data_y_) alloc_->deallocate(data_y_);
    cublasLtDestroy(lt_);
    cudaStreamDestroy(stream_);
  }

  std::unique_ptr<Executor> executor(const ir::Graph& g, ParamStore& store, const ExecutorOptions& opt) override {
    ck(cudaSetDevice(opt_.device), "cudaSetDevice");
    if (scaled() && !scale_restored_ && store.has(kLossScaleTensor)) {  // a resumed amp-fp16 run
      const HostTensor& t = store.get(kLossScaleTensor);
      if (t.shape != ir::Shape{3} || t.dtype != DType::f32)
        throw InputError(fmt::format("checkpoint tensor {} is misshapen", kLossScaleTensor));
      const float* v = t.as<float>();
      if (!(v[0] >= 1.0f) || !std::isfinite(v[0]) || !(v[1] >= 0) || !(v[2] >= 0))
        throw InputError(fmt::format("checkpoint tensor {} holds no loss scale ({}, {}, {})", kLossScaleTensor, v[0], v[1], v[2]));
      const math::LossScale s{v[0], static_cast<int>(v[1]), 0, static_cast<int>(v[2])};
      upload(scale_, &s, sizeof s, "loss scale");
    }
    scale_restored_ = true;
    return std::make_unique<CudaExecutor>(*this, g, store, opt);
  }

  void sync_to_host(ParamStore& store) override {
    ck(cudaSetDevice(opt_.device), "cudaSetDevice");
    for (auto& [name, t] : tensors_) download(store.get(name).buffer.data(), t.ptr, t.bytes, "copying params to the host");
    // amp-fp16: the loss scale and its counters go into checkpoints too (as Keras' LossScaleOptimizer
    // keeps them), so a resumed run goes on with the same scale.
    if (scaled()) {
      const math::LossScale s = read_scale();
      float* v = store.ensure(kLossScaleTensor, {3}, DType::f32).as<float>();
      v[0] = s.scale;
      v[1] = static_cast<float>(s.good_steps);
      v[2] = static_cast<float>(s.skipped);
    }
  }

  AllocStats memory() const override { return alloc_->stats(); }
  math::LossScale read_scale() const {
    math::LossScale s{};
    download(&s, scale_, sizeof s, "loss scale");
    return s;
  }
  double loss_scale() const override { return opt_.precision == gpu::GpuPrecision::amp_fp16 ? read_scale().scale : 1.0; }
  std::int64_t skipped_steps() const override { return opt_.precision == gpu::GpuPrecision::amp_fp16 ? read_scale().skipped : 0; }
  std::string describe() const override {
    static const char* names[] = {"fp32", "tf32", "amp-bf16", "amp-fp16"};
    return fmt::format("cuda:{} {}, memory {}, {}, {}{}", opt_.device, name_, alloc_mode_name(opt_.memory),
                       names[static_cast<int>(opt_.precision)], opt_.cuda_graphs ? "CUDA graphs" : "eager",
                       coll_ ? fmt::format(", replica {} of {} (NCCL)", coll_->rank(), coll_->size()) : "");
  }
  bool amp() const { return opt_.precision == gpu::GpuPrecision::amp_bf16 || opt_.precision == gpu::GpuPrecision::amp_fp16; }
  bool scaled() const { return opt_.precision == gpu::GpuPrecision::amp_fp16; }
  math::LossScale* scale() const { return scale_; }

  /// The device copy of a store tensor, uploaded on first use.
  void* tensor(ParamStore& store, const std::string& name, const ir::Shape& shape, DType dtype) {
    auto it = tensors_.find(name);
    if (it != tensors_.end()) return it->second.ptr;
    HostTensor& h = store.ensure(name, shape, dtype);
    void* p = alloc_->allocate(h.bytes());
    upload(p, h.buffer.data(), h.bytes(), "copying params to the device");
    tensors_[name] = {p, h.bytes()};
    return p;
  }

  /// The data set on the device, uploaded once per run; nullptr when it would take over a quarter of the
  /// card or the pool cannot hold it (a preallocated pool, or a card other processes fill): then batches go
  /// up from the host, which is slower but trains the same.
  std::pair<const float*, const std::int32_t*> dataset(const Dataset& d) {
    if (data_of_ == &d && data_rows_ == d.rows) return {data_x_, data_y_};
    if (data_of_ || data_refused_) return {nullptr, nullptr};  // one data set per run
    const std::size_t xb = d.x.size() * sizeof(float), yb = d.y.size() * sizeof(std::int32_t);
    if (xb == 0 || yb == 0 || xb + yb > raw_->capacity() / 4) return {nullptr, nullptr};
    auto* x = static_cast<float*>(alloc_->try_allocate(xb));
    auto* y = x ? static_cast<std::int32_t*>(alloc_->try_allocate(yb)) : nullptr;
    if (!y) {
      if (x) alloc_->deallocate(x);
      data_refused_ = true;
      return {nullptr, nullptr};
    }
    data_x_ = x;
    data_y_ = y;
    upload(data_x_, d.x.data(), xb, "uploading the data set");
    upload(data_y_, d.y.data(), yb, "uploading the data set");
    data_of_ = &d;
    data_rows_ = d.rows;
    return {data_x_, data_y_};
  }

  /// Queued steps: the step state is set to `first`. False when the data set does not live on the device.
  bool bind_state(const Dataset& d, const StepContext& first) {
    if (!dataset(d).first) return false;
    const StepState st{first.seed, first.iteration};
    upload(state_, &st, sizeof st, "step state");
    queued_seed_ = first.seed;
    next_iteration_ = first.iteration;
    return true;
  }
  /// Before a queued step: the device's step index advances itself (training steps), and the host mirrors
  /// it so nothing goes up per step. When the step is not the one the device holds (steps in between ran
  /// another way, e.g. a profiled executor's synchronous steps) the state is set again first.
  void begin_queued_step(const StepContext& ctx, bool trains) {
    if (ctx.seed != queued_seed_ || ctx.iteration != next_iteration_) {
      const StepState st{ctx.seed, ctx.iteration};
      upload(state_, &st, sizeof st, "step state");
      queued_seed_ = ctx.seed;
      next_iteration_ = ctx.iteration;
    }
    if (trains) ++next_iteration_;
  }
  /// After the queue drained: the device counted the steps the host queued.
  void check_iteration() const {
    StepState st{};
    download(&st, state_, sizeof st, "step state");
    if (st.iteration != next_iteration_)
      throw RuntimeFailure(fmt::format("the GPU's step counter is {} after the queued steps, the host's {}", st.iteration, next_iteration_));
  }
  StepState* state() const { return state_; }

  CachingAllocator& allocator() { return *alloc_; }
  cudaStream_t stream() const { return stream_; }
  cublasLtHandle_t lt_handle() const { return lt_; }
  void* gemm_workspace() const { return workspace_; }
  const gpu::TrainDeviceOptions& options() const { return opt_; }
  static constexpr std::size_t kWorkspace = 32u << 20;
  static constexpr const char* kLossScaleTensor = "amp/loss_scale";  // scale, good steps in a row, steps skipped

 private:
  struct DevTensor {
    void* ptr;
    std::size_t bytes;
  };
  gpu::TrainDeviceOptions opt_;
  std::string name_;
  std::unique_ptr<CudaRaw> raw_;
  std::unique_ptr<CachingAllocator> alloc_;
  cudaStream_t stream_ = nullptr;
  cublasLtHandle_t lt_ = nullptr;
  void* workspace_ = nullptr;
  math::LossScale* scale_ = nullptr;
  bool scale_restored_ = false;
  StepState* state_ = nullptr;  // queued steps' seed and step index, advanced by their last kernel
  std::uint64_t queued_seed_ = 0;
  std::int64_t next_iteration_ = 0;
  std::map<std::string, DevTensor> tensors_;
  std::unique_ptr<gpu::cuda::Collective> coll_;
  cudaStream_t comm_stream_ = nullptr;
  const Dataset* data_of_ = nullptr;
  std::int64_t data_rows_ = 0;
  bool data_refused_ = false;  // the pool could not hold the data set: it streams from the host for the run
  float* data_x_ = nullptr;
  std::int32_t* data_y_ = nullptr;
};

std::size_t bytes_of(const Node& n) { return static_cast<std::size_t>(ir::numel(n.shape)) * ir::dtype_size(n.dtype); }
std::size_t probs_bytes(const Node& logits) { return (bytes_of(logits) + 255) / 256 * 256; }

CudaExecutor::CudaExecutor(Device& dev, const ir::Graph& g, ParamStore& store, const ExecutorOptions& opt)
    : dev_(dev), g_(g), opt_(opt) {
  static const OpKind supported[] = {OpKind::input, OpKind::param, OpKind::fill, OpKind::matmul, OpKind::activation,
                                     OpKind::activation_grad, OpKind::dropout, OpKind::dropout_grad, OpKind::softmax,
                                     OpKind::softmax_xent, OpKind::softmax_xent_grad, OpKind::reduce_rows, OpKind::add,
                                     OpKind::accuracy, OpKind::adam_update};
  for (const Node& n : g_.nodes()) {
    if (std::find(std::begin(supported), std::end(supported), n.op) == std::end(supported))
      throw InputError(fmt::format("the CUDA engine cannot run op '{}' (node {}) yet", ir::op_name(n.op), n.name));
    if (n.dtype != DType::f32 && n.dtype != DType::i32)
      throw InputError(fmt::format("the CUDA engine runs f32 graphs (node {} is {})", n.name, ir::dtype_name(n.dtype)));
  }
  const std::size_t count = g_.size();
  value_.assign(count, nullptr);
  aux_.assign(count, nullptr);
  if (opt_.profile) seconds_.assign(count, 0.0);
  ck(cudaMallocHost(reinterpret_cast<void**>(&step_host_), sizeof(StepState)), "cudaMallocHost");
  step_dev_ = static_cast<StepState*>(alloc(sizeof(StepState)));
  totals_dev_ = static_cast<RunningTotals*>(alloc(sizeof(RunningTotals)));
  std::vector<AdamTensor> adam;
  if (dev_.collective()) {
    std::vector<NodeId> grads;
    for (const Node& n : g_.nodes())
      if (n.op == OpKind::adam_update) grads.push_back(n.inputs[1]);
    std::sort(grads.begin(), grads.end());  // production order
    std::size_t off = 0, bucket_start = 0;
    for (std::size_t k = 0; k < grads.size(); ++k) {
      grad_offset_[grads[k]] = off;
      off += (bytes_of(g_.node(grads[k])) + 255) / 256 * 256;  // 256-byte aligned slots; padding is reduced too
      if (off - bucket_start >= kBucketBytes || k + 1 == grads.size()) {
        bucket_end_[grads[k]] = buckets_.size();
        buckets_.push_back({reinterpret_cast<float*>(bucket_start), static_cast<std::int64_t>((off - bucket_start) / sizeof(float))});
        bucket_start = off;
      }
    }
    if (off > 0) {
      grad_arena_ = static_cast<char*>(alloc(off));
      ck(cudaMemsetAsync(grad_arena_, 0, off, dev_.stream()), "zeroing the gradient arena");  // padding is reduced too
      for (auto& b : buckets_) b.begin = reinterpret_cast<float*>(grad_arena_ + reinterpret_cast<std::size_t>(b.begin));
    }
  }
  for (const Node& n : g_.nodes()) {
    const auto i = static_cast<std::size_t>(n.id);
    switch (n.op) {
      case OpKind::param:
        value_[i] = dev_.tensor(store, n.name, n.shape, n.dtype);
        break;
      case OpKind::adam_update: {
        const Node& p = g_.node(n.inputs[0]);
        value_[i] = value_[static_cast<std::size_t>(p.id)];
        const auto numel = ir::numel(p.shape);
        adam.push_back({static_cast<float*>(value_[i]), static_cast<const float*>(value_[static_cast<std::size_t>(n.inputs[1])]),
                        static_cast<float*>(dev_.tensor(store, p.name + "/m", p.shape, p.dtype)),
                        static_cast<float*>(dev_.tensor(store, p.name + "/v", p.shape, p.dtype)), numel, adam_total_});
        adam_total_ += numel;
        adam_cfg_ = n.adam;
        break;
      }
      default:
        if (auto it = grad_offset_.find(n.id); it != grad_offset_.end()) value_[i] = grad_arena_ + it->second;
        else value_[i] = alloc(bytes_of(n));
        if (n.op == OpKind::input) {
          void* h = nullptr;
          ck(cudaMallocHost(&h, bytes_of(n)), "cudaMallocHost");
          staging_[n.id] = h;
        }
        if (n.op == OpKind::dropout) aux_[i] = alloc(static_cast<std::size_t>(ir::numel(n.shape)));
        if (n.op == OpKind::softmax_xent) {
          const Node& z = g_.node(n.inputs[0]);
          // probs, then the per-row losses (doubles: the probs part is rounded up so they stay aligned)
          aux_[i] = alloc(probs_bytes(z) + static_cast<std::size_t>(z.shape[0]) * sizeof(double));
        }
        if (n.op == OpKind::accuracy) aux_[i] = alloc(static_cast<std::size_t>(g_.node(n.inputs[0]).shape[0]) * sizeof(double));
        if (n.op == OpKind::fill) launch_fill(static_cast<float*>(value_[i]), ir::numel(n.shape), static_cast<float>(n.value), dev_.stream());
        if (n.op == OpKind::matmul) plan_gemm(n);
        if (n.op == OpKind::activation || n.op == OpKind::activation_grad) (void)to_act(n.act);
    }
  }
  if (!buckets_.empty()) {
    grad_ready_.resize(buckets_.size());
    grad_done_.resize(buckets_.size());
    for (auto* v : {&grad_ready_, &grad_done_})
      for (auto& e : *v) ck(cudaEventCreateWithFlags(&e, cudaEventDisableTiming), "cudaEventCreate");
  }
  if (!adam.empty()) {
    adam_count_ = static_cast<int>(adam.size());
    adam_dev_ = static_cast<AdamTensor*>(alloc(adam.size() * sizeof(AdamTensor)));
    dev_.upload(adam_dev_, adam.data(), adam.size() * sizeof(AdamTensor), "uploading the Adam table");
  }
  // Scalar outputs (loss, accuracy) come back to pinned host memory at the end of each step.
  std::vector<NodeId> outs;
  for (const Node& n : g_.nodes())
    if (ir::numel(n.shape) == 1 && (n.op == OpKind::softmax_xent || n.op == OpKind::accuracy)) outs.push_back(n.id);
  if (!outs.empty()) ck(cudaMallocHost(reinterpret_cast<void**>(&scalar_host_), outs.size() * sizeof(float)), "cudaMallocHost");
  for (std::size_t k = 0; k < outs.size(); ++k) scalars_.emplace_back(outs[k], scalar_host_ + k);
  if (opt_.profile) {
    ev_.resize(2 * count);
    for (auto& e : ev_) ck(cudaEventCreate(&e), "cudaEventCreate");
  }
  ck(cudaStreamSynchronize(dev_.stream()), "building the executor");
  reset_totals();
}

CudaExecutor::~CudaExecutor() {
  cudaStreamSynchronize(dev_.stream());
  if (graph_exec_) cudaGraphExecDestroy(graph_exec_);
  for (auto& [id, gm] : gemm_) {
    cublasLtMatrixLayoutDestroy(gm.a);
    cublasLtMatrixLayoutDestroy(gm.b);
    cublasLtMatrixLayoutDestroy(gm.d);
    cublasLtMatmulDescDestroy(gm.desc);
  }
  for (void* p : owned_) dev_.allocator().deallocate(p);
  for (auto& [id, h] : staging_) cudaFreeHost(h);
  if (scalar_host_) cudaFreeHost(scalar_host_);
  if (step_host_) cudaFreeHost(step_host_);
  if (rows_host_) cudaFreeHost(rows_host_);
  for (auto e : ev_) cudaEventDestroy(e);
  for (auto e : grad_ready_) cudaEventDestroy(e);
  for (auto e : grad_done_) cudaEventDestroy(e);
}

void* CudaExecutor::alloc(std::size_t bytes) {
  void* p = dev_.allocator().allocate(std::max<std::size_t>(bytes, 1));
  owned_.push_back(p);
  workspace_ += bytes;
  return p;
}

void CudaExecutor::plan_gemm(const Node& n) {
  const Node& a = g_.node(n.inputs[0]);
  const std::uint64_t M = static_cast<std::uint64_t>(n.shape[0]), N = static_cast<std::uint64_t>(n.shape[1]);
  const std::uint64_t K = static_cast<std::uint64_t>(n.trans_a ? a.shape[0] : a.shape[1]);
  Gemm gm;
  const bool amp = dev_.amp();
  const bool bf16 = dev_.options().precision == gpu::GpuPrecision::amp_bf16;
  const cudaDataType_t in_type = !amp ? CUDA_R_32F : bf16 ? CUDA_R_16BF : CUDA_R_16F;
  const cublasComputeType_t compute = dev_.options().precision == gpu::GpuPrecision::tf32 ? CUBLAS_COMPUTE_32F_FAST_TF32 : CUBLAS_COMPUTE_32F;
  if (amp) {  // AMP: 16-bit inputs, FP32 accumulate and output (master weights and the rest stay FP32)
    gm.left16 = alloc(bytes_of(g_.node(n.inputs[1])) / 2);
    gm.right16 = alloc(bytes_of(a) / 2);
  }
  lt(cublasLtMatmulDescCreate(&gm.desc, compute, CUDA_R_32F), "cublasLtMatmulDescCreate");
  // Column-major view: D^T[N,M] = opL(B) [N,K] x opR(A) [K,M] (gemm_mapping.hpp, host-tested through a BLAS).
  const ColMajorGemm map = col_major_gemm(static_cast<std::int64_t>(M), static_cast<std::int64_t>(N), static_cast<std::int64_t>(K),
                                          n.trans_a, n.trans_b);
  const cublasOperation_t opl = map.trans_left ? CUBLAS_OP_T : CUBLAS_OP_N, opr = map.trans_right ? CUBLAS_OP_T : CUBLAS_OP_N;
  lt(cublasLtMatmulDescSetAttribute(gm.desc, CUBLASLT_MATMUL_DESC_TRANSA, &opl, sizeof opl), "TRANSA");
  lt(cublasLtMatmulDescSetAttribute(gm.desc, CUBLASLT_MATMUL_DESC_TRANSB, &opr, sizeof opr), "TRANSB");
  cublasLtEpilogue_t epi = CUBLASLT_EPILOGUE_DEFAULT;
  if (n.has_bias) epi = n.act == ir::Act::relu ? CUBLASLT_EPILOGUE_RELU_BIAS : CUBLASLT_EPILOGUE_BIAS;
  else if (n.act == ir::Act::relu) epi = CUBLASLT_EPILOGUE_RELU;
  gm.post_act = n.act != ir::Act::none && n.act != ir::Act::relu;
  if (gm.post_act) (void)to_act(n.act);
  lt(cublasLtMatmulDescSetAttribute(gm.desc, CUBLASLT_MATMUL_DESC_EPILOGUE, &epi, sizeof epi), "EPILOGUE");
  if (n.has_bias) {
    const void* bias = value_[static_cast<std::size_t>(n.inputs[2])];
    lt(cublasLtMatmulDescSetAttribute(gm.desc, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &bias, sizeof bias), "BIAS_POINTER");
  }
  const auto lrows = static_cast<std::uint64_t>(map.left_rows), lcols = static_cast<std::uint64_t>(map.left_cols);
  const auto rrows = static_cast<std::uint64_t>(map.right_rows), rcols = static_cast<std::uint64_t>(map.right_cols);
  lt(cublasLtMatrixLayoutCreate(&gm.a, in_type, lrows, lcols, static_cast<std::int64_t>(lrows)), "layout B");
  lt(cublasLtMatrixLayoutCreate(&gm.b, in_type, rrows, rcols, static_cast<std::int64_t>(rrows)), "layout A");
  lt(cublasLtMatrixLayoutCreate(&gm.d, CUDA_R_32F, static_cast<std::uint64_t>(map.out_rows), static_cast<std::uint64_t>(map.out_cols),
                                map.out_rows),
     "layout D");
  cublasLtMatmulPreference_t pref = nullptr;
  lt(cublasLtMatmulPreferenceCreate(&pref), "preference");
  const std::uint64_t ws = Device::kWorkspace;
  lt(cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &ws, sizeof ws), "workspace");
  // Deterministic results step to step (and eager == graph): no split-K reduced in place with atomics.
  const std::uint32_t schemes = CUBLASLT_REDUCTION_SCHEME_MASK & ~static_cast<std::uint32_t>(CUBLASLT_REDUCTION_SCHEME_INPLACE);
  lt(cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_REDUCTION_SCHEME_MASK, &schemes, sizeof schemes), "reduction schemes");
  cublasLtMatmulHeuristicResult_t h{};
  int found = 0;
  const cublasStatus_t st = cublasLtMatmulAlgoGetHeuristic(dev_.lt_handle(), gm.desc, gm.a, gm.b, gm.d, gm.d, pref, 1, &h, &found);
  cublasLtMatmulPreferenceDestroy(pref);
  lt(st, "cublasLtMatmulAlgoGetHeuristic");
  if (found == 0) throw RuntimeFailure(fmt::format("cuBLASLt has no algorithm for GEMM {} ({}x{}x{})", n.name, M, N, K));
  gm.algo = h.algo;
  gemm_[n.id] = gm;
}

void* CudaExecutor::input(std::string_view name) {
  const NodeId id = g_.find(name);
  if (id == ir::kNone || g_.node(id).op != OpKind::input) throw std::invalid_argument(fmt::format("executor: no input named '{}'", name));
  return staging_.at(id);
}

void CudaExecutor::exec(const Node& n, Mode m) {
  cudaStream_t s = dev_.stream();
  const auto i = static_cast<std::size_t>(n.id);
  auto f = [&](NodeId id) { return static_cast<float*>(value_[static_cast<std::size_t>(id)]); };
  auto lab = [&](NodeId id) { return static_cast<const std::int32_t*>(value_[static_cast<std::size_t>(id)]); };
  const std::int64_t count = ir::numel(n.shape);
  switch (n.op) {
    case OpKind::input:
      if (m == Mode::queued && (n.name == "x" || n.name == "labels")) {
        if (n.name == "x")  // labels come with it
          launch_gather_epoch(epoch_x_, epoch_y_, order_dev_, totals_dev_, bound_offset_, n.shape[0], n.shape[1], f(n.id),
                              static_cast<std::int32_t*>(value_[static_cast<std::size_t>(g_.find("labels"))]), s);
        return;
      }
      if (gathered_ && (n.name == "x" || n.name == "labels")) {
        if (n.name == "x") {  // labels come with it
          ck(cudaMemcpyAsync(rows_dev_, rows_host_, static_cast<std::size_t>(batch_rows_) * sizeof(std::int64_t), cudaMemcpyHostToDevice, s),
             "row indices");
          launch_gather_rows(data_x_, data_y_, rows_dev_, batch_rows_, features_, f(n.id),
                             labels_, s);
        }
        return;
      }
      ck(cudaMemcpyAsync(value_[i], staging_.at(n.id), bytes_of(n), cudaMemcpyHostToDevice, s), "input upload");
      return;
    case OpKind::param:
    case OpKind::fill:
      return;
    case OpKind::matmul: {
      const Gemm& gm = gemm_.at(n.id);
      const float one = 1.0f, zero = 0.0f;
      const void* left = value_[static_cast<std::size_t>(n.inputs[1])];
      const void* right = value_[static_cast<std::size_t>(n.inputs[0])];
      if (gm.left16) {
        const bool bf16 = dev_.options().precision == gpu::GpuPrecision::amp_bf16;
        launch_cast16(static_cast<const float*>(left), gm.left16, ir::numel(g_.node(n.inputs[1]).shape), bf16, s);
        launch_cast16(static_cast<const float*>(right), gm.right16, ir::numel(g_.node(n.inputs[0]).shape), bf16, s);
        left = gm.left16;
        right = gm.right16;
      }
      lt(cublasLtMatmul(dev_.lt_handle(), gm.desc, &one, left, gm.a, right, gm.b, &zero, value_[i], gm.d, value_[i], gm.d, &gm.algo,
                        dev_.gemm_workspace(), Device::kWorkspace, s),
         "cublasLtMatmul");
      if (gm.post_act) launch_activation(f(n.id), f(n.id), count, to_act(n.act), s);
      return;
    }
    case OpKind::activation: launch_activation(f(n.inputs[0]), f(n.id), count, to_act(n.act), s); return;
    case OpKind::activation_grad: launch_activation_grad(f(n.inputs[0]), f(n.inputs[1]), f(n.id), count, to_act(n.act), s); return;
    case OpKind::dropout:
      launch_dropout(f(n.inputs[0]), f(n.id), static_cast<std::uint8_t*>(aux_[i]), count, n.rate, step_, static_cast<std::uint64_t>(n.id), s);
      return;
    case OpKind::dropout_grad:
      launch_dropout_grad(f(n.inputs[0]), static_cast<const std::uint8_t*>(aux_[static_cast<std::size_t>(n.ref)]), f(n.id), count, n.rate, s);
      return;
    case OpKind::softmax: launch_softmax(f(n.inputs[0]), f(n.id), n.shape[0], n.shape[1], s); return;
    case OpKind::softmax_xent: {
      const auto& zs = g_.node(n.inputs[0]).shape;
      float* probs = static_cast<float*>(aux_[i]);
      double* rows = reinterpret_cast<double*>(static_cast<char*>(aux_[i]) + probs_bytes(g_.node(n.inputs[0])));
      launch_softmax_xent(f(n.inputs[0]), lab(n.inputs[1]), probs, rows, f(n.id), zs[0], zs[1], s);
      return;
    }
    case OpKind::softmax_xent_grad:
      launch_softmax_xent_grad(f(n.inputs[0]), static_cast<const float*>(aux_[static_cast<std::size_t>(n.ref)]), lab(n.inputs[1]), f(n.id),
                               n.shape[0], n.shape[1], s);
      // AMP fp16: the backward pass runs on loss x scale so small gradients survive in 16 bits.
      if (dev_.scaled() && adam_count_ > 0) launch_scale_by(f(n.id), count, dev_.scale(), s);
      return;
    case OpKind::reduce_rows: {
      const auto& xs = g_.node(n.inputs[0]).shape;
      launch_reduce_rows(f(n.inputs[0]), f(n.id), xs[0], xs[1], s);
      return;
    }
    case OpKind::add: launch_add(f(n.inputs[0]), f(n.inputs[1]), f(n.id), count, s); return;
    case OpKind::accuracy: {
      const auto& zs = g_.node(n.inputs[0]).shape;
      launch_accuracy(f(n.inputs[0]), lab(n.inputs[1]), static_cast<double*>(aux_[i]), f(n.id), zs[0], zs[1], s);
      return;
    }
    case OpKind::adam_update:
      // Every Adam node is at the end of the step, after every gradient: one launch updates all tensors.
      if (!adam_done_) {
        for (auto e : grad_done_) ck(cudaStreamWaitEvent(s, e, 0), "waiting for the gradient exchange");
        const bool scaled = dev_.scaled();
        if (scaled) launch_check_finite(adam_dev_, adam_count_, adam_total_, dev_.scale(), s);
        launch_adam(adam_dev_, adam_count_, adam_total_, adam_cfg_.learning_rate, adam_cfg_.beta_1, adam_cfg_.beta_2, adam_cfg_.epsilon,
                    step_, scaled ? dev_.scale() : nullptr, s);
        if (scaled) launch_update_loss_scale(dev_.scale(), 2000, s);
        adam_done_ = true;
      }
      return;
    default:
      return;
  }
}

void CudaExecutor::launch_all(Mode m) {
  cudaStream_t s = dev_.stream();
  if (m == Mode::sync) ck(cudaMemcpyAsync(step_dev_, step_host_, sizeof(StepState), cudaMemcpyHostToDevice, s), "step upload");
  step_ = m == Mode::sync ? step_dev_ : dev_.state();
  if (dev_.scaled() && adam_count_ > 0)  // a new step: no non-finite gradient seen yet
    ck(cudaMemsetAsync(&dev_.scale()->found_nonfinite, 0, sizeof(int), s), "loss-scale flag");
  adam_done_ = false;
  for (const Node& n : g_.nodes()) {
    const auto i = static_cast<std::size_t>(n.id);
    if (opt_.profile) ck(cudaEventRecord(ev_[2 * i], s), "cudaEventRecord");
    exec(n, m);
    if (opt_.profile) ck(cudaEventRecord(ev_[2 * i + 1], s), "cudaEventRecord");
    if (auto it = bucket_end_.find(n.id); it != bucket_end_.end()) {
      // Fork: the comm stream averages this bucket while the main stream goes on with backward.
      const std::size_t k = it->second;
      cudaStream_t c = dev_.comm_stream();
      ck(cudaEventRecord(grad_ready_[k], s), "cudaEventRecord");
      ck(cudaStreamWaitEvent(c, grad_ready_[k], 0), "cudaStreamWaitEvent");
      dev_.collective()->all_reduce_mean(buckets_[k].begin, buckets_[k].floats, c);
      ck(cudaEventRecord(grad_done_[k], c), "cudaEventRecord");
    }
  }
  if (m == Mode::sync) {
    for (auto& [id, host] : scalars_)
      ck(cudaMemcpyAsync(host, value_[static_cast<std::size_t>(id)], sizeof(float), cudaMemcpyDeviceToHost, s), "scalar download");
  } else {
    const NodeId loss = g_.output("loss"), acc = g_.output("accuracy");
    launch_end_step(dev_.state(), totals_dev_, static_cast<const float*>(value_[static_cast<std::size_t>(loss)]),
                    acc == ir::kNone ? nullptr : static_cast<const float*>(value_[static_cast<std::size_t>(acc)]),
                    bound_rows_, bound_stride_, adam_count_ > 0, s);
  }
  ck(cudaGetLastError(), "launching the step's kernels");  // a bad launch configuration, named here rather than at the next sync
}

// The compiled path: a mode's first step runs eagerly (it also warms cuBLASLt up), its second is captured
// as a CUDA graph, and every later step replays it. Profiling stays eager so each node can be timed.
void CudaExecutor::launch_step(Mode m) {
  cudaStream_t s = dev_.stream();
  if (m != mode_) {
    if (graph_exec_) {
      ck(cudaStreamSynchronize(s), "training step");
      cudaGraphExecDestroy(graph_exec_);
      graph_exec_ = nullptr;
    }
    mode_ = m;
    mode_runs_ = 0;
  }
  const bool graphs = dev_.options().cuda_graphs && !opt_.profile;
  if (graphs && graph_exec_) {
    ck(cudaGraphLaunch(graph_exec_, s), "cudaGraphLaunch");
  } else if (graphs && mode_runs_ >= 1) {
    cudaGraph_t graph = nullptr;
    ck(cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal), "cudaStreamBeginCapture");
    try {
      launch_all(m);
    } catch (...) {
      // End the capture before the error leaves: a stream left capturing fails every later call on it,
      // and the first error, the one worth reading, would be buried under theirs.
      cudaGraph_t partial = nullptr;
      (void)cudaStreamEndCapture(s, &partial);
      if (partial) cudaGraphDestroy(partial);
      (void)cudaGetLastError();
      throw;
    }
    ck(cudaStreamEndCapture(s, &graph), "cudaStreamEndCapture");
    const cudaError_t e = cudaGraphInstantiate(&graph_exec_, graph, 0);
    cudaGraphDestroy(graph);
    ck(e, "cudaGraphInstantiate");
    ck(cudaGraphLaunch(graph_exec_, s), "cudaGraphLaunch");
  } else {
    launch_all(m);
  }
  ++mode_runs_;
}

void CudaExecutor::run(const StepContext& ctx) {
  ck(cudaSetDevice(dev_.device()), "cudaSetDevice");  // replicas run on their own threads
  *step_host_ = {ctx.seed, ctx.iteration};
  launch_step(Mode::sync);
  ck(cudaStreamSynchronize(dev_.stream()), "training step");
  if (opt_.profile)
    for (std::size_t i = 0; i < g_.size(); ++i) {
      float ms = 0;
      ck(cudaEventElapsedTime(&ms, ev_[2 * i], ev_[2 * i + 1]), "cudaEventElapsedTime");
      seconds_[i] += ms * 1e-3;
    }
}

bool CudaExecutor::bind_epoch(const Dataset& data, const std::int64_t* order, std::int64_t count, std::int64_t offset,
                              std::int64_t stride, const StepContext& first) {
  ck(cudaSetDevice(dev_.device()), "cudaSetDevice");
  queued_ = false;
  // The base binding checks the inputs' shapes and is the fallback: rows staged from the host, steps run
  // one at a time.
  if (!Executor::bind_epoch(data, order, count, offset, stride, first)) return false;
  // Profiled steps are timed one by one; a graph without a loss has nothing to total.
  if (opt_.profile || g_.output("loss") == ir::kNone || !dev_.bind_state(data, first)) return true;
  if (!order_dev_) {
    order_dev_ = static_cast<std::int64_t*>(alloc(static_cast<std::size_t>(count) * sizeof(std::int64_t)));
    order_count_ = count;
  }
  if (count != order_count_) return true;  // another length than the captured graph's buffer: the host path
  dev_.upload(order_dev_, order, static_cast<std::size_t>(count) * sizeof(std::int64_t), "uploading the epoch's row order");
  const auto [dx, dy] = dev_.dataset(data);
  epoch_x_ = dx;
  epoch_y_ = dy;
  bound_offset_ = offset;
  bound_stride_ = stride;
  bound_rows_ = g_.node(g_.find("x")).shape[0];
  const std::int64_t zero = 0;
  dev_.upload(&totals_dev_->cursor, &zero, sizeof zero, "epoch cursor");
  queued_ = true;
  return true;
}

void CudaExecutor::run_accumulate(const StepContext& ctx, std::int64_t rows) {
  if (!queued_) {
    Executor::run_accumulate(ctx, rows);
    return;
  }
  ck(cudaSetDevice(dev_.device()), "cudaSetDevice");  // replicas run on their own threads
  if (rows != bound_rows_) throw std::logic_error(fmt::format("run_accumulate: {} rows for a graph of batch {}", rows, bound_rows_));
  dev_.begin_queued_step(ctx, adam_count_ > 0);
  launch_step(Mode::queued);
  ++queued_steps_;
}

StepTotals CudaExecutor::totals() {
  StepTotals t = host_totals_;
  if (queued_steps_ == 0) return t;
  ck(cudaSetDevice(dev_.device()), "cudaSetDevice");
  RunningTotals d{};
  dev_.download(&d, totals_dev_, sizeof d, "training steps");  // waits for every queued step
  if (d.steps != queued_steps_)
    throw RuntimeFailure(fmt::format("the GPU counted {} of the {} training steps queued", d.steps, queued_steps_));
  dev_.check_iteration();
  t += StepTotals{.loss = d.loss,
                  .accuracy = d.accuracy,
                  .rows = d.rows,
                  .steps = d.steps,
                  .first_nonfinite_iteration = d.first_nonfinite_iteration,
                  .nonfinite_loss = d.nonfinite_loss};
  return t;
}

void CudaExecutor::reset_totals() {
  Executor::reset_totals();
  ck(cudaSetDevice(dev_.device()), "cudaSetDevice");
  const RunningTotals zero{0.0, 0.0, 0, 0, 0, -1, 0.0f};
  dev_.upload(totals_dev_, &zero, sizeof zero, "running totals");
  queued_steps_ = 0;
}

double CudaExecutor::scalar(std::string_view output) const {
  const NodeId id = g_.output(output);
  if (id == ir::kNone) throw std::invalid_argument(fmt::format("executor: no output named '{}'", output));
  for (const auto& [sid, host] : scalars_)
    if (sid == id) return *host;
  return read(id).at(0);
}

std::vector<double> CudaExecutor::read(NodeId id) const {
  const Node& n = g_.node(id);
  const auto count = static_cast<std::size_t>(ir::numel(n.shape));
  std::vector<double> out(count);
  ck(cudaSetDevice(dev_.device()), "cudaSetDevice");
  if (n.dtype == DType::i32) {
    std::vector<std::int32_t> h(count);
    dev_.download(h.data(), value_[static_cast<std::size_t>(id)], count * 4, "read");
    for (std::size_t k = 0; k < count; ++k) out[k] = h[k];
  } else {
    std::vector<float> h(count);
    dev_.download(h.data(), value_[static_cast<std::size_t>(id)], count * 4, "read");
    for (std::size_t k = 0; k < count; ++k) out[k] = h[k];
  }
  return out;
}

bool CudaExecutor::gather_rows(const Dataset& data, const std::int64_t* rows, std::int64_t count) {
  ck(cudaSetDevice(dev_.device()), "cudaSetDevice");
  const NodeId x = g_.find("x"), y = g_.find("labels");
  if (x == ir::kNone || y == ir::kNone) return false;
  const Node& xn = g_.node(x);
  if (xn.shape.size() != 2 || xn.shape[0] != count || xn.shape[1] != data.features) return false;
  if (!gathered_) {
    if (mode_ == Mode::sync && mode_runs_ > 0) return false;  // the captured graph (if any) was built for host uploads
    const auto [dx, dy] = dev_.dataset(data);
    if (!dx) return false;
    data_x_ = dx;
    data_y_ = dy;
    batch_rows_ = count;
    features_ = data.features;
    labels_ = static_cast<std::int32_t*>(value_[static_cast<std::size_t>(y)]);
    ck(cudaMallocHost(reinterpret_cast<void**>(&rows_host_), static_cast<std::size_t>(count) * sizeof(std::int64_t)), "cudaMallocHost");
    rows_dev_ = static_cast<std::int64_t*>(alloc(static_cast<std::size_t>(count) * sizeof(std::int64_t)));
    gathered_ = true;
  }
  std::copy(rows, rows + count, rows_host_);
  return true;
}

std::string CudaExecutor::describe() const {
  return fmt::format("{}; {} cuBLASLt GEMMs with fused bias/ReLU epilogues", dev_.describe(), gemm_.size());
}

}  // namespace

std::unique_ptr<gpu::TrainDevice> open_train_device(const gpu::TrainDeviceOptions& o) { return std::make_unique<Device>(o); }

std::vector<std::unique_ptr<gpu::TrainDevice>> open_train_devices(const gpu::TrainDeviceOptions& o, int count) {
  auto comms = gpu::cuda::make_collectives(count);
  std::vector<std::unique_ptr<gpu::TrainDevice>> out;
  for (int r = 0; r < count; ++r) {
    gpu::TrainDeviceOptions one = o;
    one.device = r;
    auto d = std::make_unique<Device>(one);
    d->join(std::move(comms[static_cast<std::size_t>(r)]));
    out.push_back(std::move(d));
  }
  return out;
}

std::unique_ptr<gpu::TrainDevice> open_train_device_in_group(const gpu::TrainDeviceOptions& o, const std::string& unique_id, int rank,
                                                             int size) {
  auto d = std::make_unique<Device>(o);  // makes o.device current, which ncclCommInitRank binds to
  d->join(gpu::cuda::make_group_collective(unique_id, rank, size));
  return d;
}

}  // namespace gpuvs::engine::cuda
