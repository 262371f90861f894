// SPDX-License-Identifier: Apache-2.0
// The performance model: precision semantics, wave quantization, memory formulas, the roofline terms,
// and accuracy on the published Lambda data.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <functional>
#include <random>
#include <set>
#include <thread>

#include "core/error.hpp"
#include "core/files.hpp"
#include "core/strings.hpp"
#include "ir/autodiff.hpp"
#include "ir/cost.hpp"
#include "models/networks.hpp"
#include "perf/calibrate_one.hpp"
#include "perf/clocks.hpp"
#include "perf/collective.hpp"
#include "perf/parallel.hpp"
#include "perf/constants.hpp"
#include "perf/device_view.hpp"
#include "perf/efficiency.hpp"
#include "perf/fit.hpp"
#include "perf/memory.hpp"
#include "perf/predict.hpp"
#include "perf/roofline.hpp"
#include "perf/sequence_lengths.hpp"
#include "perf/system_facts.hpp"
#include "perf/validation.hpp"
#include "workload/resolve.hpp"

#include "test_util.hpp"
using namespace gpuvs;
using namespace gpuvs::perf;

namespace {
const catalog::Catalog& cat() {
  static const catalog::Catalog c = catalog::Catalog::builtin();
  return c;
}
}  // namespace

TEST(Precision, AvailabilityAndRates) {
  EXPECT_THROW(plan_precision(Precision::amp_fp8, cat().find("a100-80gb-sxm")), InputError);
  EXPECT_THROW(plan_precision(Precision::amp_bf16, cat().find("v100-sxm2-16gb")), InputError);
  EXPECT_THROW(plan_precision(Precision::tf32, cat().find("v100-sxm2-16gb")), InputError);
  // GeForce trains FP16 with FP32 accumulate at half the FP16-accumulate rate.
  EXPECT_DOUBLE_EQ(plan_precision(Precision::amp_fp16, cat().find("rtx-4090")).matrix_tflops, 165.2);
  EXPECT_DOUBLE_EQ(plan_precision(Precision::amp_fp8, cat().find("rtx-4090")).matrix_tflops, 330.3);
  EXPECT_DOUBLE_EQ(plan_precision(Precision::amp_fp8, cat().find("h100-sxm")).matrix_tflops, 1978.9);
  const PrecisionPlan fp32 = plan_precision(Precision::fp32, cat().find("a100-80gb-sxm"));
  EXPECT_FALSE(fp32.tensor_cores);
  EXPECT_DOUBLE_EQ(fp32.matrix_tflops, 19.5);
  EXPECT_EQ(plan_precision(Precision::amp_bf16, cat().find("h100-sxm")).activations, ir::DType::bf16);
  EXPECT_THROW(parse_precision("fp64"), InputError);
  EXPECT_EQ(parse_precision("AMP-BF16"), Precision::amp_bf16);
}

TEST(Efficiency, WaveQuantizationAndSplitK) {
  EfficiencyParams p;
  // 132 SMs, 128x128 tiles: 132 tiles fill one wave; 133 tiles need two waves, the second nearly empty.
  EXPECT_DOUBLE_EQ(wave_efficiency({128 * 132, 128, 4096, 1}, p, 132), 1.0);
  EXPECT_NEAR(wave_efficiency({128 * 133, 128, 4096, 1}, p, 132), 133.0 / 264.0, 1e-12);
  // 4 tiles and a long K: split-K spreads them over 33 slices each = 132 tiles, one full wave.
  EXPECT_DOUBLE_EQ(wave_efficiency({256, 256, 1 << 20, 1}, p, 132), 1.0);
  // 4 tiles, short K: no split possible.
  EXPECT_NEAR(wave_efficiency({256, 256, 64, 1}, p, 132), 4.0 / 132.0, 1e-12);
  // The K ramp: K = k_half halves the efficiency.
  EXPECT_NEAR(gemm_efficiency({128 * 132, 128, p.k_half, 1}, 0.8, p, 132), 0.4, 1e-12);
  EXPECT_NEAR(memory_efficiency(p.mem_half_bytes, p), p.mem_max / 2, 1e-12);
}

TEST(Efficiency, AStreamingKernelsRampIsTimeSoAFasterMemoryLosesMoreBytesToIt) {
  // Issue 34 mechanism 4: a memory-bound kernel's fill and drain are time (data/system.toml kernels.stream_ramp), not
  // bytes: the bytes at which it reaches half its streaming fraction are that time at the card's DRAM rate. An 8 MB
  // read (a 4096 x 4096 projection at 4 bits) reaches a larger share of an RTX 4090's 1,008 GB/s than of an H100's
  // 3,350, and takes the two the ramp's time apart, not the same bytes.
  const double ramp = system_facts().stream_ramp_s;
  ASSERT_GT(ramp, 0);
  const auto params = [](const char* id) {
    const catalog::Gpu& g = cat().find(id);
    return std::pair{efficiency_for(g, plan_precision(Precision::amp_bf16, g)), g.memory_bandwidth_gbs * 1e9};
  };
  const auto [geforce, geforce_bw] = params("rtx-4090");
  const auto [hbm, hbm_bw] = params("h100-sxm");
  EXPECT_DOUBLE_EQ(geforce.mem_half_bytes, ramp * geforce_bw);
  EXPECT_DOUBLE_EQ(hbm.mem_half_bytes, ramp * hbm_bw);
  const double bytes = 4096.0 * 4096 * 0.5;
  EXPECT_GT(memory_efficiency(bytes, geforce) / geforce.mem_max, memory_efficiency(bytes, hbm) / hbm.mem_max);
  // Time = bytes / (rate x mem_max) + the ramp at the kernel's fraction (ramp / mem_max), on any card.
  for (const auto& [p, bw] : {std::pair{geforce, geforce_bw}, std::pair{hbm, hbm_bw}})
    EXPECT_NEAR(bytes / (bw * memory_efficiency(bytes, p)), bytes / (bw * p.mem_max) + ramp / p.mem_max, 1e-12);
}

TEST(Efficiency, TheKRampIsCyclesSoSlowerMatrixUnitsAmortiseItOverFewerKSteps) {
  // A tile's fixed cost is SM cycles (data/system.toml tile_fixed_cycles): K_half = cycles x FMAs per SM-cycle /
  // the 128 x 128 tile, at most 48. A100 FP16 (1,024 FMA per SM-cycle) sits at the ceiling, and so does H100
  // BF16 (2,048); TF32 on A100 (512) at half of it; a V100's FP32 CUDA cores (64) at about 3.
  const double cycles = system_facts().tile_fixed_cycles;
  ASSERT_GT(cycles, 0);
  const auto k_half = [](const char* id, Precision pr) {
    const catalog::Gpu& g = cat().find(id);
    return efficiency_for(g, plan_precision(pr, g)).k_half;
  };
  EXPECT_DOUBLE_EQ(k_half("a100-80gb-sxm", Precision::amp_bf16), 48);
  EXPECT_DOUBLE_EQ(k_half("h100-sxm", Precision::amp_bf16), 48);
  EXPECT_NEAR(k_half("a100-80gb-sxm", Precision::tf32), cycles * 512 / (128.0 * 128), 0.05);
  const double v100 = k_half("v100-sxm2-16gb", Precision::fp32);
  EXPECT_NEAR(v100, cycles * 64 / (128.0 * 128), 0.01);
  // DeepBench's V100 FP32 1x1 convolution with K = 64 (56x56x64 to 256, N = 16) reached 65% of the FP32 peak
  // (system.toml's cuda_core_conv source): the ramp leaves it above 90% of the conv fraction, where K_half = 48
  // would have cut it to 57%.
  const catalog::Gpu& g = cat().find("v100-sxm2-16gb");
  const EfficiencyParams p = efficiency_for(g, plan_precision(Precision::fp32, g));
  const GemmDims conv{16.0 * 56 * 56, 256, 64, 1};
  EXPECT_GT(gemm_efficiency(conv, p.conv_max, p, g.sm_count) / p.conv_max, 0.9);
  EfficiencyParams old = p;
  old.k_half = 48;
  EXPECT_LT(gemm_efficiency(conv, p.conv_max, old, g.sm_count) / p.conv_max, 0.6);
  // A GeForce card's half-rate FP32-accumulate tensor path (RTX 3090: 256 FMA per SM-cycle) has a quarter of
  // A100's ramp; the workstation part on the same chip runs it at full rate and keeps twice that.
  EXPECT_LT(k_half("rtx-3090", Precision::amp_fp16), k_half("rtx-a6000", Precision::amp_fp16));
}

TEST(Efficiency, ACardsBestGemmPerClockCarriesToItsFrameworkGemms) {
  // mamf-finder's best BF16 GEMMs (data/achievable.toml): A100 SXM 271.2 of 312 TFLOP/s, H100 SXM 794.5 of 989, at
  // clocks the model has them sustain. Per clock the H100 reaches less of its peak than the A100, so its framework
  // GEMMs do too; with the sustained clocks, two measured cards' GEMM rates keep their measured ratio.
  const catalog::Gpu& a100 = cat().find("a100-80gb-sxm");
  const catalog::Gpu& a100_pcie = cat().find("a100-80gb-pcie");
  const catalog::Gpu& h100 = cat().find("h100-sxm");
  EXPECT_LT(gemm_card_share(h100), gemm_card_share(a100));
  const auto rate = [](const catalog::Gpu& g) {
    const EfficiencyParams p = efficiency_for(g, plan_precision(Precision::amp_bf16, g));
    return p.gemm_max * *g.bf16.dense * sustained_clock_fraction(g, active_constants().clock_headroom);
  };
  EXPECT_NEAR(rate(a100_pcie) / rate(a100), 252.9 / 271.2, 1e-9);
  EXPECT_NEAR(rate(h100) / rate(a100), 794.5 / 271.2, 1e-9);
  // H100 PCIe has no figure of its own: it takes the median per-clock fraction of its architecture's measured cards
  // (the H100 SXM and the GH200).
  const double pcie = gemm_card_share(cat().find("h100-pcie"));
  EXPECT_GE(pcie, std::min(gemm_card_share(h100), gemm_card_share(cat().find("gh200"))));
  EXPECT_LE(pcie, std::max(gemm_card_share(h100), gemm_card_share(cat().find("gh200"))));
  // The A10 (a GA102 at 150 W) has its own figure, 56 of 125 TFLOP/s: its power limit, not its clock model, sets it,
  // and its framework GEMMs keep the measured ratio to the A100's.
  const catalog::Gpu& a10 = cat().find("a10");
  EXPECT_LT(gemm_card_share(a10), 0.8);
  EXPECT_NEAR(rate(a10) / rate(a100), 56.0 / 271.2, 1e-9);
  EXPECT_NE(gemm_card_share(cat().find("a100-40gb-sxm")), 1.0);  // a GA100 without a figure of its own learns from its kin
  // GeForce/workstation boards against their own class: the RTX 4090 and 3090 (past their rated peaks, GPU Boost).
  const catalog::Gpu& rtx4090 = cat().find("rtx-4090");
  const catalog::Gpu& rtx3090 = cat().find("rtx-3090");
  EXPECT_NEAR(rate(rtx4090) / rate(rtx3090), 173.31 / 76.58, 1e-9);
  // No Volta card has a published figure: it keeps the class's fitted fraction as it is.
  EXPECT_DOUBLE_EQ(gemm_card_share(cat().find("v100-sxm2-16gb")), 1.0);
  // A card before BF16 compares its FP16 figure with the class's BF16 ones: the T4 at its 70 W cap sustains 24 of 65
  // TFLOP/s, so its framework GEMMs keep that ratio to the A100's (and the T4 does not move the class's reference).
  const catalog::Gpu& t4 = cat().find("t4");
  const auto rate16 = [](const catalog::Gpu& g) {
    const EfficiencyParams p = efficiency_for(g, plan_precision(Precision::amp_fp16, g));
    const double peak = g.fp16_fp32acc.dense ? *g.fp16_fp32acc.dense : *g.fp16.dense;
    return p.gemm_max * peak * sustained_clock_fraction(g, active_constants().clock_headroom);
  };
  EXPECT_LT(gemm_card_share(t4), 0.75);  // well under the class (0.70 with the clock headroom fitted at 0.41)
  EXPECT_NEAR(rate16(t4) / rate(a100), 24.0 / 271.2, 1e-9);
}

TEST(Efficiency, FP32KernelsLoseIssueSlotsWhereHalfTheFP32LanesAlsoRunINT32) {
  // GA10x/AD10x SMs count both datapaths in the FP32 spec, but one also executes the kernels' integer instructions:
  // CUDA-core FP32 math (SGEMM, convolutions, elementwise) keeps shared_lane_fp32 of the fractions other SMs reach
  // (cuBLAS SGEMM on an RTX A6000: 0.60 of the spec). Tensor-core math is untouched; A100 and V100 SMs have INT32 units.
  const double share = system_facts().shared_lane_fp32;
  ASSERT_GT(share, 0.5);
  ASSERT_LT(share, 1.0);
  const auto eff = [](const char* id, Precision pr) {
    const catalog::Gpu& g = cat().find(id);
    return efficiency_for(g, plan_precision(pr, g));
  };
  for (const char* id : {"rtx-3090", "rtx-4090", "rtx-a6000", "rtx-6000-ada", "a10", "l4", "l40s", "rtx-5090"}) {
    EXPECT_DOUBLE_EQ(shared_lane_fp32_share(cat().find(id)), share) << id;
    EXPECT_DOUBLE_EQ(eff(id, Precision::fp32).gemm_max, system_facts().cuda_core_gemm * share) << id;
    EXPECT_DOUBLE_EQ(eff(id, Precision::fp32).conv_max, system_facts().cuda_core_conv * share) << id;
  }
  for (const char* id : {"a100-80gb-sxm", "v100-sxm2-16gb", "h100-sxm", "t4", "rtx-2080-ti"}) {
    EXPECT_DOUBLE_EQ(shared_lane_fp32_share(cat().find(id)), 1.0) << id;
    EXPECT_DOUBLE_EQ(eff(id, Precision::fp32).gemm_max, system_facts().cuda_core_gemm) << id;
  }
  // Elementwise math loses the same slots; tensor-core GEMMs do not.
  EXPECT_DOUBLE_EQ(eff("rtx-3090", Precision::amp_fp16).vector_max, eff("a100-80gb-sxm", Precision::amp_fp16).vector_max * share);
  EXPECT_DOUBLE_EQ(eff("rtx-3090", Precision::tf32).gemm_max, eff("rtx-3090", Precision::amp_fp16).gemm_max);
  // An FP32 training step on a 3090 is slower by that share in its math; its TF32 step is not.
  PredictRequest r;
  r.workload = "bert-base";
  r.gpu = "rtx-3090";
  r.precision = Precision::fp32;
  r.batch = 16;
  const double fp32 = predict(cat(), r).throughput;
  SystemFacts wide = system_facts();
  wide.shared_lane_fp32 = 1.0;
  {
    const ScopedSystemFacts scope(wide);
    EXPECT_GT(predict(cat(), r).throughput, fp32 * 1.05);
  }
}

TEST(Memory, BytesPerParameterByRegime) {
  const auto& h100 = cat().find("h100-sxm");
  auto total = [](const ParamBytes& b) { return b.weights + b.gradients + b.optimizer; };
  // Mixed precision with fp32 master weights and Adam: 16 bytes per parameter (ZeRO's accounting).
  EXPECT_DOUBLE_EQ(total(param_bytes(plan_precision(Precision::amp_bf16, h100), true)), 16);
  EXPECT_DOUBLE_EQ(total(param_bytes(plan_precision(Precision::tf32, h100), true)), 16);
  EXPECT_DOUBLE_EQ(total(param_bytes(plan_precision(Precision::bf16, h100), true)), 8);
  EXPECT_DOUBLE_EQ(total(param_bytes(plan_precision(Precision::bf16, h100), false)), 2);
  // LLaMA-7B mixed-precision training: 6.74e9 x 16 B = 100 GiB of state alone: no single 80 GB card.
  PredictRequest r;
  r.workload = "llama-7b";
  r.gpu = "h100-sxm";
  r.batch = 1;
  r.options = {{"seq_len", "512"}};
  const Prediction p = predict(cat(), r);
  EXPECT_NEAR((p.memory.weights_bytes + p.memory.gradients_bytes + p.memory.optimizer_bytes) / 6738415616.0, 16, 1e-9);
  EXPECT_FALSE(p.memory.fits);
  EXPECT_NEAR(p.memory.capacity_bytes, 80.0 * 1073741824.0 * 0.98, 1.0);
  // ResNet-50 at batch 64 in AMP fits a 24 GB card, and activations dominate.
  r.workload = "resnet50";
  r.gpu = "rtx-4090";
  r.batch = 64;
  r.options.clear();
  r.precision = Precision::amp_fp16;
  const Prediction q = predict(cat(), r);
  EXPECT_TRUE(q.memory.fits);
  EXPECT_GT(q.memory.activations_bytes, q.memory.weights_bytes + q.memory.optimizer_bytes);
}

TEST(Memory, ATransformerBlockKeepsWhatKorthikantiEtAlCount) {
  // Korthikanti et al. 2022 ("Reducing Activation Recomputation in Large Transformer Models", section 4.1): one block
  // with explicit attention keeps s b h (34 + 5 a s / h) bytes in 16 bits — the two layer norms' inputs and outputs,
  // q, k, v and the context, the scores' softmax and dropout (output and 1-byte mask), the MLP's two inputs of 4h, the
  // two hidden dropouts' masks — and nothing else: a dropout before a residual add keeps its mask, not its output.
  // Beside them gpuvs counts each layer norm's FP32 mean and inverse deviation per row (2 x 8 s b bytes).
  const std::int64_t s = 128, b = 2, h = 256, a = 4;
  auto saved = [&](int layers) {
    models::NetworkOptions o;
    o.batch = b;
    o.seq_len = s;
    o.dtype = ir::DType::f16;
    o.flash_attention = false;
    models::BertConfig c;
    c.layers = layers;
    c.hidden = h;
    c.heads = static_cast<int>(a);
    c.intermediate = 4 * h;
    ir::Graph g = models::build_bert(o, c);
    ir::append_training_step(g, {});
    double bytes = 0;
    for (const SavedTensor& t : saved_tensors(g)) bytes += t.bytes;
    return bytes;
  };
  const double block = saved(3) - saved(2);
  EXPECT_DOUBLE_EQ(block, static_cast<double>(s * b * h) * (34.0 + 5.0 * a * s / h) + 2 * 8.0 * s * b);
}

TEST(Memory, ABatchNormKeepsItsInputAndStatisticsNotItsOutput) {
  // PyTorch's and cuDNN's batch-norm backward read the input and the saved mean and inverse deviation; a ReLU's reads
  // its output. A conv-BN-ReLU keeps the convolution's output and the ReLU's, so the BN's output is not kept.
  models::NetworkOptions o;
  o.batch = 2;
  o.dtype = ir::DType::f16;
  ir::Graph g = models::build_network(models::network("resnet50"), o);
  int norms = 0;
  for (const SavedTensor& t : saved_tensors(g)) {
    const ir::Node& n = g.node(t.id);
    if (n.op != ir::OpKind::normalize) continue;
    ++norms;
    EXPECT_DOUBLE_EQ(t.bytes, 2 * 4.0 * static_cast<double>(n.shape[1])) << n.name;
  }
  EXPECT_EQ(norms, 53);
  // NVIDIA's ResNet-50 recipe trains on a V100 16GB at batch 112 in FP32 and 256 in AMP (DeepLearningExamples,
  // data/validation/nvidia-dle-resnet50.csv), and Lambda an RTX 3090 at 224 in TF32 and 448 in AMP (24 GB): runs
  // that ran fit. Counting the BN outputs too priced them at 16.4, 18.6, 31.6 and 31.6 GiB.
  const struct {
    const char* gpu;
    Precision precision;
    std::int64_t batch;
  } runs[] = {{"v100-sxm2-16gb", Precision::fp32, 112}, {"v100-sxm2-16gb", Precision::amp_fp16, 256},
              {"rtx-3090", Precision::tf32, 224}, {"rtx-3090", Precision::amp_fp16, 448}};
  for (const auto& run : runs) {
    PredictRequest r;
    r.workload = "resnet50";
    r.gpu = run.gpu;
    r.batch = run.batch;
    r.precision = run.precision;
    const Prediction p = predict(cat(), r);
    EXPECT_TRUE(p.memory.fits) << run.gpu << " batch " << run.batch << ": " << p.memory.peak_bytes / 1073741824.0 << " GiB";
  }
}

TEST(Memory, PeakLiveBytesFreeEachTensorAfterItsLastReader) {
  // Inference: x [8, 1000] -> h [8, 4000] -> y [8, 10] in FP32. x dies once h is written: the peak is x and h together.
  ir::Graph g;
  const auto x = g.input("x", {8, 1000}, ir::DType::f32);
  const auto w1 = g.param("w1", {1000, 4000}, ir::DType::f32);
  const auto w2 = g.param("w2", {4000, 10}, ir::DType::f32);
  const auto hidden = g.matmul("h", x, w1, ir::kNone, ir::Act::relu);
  g.set_output("y", g.matmul("y", hidden, w2));
  EXPECT_DOUBLE_EQ(peak_live_bytes(g), (8 * 1000 + 8 * 4000) * 4.0);
  const auto& gpu = cat().find("h100-sxm");
  const MemoryEstimate m = estimate_memory(g, 1000 * 4000 + 4000 * 10, plan_precision(Precision::fp32, gpu), false, gpu);
  EXPECT_DOUBLE_EQ(m.activations_bytes, 0);
  EXPECT_DOUBLE_EQ(m.transient_bytes, (8 * 1000 + 8 * 4000) * 4.0);
  // Training: everything the backward pass keeps is live where the forward pass ends, so the peak is at least their
  // sum. A CNN peaks as its backward pass starts, on small tensors: its largest gradients come last, when most of
  // what they needed is freed, so what is live beside the saved tensors is less than two of its largest tensors.
  models::NetworkOptions o;
  o.batch = 8;
  ir::Graph cnn = models::build_network(models::network("resnet50"), o);
  double kept = 0, largest = 0;
  for (const SavedTensor& t : saved_tensors(cnn)) kept += t.bytes;
  for (const ir::Node& n : cnn.nodes())
    if (n.op != ir::OpKind::param) largest = std::max(largest, static_cast<double>(ir::numel(n.shape)) * 4.0);
  EXPECT_GE(peak_live_bytes(cnn), kept);
  EXPECT_LT(peak_live_bytes(cnn) - kept, 2 * largest);
}

TEST(Predictor, RooflineTermsForOneGemmAndOneStream) {
  ir::Graph g;
  const auto a = g.input("a", {8192, 8192}, ir::DType::bf16);
  const auto b = g.param("b", {8192, 8192}, ir::DType::bf16);
  g.matmul("c", a, b);
  const auto& gpu = cat().find("h100-sxm");
  const PrecisionPlan plan = plan_precision(Precision::bf16, gpu);
  const EfficiencyParams p = efficiency_for(gpu, plan);
  const StepPrediction s = predict_graph(g, gpu, plan, p);
  ASSERT_EQ(s.ops.size(), 1u);
  const double eff = gemm_efficiency(gemm_dims(g, g.node(2)), p.gemm_max, p, gpu.sm_count);
  // The peak at the clock the power limit sustains (perf/clocks.hpp).
  const double clock = sustained_clock_fraction(gpu, active_constants().clock_headroom);
  EXPECT_LT(clock, 1.0);
  EXPECT_NEAR(s.step_s, 2.0 * 8192.0 * 8192 * 8192 / (989.4e12 * clock * eff) + p.launch_s, 1e-9);
  EXPECT_EQ(s.ops[0].bound, Bound::compute);
  ir::Graph m;
  const auto x = m.input("x", {1 << 26}, ir::DType::bf16);
  m.activation("y", x, ir::Act::relu);
  const StepPrediction t = predict_graph(m, gpu, plan, p);
  const double bytes = 2.0 * (1 << 26) * 2;
  EXPECT_NEAR(t.step_s, bytes / (3350e9 * memory_efficiency(bytes, p)) + p.launch_s, 1e-12);
  EXPECT_EQ(t.ops[0].bound, Bound::memory);
}

// Issue 33 item 5: a kernel of a few bytes is latency-bound, not memory-bound: the seed model's step moves
// 5.4 MB on a 1 TB/s card (about 5 us of traffic), and its ~100 us of memory time is the ramp and tail of
// kernels smaller than mem_half_bytes. The step is the sum of the four terms.
TEST(Predictor, SmallKernelsAreLatencyBoundNotMemoryBound) {
  const auto& gpu = cat().find("h100-sxm");
  const PrecisionPlan plan = plan_precision(Precision::bf16, gpu);
  const EfficiencyParams p = efficiency_for(gpu, plan);
  ir::Graph m;
  const auto x = m.input("x", {1 << 10}, ir::DType::bf16);  // 2 KiB read, 2 KiB written
  m.activation("y", x, ir::Act::relu);
  const StepPrediction t = predict_graph(m, gpu, plan, p);
  EXPECT_EQ(t.ops[0].bound, Bound::latency);
  EXPECT_EQ(bound_name(t.ops[0].bound), "latency");
  EXPECT_GT(t.latency_s, 0);
  EXPECT_EQ(t.memory_s, 0);
  // At mem_half_bytes the ramp equals the traffic: from there up the kernel streams (memory-bound).
  ir::Graph big;
  const auto z = big.input("z", {static_cast<std::int64_t>(p.mem_half_bytes)}, ir::DType::bf16);
  big.activation("y", z, ir::Act::relu);
  EXPECT_EQ(predict_graph(big, gpu, plan, p).ops[0].bound, Bound::memory);
  PredictRequest req;
  req.workload = "seed-mlp";
  req.gpu = "rtx-4090";
  const auto seed = predict(cat(), req);
  const auto& d = seed.detail;
  // Every kernel but the optimizer's step over all 101 k parameters and their moments (about 2.8 MB, past the 4090's
  // 2 MB ramp: kernels.stream_ramp at 1,008 GB/s) is too small to stream.
  EXPECT_GT(d.latency_s, 4 * d.memory_s);
  EXPECT_NEAR(d.step_s, d.compute_s + d.memory_s + d.latency_s + d.launch_s, 1e-12);
}

// Issue 34: gradient accumulation on the plain data-parallel path (BERT pre-training's 64 micro-batches per LAMB
// step): k forward-backward passes, the optimizer once, the gradients reduced once, in the last backward.
TEST(Predictor, GradientAccumulationRunsTheOptimizerAndTheReductionOncePerGlobalBatch) {
  PredictRequest r;
  r.workload = "bert-large";
  r.gpu = "a100-80gb-sxm";
  r.batch = 128;
  r.precision = Precision::tf32;
  r.options = {{"seq_len", "128"}};
  const Prediction one = predict(cat(), r);
  r.options["global_batch"] = "8192";
  const Prediction acc = predict(cat(), r);
  EXPECT_EQ(acc.micro_batches, 64);
  EXPECT_EQ(acc.global_batch, 8192);
  ASSERT_GT(acc.optimizer_s, 0);
  EXPECT_NEAR(acc.step_s, 64 * (one.step_s - acc.optimizer_s) + acc.optimizer_s, 1e-9 * acc.step_s);
  EXPECT_NEAR(acc.throughput, 8192 / acc.step_s, 1e-9 * acc.throughput);
  EXPECT_GT(acc.throughput, one.throughput);  // the optimizer amortized
  // Over 8 GPUs the reduction is paid once per 64 micro-batches: scaling nearer linear than without accumulation.
  r.gpus = 8;
  r.options["global_batch"] = "65536";
  const Prediction acc8 = predict(cat(), r);
  r.options.erase("global_batch");
  const Prediction plain8 = predict(cat(), r);
  EXPECT_EQ(acc8.micro_batches, 64);
  EXPECT_GT(acc8.single_gpu_step_s / acc8.step_s, plain8.single_gpu_step_s / plain8.step_s);
  // A global batch that is no whole number of micro-batches, and accumulation without training, are refused.
  r.options["global_batch"] = "1000";
  EXPECT_NE(gpuvs::test::input_error_of([&] { predict(cat(), r); }).find("global_batch 1000 is not a whole number of micro-batches of batch 128 x 8 GPU(s)"),
            std::string::npos);
  r.gpus = 1;
  r.training = false;
  r.options["global_batch"] = "256";
  EXPECT_NE(gpuvs::test::input_error_of([&] { predict(cat(), r); }).find("global_batch applies to training"), std::string::npos);
}

// Issue 34 item 6: encoder pre-training on many nodes (NVIDIA's BERT on 32 DGX A100s): data parallel over the
// network, which a ring across nodes crosses at its share per GPU; model splits stay decoders'.
TEST(Predictor, EncodersTrainDataParallelPastOneServerOverTheNetwork) {
  PredictRequest r;
  r.workload = "bert-large";
  r.gpu = "a100-80gb-sxm";
  r.batch = 32;
  r.precision = Precision::amp_fp16;
  r.options = {{"seq_len", "512"}, {"global_batch", "32768"}};
  r.gpus = 8;
  const Prediction node = predict(cat(), r);
  r.gpus = 256;
  const Prediction pod = predict(cat(), r);
  EXPECT_EQ(pod.micro_batches, 4);  // 32768 / (32 x 256)
  EXPECT_EQ(pod.network, "ib-hdr-8x200");
  EXPECT_EQ(pod.link.kind, "network");
  EXPECT_LT(pod.link.bus_gbs, node.link.bus_gbs);  // 25 GB/s of InfiniBand per GPU against NVLink 3
  EXPECT_GT(pod.comm_s, 0);
  EXPECT_LE(pod.throughput, node.throughput);
  r.options["network"] = "eth-100";
  EXPECT_LT(predict(cat(), r).throughput, pod.throughput);
  r.options["tp"] = "2";
  EXPECT_NE(gpuvs::test::input_error_of([&] { predict(cat(), r); }).find("tp, pp, cp and vp are modelled for decoder training only"),
            std::string::npos);
}

// Issue 33: a served decoder's prompt and generation fit its positions. GPT-2's default prompt (its 1024 positions)
// leaves room for the 128 generated tokens and says so; a prompt named past them is refused.
TEST(Predictor, AServedPromptLeavesTheGenerationRoomInTheModelsPositions) {
  PredictRequest r;
  r.workload = "gpt2-124m";
  r.gpu = "h100-sxm";
  r.training = false;
  const Prediction p = predict(cat(), r);
  EXPECT_EQ(p.prompt_len + p.gen_len, 1024);
  EXPECT_NE(gpuvs::strings::join(assumed(r, p), "; ").find("prompt 896 tokens (the model's positions less the generated tokens)"), std::string::npos);
  r.options = {{"seq_len", "1000"}};
  EXPECT_NE(gpuvs::test::input_error_of([&] { predict(cat(), r); }).find("a request of 1128 tokens (seq_len 1000 + gen_len 128) is past gpt2-124m's 1024 positions"),
            std::string::npos);
}

TEST(Predictor, FasterCardsPredictFaster) {
  PredictRequest r;
  r.workload = "bert-large";
  r.precision = Precision::amp_fp16;
  r.batch = 16;
  auto at = [&](const char* gpu) {
    r.gpu = gpu;
    return predict(cat(), r).throughput;
  };
  EXPECT_GT(at("h100-sxm"), at("a100-80gb-sxm"));
  EXPECT_GT(at("a100-80gb-sxm"), at("v100-sxm2-16gb"));
  EXPECT_GT(at("rtx-4090"), at("rtx-3090"));
}

TEST(Predict, OptionsAndBadInput) {
  EXPECT_EQ(parse_options("seq_len=128; flash_attention=0").at("seq_len"), "128");
  EXPECT_THROW(parse_options("seq_len"), InputError);
  EXPECT_THROW(parse_options("recompute_everything=1"), InputError);
  PredictRequest r;
  r.workload = "bert-base";
  r.gpu = "h100";
  EXPECT_THROW(predict(cat(), r), InputError);  // ambiguous GPU
  r.gpu = "h100-sxm";
  r.options = {{"seq_len", "-3"}};
  EXPECT_THROW(predict(cat(), r), InputError);
  r.options = {{"sharding", "zero1"}};
  EXPECT_THROW(predict(cat(), r), InputError);  // sharding needs several GPUs
}

TEST(Validation, LambdaDataWithinTheTargets) {
  const std::string path = std::string(GPUVS_SOURCE_DIR) + "/data/validation/lambda-pytorch-2023.csv";
  const auto rows = read_published(files::read_all(path, "data"), path);
  ASSERT_EQ(rows.size(), 72u);
  const ValidationReport rep = validate(cat(), rows);
  for (const auto& v : rep.rows) EXPECT_EQ(v.status, "ok") << v.row.id << ": " << v.reason;
  EXPECT_LE(rep.median_ape, 0.15);
  EXPECT_LE(rep.ratio_median_ape, 0.10);
  EXPECT_GT(rep.ratios.size(), 300u);
}

TEST(Validation, CrossGpuRatiosPairOneConfigurationAtOneBatchWhereACardSweepsIt) {
  // Lambda's tables give each card one row per configuration, at the largest batch that fits: those pair across
  // batches. A batch sweep (TensorRT's README: batches 1 to 128 on each card) pairs only at one batch: the A100 at
  // batch 1 against the T4 at batch 8 is not "how much faster is one than the other".
  const std::string head = "id,gpu,n_gpus,workload,mode,precision,batch_per_gpu,options,value,unit,per,source\n";
  const auto rows = read_published(head + "a1,a100-40gb-sxm,1,bert-base,infer,fp16,1,framework=tensorrt,1500,sequences/s,gpu,s\n"
                                          "a8,a100-40gb-sxm,1,bert-base,infer,fp16,8,framework=tensorrt,5800,sequences/s,gpu,s\n"
                                          "t1,t4,1,bert-base,infer,fp16,1,framework=tensorrt,510,sequences/s,gpu,s\n"
                                          "t8,t4,1,bert-base,infer,fp16,8,framework=tensorrt,880,sequences/s,gpu,s\n"
                                          "l1,a100-80gb-sxm,1,bert-base,train,amp-fp16,320,,443,sequences/s,gpu,s\n"
                                          "l2,a10,1,bert-base,train,amp-fp16,80,,135,sequences/s,gpu,s\n"
                                          "x1,t4,1,bert-base,infer,fp16,8,framework=tensorrt,880,sequences/s,gpu,other\n"
                                          "h4,h100-sxm,1,bert-base,infer,fp16,4,framework=tensorrt,6000,sequences/s,gpu,s\n",
                                   "x.csv");
  const ValidationReport rep = validate(cat(), rows);
  std::set<std::string> pairs;
  for (const auto& r : rep.ratios) pairs.insert(r.a + "/" + r.b);
  // Another source never pairs; nor does a card's one row at a batch no sweeping card ran (h4).
  EXPECT_EQ(pairs, (std::set<std::string>{"a1/t1", "a8/t8", "l1/l2"}));
}

TEST(Validation, ParserReportsLinesAndKeepsUnpredictableRows) {
  EXPECT_THROW(read_published("id,gpu\n", "x.csv"), InputError);  // missing columns
  const std::string head = "id,gpu,n_gpus,workload,mode,precision,batch_per_gpu,options,value,unit,source,extra\n";
  try {
    read_published(head + "a,h100-sxm,1,resnet50,train,tf32,abc,,1,images/s,s,x\n", "x.csv");
    FAIL();
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("x.csv:2: batch_per_gpu 'abc'"), std::string::npos) << e.what();
  }
  const auto rows = read_published(head + "a,h100-sxm,16,resnet50,train,tf32,64,tp=2,1,images/s,\"s, with comma\",x\n"
                                          "b,h100-sxm,1,resnet9,train,tf32,64,,,images/s,s,x\n"
                                          "c,a100-80gb-sxm,1,resnet50,train,amp-fp8,64,,,images/s,s,x\n",
                                   "x.csv");
  ASSERT_EQ(rows.size(), 3u);
  EXPECT_EQ(rows[0].source, "s, with comma");
  const ValidationReport rep = validate(cat(), rows);
  ASSERT_EQ(rep.rows.size(), 3u);
  for (const auto& v : rep.rows) EXPECT_EQ(v.status, "unsupported") << v.row.id;
  EXPECT_NE(rep.rows[0].reason.find("decoder training only"), std::string::npos) << rep.rows[0].reason;
  EXPECT_NE(rep.rows[1].reason.find("unknown workload"), std::string::npos);
  EXPECT_NE(rep.rows[2].reason.find("no FP8"), std::string::npos);
}

TEST(Validation, SchemaTwoRowsInTheirOwnUnitAndPerWithEveryOptionAccountedFor) {
  const std::string head = "id,gpu,n_gpus,workload,mode,precision,batch_per_gpu,options,value,unit,per,source\n";
  // per must be gpu or system; n_gpus and batch whole and in range; an empty batch is the tool's choice.
  for (const std::string bad : {"a,h100-sxm,1,resnet50,train,tf32,64,,1,images/s,node,s\n",
                                "a,h100-sxm,0,resnet50,train,tf32,64,,1,images/s,gpu,s\n",
                                "a,h100-sxm,1,resnet50,train,tf32,-4,,1,images/s,gpu,s\n",
                                "a,h100-sxm,1.5,resnet50,train,tf32,64,,1,images/s,gpu,s\n"}) {
    try {
      read_published(head + bad, "d/x.csv");
      ADD_FAILURE() << bad;
    } catch (const InputError& e) {
      EXPECT_NE(std::string(e.what()).find("d/x.csv:2:"), std::string::npos) << e.what();
    }
  }
  const auto rows = read_published(head +
                                       "one,a100-80gb-sxm,1,resnet50,train,tf32,256,framework=pytorch;tool=x,938,images/s,gpu,s\n"
                                       "sys,a100-80gb-sxm,8,resnet50,train,tf32,256,framework=pytorch,7248,images/s,system,s\n"
                                       "auto,a100-80gb-sxm,1,resnet50,train,tf32,,,938,images/s,,s\n"
                                       "tf,a100-80gb-sxm,1,resnet50,train,tf32,256,framework=tensorflow,938,images/s,gpu,s\n"
                                       "nhwc,a100-80gb-sxm,1,resnet50,train,amp-fp16,256,memory_format=nhwc,2470,images/s,gpu,s\n"
                                       "acc,a100-80gb-sxm,8,resnet50,train,tf32,32,global_batch=1024,1,images/s,gpu,s\n"
                                       "dp,a100-80gb-sxm,8,resnet50,train,tf32,32,global_batch=256;tp=1;pp=1,1,images/s,gpu,s\n"
                                       "odd,a100-80gb-sxm,1,resnet50,train,tf32,32,warp_speed=9,1,images/s,gpu,s\n"
                                       "unit,a100-80gb-sxm,1,resnet50,train,tf32,32,,1,tokens/s,gpu,s\n"
                                       "mic,h100-sxm,1,gemm-bf16,micro,bf16,,tool=mamf-finder,794.5,TFLOP/s,gpu,s\n",
                                   "dir/src.csv");
  EXPECT_EQ(rows[0].file, "src");
  EXPECT_EQ(rows[2].batch, 0);
  EXPECT_EQ(rows[2].per, "gpu");
  const ValidationReport rep = validate(cat(), rows);
  auto row = [&](const std::string& id) -> const ValidatedRow& {
    for (const auto& v : rep.rows)
      if (v.row.id == id) return v;
    throw std::runtime_error(id);
  };
  EXPECT_EQ(row("one").status, "ok") << row("one").reason;  // documentary keys change nothing
  // A system figure is predicted for the system: 8 x the per-GPU prediction at 8 GPUs.
  ASSERT_EQ(row("sys").status, "ok") << row("sys").reason;
  PredictRequest r8;
  r8.workload = "resnet50";
  r8.gpu = "a100-80gb-sxm";
  r8.gpus = 8;
  r8.batch = 256;
  r8.precision = Precision::tf32;
  EXPECT_NEAR(row("sys").predicted, 8 * predict(cat(), r8).throughput, 1e-6);
  EXPECT_TRUE(row("auto").batch_chosen);
  EXPECT_GT(row("auto").batch, 0);
  EXPECT_EQ(row("tf").status, "ok") << row("tf").reason;  // a framework with a profile is priced by it
  EXPECT_EQ(row("nhwc").status, "ok") << row("nhwc").reason;  // the layout is priced
  EXPECT_EQ(row("acc").status, "ok") << row("acc").reason;  // 4 micro-batches of 32 x 8 GPUs per optimizer step
  EXPECT_EQ(row("dp").status, "ok") << row("dp").reason;  // global batch = batch x GPUs, tp = pp = 1
  EXPECT_NE(row("odd").reason.find("warp_speed=9"), std::string::npos);
  EXPECT_NE(row("unit").reason.find("row unit tokens/s"), std::string::npos);
  EXPECT_EQ(row("mic").status, "ok") << row("mic").reason;  // priced by the achievable peaks
  ASSERT_EQ(rep.sources.size(), 1u);
  EXPECT_EQ(rep.sources[0].rows, 10);
  EXPECT_EQ(rep.sources[0].scored, 8);  // one, sys, auto, tf, nhwc, acc, dp, mic: priced and measured
}

TEST(Collective, LinksAndRingFormulas) {
  const Link sxm = link_for(cat().find("a100-80gb-sxm"), 8);
  EXPECT_EQ(sxm.kind, "nvlink");
  EXPECT_DOUBLE_EQ(sxm.bus_gbs, 600.0 / 2 * 0.8);
  EXPECT_EQ(link_for(cat().find("a100-80gb-pcie"), 2).kind, "nvlink");  // bridge pair
  EXPECT_EQ(link_for(cat().find("a100-80gb-pcie"), 4).kind, "pcie");    // beyond the bridge
  EXPECT_EQ(link_for(cat().find("rtx-4090"), 2).kind, "pcie-via-host"); // GeForce 40: no P2P
  EXPECT_EQ(link_for(cat().find("rtx-3090"), 2).kind, "nvlink");
  EXPECT_EQ(link_for(cat().find("rtx-3090"), 4).kind, "pcie-via-host");
  EXPECT_DOUBLE_EQ(pcie_x16_gbs(4), 31.5);
  Link l;
  l.bus_gbs = 100;
  l.latency_s = 1e-5;
  // 2 (n-1)/n x bytes / busbw + 2 (n-1) latencies (nccl-tests' busbw definition inverted).
  EXPECT_NEAR(allreduce_seconds(1e9, 4, l), 1.5 * 1e9 / 100e9 + 6e-5, 1e-12);
  EXPECT_NEAR(allgather_seconds(1e9, 4, l), 0.75 * 1e9 / 100e9 + 3e-5, 1e-12);
  EXPECT_DOUBLE_EQ(allreduce_seconds(1e9, 1, l), 0.0);
}

// Issue 34 item 5: collectives as NCCL runs them inside a node. One latency per ring step priced a 1 MiB
// all-reduce on 8 H100s at a third of what nccl-tests measures; NCCL picks LL for small messages (a tenth of the
// latency, a quarter of the bandwidth), LL128 in the middle, Simple for large ones, by its own cost model.
TEST(Collective, NcclPicksItsProtocolBySize) {
  const Link nv = without_nvls(link_for(cat().find("h100-sxm"), 8));  // rings only: NVLink SHARP is the next test's
  EXPECT_EQ(collective_protocol(64 * 1024, 8, nv), "LL");
  EXPECT_EQ(collective_protocol(16 * 1048576.0, 8, nv), "LL128");
  EXPECT_EQ(collective_protocol(1073741824.0, 8, nv), "Simple");
  // nccl-tests' busbw rises with size towards the link's 80%, and small messages are latency: a few microseconds.
  double last = 0;
  for (double bytes = 1024; bytes <= 17179869184.0; bytes *= 4) {
    const double busbw = bytes * 2 * 7 / 8 / allreduce_seconds(bytes, 8, nv) / 1e9;
    EXPECT_GT(busbw, last) << bytes;
    last = busbw;
  }
  EXPECT_NEAR(last, nv.bus_gbs, 0.01 * nv.bus_gbs);
  EXPECT_LT(allreduce_seconds(8, 8, nv), 20e-6);
  // LL128 runs over NVLink only; over PCIe peer-to-peer the middle sizes go Simple.
  const Link pcie = link_for(cat().find("l40s"), 4);
  ASSERT_EQ(pcie.kind, "pcie");
  EXPECT_EQ(collective_protocol(16 * 1048576.0, 4, pcie), "Simple");
  EXPECT_EQ(collective_protocol(4096, 4, pcie), "LL");
  // Host-staged PCIe and networks keep one latency per step.
  EXPECT_EQ(collective_protocol(4096, 2, link_for(cat().find("rtx-4090"), 2)), "ring");
}

// Issue 34 item 5: NVLink SHARP. On an NVSwitch that reduces and multicasts (HGX H100/H200, B200), NCCL 2.17+
// all-reduces through the switch: (1 + 1/n) x bytes each way per GPU instead of a ring's 2 (n-1)/n, at NCCL's
// share of the bus. 8 x H100: rings 360 GB/s busbw, NVLS about 476 (published: 370 and 480, NVIDIA/nccl-tests
// issue 212); none on A100 (no SHARP in its NVSwitch), on bridges, nor on two GPUs (1.5 x bytes against 1).
TEST(Collective, NvlinkSharpOnlyWhereTheSwitchAndNcclHaveIt) {
  const Link h100 = link_for(cat().find("h100-sxm"), 8);
  EXPECT_DOUBLE_EQ(h100.nvls_efficiency, 0.85);
  EXPECT_DOUBLE_EQ(link_for(cat().find("b200"), 8).nvls_efficiency, 0.74);
  EXPECT_DOUBLE_EQ(link_for(cat().find("h200-sxm"), 8).nvls_efficiency, 0.85);
  EXPECT_DOUBLE_EQ(link_for(cat().find("a100-80gb-sxm"), 8).nvls_efficiency, 0.0);
  EXPECT_DOUBLE_EQ(link_for(cat().find("h100-pcie"), 2).nvls_efficiency, 0.0);  // NVLink bridge: no switch
  const double big = 17179869184.0;
  const auto busbw = [&](const Link& l, int n) { return big * 2 * (n - 1) / n / allreduce_seconds(big, n, l) / 1e9; };
  EXPECT_EQ(collective_protocol(big, 8, h100), "NVLS");
  EXPECT_NEAR(busbw(h100, 8), h100.bus_gbs * 0.85 * (2.0 * 7 / 8) / (1 + 1.0 / 8), 0.5);
  EXPECT_NEAR(busbw(h100, 8), 476.0, 2.0);
  EXPECT_GT(busbw(h100, 8), 1.3 * busbw(without_nvls(h100), 8));
  EXPECT_EQ(collective_protocol(big, 8, without_nvls(h100)), "Simple");
  EXPECT_EQ(collective_protocol(big, 8, link_for(cat().find("a100-80gb-sxm"), 8)), "Simple");
  EXPECT_EQ(collective_protocol(big, 2, link_for(cat().find("h100-sxm"), 2)), "Simple");  // two GPUs: the ring moves less
  // All-gather and reduce-scatter keep their rings (the switch's reduction halves only the all-reduce's traffic).
  EXPECT_DOUBLE_EQ(allgather_seconds(big, 8, h100), allgather_seconds(big, 8, without_nvls(h100)));
  // Small messages stay on LL: NVLS's one call costs 25 us.
  EXPECT_EQ(collective_protocol(64 * 1024, 8, h100), "LL");
  // The option: absent or 1, NCCL's default; 0, a run without it; anything else refused.
  EXPECT_TRUE(nvls_option({}));
  EXPECT_TRUE(nvls_option({{"nvls", "1"}}));
  EXPECT_FALSE(nvls_option({{"nvls", "0"}}));
  EXPECT_THROW(nvls_option({{"nvls", "yes"}}), InputError);
}

// Issue 34 item 5: topology per group size. Eight MI300X are a full Infinity Fabric mesh, one 64 GB/s-per-direction
// link per pair (ROCm's RCCL usage tips: fewer than eight GPUs reach a fraction of the bandwidth): two GPUs ring over
// one link, eight over seven. An NVSwitch gives every group the whole NVLink bandwidth.
TEST(Collective, AFullMeshGivesAGroupOneLinkPerPeer) {
  const catalog::Gpu& mi300x = cat().find("mi300x");
  ASSERT_EQ(mi300x.nvlink_mesh_links, 7);
  const double per_link = 896.0 / 2 / 7 * system_facts().nvlink_busbw;
  EXPECT_NEAR(link_for(mi300x, 2).bus_gbs, per_link, 1e-9);
  EXPECT_NEAR(link_for(mi300x, 4).bus_gbs, 3 * per_link, 1e-9);
  EXPECT_NEAR(link_for(mi300x, 8).bus_gbs, 7 * per_link, 1e-9);
  EXPECT_NE(link_for(mi300x, 2).description.find("1 of its 7 links"), std::string::npos) << link_for(mi300x, 2).description;
  const catalog::Gpu& h100 = cat().find("h100-sxm");
  EXPECT_DOUBLE_EQ(link_for(h100, 2).bus_gbs, link_for(h100, 8).bus_gbs);
  // So a 2-GPU all-reduce of 1 GB takes about 7x longer than the whole mesh's bandwidth would give it.
  EXPECT_GT(allreduce_seconds(1e9, 2, link_for(mi300x, 2)), 3.0 * allreduce_seconds(1e9, 2, link_for(mi300x, 8)));
}

// The software decides too: 8 x H100 data parallel all-reduces faster by default, as rings with nvls=0, and the
// 2021 Megatron-LM profile (NCCL 2.8, before NVLS) runs rings; the prediction says what it assumed.
TEST(Predict, NvlinkSharpFollowsTheSoftware) {
  PredictRequest r;
  r.workload = "bert-large";
  r.precision = Precision::amp_fp16;
  r.batch = 16;
  r.gpus = 8;
  r.gpu = "h100-sxm";
  const Prediction on = predict(cat(), r);
  EXPECT_GT(on.link.nvls_efficiency, 0.0);
  const auto says = [](const PredictRequest& q, const Prediction& p) {
    for (const auto& a : assumed(q, p))
      if (a.find("NVLink SHARP") != std::string::npos) return true;
    return false;
  };
  EXPECT_TRUE(says(r, on));
  r.options["nvls"] = "0";
  const Prediction off = predict(cat(), r);
  EXPECT_EQ(off.link.nvls_efficiency, 0.0);
  EXPECT_GT(off.comm_s, 1.3 * on.comm_s);
  EXPECT_FALSE(says(r, off));
  r.options["nvls"] = "2";
  EXPECT_THROW(predict(cat(), r), InputError);
  r.options["nvls"] = "0";
  r.gpus = 1;  // one GPU all-reduces nothing: the option is refused, not ignored
  EXPECT_THROW(predict(cat(), r), InputError);
  r.gpus = 8;
  r.options = {{"framework", "megatron"}};
  const Prediction megatron = predict(cat(), r);
  EXPECT_NEAR(megatron.comm_s, off.comm_s, 1e-12);
  EXPECT_FALSE(says(r, megatron));  // the profile's rings are what it assumed, not NVLS
  r.gpu = "a100-80gb-sxm";
  r.options.clear();
  EXPECT_EQ(predict(cat(), r).link.nvls_efficiency, 0.0);
}

TEST(Predict, DataParallelScalingAndSharding) {
  PredictRequest r;
  r.workload = "bert-large";
  r.precision = Precision::amp_fp16;
  r.batch = 16;
  r.gpus = 4;
  r.gpu = "a100-80gb-sxm";
  const Prediction nv = predict(cat(), r);
  EXPECT_NEAR(nv.comm_bytes, 2.0 * 4 * static_cast<double>(nv.params), 1.0);  // fp32 gradients, all-reduced
  EXPECT_GT(nv.single_gpu_step_s / nv.step_s, 0.97);                         // NVLink hides it
  r.gpu = "rtx-4090";
  const Prediction pc = predict(cat(), r);
  EXPECT_GT(pc.comm_s, 10 * nv.comm_s);  // through host memory over PCIe 4
  EXPECT_LT(pc.single_gpu_step_s / pc.step_s, nv.single_gpu_step_s / nv.step_s);
  // ZeRO/FSDP: optimizer (zero1), + gradients (zero2), + weights (full) split over the GPUs.
  r.gpu = "h100-sxm";
  r.gpus = 8;
  r.workload = "llama-7b";
  r.batch = 1;
  r.precision = Precision::amp_bf16;
  r.options = {{"seq_len", "1024"}};
  const Prediction none = predict(cat(), r);
  r.options["sharding"] = "full";
  const Prediction full = predict(cat(), r);
  EXPECT_NEAR(full.memory.optimizer_bytes * 8, none.memory.optimizer_bytes, 1.0);
  EXPECT_NEAR(full.memory.weights_bytes * 8, none.memory.weights_bytes, 1.0);
  EXPECT_LT(full.memory.peak_bytes, none.memory.peak_bytes - 80e9);
  EXPECT_TRUE(full.memory.fits);
  EXPECT_FALSE(none.memory.fits);
  // A sharded optimizer updates an eighth of the states on each rank (ZeRO-1): its traffic shrinks 8 ways, its kernels'
  // launches and ramps do not; the updated weights are then all-gathered where nothing hides them (the same bytes as
  // the all-reduce's second half, 16-bit weights against fp32 gradients).
  r.options["sharding"] = "zero1";
  const Prediction zero1 = predict(cat(), r);
  EXPECT_NEAR(zero1.comm_bytes, (4.0 + 2.0) * static_cast<double>(zero1.params), 1.0);
  EXPECT_GE(zero1.comm_exposed_s, allgather_seconds(2.0 * static_cast<double>(zero1.params), 8, zero1.link));
  // The whole update, from what sharding saved: the rank's share costs more than an eighth of it, far less than a quarter.
  const double update = none.step_s - zero1.step_s + zero1.optimizer_s + (zero1.comm_exposed_s - none.comm_exposed_s);
  EXPECT_GT(zero1.optimizer_s, update / 8);
  EXPECT_LT(zero1.optimizer_s, update / 4);
  // FSDP hides its exchange behind forward and backward, never behind the update it shrank: a step is never shorter
  // than its own exchange (BERT-large over a 4090's host-staged PCIe was 0.1805 s against 0.1866 s of exchange).
  for (const auto& [workload, gpu] : {std::pair{"bert-large", "rtx-4090"}, std::pair{"vgg16", "v100-sxm2-32gb"}, std::pair{"llama2-7b", "l40s"}}) {
    PredictRequest f;
    f.workload = workload;
    f.gpu = gpu;
    f.gpus = 8;
    f.batch = 1;
    f.options = {{"sharding", "full"}};
    const Prediction fsdp = predict(cat(), f);
    EXPECT_GE(fsdp.step_s, fsdp.comm_s) << workload;
  }
  // A small model's update is launches and ramps: sharding it over more cards saves next to nothing, and never makes a
  // card faster than alone (seed-mlp on 4 A100s, ZeRO-2, was priced at 102% of one card each and advise ranked it first).
  for (const char* card : {"a100-80gb-sxm", "rtx-4090"}) {
    PredictRequest small;
    small.workload = "seed-mlp";
    small.gpu = card;
    const Prediction alone = predict(cat(), small);
    small.gpus = 4;
    const Prediction ddp = predict(cat(), small);
    EXPECT_LE(ddp.comm_exposed_s, ddp.comm_s * (1 + 1e-12)) << card;
    for (const char* sharding : {"zero1", "zero2", "full"}) {
      small.options["sharding"] = sharding;
      const Prediction sharded = predict(cat(), small);
      EXPECT_LT(sharded.throughput, alone.throughput) << card << " " << sharding;  // per GPU
      // Never more than the bytes saved: the 16-bit weights gathered instead of the fp32 gradients' second half.
      EXPECT_LT(sharded.throughput, 1.10 * ddp.throughput) << card << " " << sharding;
      EXPECT_GT(sharded.optimizer_s, 0.9 * alone.optimizer_s) << card << " " << sharding;
      EXPECT_LE(sharded.comm_exposed_s, sharded.comm_s * (1 + 1e-12)) << card << " " << sharding;
    }
  }
  r.options["sharding"] = "zero9";
  EXPECT_THROW(predict(cat(), r), InputError);
  r.options.erase("sharding");
  r.gpus = 64;
  const Prediction nodes = predict(cat(), r);  // a decoder past one server: a data-parallel plan over the network
  EXPECT_TRUE(nodes.parallel);
  EXPECT_EQ(nodes.dp, 64);
  EXPECT_NE(nodes.dp_link.find("InfiniBand"), std::string::npos) << nodes.dp_link;
  r.options["sharding"] = "zero1";  // the planner's distributed optimizer: each of 64 ranks updates 1/64
  const Prediction nodes_zero1 = predict(cat(), r);
  EXPECT_NEAR(nodes.step_s - nodes_zero1.step_s, (nodes.optimizer_s - nodes_zero1.optimizer_s) - (nodes_zero1.dp_exposed_s - nodes.dp_exposed_s),
              1e-6 * nodes.step_s);
  EXPECT_GT(nodes_zero1.optimizer_s, nodes.optimizer_s / 64);  // by the same rule as on one server
  EXPECT_LT(nodes_zero1.optimizer_s, nodes.optimizer_s / 8);
  // The updated weights' gather after the update is exposed unless it waits for the next forward (Megatron's
  // overlap_param_gather, the nemo profile's default), as on one server. Whatever the windows, what is exposed is never
  // more than the exchange, never less than its last bucket, and waiting for the forward never costs time.
  const DataParallelExchange x = data_parallel_exchange("zero1", false, 4e9, 2e9, 1.0, 1.0, 25e6, 64, nodes_zero1.link);
  EXPECT_NEAR(x.exposed_s, allgather_seconds(25e6, 64, nodes_zero1.link) + allgather_seconds(2e9, 64, nodes_zero1.link), 1e-12);
  EXPECT_NEAR(x.bytes, 6e9, 1.0);
  for (const char* sharding : {"none", "zero1", "zero2", "full"})
    for (const double window : {0.0, 1e-6, 1e-4, 1e-2, 1.0})
      for (const double bytes : {4e5, 4e8, 4e10}) {
        const DataParallelExchange plain = data_parallel_exchange(sharding, false, bytes, bytes / 2, window, window, 25e6, 4, nodes_zero1.link);
        const DataParallelExchange waited = data_parallel_exchange(sharding, true, bytes, bytes / 2, window, window, 25e6, 4, nodes_zero1.link);
        EXPECT_LE(plain.exposed_s, plain.seconds * (1 + 1e-12)) << sharding << " " << window << " " << bytes;
        EXPECT_LE(waited.exposed_s, plain.exposed_s * (1 + 1e-12)) << sharding << " " << window << " " << bytes;
        EXPECT_GT(plain.exposed_s, 0.0);
      }
  r.options["param_gather_overlap"] = "1";
  const Prediction overlapped = predict(cat(), r);
  EXPECT_LT(overlapped.dp_exposed_s, nodes_zero1.dp_exposed_s - 0.5 * allgather_seconds(2.0 * static_cast<double>(nodes_zero1.params), 64, nodes_zero1.link));
  r.options.erase("param_gather_overlap");
  // Recompute runs in the backward pass, so it hides the exchange on a plan past one server as on one (it hid a
  // plan's gather as if it were forward, and none of its all-reduce).
  PredictRequest plan;
  plan.workload = "llama2-7b";
  plan.gpu = "h100-sxm";
  plan.gpus = 16;
  plan.batch = 1;
  plan.options = {{"network", "eth-100"}};
  const Prediction kept = predict(cat(), plan);
  plan.options["recompute"] = "full";
  const Prediction recomputed = predict(cat(), plan);
  EXPECT_GT(recomputed.recompute_s, 0.0);
  EXPECT_NEAR(kept.dp_exposed_s - recomputed.dp_exposed_s, recomputed.recompute_s, 1e-9);
  // The option says when zero1/zero2 gather; anywhere else it is refused, as nvls is.
  for (const auto& [gpus, options] : std::vector<std::pair<int, std::map<std::string, std::string>>>{
           {1, {{"param_gather_overlap", "1"}}}, {8, {{"param_gather_overlap", "1"}}}, {8, {{"param_gather_overlap", "1"}, {"sharding", "full"}}},
           {8, {{"param_gather_overlap", "7"}, {"sharding", "zero1"}}}}) {
    PredictRequest bad;
    bad.workload = "bert-large";
    bad.gpu = "h100-sxm";
    bad.gpus = gpus;
    bad.options = options;
    EXPECT_THROW(predict(cat(), bad), InputError) << gpus;
  }
  r.options.erase("sharding");
  r.workload = "bert-large";
  EXPECT_THROW(predict(cat(), r), InputError);  // multi-node plans are modelled for decoders only, said plainly
}

#include "perf/compare.hpp"

namespace {
// Cloud quotes from the catalog and a fixed owned rate: compare multiplies whatever hour prices it is given
// (advise::Assumptions supplies the real ones; test_advise checks those).
const GpuHourPrices& test_prices() {
  static const GpuHourPrices p{[](const catalog::Gpu& g) { return g.cloud_usd_per_hr; },
                               [](const catalog::Gpu& g) { return g.msrp_usd ? std::optional<double>(0.25) : std::nullopt; }};
  return p;
}
}  // namespace

TEST(Compare, SeedQuestionClaimsFollowTheNumbers) {
  const Comparison c = compare(cat(), {"rtx-4090", "a100-80gb-sxm"}, "seed-mlp", Precision::tf32, 32, true, test_prices());
  ASSERT_EQ(c.entries.size(), 2u);
  EXPECT_DOUBLE_EQ(c.entries[0].ratio, 1.0);
  // On a model this small both cards spend the step launching kernels and waiting out their fill and drain (time, not
  // bytes): neither is much faster, and the A100 nowhere near its peak ratio.
  EXPECT_GT(c.entries[1].ratio, 0.8);
  EXPECT_LT(c.entries[1].ratio, 1.1);
  ASSERT_EQ(c.claims.size(), 5u);
  EXPECT_EQ(c.claims[0].verdict, "refuted");   // the A100 does not train it much faster
  EXPECT_EQ(c.claims[1].verdict, "refuted");   // the 80 GB are not needed
  EXPECT_EQ(c.claims[2].verdict, "refuted");   // GeForce FP16 peak is not what training sees
  EXPECT_EQ(c.claims[3].verdict, "refuted");   // 4090s (no P2P) do not scale like NVLinked A100s
  EXPECT_EQ(c.claims[4].verdict, "confirmed"); // ECC and MIG
  for (const auto& e : c.entries) {
    ASSERT_EQ(e.scaling.size(), 3u);
    EXPECT_GT(e.scaling[0].second, e.scaling[2].second);  // efficiency falls with more GPUs
  }
  EXPECT_GT(c.entries[1].scaling[2].second, c.entries[0].scaling[2].second);
  EXPECT_EQ(c.entries[1].precisions.size(), 4u);  // no FP8 on Ampere
  EXPECT_EQ(c.entries[0].precisions.size(), 5u);
}

TEST(Compare, LargestBatchThatFitsAndCost) {
  PredictRequest r;
  r.workload = "bert-large";
  r.gpu = "rtx-4090";
  r.precision = Precision::amp_fp16;
  const std::int64_t b = largest_batch_that_fits(cat(), r, 4096);
  ASSERT_GT(b, 1);
  r.batch = b;
  EXPECT_TRUE(predict(cat(), r).memory.fits);
  r.batch = b + 1;
  EXPECT_FALSE(predict(cat(), r).memory.fits);
  const Comparison c = compare(cat(), {"h100-sxm", "l40s"}, "resnet50", Precision::amp_bf16, 128, true, test_prices());
  ASSERT_TRUE(c.entries[0].usd_per_million.has_value());
  EXPECT_NEAR(*c.entries[0].usd_per_million, c.entries[0].hours_per_million * 4.916, 1e-9);
  EXPECT_THROW(compare(cat(), {"h100-sxm"}, "resnet50", Precision::amp_bf16, 128, true, test_prices()), InputError);
}

#include "perf/band.hpp"

namespace {
/// Every published file in data/validation, in name order (what `gpuvs validate --data data/validation` reads).
std::vector<PublishedRow> all_published_rows() {
  std::vector<std::string> paths;
  for (const auto& e : std::filesystem::directory_iterator(std::string(GPUVS_SOURCE_DIR) + "/data/validation"))
    if (e.path().extension() == ".csv") paths.push_back(e.path().string());
  std::sort(paths.begin(), paths.end());
  std::vector<PublishedRow> rows;
  for (const auto& p : paths) {
    auto more = read_published(files::read_all(p, "data"), p);
    rows.insert(rows.end(), more.begin(), more.end());
  }
  return rows;
}

}  // namespace

// Issue 34: the band is a promise about data the model never saw, so it is the spread of the leave-one-source-out
// errors (each source predicted by constants fitted without it), not of the in-sample residuals; it is wider.
TEST(Band, StoredBandIsTheHeldOutSpreadOfTheModelsErrors) {
  // If the model changes, regenerate: gpuvs validate --data data/validation --write-band data/prediction-band.toml
  const std::vector<PublishedRow> rows = all_published_rows();
  const ValidationReport held = held_out_report(leave_one_source_out(cat(), rows));
  const Band& b = model_band();
  EXPECT_NEAR(b.log_err_p10, held.log_err_p10, 1e-12);
  EXPECT_NEAR(b.log_err_p90, held.log_err_p90, 1e-12);
  EXPECT_EQ(b.rows, 137);  // priced training and inference rows; microbenchmarks stay out of the band
  EXPECT_NEAR(serving_band().log_err_p10, held.serving_log_err_p10, 1e-12);
  EXPECT_NEAR(serving_band().log_err_p90, held.serving_log_err_p90, 1e-12);
  const ValidationReport in_sample = validate(cat(), rows);
  EXPECT_GE(b.log_err_p90 - b.log_err_p10, in_sample.log_err_p90 - in_sample.log_err_p10);
  PredictRequest r;
  r.workload = "resnet50";
  r.gpu = "h100-sxm";
  const Prediction p = predict(cat(), r);
  EXPECT_LT(p.band_low, p.throughput);
  EXPECT_GT(p.band_high, p.throughput);
  EXPECT_THROW(parse_band("log_err_p10 = 1\nlog_err_p90 = 0\nrows = 3\n", "b.toml"), InputError);
}

TEST(Inference, KvCacheSizeAndDecodeIsMemoryBound) {
  // Per token in 16-bit: LLaMA-7B 2 x 32 layers x 32 heads x 128 x 2 B = 512 KiB; Llama-2-70B with 8 KV
  // heads 2 x 80 x 8 x 128 x 2 B = 320 KiB.
  EXPECT_DOUBLE_EQ(models::kv_cache_bytes(models::decoder_preset("llama-7b"), 1, 1, ir::DType::bf16), 524288);
  EXPECT_DOUBLE_EQ(models::kv_cache_bytes(models::decoder_preset("llama-70b"), 1, 1, ir::DType::bf16), 327680);
  EXPECT_DOUBLE_EQ(models::kv_cache_bytes(models::decoder_preset("llama-7b"), 4096, 8, ir::DType::bf16),
                   524288.0 * 4096 * 8);
  PredictRequest r;
  r.workload = "llama-7b";
  r.gpu = "h100-sxm";
  r.training = false;
  r.precision = Precision::bf16;
  r.batch = 1;
  r.options = {{"seq_len", "1024"}, {"gen_len", "256"}};
  const Prediction p = predict(cat(), r);
  ASSERT_TRUE(p.decode);
  EXPECT_EQ(p.unit, "tokens/s");
  EXPECT_NEAR(p.throughput, 1.0 / p.decode_step_s, 1e-9);
  EXPECT_EQ(p.framework, "vllm");  // priced by the serving model (test_serving), its default engine
  // A decode step cannot beat reading the weights once at full bandwidth.
  EXPECT_GT(p.decode_step_s, 2.0 * 6738415616.0 / 3350e9);
  EXPECT_GT(p.prefill_s, p.decode_step_s);
  EXPECT_NEAR(p.kv_cache_bytes, 524288.0 * (1024 + 256), 1.0);
  // Larger batches share the weight reads: more tokens per second.
  r.batch = 32;
  EXPECT_GT(predict(cat(), r).throughput, 10 * p.throughput);
  r.training = true;
  EXPECT_THROW(predict(cat(), r), InputError);  // gen_len is for inference
}

TEST(Predict, RecomputeTradesTimeForMemory) {
  PredictRequest r;
  r.workload = "bert-large";
  r.gpu = "a100-80gb-sxm";
  r.precision = Precision::amp_fp16;
  r.batch = 16;
  const Prediction none = predict(cat(), r);
  r.options = {{"recompute", "selective"}};
  const Prediction sel = predict(cat(), r);
  r.options = {{"recompute", "full"}};
  const Prediction full = predict(cat(), r);
  EXPECT_LT(sel.memory.activations_bytes, none.memory.activations_bytes);
  EXPECT_LT(full.memory.activations_bytes, sel.memory.activations_bytes);
  EXPECT_GT(sel.step_s, none.step_s);
  EXPECT_GT(full.step_s, sel.step_s);
  // Full recompute repeats the forward pass: about a third more work than forward + backward.
  EXPECT_NEAR(full.step_s / none.step_s, 1.33, 0.12);
  // Per block, only its input stays: layers x tokens x hidden x 2 bytes, plus one block's worth.
  EXPECT_GE(full.memory.activations_bytes, 24.0 * 16 * 384 * 1024 * 2);
  r.options = {{"recompute", "sometimes"}};
  EXPECT_THROW(predict(cat(), r), InputError);
  r.workload = "resnet50";
  r.options = {{"recompute", "full"}};
  EXPECT_THROW(predict(cat(), r), InputError);  // not modelled for CNNs: said plainly
}

TEST(Predict, LoraAndQloraMemory) {
  PredictRequest r;
  r.workload = "llama-7b";
  r.gpu = "rtx-4090";
  r.precision = Precision::amp_bf16;
  r.batch = 1;
  r.options = {{"seq_len", "512"}, {"finetune", "lora"}, {"lora_rank", "16"}};
  const Prediction lora = predict(cat(), r);
  // Adapters on q, k, v, out (4096 -> 4096, or 1024 for none here) and the SwiGLU MLP: r x (in + out) each.
  const double per_layer = 16.0 * (4 * (4096 + 4096) + 2 * (4096 + 11008) + (11008 + 4096));
  EXPECT_NEAR(static_cast<double>(lora.params), 32 * per_layer, 1.0);
  EXPECT_EQ(lora.params + lora.frozen_params, 6738415616 + static_cast<std::int64_t>(32 * per_layer));
  EXPECT_NEAR(lora.memory.weights_bytes, 2.0 * static_cast<double>(lora.frozen_params) + 2.0 * static_cast<double>(lora.params), 1.0);
  EXPECT_NEAR(lora.memory.optimizer_bytes, 12.0 * static_cast<double>(lora.params), 1.0);
  EXPECT_TRUE(lora.memory.fits);
  r.options["finetune"] = "qlora";
  const Prediction q = predict(cat(), r);
  EXPECT_NEAR(q.memory.weights_bytes - 2.0 * static_cast<double>(q.params), 0.516 * static_cast<double>(q.frozen_params), 1.0);
  EXPECT_LT(q.memory.peak_bytes, lora.memory.peak_bytes - 8e9);
  // Frozen weights need no weight gradients: the step does less matrix work than full fine-tuning.
  r.options = {{"seq_len", "512"}};
  EXPECT_LT(lora.detail.matrix_flops, predict(cat(), r).detail.matrix_flops * 0.8);
  r.workload = "resnet50";
  r.options = {{"finetune", "lora"}};
  EXPECT_THROW(predict(cat(), r), InputError);
}

TEST(Predict, LoraTargetsAndRankComeFromTheOptionsOrTheFrameworkProfile) {
  PredictRequest r;
  const auto refused = [&](const std::string& words) {
    const std::string e = test::input_error_of([&] { predict(cat(), r); });
    EXPECT_NE(e.find(words), std::string::npos) << e;
  };
  r.workload = "llama2-7b";
  r.gpu = "h100-sxm";
  r.precision = Precision::amp_bf16;
  r.batch = 1;
  r.options = {{"seq_len", "1024"}, {"finetune", "lora"}, {"lora_rank", "8"}, {"lora_targets", "qkv"}};
  const Prediction qkv = predict(cat(), r);
  EXPECT_EQ(qkv.lora_targets, models::LoraTargets::qkv);
  EXPECT_EQ(qkv.params, 32 * 8 * 3 * (4096 + 4096));  // q, k and v of 32 blocks, rank 8, nothing else trains
  r.options["lora_targets"] = "mlp";
  EXPECT_EQ(predict(cat(), r).params, 32 * 8 * (2 * (4096 + 11008) + (11008 + 4096)));
  r.options["lora_targets"] = "attention";
  EXPECT_EQ(predict(cat(), r).params, 32 * 8 * 4 * (4096 + 4096));
  // Fewer adapters, less work: the base GEMMs are the same (frozen, no weight gradients), the adapters' are not.
  r.options["lora_targets"] = "all";
  const Prediction all = predict(cat(), r);
  EXPECT_GT(all.detail.kernels, qkv.detail.kernels);
  EXPECT_GT(all.step_s, qkv.step_s);
  // NeMo 1.x adapts the fused QKV projection at rank 32 unless told otherwise; explicit options win.
  r.options = {{"seq_len", "1024"}, {"finetune", "lora"}, {"framework", "nemo"}};
  const Prediction nemo = predict(cat(), r);
  EXPECT_EQ(nemo.lora_targets, models::LoraTargets::qkv);
  EXPECT_EQ(nemo.lora_rank, 32);
  r.options["lora_rank"] = "4";
  EXPECT_EQ(predict(cat(), r).lora_rank, 4);
  // Without LoRA the profile's LoRA defaults do not apply, and naming them is refused.
  r.options = {{"seq_len", "1024"}, {"framework", "nemo"}};
  EXPECT_EQ(predict(cat(), r).lora_rank, 0);
  r.options["lora_targets"] = "qkv";
  refused("option lora_targets needs finetune=lora or finetune=qlora");
  r.options = {{"finetune", "lora"}, {"lora_targets", "everything"}};
  refused("option lora_targets=everything: expected one of all, qkv, attention, mlp");
}

TEST(Predict, PackedSamplesKeepAttentionInsideEachSample) {
  PredictRequest r;
  const auto refused = [&](const std::string& words) {
    const std::string e = test::input_error_of([&] { predict(cat(), r); });
    EXPECT_NE(e.find(words), std::string::npos) << e;
  };
  r.workload = "llama2-7b";
  r.gpu = "h100-sxm";
  r.precision = Precision::amp_bf16;
  r.batch = 1;
  r.options = {{"seq_len", "4096"}};
  const Prediction whole = predict(cat(), r);
  r.options["sample_len"] = "256";
  const Prediction packed = predict(cat(), r);
  EXPECT_EQ(packed.sample_len, 256);
  // Attention is 2 x T^2 x 2d per layer (QK^T and PV) times the causal share forward, 2.5 x that backward: 16
  // samples of 256 do about 1/16 of it. Everything else (the GEMMs on every token) is the same work.
  const double attention = 3.5 * 4.0 * 4096.0 * 4096.0 * 4096.0 * 32.0 * ((4096.0 + 1) / (2 * 4096.0));
  const double packed_attention = 3.5 * 4.0 * 4096.0 * 256.0 * 4096.0 * 32.0 * ((256.0 + 1) / (2 * 256.0));
  EXPECT_NEAR(whole.detail.matrix_flops - packed.detail.matrix_flops, attention - packed_attention, 0.02 * (attention - packed_attention));
  EXPECT_LT(packed.step_s, whole.step_s);
  // A length that does not divide the sequence is priced as the nearest exact split (220 -> 16 samples of 256).
  r.options["sample_len"] = "220";
  EXPECT_DOUBLE_EQ(predict(cat(), r).detail.matrix_flops, packed.detail.matrix_flops);
  r.options["sample_len"] = "4096";
  EXPECT_DOUBLE_EQ(predict(cat(), r).detail.matrix_flops, whole.detail.matrix_flops);
  r.options["sample_len"] = "8192";
  refused("option sample_len=8192 is longer than the sequence (seq_len 4096)");
  r.options["sample_len"] = "0";
  EXPECT_THROW(predict(cat(), r), InputError);
  r.options = {{"sample_len", "64"}};
  r.workload = "bert-base";
  refused("applies to training decoder workloads, not bert-base");
  r.workload = "llama2-7b";
  r.training = false;
  refused("not llama2-7b inference");
  r.training = true;
  r.gpus = 8;
  r.options = {{"seq_len", "8192"}, {"sample_len", "512"}, {"cp", "2"}, {"global_batch", "8"}};
  refused("option sample_len with cp > 1 is not modelled yet");
}

TEST(SequenceLengths, BatchesFromOneBinArePaddedToTheirLongestSample) {
  // Every sample 100 tokens: one bin (65..128) holds them all; a batch is padded to 104 (a multiple of 8).
  LengthHistogram h;
  h.max_len = 512;
  h.counts.assign(512, 0);
  h.counts[99] = 1000;
  auto bins = padded_bins(h, 64, 16);
  ASSERT_EQ(bins.size(), 1u);
  EXPECT_EQ(bins[0].lo, 65);
  EXPECT_EQ(bins[0].hi, 128);
  EXPECT_DOUBLE_EQ(bins[0].share, 1.0);
  EXPECT_DOUBLE_EQ(bins[0].padded_len, 104.0);
  // Two lengths in one bin, equally common: a batch of one is padded to either; a batch of two to the longer
  // unless both are short (1/4): 3/4 x 72 + 1/4 x 40.
  h.counts.assign(512, 0);
  h.counts[39] = 50;  // 40 tokens
  h.counts[69] = 50;  // 70 tokens -> 72
  bins = padded_bins(h, 512, 2);
  ASSERT_EQ(bins.size(), 1u);
  EXPECT_DOUBLE_EQ(bins[0].padded_len, 0.75 * 72 + 0.25 * 40);
  bins = padded_bins(h, 64, 2);  // bins 1..64 and 65..128, half the batches each
  ASSERT_EQ(bins.size(), 2u);
  EXPECT_DOUBLE_EQ(bins[0].share, 0.5);
  EXPECT_DOUBLE_EQ(bins[0].padded_len, 40.0);
  EXPECT_DOUBLE_EQ(bins[1].padded_len, 72.0);
  EXPECT_THROW(padded_bins(h, 0, 2), std::invalid_argument);
  // BERT's 512-token Wikipedia samples: half the positions are padding (Krell et al.: "in excess of 50%"); in LDDL's
  // bins of 64 a batch of 32 is computed at about 279 tokens, 54% of 512.
  const LengthHistogram& wiki = length_histogram("wikipedia-512");
  EXPECT_EQ(wiki.samples(), 16279552);
  EXPECT_NEAR(wiki.mean_len(), 255.8, 0.1);
  double padded = 0, share = 0;
  for (const auto& b : padded_bins(wiki, 64, 32)) {
    padded += b.share * b.padded_len;
    share += b.share;
    EXPECT_LE(b.padded_len, static_cast<double>(b.hi + 7));
    EXPECT_GE(b.padded_len, static_cast<double>(b.lo));
  }
  EXPECT_NEAR(share, 1.0, 1e-12);
  EXPECT_NEAR(padded, 279.1, 0.2);
  EXPECT_THROW(length_histogram("wikipedia"), InputError);
}

TEST(SequenceLengths, FileErrorsNameTheLineAndFuzzedFilesFailCleanly) {
  const std::string builtin = files::read_all(std::string(GPUVS_SOURCE_DIR) + "/data/sequence-lengths.toml", "data");
  EXPECT_EQ(parse_length_histograms(builtin, "l.toml").size(), length_histograms().size());
  const auto with = [&](const std::string& from, const std::string& to) { return test::replaced(builtin, from, to); };
  test::expect_refused({{with("max_len = 512\n", "max_len = 511\n"), "l.toml:8: counts holds 512 entries; max_len 511 needs one per length"},
                        {with("max_len = 512\n", "max_len = 0\n"), "l.toml:8: max_len must be a whole number"},
                        {with("counts = [\n  0, 0, 0, 0, 1821", "counts = [\n  0, 0, 0, -1, 1821"), "l.toml:8: counts must be whole numbers"},
                        {with("counts = [\n  0, 0, 0, 0, 1821", "counts = [\n  0, 0, 0, 0.5, 1821"), "l.toml:8: counts must be whole numbers"},
                        {with("max_len = 512\n", "max_len = 512\nbins = 8\n"), "l.toml:8: unknown key 'bins'"},
                        {with("id = \"squad-1.1-384\"", "id = \"wikipedia-512\""), "id 'wikipedia-512' is listed twice"},
                        {"[[lengths]]\nid = \"z\"\nname = \"z\"\nsource = \"z\"\nmax_len = 2\ncounts = [0, 0]\n", "l.toml:1: counts hold no sample"},
                        {"[[lengths]]\nid = \"z\"\nmax_len = 2\ncounts = [1, 0]\n", "l.toml:1: [[lengths]] needs id, name, max_len, counts and source"},
                        {"[length]\n", "unknown table 'length'"}},
                       [](const std::string& text) { parse_length_histograms(text, "l.toml"); });
  EXPECT_GT(test::fuzz_parser(builtin, "[]\"=,.#\n -0123456789acdeghiklmnorstuw_", 400, 5,
                              [](const std::string& t, const std::string& w) { parse_length_histograms(t, w); }),
            0);
}

TEST(Predict, BinnedBatchesArePricedAtTheLengthsTheyArePaddedTo) {
  PredictRequest r;
  const auto refused = [&](const std::string& words) {
    const std::string e = test::input_error_of([&] { predict(cat(), r); });
    EXPECT_NE(e.find(words), std::string::npos) << e;
  };
  r.workload = "bert-large";
  r.gpu = "a100-80gb-sxm";
  r.precision = Precision::tf32;
  r.batch = 16;
  r.options = {{"seq_len", "512"}, {"global_batch", "4096"}};
  const Prediction full = predict(cat(), r);
  r.options["lengths"] = "wikipedia-512";
  r.options["bin_size"] = "64";
  const Prediction binned = predict(cat(), r);
  EXPECT_EQ(binned.lengths, "wikipedia-512");
  EXPECT_EQ(binned.bin_size, 64);
  EXPECT_EQ(binned.seq_len, 512);
  // The mean over the bins of the prediction at each bin's padded length, each weighted by its share of batches.
  double step = 0, padded = 0;
  for (const auto& b : padded_bins(length_histogram("wikipedia-512"), 64, 16)) {
    PredictRequest at = r;
    at.options.erase("lengths");
    at.options.erase("bin_size");
    at.options["seq_len"] = std::to_string(std::llround(b.padded_len));
    step += b.share * predict(cat(), at).step_s;
    padded += b.share * static_cast<double>(std::llround(b.padded_len));
  }
  EXPECT_NEAR(binned.step_s, step, 1e-9 * step);
  EXPECT_NEAR(binned.padded_len, padded, 1e-9);
  EXPECT_NEAR(binned.throughput, 4096.0 / step, 1e-6 * binned.throughput);
  double op_seconds = 0;
  for (const auto& op : binned.detail.ops) op_seconds += op.seconds;
  EXPECT_NEAR(op_seconds, binned.detail.step_s, 1e-6 * binned.detail.step_s);
  // Fewer positions, and attention's quadratic share shrinks faster: between 1/0.54 and 1/0.54^2 of the padded rate.
  EXPECT_GT(binned.throughput / full.throughput, 1.0 / 0.545);
  EXPECT_LT(binned.throughput / full.throughput, 1.0 / (0.545 * 0.545));
  // Memory holds the longest bin's batches.
  EXPECT_DOUBLE_EQ(binned.memory.peak_bytes, full.memory.peak_bytes);
  // Padding each batch to its longest sample with no bins still pads most batches to 512 (a quarter of the samples
  // are 512 tokens): almost no gain.
  r.options["bin_size"] = "512";
  const Prediction dynamic = predict(cat(), r);
  EXPECT_GT(dynamic.padded_len, 505);
  EXPECT_LT(dynamic.throughput, binned.throughput);
  // seq_len comes from the data set when not given, and is said.
  r.options.erase("seq_len");
  const Prediction implied = predict(cat(), r);
  EXPECT_EQ(implied.seq_len, 512);
  const auto said = assumed(r, implied);
  EXPECT_TRUE(std::any_of(said.begin(), said.end(), [](const std::string& s) { return s.find("what lengths=wikipedia-512 was made for") != std::string::npos; }));
  r.options["bin_size"] = "64";
  r.options["seq_len"] = "128";
  refused("option lengths=wikipedia-512 holds samples made for 512 tokens; seq_len is 128");
  r.options["seq_len"] = "512";
  r.options["bin_size"] = "100";
  refused("option bin_size=100 must split the 512-token sequence into whole bins");
  r.options["bin_size"] = "0";
  refused("option bin_size=0");
  r.options["bin_size"] = "1024";
  refused("option bin_size=1024");
  r.options.erase("bin_size");
  refused("option lengths needs bin_size=N");
  r.options["bin_size"] = "64";
  r.options.erase("lengths");
  refused("option bin_size needs lengths=ID");
  r.options["lengths"] = "wikipedia";
  refused("option lengths: unknown data set 'wikipedia' (known: wikipedia-512, squad-1.1-384)");
  r.options["lengths"] = "wikipedia-512";
  r.workload = "gpt2-124m";
  r.options.erase("global_batch");
  refused("options lengths and bin_size apply to encoder workloads (BERT), not gpt2-124m");
  r.workload = "bert-large";
  r.options["bogus"] = "1";
  refused("option 'bogus' is unknown");
}

TEST(Compare, CostPerMillionIsTheGivenHourPriceTimesTheHours) {
  const Comparison c = compare(cat(), {"rtx-4090", "b200"}, "seed-mlp", Precision::tf32, 32, true, test_prices());
  ASSERT_TRUE(c.entries[0].owned_usd_per_million.has_value());
  EXPECT_NEAR(*c.entries[0].owned_usd_per_million, c.entries[0].hours_per_million * 0.25, 1e-12);
  EXPECT_FALSE(c.entries[1].owned_usd_per_million.has_value());  // no price known: no figure, not zero
}

TEST(Memory, ZeroStagesShardWhatTheySay) {
  // ZeRO-1 shards optimizer state, ZeRO-2 also gradients, full sharding (ZeRO-3/FSDP) also weights:
  // per-GPU state (bytes/param) 2 + 2 + 12/N, 2 + (2 + 12)/N, (2 + 2 + 12)/N (Rajbhandari et al. 2020).
  PredictRequest r;
  r.workload = "llama-7b";
  r.gpu = "h100-sxm";
  r.gpus = 8;
  r.batch = 1;
  r.precision = Precision::amp_bf16;
  auto state = [&](const char* sharding) {
    r.options = {{"seq_len", "512"}, {"sharding", sharding}};
    const Prediction p = predict(cat(), r);
    return (p.memory.weights_bytes + p.memory.gradients_bytes + p.memory.optimizer_bytes) / static_cast<double>(p.params);
  };
  EXPECT_NEAR(state("none"), 16.0, 1e-9);
  EXPECT_NEAR(state("zero1"), 2 + 2 + 12.0 / 8, 1e-9);
  EXPECT_NEAR(state("zero2"), 2 + (2 + 12.0) / 8, 1e-9);
  EXPECT_NEAR(state("full"), 16.0 / 8, 1e-9);
}

// ---- calibration from local benchmark figures ----

namespace {
perf::Calibration h200_calibration(double gemm_factor, double mem_factor) {
  const auto cat = catalog::Catalog::builtin();
  const auto& gpu = cat.find("h200-sxm");
  // Figures at exactly the model's own expectation for a healthy card, scaled by the factors.
  const auto plan = perf::plan_precision(perf::Precision::amp_bf16, gpu);
  const auto p = perf::efficiency_for(gpu, plan);
  const double gemm = plan.matrix_tflops * perf::gemm_efficiency({8192, 8192, 8192, 1}, p.bench_gemm_ref, p, gpu.sm_count);
  perf::EfficiencyParams bench = p;
  bench.mem_max = p.bench_mem_ref;
  const double copy_bytes = 2.0 * 1073741824.0;
  const double mem = gpu.memory_bandwidth_gbs * perf::memory_efficiency(copy_bytes, bench);
  return perf::calibrate(gpu,
                         {{"cuda.gemm.bf16", "TFLOP/s", gemm * gemm_factor},
                          {"cuda.mem.copy", "GB/s", mem * mem_factor},
                          {"cuda.launch.async", "us", 2.5}},
                         8192, copy_bytes, "test");
}

perf::Prediction predict_with(const perf::Calibration* cal, const std::string& workload, const std::string& gpu) {
  const auto cat = catalog::Catalog::builtin();
  perf::PredictRequest req;
  req.workload = workload;
  req.gpu = gpu;
  req.calibration = cal;
  return perf::predict(cat, req);
}
}  // namespace

TEST(Calibration, AHealthyCardLeavesThePredictionUnchanged) {
  const auto cal = h200_calibration(1.0, 1.0);
  ASSERT_EQ(cal.classes.size(), 3u);
  for (const auto& c : cal.classes)
    if (c.applied) {
      EXPECT_NEAR(c.ratio, 1.0, 1e-9) << c.op_class;
    }
  const auto launch = cal.classes.back();
  EXPECT_EQ(launch.op_class, "launch");
  EXPECT_FALSE(launch.applied);
  EXPECT_NEAR(launch.ratio, 2.5 / 4.0, 1e-12);
  const auto base = predict_with(nullptr, "resnet50", "h200-sxm");
  const auto calibrated = predict_with(&cal, "resnet50", "h200-sxm");
  EXPECT_TRUE(calibrated.calibrated);
  EXPECT_NEAR(calibrated.throughput / base.throughput, 1.0, 1e-9);
}

TEST(Calibration, APowerCappedCardPredictsSlowerOnlyWhereItIsSlower) {
  const auto cal = h200_calibration(0.7, 1.0);  // GEMMs at 70% of what a healthy H200 reaches
  const auto base = predict_with(nullptr, "resnet50", "h200-sxm");
  const auto slow = predict_with(&cal, "resnet50", "h200-sxm");
  EXPECT_LT(slow.throughput, 0.97 * base.throughput);
  EXPECT_GT(slow.throughput, 0.60 * base.throughput);  // memory-bound ops are not slowed
  EXPECT_GT(slow.detail.compute_s, base.detail.compute_s);
  // Another device is never corrected by this card's figures.
  const auto other = predict_with(&cal, "resnet50", "a100-80gb-sxm");
  EXPECT_FALSE(other.calibrated);
  EXPECT_DOUBLE_EQ(other.throughput, predict_with(nullptr, "resnet50", "a100-80gb-sxm").throughput);
}

TEST(Calibration, MemoryRatioMovesMemoryBoundWorkloads) {
  const auto cal = h200_calibration(1.0, 0.5);
  const auto base = predict_with(nullptr, "seed-mlp", "h200-sxm");
  const auto slow = predict_with(&cal, "seed-mlp", "h200-sxm");
  EXPECT_LT(slow.throughput, base.throughput);
  // The seed model's small kernels are latency-bound (ramp and tail): a slower memory stretches that time too.
  EXPECT_GT(slow.detail.memory_s + slow.detail.latency_s, base.detail.memory_s + base.detail.latency_s);
}

TEST(Calibration, EfficienciesNeverPassTheCeiling) {
  const auto cal = h200_calibration(1.45, 1.45);  // figures past the ceiling: clamped, not believed
  const auto cat = catalog::Catalog::builtin();
  const auto& gpu = cat.find("h200-sxm");
  const auto plan = perf::plan_precision(perf::Precision::amp_bf16, gpu);
  const auto p = perf::calibrated_params(gpu, plan, &cal);
  EXPECT_LE(p.gemm_max, 0.98);
  EXPECT_LE(p.conv_max, 0.98);
  EXPECT_LE(p.mem_max, 0.98);
  // A precision that was not measured keeps its defaults.
  const auto tf32 = perf::plan_precision(perf::Precision::tf32, gpu);
  EXPECT_DOUBLE_EQ(perf::calibrated_params(gpu, tf32, &cal).gemm_max, perf::efficiency_for(gpu, tf32).gemm_max);
}

TEST(Calibration, EngineOpRatiosCompareMeasuredWithTheModelPerClass) {
  const auto cat = catalog::Catalog::builtin();
  const auto& gpu = cat.find("h100-sxm");
  const auto plan = perf::plan_precision(perf::Precision::tf32, gpu);
  const ir::Graph g = models::build_network(workload::resolve_network("seed-mlp"), {128, ir::DType::f32, 0, false, true});
  const auto pred = perf::predict_graph(g, gpu, plan);
  // Timings twice the model's for matrix ops and equal to it for the rest.
  std::vector<double> measured(g.size(), 0.0);
  for (const auto& t : pred.ops)
    measured[static_cast<std::size_t>(t.id)] = t.seconds * (ir::op_cost(g, g.node(t.id)).matrix_flops > 0 ? 2.0 : 1.0);
  const auto r = perf::engine_op_ratios(g, measured, gpu, plan);
  ASSERT_EQ(r.size(), 2u);
  EXPECT_EQ(r[0].op_class, "engine gemm");
  EXPECT_NEAR(r[0].ratio, 2.0, 1e-12);
  EXPECT_NEAR(r[1].ratio, 1.0, 1e-12);
  EXPECT_FALSE(r[0].applied);
  // Nodes the engine did not time are left out, not counted as zero.
  std::vector<double> none(g.size(), 0.0);
  EXPECT_TRUE(perf::engine_op_ratios(g, none, gpu, plan).empty());
}

TEST(Predict, GptWorkloadTakesItsShapeFromOptions) {
  // Megatron's 1.7B (Narayanan et al. 2021), priced like any decoder: training, full recompute, inference.
  PredictRequest r;
  r.workload = "gpt";
  r.gpu = "a100-80gb-sxm";
  r.batch = 4;
  r.options = {{"layers", "24"}, {"hidden", "2304"}, {"heads", "24"}};
  for (const std::string& key : models::gpt_shape_keys()) {  // the validation harness passes these through
    int listed = 0;
    for (const auto& k : prediction_option_keys()) listed += k == key;
    EXPECT_EQ(listed, 1) << key;
  }
  EXPECT_EQ(parse_options("layers=24;hidden=2304;heads=24;kv_heads=8;ffn=9216;vocab=51200").size(), 6u);
  const Prediction p = predict(cat(), r);
  EXPECT_EQ(p.workload, "gpt");
  EXPECT_EQ(p.params, 1652230656);
  EXPECT_EQ(p.seq_len, 2048);
  EXPECT_EQ(p.unit, "tokens/s");
  EXPECT_GT(p.throughput, 0);
  r.options["recompute"] = "full";
  const Prediction rc = predict(cat(), r);
  EXPECT_GT(rc.step_s, p.step_s);
  EXPECT_LT(rc.memory.activations_bytes, p.memory.activations_bytes);
  // The shape changes the prediction; seq_len sets the learned positions too.
  r.options = {{"layers", "24"}, {"hidden", "2304"}, {"heads", "24"}, {"seq_len", "4096"}};
  const Prediction longer = predict(cat(), r);
  EXPECT_EQ(longer.seq_len, 4096);
  EXPECT_EQ(longer.params, p.params + 2048 * 2304);
  r.options = {{"layers", "12"}, {"hidden", "2304"}, {"heads", "24"}};
  EXPECT_LT(predict(cat(), r).step_s, p.step_s);
  // Inference: the KV cache from the shape (grouped-query heads included).
  r.training = false;
  r.options = {{"layers", "24"}, {"hidden", "2304"}, {"heads", "24"}, {"kv_heads", "8"}};
  const Prediction inf = predict(cat(), r);
  EXPECT_TRUE(inf.decode);
  EXPECT_DOUBLE_EQ(inf.kv_cache_bytes, 2.0 * 24 * 8 * 96 * (2048 + 128) * 4 * 2);
  r.training = true;

  auto refused = [&](const std::string& workload, const std::map<std::string, std::string>& o, const std::string& names) {
    PredictRequest bad = r;
    bad.workload = workload;
    bad.options = o;
    try {
      (void)predict(cat(), bad);
      ADD_FAILURE() << workload << " was accepted";
    } catch (const InputError& e) {
      EXPECT_NE(std::string(e.what()).find(names), std::string::npos) << e.what();
    }
  };
  refused("gpt", {}, "layers, hidden, heads missing");
  refused("gpt", {{"layers", "24"}, {"hidden", "2304"}}, "heads missing");
  refused("gpt", {{"layers", "24"}, {"hidden", "2304"}, {"heads", "0"}}, "heads=0");
  refused("gpt", {{"layers", "x"}, {"hidden", "2304"}, {"heads", "24"}}, "layers=x");
  refused("gpt", {{"layers", "24"}, {"hidden", "2304"}, {"heads", "24"}, {"vocab", "1.5"}}, "vocab=1.5");
  refused("gpt", {{"layers", "24"}, {"hidden", "2304"}, {"heads", "24"}, {"ffn", "-8"}}, "ffn=-8");
  refused("gpt", {{"layers", "24"}, {"hidden", "2305"}, {"heads", "24"}}, "hidden=2305 does not split into heads=24");
  refused("gpt", {{"layers", "24"}, {"hidden", "2304"}, {"heads", "24"}, {"kv_heads", "7"}}, "kv_heads=7");
  refused("gpt", {{"layers", "24"}, {"hidden", "2304"}, {"heads", "24"}, {"depth", "3"}},
          "option 'depth' is unknown");
  refused("llama-7b", {{"layers", "24"}}, "option layers");
  refused("bert-base", {{"vocab", "30522"}}, "option vocab");
  refused("gpt2-124m", {{"seq_len", "2048"}}, "1024 learned positions");
}

#include "perf/achievable.hpp"

TEST(Achievable, PublishedFiguresThenRulesLearnedFromOtherCardsThenPriors) {
  const catalog::Gpu& h100 = cat().find("h100-sxm");
  // Published for this card: the figure itself.
  const auto bf16 = achievable(cat(), h100, "gemm-bf16");
  ASSERT_TRUE(bf16);
  EXPECT_TRUE(bf16->published);
  EXPECT_DOUBLE_EQ(bf16->value, 794.5);
  EXPECT_NEAR(bf16->fraction, 794.5 / 989.4, 1e-3);
  // Not published for the H200: the median fraction of the other Hopper data-centre cards (H100 SXM, GH200), each a
  // fraction of the peak at the clock its card sustains, carried at the H200's own.
  const catalog::Gpu& h200 = cat().find("h200-sxm");
  const auto h200_bf16 = achievable(cat(), h200, "gemm-bf16");
  ASSERT_TRUE(h200_bf16);
  EXPECT_FALSE(h200_bf16->published);
  const auto clock = [](const char* id) { return sustained_clock_fraction(cat().find(id), active_constants().clock_headroom); };
  const double h100_f = 794.5 / *h100.bf16.dense / clock("h100-sxm"), gh200_f = 828.6 / *cat().find("gh200").bf16.dense / clock("gh200");
  EXPECT_NEAR(h200_bf16->fraction, (h100_f + gh200_f) / 2 * clock("h200-sxm"), 1e-9);
  EXPECT_NE(h200_bf16->basis.find("Hopper data-centre"), std::string::npos) << h200_bf16->basis;
  // Clocks everywhere: a card without a figure takes its class-mate's fraction at the clock each sustains, so the RTX
  // 6000 Ada (300 W, 915 MHz base under a 2,505 MHz boost) reaches less of its rated peak than the RTX 4090 (2,235 base).
  const auto ada6000 = achievable(cat(), cat().find("rtx-6000-ada"), "gemm-bf16"), rtx = achievable(cat(), cat().find("rtx-4090"), "gemm-bf16");
  ASSERT_TRUE(ada6000 && rtx);
  EXPECT_TRUE(rtx->published);
  EXPECT_NEAR(ada6000->fraction / clock("rtx-6000-ada"), rtx->fraction / clock("rtx-4090"), 1e-12);
  EXPECT_LT(ada6000->fraction, 0.8 * rtx->fraction);
  EXPECT_NE(ada6000->basis.find("sustained clock"), std::string::npos) << ada6000->basis;
  // No card of its class has one (no Volta data-centre FP16 figure): every card's median; nobody has one: the prior,
  // said so. The T4 has its own: the rate its 70 W cap sustains.
  const auto v100 = achievable(cat(), cat().find("v100-sxm2-16gb"), "gemm-fp16");
  ASSERT_TRUE(v100);
  EXPECT_NE(v100->basis.find("median of every card"), std::string::npos) << v100->basis;
  const auto t4 = achievable(cat(), cat().find("t4"), "gemm-fp16");
  ASSERT_TRUE(t4 && t4->published);
  EXPECT_NEAR(t4->value, 24.0, 1e-9);
  const auto int8 = achievable(cat(), h100, "gemm-int8");
  ASSERT_TRUE(int8);
  EXPECT_NE(int8->basis.find("prior"), std::string::npos);
  EXPECT_NEAR(int8->fraction, 0.80, 1e-12);
  // Holding out the file the figures came from removes them: the H100 and its Hopper kin lose theirs, and it learns
  // from the figures left (none of them from that file).
  const auto held = achievable(cat(), h100, "gemm-bf16", builtin_achievable(), {"micro"});
  ASSERT_TRUE(held);
  EXPECT_FALSE(held->published);
  EXPECT_NE(held->basis.find("median of every card"), std::string::npos) << held->basis;
  EXPECT_EQ(held->basis.find("h100-sxm"), std::string::npos) << held->basis;
  // A precision the card lacks has no figure; peer copies without P2P cross PCIe twice.
  EXPECT_FALSE(achievable(cat(), cat().find("v100-sxm2-16gb"), "gemm-bf16"));
  std::string what;
  const auto p2p = spec_for(cat().find("rtx-4090"), "p2p-copy", &what);
  ASSERT_TRUE(p2p);
  EXPECT_DOUBLE_EQ(*p2p, pcie_x16_gbs(4) / 2);
  EXPECT_NE(what.find("staged through host"), std::string::npos);
}

TEST(Achievable, Fp8GemmsReachTheCardsFp8ShareAndFp8TrainingsAttentionRunsAtTheBf16Rate) {
  // mamf-finder on the H100 SXM: 1,402.6 TFLOP/s of the FP8 peak against 794.5 of the BF16 one.
  const catalog::Gpu& h100 = cat().find("h100-sxm");
  const double share = (1402.6 / *spec_for(h100, "gemm-fp8")) / (794.5 / *spec_for(h100, "gemm-bf16"));
  EXPECT_NEAR(fp8_gemm_share(h100), share, 1e-9);
  EXPECT_GT(share, 0.85);
  EXPECT_LT(share, 0.9);
  for (const auto& g : cat().gpus())
    if (spec_for(g, "gemm-fp8")) {
      EXPECT_GT(fp8_gemm_share(g), 0.5) << g.id;
      EXPECT_LE(fp8_gemm_share(g), 1.0) << g.id;
    }
  EXPECT_NEAR(efficiency_for(h100, plan_precision(Precision::amp_fp8, h100)).gemm_max,
              efficiency_for(h100, plan_precision(Precision::amp_bf16, h100)).gemm_max * share, 1e-12);
  // The same graph under FP8 and BF16 plans: the GEMMs run at the FP8 rate, attention at the BF16 one in both.
  models::NetworkOptions o{1, ir::DType::bf16, 2048, true, true};
  const ir::Graph g = models::build_network(models::network("llama2-7b"), o);
  const StepPrediction fp8 = predict_graph(g, h100, plan_precision(Precision::amp_fp8, h100));
  const StepPrediction bf16 = predict_graph(g, h100, plan_precision(Precision::amp_bf16, h100));
  int attention = 0;
  for (std::size_t i = 0; i < fp8.ops.size(); ++i) {
    const ir::OpKind op = g.node(fp8.ops[i].id).op;
    if (op != ir::OpKind::attention && op != ir::OpKind::attention_grad) continue;
    EXPECT_DOUBLE_EQ(fp8.ops[i].compute_s, bf16.ops[i].compute_s) << g.node(fp8.ops[i].id).name;
    ++attention;
  }
  EXPECT_EQ(attention, 64);
  EXPECT_LT(fp8.compute_s, bf16.compute_s);
}

TEST(Achievable, FileErrorsNameTheLineAndFuzzedFilesFailCleanly) {
  const std::string good = "[[figure]]\ngpu = \"h100-sxm\"\nkey = \"gemm-bf16\"\nvalue = 790\nfile = \"x\"\nsource = \"s\"\n";
  EXPECT_EQ(parse_achievable(good, "a.toml", cat()).figures.size(), 1u);
  // A GeForce board's GEMM may pass its rated peak (GPU Boost past the rated clock), by a bounded margin.
  const std::string boosted = "[[figure]]\ngpu = \"rtx-3090\"\nkey = \"gemm-bf16\"\nvalue = 80\nsource = \"s\"\n";
  EXPECT_EQ(parse_achievable(boosted, "a.toml", cat()).figures.size(), 1u);
  test::expect_refused({
           {"[[figure]]\ngpu = \"rtx-3090\"\nkey = \"gemm-bf16\"\nvalue = 90\nsource = \"s\"\n", "at most 1.2 x the spec (71)"},
           {"[[figure]]\ngpu = \"rtx-3090\"\nkey = \"mem-read\"\nvalue = 1000\nsource = \"s\"\n", "at most 1.05 x the spec"},
           {"[[figure]]\ngpu = \"rtx-a6000\"\nkey = \"gemm-bf16\"\nvalue = 170\nsource = \"s\"\n", "at most 1.05 x the spec"}},
                       [](const std::string& text) { parse_achievable(text, "a.toml", cat()); });
  test::expect_refused({
           {"[[figure]]\ngpu = \"h100-sxm\"\nkey = \"gemm-bf17\"\nvalue = 790\nsource = \"s\"\n", "a.toml:1: unknown key 'gemm-bf17'"},
           {"[[figure]]\ngpu = \"h100-sxn\"\nkey = \"gemm-bf16\"\nvalue = 790\nsource = \"s\"\n", "a.toml:1: "},
           {"[[figure]]\ngpu = \"h100-sxm\"\nkey = \"gemm-bf16\"\nvalue = 2000\nsource = \"s\"\n", "at most 1.05 x the spec"},
           {"[[figure]]\ngpu = \"v100-sxm2-16gb\"\nkey = \"gemm-bf16\"\nvalue = 10\nsource = \"s\"\n", "the device has none"},
           {"[[figure]]\ngpu = \"h100-sxm\"\nkey = \"gemm-bf16\"\nvalue = 790\n", "needs gpu, key, value and source"},
           {"[[figure]]\ngpu = \"h100-sxm\"\nkey = \"gemm-bf16\"\nvalue = 790\nsource = \"s\"\nspeed = 1\n", "unknown field 'speed'"},
           {"[peaks]\n", "unknown table 'peaks'"},
           {"[[figure]\n", "a.toml:1:"}},
                       [](const std::string& text) { parse_achievable(text, "a.toml", cat()); });
  // Random edits of the built-in file: parsed, or one clean line naming it.
  const std::string builtin = files::read_all(std::string(GPUVS_SOURCE_DIR) + "/data/achievable.toml", "data");
  EXPECT_GT(test::fuzz_parser(builtin, "[]{}\"'=,.#\n -0123456789abcdefgkmp_", 800, 5, [](const std::string& t, const std::string& w) { parse_achievable(t, w, cat()); }), 0);
}

TEST(Validation, MicroRowsArePricedByAchievablePeaksAndHeldOutHonestly) {
  const std::string path = std::string(GPUVS_SOURCE_DIR) + "/data/validation/micro.csv";
  const auto rows = read_published(files::read_all(path, "data"), path);
  const ValidationReport in = validate(cat(), rows);
  for (const auto& v : in.rows) EXPECT_EQ(v.status, "ok") << v.row.id << ": " << v.reason;
  EXPECT_LT(in.median_ape, 1e-9);  // in-sample: the figures are the data's own
  const ValidationReport out = validate(cat(), rows, {"micro"});
  for (const auto& v : out.rows) EXPECT_NE(v.reason.rfind("published:", 0), 0u) << v.row.id << ": " << v.reason;
  EXPECT_GT(out.median_ape, 0.01);  // held out: the priors, not the figures
  EXPECT_LT(out.median_ape, 0.30);
}

TEST(Constants, TheBuiltInSetIsWhatAFreshFitFinds) {
  // If the model or the data change, refit: gpuvs validate --data data/validation --fit data/model-constants.toml
  const auto rows = all_published_rows();
  const FitResult fit = fit_constants(cat(), rows);
  const FittedConstants& built = builtin_constants();
  for (auto c : {DeviceClass::datacenter, DeviceClass::geforce}) {
    EXPECT_NEAR(built.of(c).gemm, fit.constants.of(c).gemm, 1e-3) << class_name(c);
    EXPECT_NEAR(built.of(c).conv, fit.constants.of(c).conv, 1e-3) << class_name(c);
  }
  EXPECT_NEAR(built.bytes_per_sm_cycle, fit.constants.bytes_per_sm_cycle, 1e-2);
  EXPECT_NEAR(built.clock_headroom, fit.constants.clock_headroom, 1e-3);
  EXPECT_EQ(built.fitted_on, fit.constants.fitted_on);
  // Written and read back, the constants are the same.
  const FittedConstants again = parse_constants(constants_toml(fit.constants), "x.toml");
  EXPECT_NEAR(again.of(DeviceClass::geforce).conv, fit.constants.of(DeviceClass::geforce).conv, 1e-4);
  EXPECT_NEAR(again.bytes_per_sm_cycle, fit.constants.bytes_per_sm_cycle, 1e-3);
  EXPECT_DOUBLE_EQ(again.bytes_per_sm_cycle_prior, fit.constants.bytes_per_sm_cycle_prior);
}

TEST(Constants, AScopedSetPricesThisThreadOnlyAndIsUndone) {
  PredictRequest r;
  r.workload = "resnet50";
  r.gpu = "a100-80gb-sxm";
  r.batch = 256;
  r.precision = Precision::amp_fp16;
  const double base = predict(cat(), r).throughput;
  FittedConstants slow = builtin_constants();
  slow.of(DeviceClass::datacenter).conv /= 2;
  slow.of(DeviceClass::datacenter).gemm /= 2;
  slow.bytes_per_sm_cycle /= 2;
  {
    const ScopedConstants scope(slow);
    EXPECT_LT(predict(cat(), r).throughput, base * 0.6);
    double other = 0;
    std::thread([&] { other = predict(cat(), r).throughput; }).join();  // another thread: the built-in set
    EXPECT_DOUBLE_EQ(other, base);
  }
  EXPECT_DOUBLE_EQ(predict(cat(), r).throughput, base);
}

TEST(Constants, FileErrorsNameWhereAndFuzzedFilesFailCleanly) {
  const std::string memory =
      "[memory]\nbytes_per_sm_cycle = 8.5\nprior_bytes_per_sm_cycle = 11.7\ndecode_bytes_per_sm_cycle = 9.5\n"
      "ggml_gemv_bytes_per_sm_cycle = 8.25\nggml_bytes_per_sm_cycle = 7.5\n";
  const std::string good = "[datacenter]\ngemm = 0.7\nconv = 0.4\n[geforce]\ngemm = 0.9\nconv = 0.7\n"
                           "[prior]\ngemm = 0.8\nconv = 0.6\n" + memory + "[clock]\nheadroom = 0.4\nprior = 0.5\n" +
                           "[calibration]\ntransfer_share = 0.4\n[engine]\nggml_gemm_share = 0.85\n";
  const FittedConstants c = parse_constants(good, "c.toml");
  EXPECT_NEAR(c.ggml_gemm_share, 0.85, 1e-12);
  EXPECT_NEAR(c.of(DeviceClass::geforce).gemm, 0.9, 1e-12);
  EXPECT_NEAR(c.clock_headroom, 0.4, 1e-12);
  EXPECT_NEAR(c.bytes_per_sm_cycle, 8.5, 1e-12);
  EXPECT_NEAR(c.bytes_per_sm_cycle_prior, 11.7, 1e-12);
  EXPECT_NEAR(c.decode_bytes_per_sm_cycle, 9.5, 1e-12);
  EXPECT_NEAR(c.ggml_gemv_bytes_per_sm_cycle, 8.25, 1e-12);
  EXPECT_NEAR(c.ggml_bytes_per_sm_cycle, 7.5, 1e-12);
  EXPECT_NEAR(c.transfer_share, 0.4, 1e-12);
  const std::string classes = good.substr(0, good.find("[memory]"));
  const std::string upto_clock = good.substr(0, good.find("[clock]"));
  test::expect_refused({
           {"[datacenter]\ngemm = 0.7\nconv = 0.4\n", "missing table [geforce]"},
           {"[datacenter]\ngemm = 1.7\nconv = 0.4\n", "c.toml:1: [datacenter] gemm must be a fraction in (0, 1]"},
           {"[datacenter]\ngemm = 0.7\n", "[datacenter] conv must be a fraction"},
           {"[datacenter]\ngemm = 0.7\nconv = 0.4\nmem = 0.6\n", "unknown key 'mem' (expected gemm, conv)"},
           {"speed = 3\n", "unknown key 'speed'"},
           {classes, "missing table [memory]"},
           {classes + "[memory]\nbytes_per_sm_cycle = 4096\nprior_bytes_per_sm_cycle = 8\ndecode_bytes_per_sm_cycle = 8\n",
            "c.toml:10: [memory] bytes_per_sm_cycle must be in (0, 1024]"},
           {classes + "[memory]\nbytes_per_sm_cycle = 8\n", "[memory] prior_bytes_per_sm_cycle must be in"},
           {classes + "[memory]\nbytes_per_sm_cycle = 8\nprior_bytes_per_sm_cycle = 8\n", "[memory] decode_bytes_per_sm_cycle must be in"},
           {classes + "[memory]\nbytes_per_sm_cycle = 8\nprior_bytes_per_sm_cycle = 8\ndecode_bytes_per_sm_cycle = -1\n",
            "[memory] decode_bytes_per_sm_cycle must be in (0, 1024]"},
           {classes + "[memory]\nbytes_per_sm_cycle = 8\nprior_bytes_per_sm_cycle = 8\ndecode_bytes_per_sm_cycle = 8\n",
            "[memory] ggml_gemv_bytes_per_sm_cycle must be in (0, 1024]"},
           {classes + "[memory]\nbytes_per_sm_cycle = 8\nprior_bytes_per_sm_cycle = 8\ndecode_bytes_per_sm_cycle = 8\nggml_gemv_bytes_per_sm_cycle = 8\n",
            "[memory] ggml_bytes_per_sm_cycle must be in (0, 1024]"},
           {classes + "[memory]\nspec_fraction = 0.9\nbytes_per_sm_cycle = 8\nprior_bytes_per_sm_cycle = 8\n", "[memory] unknown key 'spec_fraction'"},
           {upto_clock, "missing table [clock]"},
           {upto_clock + "[clock]\nheadroom = 1.5\nprior = 0.5\n", "c.toml:16: [clock] headroom must be a fraction in (0, 1]"},
           {upto_clock + "[clock]\nheadroom = 0.5\n", "[clock] prior must be a fraction"},
           {upto_clock + "[clock]\nheadroom = 0.5\nprior = 0.5\nboost = 1\n", "[clock] unknown key 'boost'"},
           {upto_clock + "[clock]\nheadroom = 0.5\nprior = 0.5\n", "missing table [calibration]"},
           {upto_clock + "[clock]\nheadroom = 0.5\nprior = 0.5\n[calibration]\ntransfer_share = 1.5\n",
            "[calibration] transfer_share must be a fraction in (0, 1]"},
           {upto_clock + "[clock]\nheadroom = 0.5\nprior = 0.5\n[calibration]\ntransfer_share = 0.5\n", "missing table [engine]"},
           {upto_clock + "[clock]\nheadroom = 0.5\nprior = 0.5\n[calibration]\ntransfer_share = 0.5\n[engine]\nggml_gemm_share = 1.2\n",
            "[engine] ggml_gemm_share must be a fraction in (0, 1]"},
           {"[datacenter\n", "c.toml:1:"}},
                       [](const std::string& text) { parse_constants(text, "c.toml"); });
  EXPECT_GT(test::fuzz_parser(good, "[]\"=.#\n -0123456789abcdefgmnoprst_", 1000, 9, [](const std::string& t, const std::string& w) { parse_constants(t, w); }), 0);
}

TEST(Constants, MemoryBoundKernelsStreamAtTheLesserOfTheDramRateAndWhatTheSmsKeepInFlight) {
  // Little's law: the bytes a card's SMs keep in flight over the DRAM latency cap a kernel's bandwidth. A
  // GDDR board with many fast SMs for its bandwidth streams at the microbenchmark's fraction of the DRAM
  // rate; a wide-HBM part at what its SMs keep in flight.
  const double stream = system_facts().bench_memory;
  const catalog::Gpu& rtx4090 = cat().find("rtx-4090");  // 128 SMs x 2.52 GHz x 8 B = 2.58 TB/s against 1.01 TB/s
  const catalog::Gpu& h100 = cat().find("h100-sxm");     // 132 SMs x ~1.75 GHz x 8 B = 1.85 TB/s against 3.35 TB/s
  EXPECT_DOUBLE_EQ(memory_fraction(rtx4090, 8.0), stream);
  // At the clock the SMs run a training step at: the sustained one (perf/clocks.hpp), as the matrix peaks are priced.
  const auto sustained_mhz = [](const catalog::Gpu& g) { return sustained_clock_fraction(g, active_constants().clock_headroom) * rated_clock_mhz(g); };
  const double h100_side = 8.0 * h100.sm_count * sustained_mhz(h100) * 1e6 / (h100.memory_bandwidth_gbs * 1e9);
  EXPECT_LT(h100_side, stream);
  EXPECT_DOUBLE_EQ(memory_fraction(h100, 8.0), h100_side);
  // A power-limited board (the 350 W H100 PCIe: 1,095 MHz base under a 1,755 boost) keeps fewer bytes in flight per
  // second than its boost clock would: it sits further below its DRAM rate than its spec says.
  const catalog::Gpu& pcie = cat().find("h100-pcie");
  EXPECT_LT(sustained_mhz(pcie), 0.85 * pcie.boost_mhz);
  EXPECT_NEAR(memory_fraction(pcie, 8.0), 8.0 * pcie.sm_count * sustained_mhz(pcie) * 1e6 / (pcie.memory_bandwidth_gbs * 1e9), 1e-12);
  EXPECT_LT(memory_fraction(pcie, 8.0), 8.0 * pcie.sm_count * pcie.boost_mhz * 1e6 / (pcie.memory_bandwidth_gbs * 1e9));
  // A card with no base clock of its own takes its chip's boards' of the most power not above its own (the GH200's
  // GH100 at 1,000 W: the 700 W H100 SXM's and H200 SXM's), so it sustains what they do, not its boost.
  const catalog::Gpu& gh200 = cat().find("gh200");
  EXPECT_NEAR(sustained_mhz(gh200), sustained_mhz(h100), 0.05 * sustained_mhz(h100));
  EXPECT_LT(sustained_mhz(gh200), gh200.boost_mhz);
  EXPECT_NEAR(rated_clock_mhz(gh200), rated_clock_mhz(h100), 1.0);  // its 989 TFLOP/s are the same 1,830 MHz peak
  // A user's card of no known chip runs at the clock its peaks are rated at.
  catalog::Gpu mine = h100;
  mine.id = "my-h100";
  mine.chip = "mine";
  EXPECT_NEAR(memory_fraction(mine, 8.0), 8.0 * mine.sm_count * mine.boost_mhz * 1e6 / (mine.memory_bandwidth_gbs * 1e9), 1e-12);
  // More bytes in flight per SM move the HBM card, not the GeForce board.
  EXPECT_GT(memory_fraction(h100, 16.0), memory_fraction(h100, 8.0));
  EXPECT_DOUBLE_EQ(memory_fraction(rtx4090, 16.0), stream);
  // A card without SMs or clocks (a user's entry) streams at the microbenchmark's fraction.
  catalog::Gpu bare = h100;
  bare.sm_count = 0;
  EXPECT_DOUBLE_EQ(memory_fraction(bare, 8.0), stream);
  // The built-in fit puts the validated GeForce boards on the DRAM side and the HBM data-centre parts on the SM side.
  const double fitted = builtin_constants().bytes_per_sm_cycle;
  for (const char* id : {"rtx-3090", "rtx-4090", "rtx-a6000", "rtx-6000-ada", "a10"})
    EXPECT_DOUBLE_EQ(memory_fraction(cat().find(id), fitted), stream) << id;
  for (const char* id : {"a100-80gb-sxm", "h100-sxm", "h100-pcie"}) EXPECT_LT(memory_fraction(cat().find(id), fitted), stream) << id;
  // Training prices it: halving what an SM keeps in flight slows an HBM card's memory-bound training, not a GeForce board's.
  PredictRequest r;
  r.workload = "resnet50";
  r.batch = 128;
  r.precision = Precision::amp_fp16;
  r.options = {{"memory_format", "nhwc"}};
  FittedConstants fewer = builtin_constants();
  fewer.bytes_per_sm_cycle /= 2;
  for (const char* id : {"h100-sxm", "rtx-4090"}) {
    r.gpu = id;
    const double base = predict(cat(), r).throughput;
    const ScopedConstants scope(fewer);
    if (std::string(id) == "h100-sxm") EXPECT_LT(predict(cat(), r).throughput, base * 0.95) << id;
    else EXPECT_DOUBLE_EQ(predict(cat(), r).throughput, base) << id;
  }
}

#include "perf/clocks.hpp"

TEST(Clocks, EveryValidatedCardHasASourcedBaseClockAndThePowerLimitPricesDenseMath) {
  // Every card a priced published row names has a base clock (else its peaks are taken as rated), but the
  // GH200, whose clocks no stored source gives (data/clocks.toml's header); microbenchmark rows are priced
  // by achievable peaks, not by the clock.
  std::set<std::string> missing;
  for (const auto& row : all_published_rows())
    if (row.mode != "micro" && !builtin_clocks().find(cat().find(row.gpu).id)) missing.insert(cat().find(row.gpu).id);
  EXPECT_EQ(missing, std::set<std::string>{"gh200"});
  for (const auto& c : builtin_clocks().clocks) EXPECT_FALSE(c.source.empty()) << c.gpu;
  // base + h (boost - base) over the peaks' clock: a 300 W RTX 6000 Ada (base 915, boost 2505 MHz) loses
  // far more than a 450 W RTX 4090 (2235, 2520); headroom 1 is the rated boost.
  const auto frac = [](const char* id, double h) { return sustained_clock_fraction(cat().find(id), h); };
  EXPECT_NEAR(frac("rtx-6000-ada", 0.5), (915 + 0.5 * (2505 - 915)) / 2505.0, 1e-12);
  EXPECT_NEAR(frac("rtx-4090", 0.5), (2235 + 0.5 * (2520 - 2235)) / 2520.0, 1e-12);
  EXPECT_DOUBLE_EQ(frac("rtx-4090", 1.0), 1.0);
  // Hopper's tensor peaks are rated at 1,830 MHz, below its 1,980 MHz boost: capped at the rated clock.
  EXPECT_NEAR(frac("h100-sxm", 0.5), (1590 + 0.5 * (1980 - 1590)) / 1830.0, 1e-12);
  EXPECT_DOUBLE_EQ(frac("h100-sxm", 1.0), 1.0);
  // No sourced base clock (b200): peaks as rated, whatever the headroom.
  EXPECT_DOUBLE_EQ(frac("b200", 0.1), 1.0);
  // The price reaches a prediction: a compute-bound GEMM stack slows by the clock fraction.
  PredictRequest r;
  r.workload = "bert-large";
  r.gpu = "rtx-6000-ada";
  r.batch = 32;
  r.precision = Precision::amp_fp16;
  FittedConstants hot = builtin_constants(), cold = builtin_constants();
  hot.clock_headroom = 1.0;
  cold.clock_headroom = 0.05;
  double fast = 0, slow = 0;
  {
    const ScopedConstants scope(hot);
    fast = predict(cat(), r).throughput;
  }
  {
    const ScopedConstants scope(cold);
    slow = predict(cat(), r).throughput;
  }
  EXPECT_LT(slow, fast * 0.75);
}

// The stage graphs of a parallel plan are priced once per card and remembered; the memo's key lacked the
// active constants' clock headroom, so the fitter's next candidate got the previous one's price (the LOSO
// figures depended on when the memo was emptied). Each set now prices afresh, as a new workload would.
TEST(Clocks, APriceRememberedUnderOneSetOfConstantsIsNotReusedUnderAnother) {
  PredictRequest r;
  r.workload = "gpt";
  r.gpu = "a100-80gb-sxm";
  r.gpus = 16;
  r.batch = 1;
  r.options = {{"layers", "8"}, {"hidden", "1024"}, {"heads", "16"}, {"tp", "2"}, {"seq_len", "512"}};
  const workload::Workload w(r.workload, r.options);
  FittedConstants hot = builtin_constants(), cold = builtin_constants();
  hot.clock_headroom = 1.0;
  cold.clock_headroom = 0.05;
  double slow = 0, fast = 0, fresh = 0;
  {
    const ScopedConstants scope(cold);
    slow = predict(cat(), w, r).throughput;
  }
  {
    const ScopedConstants scope(hot);
    fast = predict(cat(), w, r).throughput;
    fresh = predict(cat(), workload::Workload(r.workload, r.options), r).throughput;
  }
  EXPECT_GT(fast, slow);  // this small model's step is mostly its gradient all-reduce: the clock moves it a little
  EXPECT_EQ(fast, fresh);
}

TEST(Clocks, FileErrorsNameTheLineAndFuzzedFilesFailCleanly) {
  const std::string good = "[[gpu]]\nid = \"rtx-4090\"\nbase_mhz = 2235\nsource = \"s\"\n";
  EXPECT_EQ(parse_clocks(good, "k.toml", cat()).clocks.size(), 1u);
  EXPECT_EQ(parse_clocks("[[gpu]]\nid = \"4090\"\nbase_mhz = 2235\nsource = \"s\"\n", "k.toml", cat()).clocks[0].gpu, "rtx-4090");
  test::expect_refused({
           {"[[gpu]]\nid = \"rtx-4091\"\nbase_mhz = 2235\nsource = \"s\"\n", "k.toml:1: "},
           {"[[gpu]]\nid = \"rtx-4090\"\nbase_mhz = 2600\nsource = \"s\"\n", "k.toml:1: base_mhz 2600 is above 'rtx-4090''s boost clock 2520 MHz"},
           {"[[gpu]]\nid = \"rtx-4090\"\nbase_mhz = -5\nsource = \"s\"\n", "base_mhz must be a positive number"},
           {"[[gpu]]\nid = \"rtx-4090\"\nbase_mhz = 2235\n", "needs id, base_mhz and source"},
           {"[[gpu]]\nid = \"h100-sxm\"\nbase_mhz = 1590\npeak_mhz = 2000\nsource = \"s\"\n", "peak_mhz 2000 must lie between"},
           {"[[gpu]]\nid = \"rtx-4090\"\nbase_mhz = 2235\nsource = \"s\"\nturbo = 1\n", "unknown key 'turbo'"},
           {good + good, "k.toml:5: 'rtx-4090' listed twice"},
           {"[gpus]\n", "unknown table 'gpus'"},
           {"[[gpu]\n", "k.toml:1:"}},
                       [](const std::string& text) { parse_clocks(text, "k.toml", cat()); });
  const std::string builtin = files::read_all(std::string(GPUVS_SOURCE_DIR) + "/data/clocks.toml", "data");
  EXPECT_GT(test::fuzz_parser(builtin, "[]\"=,.#\n -0123456789abdeghikmpqrsuz_", 800, 21, [](const std::string& t, const std::string& w) { parse_clocks(t, w, cat()); }), 0);
}

TEST(SystemFacts, EveryFactIsSourcedWithItsUnitAndBadFilesAreRefusedByLine) {
  const std::string builtin = files::read_all(std::string(GPUVS_SOURCE_DIR) + "/data/system.toml", "data");
  const SystemFacts f = parse_system_facts(builtin, "system.toml");
  EXPECT_EQ(f.gpus_per_server, system_facts().gpus_per_server);
  EXPECT_GT(f.runtime_bytes, 0);
  for (models::Family fam : {models::Family::mlp, models::Family::cnn, models::Family::encoder, models::Family::decoder,
                             models::Family::unet, models::Family::keras, models::Family::onnx})
    EXPECT_GT(f.batch_for(fam), 0) << models::family_name(fam);
  // The model reads the file's figures, not numbers of its own: usable memory follows driver_reserve.
  EXPECT_DOUBLE_EQ(usable_device_bytes(100.0), 100.0 * (1 - system_facts().driver_reserve));
  ASSERT_FALSE(f.mig_profiles.empty());
  EXPECT_EQ(f.mig_profiles.back().compute_slices, 7);  // the whole card is a profile too
  EXPECT_EQ(f.mig_profiles.back().memory_eighths, 8);
  const auto with = [&](const std::string& from, const std::string& to) { return test::replaced(builtin, from, to); };
  test::expect_refused(
      {{with("[server.gpus]\nvalue = 8\nunit = \"GPUs\"", "[server.gpus]\nvalue = 8\nunit = \"GPU\""), "[server.gpus] is in GPUs, not 'GPU'"},
       {with("[server.gpus]\nvalue = 8", "[server.gpus]\nvalue = 8.5"), "[server.gpus] = 8.5 is outside (0, 1024] or not whole"},
       {with("[links.pcie_busbw]\nvalue = 0.80", "[links.pcie_busbw]\nvalue = 1.2"), "[links.pcie_busbw] = 1.2 is outside (0, 1]"},
       {with("[links.pcie_busbw]\nvalue = 0.80", "[links.pcie_busbw]\nvalue = nan"), "[links.pcie_busbw] needs a finite number"},
       {with("[links.pcie_busbw]", "[links.pcie_bw]"), "unknown fact 'links.pcie_bw'"},
       {with("[kernels.gap]", "[kernel.gap]"), "unknown section [kernel]"},
       {with("[memory.runtime]\nvalue = 0.75", "[memory.runtime]\nvalue = 0.75\nvalu = 1"), "[memory.runtime]: unknown key 'valu'"},
       {builtin.substr(0, builtin.find("[default_batch.onnx]")) + builtin.substr(builtin.find("# MIG profiles")), "no [default_batch.onnx]"},
       {builtin.substr(0, builtin.find("# MIG profiles")), "no [[mig_profile]] entries"},
       {with("compute_slices = 3\n", "compute_slices = 8\n"), "compute_slices must be a whole number from 1 to 7"},
       {with("compute_slices = 3\n", "compute_slices = 2\n"), "ascending, once each"},
       {with("memory_eighths = 4\nsource = \"NVIDIA MIG user guide: 3g.40gb\"", "memory_eighths = 4"), "needs compute_slices, memory_eighths and its source"},
       {with("memory_eighths = 1\n", "memory_eigths = 1\n"), "unknown key 'memory_eigths'"},
       {with("compute_capabilities = [\"8.6\", \"8.7\", \"8.9\", \"12.0\", \"12.1\"]\n", ""), "[kernels.shared_lane_fp32] needs compute_capabilities"},
       {with("compute_capabilities = [\"8.6\", \"8.7\", \"8.9\", \"12.0\", \"12.1\"]", "compute_capabilities = [8.6]"),
        "[kernels.shared_lane_fp32] compute_capabilities must be strings"},
       {with("[memory.runtime]\nvalue = 0.75", "[memory.runtime]\nvalue = 0.75\ncompute_capabilities = [\"8.6\"]"),
        "[memory.runtime]: unknown key 'compute_capabilities' (expected value, unit, source)"}},
      [](const std::string& text) { parse_system_facts(text, "system.toml"); });
  EXPECT_EQ(f.shared_lane_compute_capabilities, (std::vector<std::string>{"8.6", "8.7", "8.9", "12.0", "12.1"}));
  // NVLink SHARP's share per switch generation names its boards' compute capabilities the same way.
  EXPECT_EQ(f.nvls_hopper.compute_capabilities, (std::vector<std::string>{"9.0"}));
  EXPECT_EQ(f.nvls_blackwell.compute_capabilities, (std::vector<std::string>{"10.0", "10.3"}));
  EXPECT_DOUBLE_EQ(f.nvls_hopper.efficiency, 0.85);
  test::expect_refused({{test::replaced(builtin, "compute_capabilities = [\"9.0\"]\n", ""), "[nccl.nvls_efficiency_hopper] needs compute_capabilities"}},
                       [](const std::string& text) { parse_system_facts(text, "system.toml"); });
  const auto src = builtin.find("source = ", builtin.find("[host.stream_fraction]"));
  const std::string unsourced = with(builtin.substr(src, builtin.find('\n', src) - src), "source = \"\"");
  EXPECT_NE(test::input_error_of([&] { parse_system_facts(unsourced, "system.toml"); }).find("[host.stream_fraction] needs its source"),
            std::string::npos);
  EXPECT_GT(test::fuzz_parser(builtin, "[]\"=.#\n -0123456789abcdefgilmnorstuvw_", 600, 23,
                              [](const std::string& t, const std::string& w) { parse_system_facts(t, w); }),
            0);
}

TEST(SystemFacts, AUsersFileChangesOnlyTheFactsItHoldsForTheRun) {
  const SystemFacts& base = builtin_system_facts();
  std::vector<std::string> changed;
  const SystemFacts f = parse_system_facts_over("[links.pcie_busbw]\nvalue = 0.6\nunit = \"fraction\"\nsource = \"our nccl-tests\"\n"
                                                "[server.gpus]\nvalue = 4\nunit = \"GPUs\"\nsource = \"our servers\"\n",
                                                "mine.toml", base, &changed);
  EXPECT_DOUBLE_EQ(f.pcie_busbw, 0.6);
  EXPECT_EQ(f.gpus_per_server, 4);
  EXPECT_DOUBLE_EQ(f.nvlink_busbw, base.nvlink_busbw);  // the rest kept
  EXPECT_EQ(f.mig_profiles.size(), base.mig_profiles.size());
  EXPECT_EQ(changed, (std::vector<std::string>{"links.pcie_busbw = 0.6 fraction", "server.gpus = 4 GPUs"}));
  EXPECT_EQ(parse_system_facts_over("", "empty.toml", base).gpus_per_server, base.gpus_per_server);
  test::expect_refused({{"[links.pcie_busbw]\nvalue = 0.6\nunit = \"fraction\"\n", "mine.toml:1: [links.pcie_busbw] needs its source"},
                        {"[links.pcie_busbw]\nvalue = 60\nunit = \"%\"\nsource = \"s\"\n", "[links.pcie_busbw] is in fraction, not '%'"},
                        {"[links.pci]\nvalue = 0.6\nunit = \"fraction\"\nsource = \"s\"\n", "mine.toml:1: unknown fact 'links.pci'"},
                        {"[server.gpus]\nvalue = 0\nunit = \"GPUs\"\nsource = \"s\"\n", "[server.gpus] = 0 is outside (0, 1024]"}},
                       [&](const std::string& text) { parse_system_facts_over(text, "mine.toml", base); });
  // Installed, every pricer reads them; the scope's end restores the built-in facts.
  {
    const ScopedSystemFacts scope(f);
    EXPECT_EQ(system_facts().gpus_per_server, 4);
  }
  EXPECT_EQ(system_facts().gpus_per_server, base.gpus_per_server);
}

TEST(Fit, LeaveOneSourceOutRefitsWithoutTheHeldOutFile) {
  // Two small sources: each fold fits on the other only, and the held-out source's rows never enter it.
  const std::string head = "id,gpu,n_gpus,workload,mode,precision,batch_per_gpu,options,value,unit,per,source\n";
  auto rows = read_published(head + "a1,a100-80gb-sxm,1,resnet50,train,amp-fp16,256,,1000,images/s,gpu,A\n"
                                    "a2,v100-sxm2-16gb,1,resnet50,train,amp-fp16,256,,500,images/s,gpu,A\n",
                             "d/a.csv");
  const auto b = read_published(head + "b1,rtx-4090,1,resnet50,train,amp-fp16,256,,900,images/s,gpu,B\n", "d/b.csv");
  rows.insert(rows.end(), b.begin(), b.end());
  const auto folds = leave_one_source_out(cat(), rows);
  ASSERT_EQ(folds.size(), 2u);
  EXPECT_EQ(folds[0].summary.file, "a");
  EXPECT_EQ(folds[0].fit.rows, 1);                 // fitted on b only
  EXPECT_FALSE(folds[0].fit.classes_fitted[0]);    // no data-centre rows left: it borrows the GeForce fractions
  EXPECT_TRUE(folds[0].fit.classes_fitted[1]);
  EXPECT_DOUBLE_EQ(folds[0].fit.constants.of(DeviceClass::datacenter).gemm, folds[0].fit.constants.of(DeviceClass::geforce).gemm);
  EXPECT_DOUBLE_EQ(folds[0].fit.constants.of(DeviceClass::datacenter).conv, folds[0].fit.constants.of(DeviceClass::geforce).conv);
  EXPECT_EQ(folds[1].fit.rows, 2);
  EXPECT_EQ(folds[1].fit.constants.fitted_on, std::vector<std::string>{"a"});
  // A fit moves the constants towards the data: the measured rate is reproduced closely on the rows fitted.
  const FitResult f = fit_constants(cat(), b);
  const ScopedConstants scope(f.constants);
  const ValidationReport rep = validate(cat(), b);
  ASSERT_TRUE(rep.rows[0].ape);
  EXPECT_LT(*rep.rows[0].ape, 0.05);
}

TEST(Predictor, Fp32ThreeByThreeConvolutionsAreWinogradOthersImplicitGemm) {
  // ResNet-50's training step: its 3x3 stride-1 convolutions (and their gradients) do 16/36 of the direct
  // multiplies in FP32 on CUDA cores; the stem (3 channels), strided and 1x1 convolutions, and every
  // tensor-core precision keep the direct count.
  const ir::Graph g = models::build_network(models::network("resnet50"), {8, ir::DType::f32, 0, false, true});
  const catalog::Gpu& v100 = cat().find("v100-sxm2-16gb");
  const PrecisionPlan fp32 = plan_precision(Precision::fp32, v100), amp = plan_precision(Precision::amp_fp16, v100);
  int winograd = 0, direct = 0;
  for (const auto& n : g.nodes()) {
    if (n.op != ir::OpKind::conv2d && n.op != ir::OpKind::conv2d_grad_input && n.op != ir::OpKind::conv2d_grad_weight) {
      EXPECT_EQ(conv_flop_factor(g, n, fp32), 1.0);
      continue;
    }
    const ir::Node& conv = n.op == ir::OpKind::conv2d ? n : g.node(n.ref);
    const bool three = conv.kernel_h == 3 && conv.stride_h == 1 && g.node(conv.inputs[0]).shape[1] >= 32;
    EXPECT_DOUBLE_EQ(conv_flop_factor(g, n, fp32), three ? 16.0 / 36.0 : 1.0) << n.name;
    EXPECT_DOUBLE_EQ(conv_flop_factor(g, n, amp), 1.0) << n.name;
    (three ? winograd : direct)++;
  }
  EXPECT_GT(winograd, 30);  // 16 blocks' 3x3 convs (minus the strided ones), forward and gradients
  EXPECT_GT(direct, 100);
  // The FP32 step is faster than it would be at the direct count, and still not faster than the peak allows
  // for the FLOPs it does.
  const StepPrediction p = predict_graph(g, v100, fp32);
  EXPECT_GT(p.matrix_flops / p.step_s, 0.0);
  EXPECT_LT(p.matrix_flops / p.step_s, v100.fp32_tflops * 1e12);
}

TEST(Predictor, ChannelsFirstTensorCoreConvolutionsPayForTransposes) {
  PredictRequest r;
  r.workload = "resnet50";
  r.gpu = "a100-80gb-sxm";
  r.batch = 256;
  r.precision = Precision::amp_fp16;
  const Prediction by_default = predict(cat(), r);
  EXPECT_EQ(by_default.memory_format, "nchw");  // the pytorch profile: PyTorch's contiguous layout
  r.options = {{"memory_format", "nhwc"}};
  const Prediction nhwc = predict(cat(), r);
  r.options = {{"memory_format", "nchw"}};
  const Prediction nchw = predict(cat(), r);
  EXPECT_EQ(nchw.memory_format, "nchw");
  EXPECT_DOUBLE_EQ(nchw.throughput, by_default.throughput);
  EXPECT_GT(nchw.detail.kernels, nhwc.detail.kernels);  // two memory-bound transposes around each non-1x1 pass
  // Channels-last "accelerates ResNet-50 on ImageNet by about 30% on V100 and A100" (MosaicML Composer's
  // channels_last method card, from NVIDIA's figures): 1.15x to 1.45x here.
  EXPECT_GT(nhwc.throughput / nchw.throughput, 1.15);
  EXPECT_LT(nhwc.throughput / nchw.throughput, 1.45);
  // FP32 on CUDA cores reads NCHW natively: no transposes.
  r.precision = Precision::fp32;
  const double fp32_nchw = predict(cat(), r).throughput;
  r.options = {{"memory_format", "nhwc"}};
  EXPECT_DOUBLE_EQ(fp32_nchw, predict(cat(), r).throughput);
  r.options = {{"memory_format", "nchw"}};
  r.workload = "bert-base";
  EXPECT_THROW(predict(cat(), r), InputError);  // not a convolutional workload
  r.workload = "resnet50";
  r.options = {{"memory_format", "chwn"}};
  EXPECT_THROW(predict(cat(), r), InputError);
}

TEST(Predictor, OneByOneConvolutionsRunOnChannelsFirstDataAsTheyLie) {
  // A 1x1 stride-1 convolution over NCHW is a GEMM per image (K x C times C x HW): no transposes. A 3x3
  // one pays two read-and-write passes over its input and output for each of its three kernels.
  const catalog::Gpu& a100 = cat().find("a100-80gb-sxm");
  const PrecisionPlan amp = plan_precision(Precision::amp_fp16, a100);
  for (const int k : {1, 3}) {
    ir::Graph g;
    const ir::NodeId x = g.input("x", {64, 256, 28, 28}, ir::DType::f16);
    const ir::NodeId w = g.param("w", {256, 256, k, k}, ir::DType::f16);
    const ir::NodeId y = g.conv2d("conv", x, w, ir::kNone, 1, k / 2);
    g.conv2d_grad_input("dx", y, y);
    g.conv2d_grad_weight("dw", y, y);
    const StepPrediction nhwc = predict_graph(g, a100, amp, efficiency_for(a100, amp), ConvLayout::nhwc);
    const StepPrediction nchw = predict_graph(g, a100, amp, efficiency_for(a100, amp), ConvLayout::nchw);
    const double activations = 2.0 * 64 * 256 * 28 * 28;  // input and output, elements
    if (k == 1) {
      EXPECT_DOUBLE_EQ(nchw.step_s, nhwc.step_s);
      EXPECT_EQ(nchw.kernels, nhwc.kernels);
    } else {
      EXPECT_DOUBLE_EQ(nchw.bytes - nhwc.bytes, 3 * 2.0 * activations * 2);  // 3 kernels x read+write x 2 B
      EXPECT_EQ(nchw.kernels - nhwc.kernels, 6);
      EXPECT_GT(nchw.step_s, nhwc.step_s);
    }
  }
}


TEST(Parallel, LayoutsDivideOrSayWhy) {
  const ParallelLayout l = make_layout(1024, 8, 8, 1, 6, 1, 2048, 96, 96, 2048, "ib-ndr-8x400");
  EXPECT_EQ(l.dp, 16);
  EXPECT_EQ(l.micro_batches, 128);  // 2048 / (16 x 1)
  EXPECT_EQ(make_layout(64, 1, 1, 1, 1, 4, 0, 32, 32, 4096, "ib-ndr-8x400").global_batch, 256);  // no accumulation
  for (const auto& [what, expect] : std::vector<std::pair<std::function<void()>, std::string>>{
           {[] { make_layout(100, 8, 1, 1, 1, 1, 0, 32, 32, 2048, "x"); }, "100 GPUs do not divide"},
           {[] { make_layout(96, 6, 1, 1, 1, 1, 0, 32, 32, 2048, "x"); }, "tp=6 does not divide the 32 attention heads"},
           {[] { make_layout(64, 1, 8, 1, 3, 1, 0, 32, 32, 2048, "x"); }, "pp=8 x vp=3 does not divide the 32 layers"},
           {[] { make_layout(64, 1, 1, 1, 2, 1, 0, 32, 32, 2048, "x"); }, "vp > 1 (interleaved stages) needs pp > 1"},
           {[] { make_layout(64, 1, 1, 3, 1, 1, 0, 32, 32, 2048, "x"); }, "64 GPUs do not divide"},
           {[] { make_layout(64, 1, 1, 1, 1, 2, 100, 32, 32, 2048, "x"); }, "global_batch=100 is not a multiple"}}) {
    try {
      what();
      ADD_FAILURE() << expect;
    } catch (const InputError& e) {
      EXPECT_NE(std::string(e.what()).find(expect), std::string::npos) << e.what();
    }
  }
}

TEST(Parallel, GroupsStayOnNvlinkInsideANodeAndCrossTheNetworkBeyond) {
  const catalog::Gpu& h100 = cat().find("h100-sxm");
  ParallelLayout l = make_layout(1024, 8, 8, 1, 1, 1, 0, 96, 96, 2048, "ib-ndr-8x400");
  EXPECT_EQ(group_link(h100, l, l.tp, 1).kind, "nvlink");            // tp 8: one node
  EXPECT_EQ(group_link(h100, l, l.dp, l.tp).kind, "network");        // dp ranks 8 apart: other nodes
  EXPECT_NEAR(group_link(h100, l, l.dp, l.tp).bus_gbs, 50 * 0.8, 1e-12);
  EXPECT_EQ(group_link(h100, l, 2, l.tp * l.dp).kind, "network");    // neighbouring pipeline stages
  const ParallelLayout small = make_layout(8, 2, 1, 1, 1, 1, 0, 32, 32, 2048, "ib-ndr-8x400");
  EXPECT_EQ(group_link(h100, small, small.dp, small.tp).kind, "nvlink");  // dp 4 x tp 2 still inside one node
  // Several of a group's ranks on each node: NCCL's rings cross between nodes on every rank's NIC at once, so 16 ranks
  // over two nodes run at the slower of 8 NICs and NVLink (the real two-node nccl-tests run: 339 GB/s busbw,
  // tests/data/nccl-tests); 2 ranks a node (dp ranks 4 apart) at two NICs.
  const ParallelLayout wide = make_layout(16, 1, 1, 1, 1, 1, 0, 32, 32, 2048, "ib-hdr-8x200");
  const Link sixteen = group_link(h100, wide, 16, 1);
  EXPECT_EQ(sixteen.kind, "network");
  EXPECT_NEAR(sixteen.bus_gbs, std::min(8 * 25 * 0.8, link_for(h100, 8).bus_gbs), 1e-9);
  const ParallelLayout strided = make_layout(64, 4, 4, 1, 1, 1, 0, 32, 32, 2048, "ib-ndr-8x400");
  EXPECT_NEAR(group_link(h100, strided, strided.dp, strided.tp).bus_gbs, 2 * 50 * 0.8, 1e-9);
  // A pipeline boundary across nodes: each of the stage's 4 tp ranks sends its quarter on its own NIC (Megatron's
  // scatter/gather); a send between one pair of ranks alone keeps one NIC.
  StageCost cost;
  TrafficShape shape;
  shape.tokens = 2048;
  shape.hidden = 8192;
  shape.act_bytes = 2;
  shape.stage_layers = 8;
  const ParallelStep piped = parallel_step(h100, strided, cost, shape);
  EXPECT_EQ(piped.pp_link.kind, "network");
  EXPECT_NEAR(piped.pp_link.bus_gbs, 4 * 50 * 0.8, 1e-9);
  EXPECT_NEAR(group_link(h100, strided, strided.pp, 16, false).bus_gbs, 50 * 0.8, 1e-9);
  // An NVL72 domain keeps a 64-rank group on NVLink; GeForce cards without P2P stay on PCIe inside a node.
  const ParallelLayout rack = make_layout(64, 8, 1, 1, 1, 1, 0, 96, 96, 2048, "nvl72");
  EXPECT_EQ(group_link(cat().find("b200"), rack, rack.dp, rack.tp).kind, "nvlink");
  EXPECT_EQ(group_link(cat().find("rtx-4090"), small, 2, 1).kind, "pcie-via-host");
  EXPECT_THROW(fabric_by_id("ib-xdr"), InputError);
  std::string why;
  EXPECT_EQ(default_fabric(cat().find("a100-80gb-sxm"), &why).id, "ib-hdr-8x200");
  EXPECT_NE(why.find("network=ID"), std::string::npos);
  EXPECT_EQ(default_fabric(cat().find("l40s")).id, "eth-100");
}

TEST(Parallel, StepArithmeticBubbleAccumulationAndDataParallelOverlap) {
  const catalog::Gpu& h100 = cat().find("h100-sxm");
  StageCost c;
  c.compute_s = 0.1;
  c.backward_s = 0.06;
  c.optimizer_s = 0.01;
  c.params = 1e9;
  TrafficShape t;
  t.tokens = 4096;
  t.hidden = 8192;
  t.stage_layers = 10;
  const ParallelLayout l = make_layout(512, 8, 4, 1, 2, 1, 256, 80, 64, 4096, "ib-ndr-8x400");  // dp 16, m 16
  const ParallelStep s = parallel_step(h100, l, c, t);
  // Bubble (p - 1)/v micro-batches; m micro-batches; the DP reduction beyond the last backward; optimizer once.
  EXPECT_NEAR(s.bubble_s, 3.0 / 2.0 * s.microbatch_s, 1e-12);
  EXPECT_NEAR(s.step_s, 16 * s.microbatch_s + s.bubble_s + s.dp_exposed_s + 0.01, 1e-12);
  // TP: 4 all-reduces per layer of tokens x hidden x 2 bytes over 8 ranks on NVLink.
  EXPECT_NEAR(s.tp_s, 4 * 10 * allreduce_seconds(4096.0 * 8192 * 2, 8, link_for(h100, 8)), 1e-12);
  EXPECT_NEAR(s.dp_s, allreduce_seconds(2e9, 16, group_link(h100, l, 16, 8)), 1e-12);
  EXPECT_GE(s.dp_exposed_s, s.dp_s - 0.06);
  // Full recompute repeats the forward all-reduces: 6 per layer.
  t.recompute_full = true;
  EXPECT_NEAR(parallel_step(h100, l, c, t).tp_s, 1.5 * s.tp_s, 1e-12);
}

TEST(Parallel, PublishedScaleRunsArePricedPerRank) {
  // Megatron-LM's 1T-class runs are not validated yet (framework profiles), but the arithmetic must hold:
  // per-GPU rate falls with the bubble, and rises when the same GPUs carry more micro-batches.
  PredictRequest r;
  r.workload = "gpt3-175b";
  r.gpu = "h100-sxm";
  r.gpus = 1024;
  r.batch = 1;
  r.precision = Precision::amp_bf16;
  r.options = {{"tp", "8"}, {"pp", "8"}, {"global_batch", "512"}};
  const Prediction few = predict(cat(), r);
  r.options["global_batch"] = "4096";
  const Prediction many = predict(cat(), r);
  EXPECT_EQ(few.micro_batches, 32);
  EXPECT_EQ(many.micro_batches, 256);
  EXPECT_GT(many.throughput, few.throughput * 1.15);  // the bubble 7/32 -> 7/256 of the work
  EXPECT_EQ(many.unit, "tokens/s");
  // Model FLOPs utilisation stays physical: 6 N tokens/s per GPU below the dense BF16 peak.
  const double mfu = 6 * 174.6e9 * many.throughput / (*cat().find("h100-sxm").bf16.dense * 1e12);
  EXPECT_GT(mfu, 0.2);
  EXPECT_LT(mfu, 0.8);
  EXPECT_TRUE(many.memory.fits);
  r.options["vp"] = "4";
  EXPECT_LT(predict(cat(), r).bubble_s, many.bubble_s);  // interleaving shrinks the bubble
  r.options = {{"tp", "8"}, {"pp", "8"}, {"network", "ib-xdr"}};
  EXPECT_THROW(predict(cat(), r), InputError);
}

TEST(Parallel, NetworkFileErrorsNameTheLine) {
  EXPECT_EQ(parse_fabrics("[[network]]\nid = \"a\"\nname = \"A\"\ngbs_per_gpu = 50\nlatency_us = 5\nsource = \"s\"\n", "n.toml").size(), 1u);
  for (const std::string bad : {"[[network]]\nid = \"a\"\nname = \"A\"\ngbs_per_gpu = -5\nlatency_us = 5\nsource = \"s\"\n",
                                "[[network]]\nname = \"A\"\ngbs_per_gpu = 5\nlatency_us = 5\nsource = \"s\"\n", "x = 1\n",
                                "[[network\n"}) {
    try {
      parse_fabrics(bad, "n.toml");
      ADD_FAILURE() << bad;
    } catch (const InputError& e) {
      EXPECT_EQ(std::string(e.what()).rfind("n.toml", 0), 0u) << e.what();
    }
  }
  const std::string builtin = files::read_all(std::string(GPUVS_SOURCE_DIR) + "/data/networks.toml", "data");
  EXPECT_GT(test::fuzz_parser(builtin, "[]\"=,.#\n -0123456789abdeilnrstuw_", 800, 13,
                        [](const std::string& t, const std::string& w) { parse_fabrics(t, w); }),
            0);
}

#include "perf/framework.hpp"
#include "perf/maturity.hpp"

TEST(Framework, ProfilesSetDefaultsTheCallerLeftAndSayWhatTheyLeaveOut) {
  for (const char* id : {"pytorch", "tensorflow", "megatron", "nemo", "composer", "llm.c"}) {
    const FrameworkProfile& f = framework(id);
    EXPECT_FALSE(f.source.empty()) << id;
  }
  EXPECT_THROW(framework("jax"), InputError);
  // Megatron (2021) prices explicit attention; NeMo fused attention and the distributed optimizer.
  PredictRequest r;
  r.workload = "gpt3-175b";
  r.gpu = "a100-80gb-sxm";
  r.gpus = 512;
  r.batch = 1;
  r.precision = Precision::amp_fp16;
  r.options = {{"tp", "8"}, {"pp", "8"}, {"global_batch", "512"}, {"framework", "megatron"}};
  const Prediction meg = predict(cat(), r);
  EXPECT_EQ(meg.framework, "megatron");
  EXPECT_EQ(meg.sharding, "none");
  EXPECT_TRUE(meg.framework_unmodelled.empty());  // its fused kernels are priced (fuses)
  r.options["framework"] = "nemo";
  const Prediction nemo = predict(cat(), r);
  EXPECT_FALSE(nemo.framework_unmodelled.empty());
  EXPECT_EQ(nemo.sharding, "zero1");
  EXPECT_NEAR(nemo.memory.optimizer_bytes * 8, meg.memory.optimizer_bytes, 1.0);  // sharded over dp = 8
  EXPECT_GT(nemo.throughput, meg.throughput);                              // fused attention
  r.options["flash_attention"] = "0";  // explicit options beat the profile
  r.options["sequence_parallel"] = "0";
  r.options["tp_overlap"] = "0";
  EXPECT_NEAR(predict(cat(), r).throughput, meg.throughput, meg.throughput * 0.02);
  // A profile's sharding does not apply to one GPU; its layout only to convolutional networks.
  PredictRequest one;
  one.workload = "llama-7b";
  one.gpu = "h100-sxm";
  one.batch = 1;
  one.options = {{"framework", "composer"}};
  EXPECT_EQ(predict(cat(), one).sharding, "none");
  one.options = {{"framework", "tensorflow"}};
  EXPECT_NO_THROW(predict(cat(), one));
  one.options = {{"framework", "jax"}};
  EXPECT_THROW(predict(cat(), one), InputError);
}

TEST(Framework, FileErrorsNameTheLineAndFuzzedFilesFailCleanly) {
  const std::string good = "[[framework]]\nid = \"x\"\nname = \"X\"\nsource = \"s\"\nflash_attention = \"1\"\nsharding = \"zero1\"\n"
                           "unmodelled = [\"a\"]\n";
  ASSERT_EQ(parse_frameworks(good, "f.toml").size(), 1u);
  test::expect_refused({
           {"[[framework]]\nid = \"x\"\nname = \"X\"\nsource = \"s\"\nsharding = \"zero9\"\n", "f.toml:1: sharding must be one of"},
           {"[[framework]]\nid = \"x\"\nname = \"X\"\n", "needs id, name and source"},
           {"[[framework]]\nid = \"x\"\nname = \"X\"\nsource = \"s\"\nspeed = 3\n", "unknown key 'speed'"},
           {good + good, "defined twice"},
           {"[[framework]]\nid = \"x\"\nname = \"X\"\nsource = \"s\"\nunmodelled = [1]\n", "list of strings"},
           {"[frameworks]\n", "unknown table"},
           {"[[framework]]\nid = \"x\"\nname = \"X\"\nsource = \"s\"\nlora_targets = \"all_of_them\"\n", "f.toml:1: lora_targets must be one of all, qkv, attention, mlp"},
           {"[[framework]]\nid = \"x\"\nname = \"X\"\nsource = \"s\"\nlora_rank = 0\n", "f.toml:1: lora_rank must be a whole number from 1 to 4096"},
           {"[[framework]]\nid = \"x\"\nname = \"X\"\nsource = \"s\"\nlora_rank = \"32\"\n", "lora_rank must be a whole number"},
           {"[[framework]]\nid = \"x\"\nname = \"X\"\nsource = \"s\"\nfuses = [\"everything\"]\n", "f.toml:1: fuses lists 'everything', not a known fusion (fp8-shared-input-cast,"},
           {"[[framework]]\nid = \"x\"\nname = \"X\"\nsource = \"s\"\nfuses = \"attention-views\"\n", "fuses must be a list of strings"},
           {"[[framework]]\nid = \"x\"\nname = \"X\"\nsource = \"s\"\nreleased = 2021\n", "f.toml:1: released must be a month as YYYY-MM"},
           {"[[framework]]\nid = \"x\"\nname = \"X\"\nsource = \"s\"\ninference_only = \"yes\"\n", "f.toml:1: inference_only must be true or false"},
           {"[[framework]]\nid = \"x\"\nname = \"X\"\nsource = \"s\"\ngemms = \"fast\"\n", "f.toml:1: gemms must be framework"}},
                       [](const std::string& text) { parse_frameworks(text, "f.toml"); });
  const std::string builtin = files::read_all(std::string(GPUVS_SOURCE_DIR) + "/data/frameworks.toml", "data");
  EXPECT_GT(test::fuzz_parser(builtin, "[]\"=,.#\n -0123456789abcdefhlmnoprstz_", 800, 3, [](const std::string& t, const std::string& w) { parse_frameworks(t, w); }), 0);
}

// Issue 34 item 6 and mechanism 1: TensorRT builds an inference engine. Its GEMMs are tactics it timed on the card (the
// card's achievable rate, data/achievable.toml, as serving engines reach), not the fraction eager frameworks reach; its
// plugins fuse what eager code runs apart: q, k and v in one GEMM, attention reading the projections' output, the
// residual add inside the layer norm, the GeLU in its GEMM's epilogue.
TEST(Framework, TensorRtEnginesFuseWhatEagerCodeRunsApartAndTimeTheirGemms) {
  PredictRequest r;
  r.workload = "bert-large";
  r.gpu = "a100-80gb-sxm";
  r.precision = Precision::fp16;
  r.training = false;
  r.batch = 32;
  r.options = {{"seq_len", "384"}, {"flash_attention", "1"}};
  const Prediction eager = predict(cat(), r);
  r.options["framework"] = "tensorrt";
  const Prediction trt = predict(cat(), r);
  EXPECT_EQ(trt.framework, "tensorrt");
  // Per block: 3 projections, 4 head copies, attention, output, add and norm twice, up, GeLU, down = 16 kernels eager;
  // one QKV GEMM, attention, output, norm (the add inside), up (the GeLU inside), down, norm = 7 for TensorRT.
  EXPECT_EQ(eager.detail.kernels - trt.detail.kernels, 24 * (16 - 7)) << eager.detail.kernels << " " << trt.detail.kernels;
  EXPECT_NEAR(trt.detail.matrix_flops, eager.detail.matrix_flops, 1e-9 * eager.detail.matrix_flops);  // the same math
  EXPECT_LT(trt.detail.bytes, 0.8 * eager.detail.bytes);
  EXPECT_EQ(trt.params, eager.params);
  // Its GEMMs reach the card's achievable FP16 rate; the eager ones the fitted datacenter fraction, which is lower.
  double trt_gemm = 0, eager_gemm = 0;
  for (const auto& op : trt.detail.ops) trt_gemm = std::max(trt_gemm, op.bound == Bound::compute ? op.efficiency : 0.0);
  for (const auto& op : eager.detail.ops) eager_gemm = std::max(eager_gemm, op.bound == Bound::compute ? op.efficiency : 0.0);
  EXPECT_GT(trt_gemm, eager_gemm * 1.05);
  EXPECT_GT(trt.throughput, 1.2 * eager.throughput);
  // FP8 engines time FP8 tactics: the H100's FP8 figure (a smaller share of its FP8 peak than BF16's of its BF16 peak).
  {
    PredictRequest f = r;
    f.gpu = "h100-sxm";
    const auto efficiency = [&](Precision p) {
      f.precision = p;
      double best = 0;
      for (const auto& op : predict(cat(), f).detail.ops) best = std::max(best, op.bound == Bound::compute ? op.efficiency : 0.0);
      return best;
    };
    const catalog::Gpu& h100 = cat().find("h100-sxm");
    const double fp8 = achievable(cat(), h100, "gemm-fp8")->fraction, bf16 = achievable(cat(), h100, "gemm-bf16")->fraction;
    ASSERT_LT(fp8, bf16);
    EXPECT_NEAR(efficiency(Precision::amp_fp8) / efficiency(Precision::amp_bf16), fp8 / bf16, 0.03);
  }
  // An engine builder does not train.
  r.training = true;
  const std::string e = test::input_error_of([&] { predict(cat(), r); });
  EXPECT_NE(e.find("framework=tensorrt builds inference engines: --mode infer, not train"), std::string::npos) << e;
  // The fused QKV is one GEMM over the three projections' weights: the same parameters and products, two fewer GEMMs.
  models::NetworkOptions o{4, ir::DType::f16, 128, true, false};
  const ir::Graph three = models::build_network(models::network("bert-base"), o);
  o.fused_qkv = true;
  const ir::Graph one = models::build_network(models::network("bert-base"), o);
  const auto matmuls = [](const ir::Graph& g) {
    return std::count_if(g.nodes().begin(), g.nodes().end(), [](const ir::Node& n) { return n.op == ir::OpKind::matmul; });
  };
  EXPECT_EQ(matmuls(three) - matmuls(one), 12 * 2);
  EXPECT_EQ(models::param_count(three), models::param_count(one));
}

// Issue 34 mechanism 3: software maturity on a new architecture. A stack released before the kernels it links used an
// architecture's own instructions runs them at data/software-maturity.toml's share: Megatron-LM's 2021 code on an H100
// (CUDA 11.x, before any sm_90 toolkit: Ampere-style GEMMs at 0.5 of cuBLAS's Hopper ones), FlashAttention-2-era fused
// attention on Hopper (35% of the peak against FlashAttention-3's 75%), an MI300X before ROCm 6.2's hipBLASLt (450
// against 758 TFLOP/s). A native stack, an undated profile (today's release) or an older architecture moves nothing.
TEST(Maturity, AStackOlderThanTheCardsNativeKernelsRunsThemAtTheirShare) {
  const catalog::Gpu& h100 = cat().find("h100-sxm");
  const MaturityEffect matrix = maturity_effect(h100, "megatron", parse_month("2021-04", "t"), false);
  EXPECT_DOUBLE_EQ(matrix.matrix_share, 0.5);
  EXPECT_DOUBLE_EQ(matrix.attention_share, 1.0);  // explicit attention is matrix work
  ASSERT_EQ(matrix.notes.size(), 1u);
  EXPECT_NE(matrix.notes[0].find("megatron (2021-04) predates Hopper's native matrix kernels (2022-10: CUDA 11.8"), std::string::npos)
      << matrix.notes[0];
  const MaturityEffect fused = maturity_effect(h100, "x", parse_month("2023-09", "t"), true);
  EXPECT_DOUBLE_EQ(fused.matrix_share, 1.0);  // cuBLAS was native by then; FlashAttention-3 was not
  EXPECT_DOUBLE_EQ(fused.attention_share, 0.47);
  EXPECT_FALSE(maturity_effect(h100, "x", parse_month("2024-07", "t"), true).applies());
  EXPECT_FALSE(maturity_effect(h100, "x", 0, true).applies());  // undated: today's release
  EXPECT_FALSE(maturity_effect(cat().find("a100-80gb-sxm"), "x", parse_month("2021-04", "t"), true).applies());
  EXPECT_DOUBLE_EQ(maturity_effect(cat().find("mi300x"), "x", parse_month("2024-04", "t"), true).matrix_share, 0.59);
  EfficiencyParams eff;
  const double gemm = eff.gemm_max, conv = eff.conv_max, attention = eff.attention_max;
  apply_maturity(eff, fused);
  EXPECT_DOUBLE_EQ(eff.gemm_max, gemm);
  EXPECT_DOUBLE_EQ(eff.conv_max, conv);
  EXPECT_DOUBLE_EQ(eff.attention_max, attention * 0.47);
  // Months: YYYY-MM only.
  EXPECT_EQ(month_text(parse_month("2022-10", "t")), "2022-10");
  for (const char* bad : {"2022-13", "22-10", "2022/10", "2022-1", "", "1900-01", "２０２２-10"}) EXPECT_THROW(parse_month(bad, "t"), InputError) << bad;
  EXPECT_EQ(release_of({}, 7), 7);
  EXPECT_EQ(release_of({{"release", "2023-01"}}, 7), parse_month("2023-01", "t"));
  EXPECT_THROW(release_of({{"release", "soon"}}, 7), InputError);
}

// The training prediction: priced lower, said, and a band that reaches a native stack's throughput both ways.
TEST(Maturity, APredictionOfAnOldStackSaysWhyAndWidensItsBand) {
  PredictRequest r;
  r.workload = "gpt";
  r.gpu = "h100-sxm";
  r.batch = 4;
  r.precision = Precision::amp_bf16;
  r.options = {{"layers", "12"}, {"hidden", "1024"}, {"heads", "16"}, {"seq_len", "1024"}, {"framework", "megatron"}};
  const Prediction old = predict(cat(), r);
  ASSERT_FALSE(old.maturity_notes.empty());
  EXPECT_GT(old.native_throughput, 1.2 * old.throughput);
  const double r_native = old.native_throughput / old.throughput;
  EXPECT_NEAR(old.band_high, model_band().high(old.throughput) * r_native, 1e-9 * old.band_high);
  EXPECT_NEAR(old.band_low, model_band().low(old.throughput) / r_native, 1e-9 * old.band_low);
  r.options["release"] = "2023-06";  // the same profile, a release with Hopper's GEMMs
  const Prediction newer = predict(cat(), r);
  EXPECT_TRUE(newer.maturity_notes.empty());
  EXPECT_NEAR(newer.throughput, old.native_throughput, 1e-9 * newer.throughput);
  EXPECT_DOUBLE_EQ(newer.band_high, model_band().high(newer.throughput));
  r.options.erase("release");
  r.gpu = "a100-80gb-sxm";  // the 2021 code's own card
  EXPECT_TRUE(predict(cat(), r).maturity_notes.empty());
  r.options["release"] = "last year";
  EXPECT_THROW(predict(cat(), r), InputError);
}

// The table's refusals name the file and line; fuzzed tables fail cleanly.
TEST(Maturity, TableErrorsNameTheLineAndFuzzedTablesFailCleanly) {
  const std::string builtin = files::read_all(std::string(GPUVS_SOURCE_DIR) + "/data/software-maturity.toml", "data");
  EXPECT_EQ(parse_kernel_maturity(builtin, "m.toml").size(), kernel_maturity().size());
  const auto with = [&](const std::string& from, const std::string& to) { return test::replaced(builtin, from, to); };
  test::expect_refused({{with("share_before = 0.5\n", "share_before = 1.5\n"), "m.toml:10: share_before must be a number in (0, 1]"},
                        {with("native_since = \"2022-10\"", "native_since = \"Oct 2022\""), "m.toml:10: native_since must be a month as YYYY-MM"},
                        {with("kernels = \"matrix\"", "kernels = \"vector\""), "m.toml:10: kernels must be matrix or attention"},
                        {with("share_before = 0.5\n", ""), "m.toml:10: [[kernels]] needs kernels, architecture"},
                        {with("share_before = 0.5\n", "share_before = 0.5\nspeedup = 2\n"), "m.toml:10: unknown key 'speedup'"},
                        {with("compute_capabilities = [\"gfx942\"]", "compute_capabilities = [\"9.0\"]"), "matrix kernels on compute capability 9.0 are listed twice"},
                        {"[kernel]\n", "unknown table 'kernel'"}},
                       [](const std::string& text) { parse_kernel_maturity(text, "m.toml"); });
  EXPECT_GT(test::fuzz_parser(builtin, "[]\"=,.#\n -0123456789acehikmnrstx_", 800, 5,
                              [](const std::string& t, const std::string& w) { parse_kernel_maturity(t, w); }),
            0);
}

TEST(Parallel, SequenceParallelismTpOverlapAndFp8CastsAreWhatTheyClaim) {
  PredictRequest r;
  r.workload = "llama2-70b";
  r.gpu = "h100-sxm";
  r.gpus = 64;
  r.batch = 1;
  r.precision = Precision::amp_bf16;
  r.options = {{"tp", "8"}, {"pp", "4"}, {"global_batch", "128"}, {"seq_len", "4096"}};
  const Prediction plain = predict(cat(), r);
  r.options["sequence_parallel"] = "1";
  const Prediction sp = predict(cat(), r);
  EXPECT_LT(sp.microbatch_s, plain.microbatch_s);  // norms, adds and dropout on 1/8 of the tokens
  EXPECT_DOUBLE_EQ(sp.tp_comm_s, plain.tp_comm_s);  // the same traffic (reduce-scatter + all-gather)
  r.options["tp_overlap"] = "1";
  const Prediction overlap = predict(cat(), r);
  EXPECT_LT(overlap.tp_comm_s, sp.tp_comm_s);       // hidden behind the GEMMs as far as they last
  EXPECT_GE(overlap.tp_comm_s, 0.0);
  // NeMo's profile turns both on; Megatron 2021's neither.
  r.options = {{"tp", "8"}, {"pp", "4"}, {"global_batch", "128"}, {"seq_len", "4096"}, {"framework", "nemo"}, {"sharding", "none"}};
  EXPECT_NEAR(predict(cat(), r).microbatch_s, overlap.microbatch_s, overlap.microbatch_s * 0.2);
  // FP8 (Transformer Engine): cast kernels around every trained linear layer, none in BF16.
  PredictRequest one;
  one.workload = "llama2-7b";
  one.gpu = "h100-sxm";
  one.batch = 1;
  one.options = {{"seq_len", "2048"}};
  one.precision = Precision::amp_bf16;
  const Prediction bf16 = predict(cat(), one);
  one.precision = Precision::amp_fp8;
  const Prediction fp8 = predict(cat(), one);
  EXPECT_GT(fp8.detail.kernels, bf16.detail.kernels + 3 * 32 * 7);  // 7 linear layers per block, 3 casts each
  EXPECT_GT(fp8.detail.bytes, bf16.detail.bytes);
  // LoRA: the frozen base's weights are cast once and kept, the adapters stay BF16: fewer cast bytes per step.
  one.options["finetune"] = "lora";
  const Prediction lora = predict(cat(), one);
  one.precision = Precision::amp_bf16;
  const Prediction lora_bf16 = predict(cat(), one);
  EXPECT_LT(lora.detail.bytes - lora_bf16.detail.bytes, fp8.detail.bytes - bf16.detail.bytes);
  r.options = {{"sequence_parallel", "2"}};
  EXPECT_THROW(predict(cat(), r), InputError);
  // Pipeline sends overlap the other chunks' compute in an interleaved schedule only (Megatron's overlap_p2p_comm).
  r.options = {{"tp", "4"}, {"pp", "4"}, {"vp", "20"}, {"global_batch", "128"}, {"seq_len", "4096"}};
  const Prediction sends = predict(cat(), r);
  r.options["pp_overlap"] = "1";
  const Prediction hidden = predict(cat(), r);
  EXPECT_GT(sends.pp_comm_s, 0.0);
  EXPECT_DOUBLE_EQ(hidden.pp_comm_s, 0.0);
  EXPECT_NEAR(sends.microbatch_s - hidden.microbatch_s, sends.pp_comm_s, 1e-12);
  r.options.erase("vp");
  const Prediction plain_pp = predict(cat(), r);
  r.options["pp_overlap"] = "0";
  EXPECT_DOUBLE_EQ(predict(cat(), r).pp_comm_s, plain_pp.pp_comm_s);
}

TEST(Framework, MegatronFusesScaleMaskSoftmaxAndDropoutAdd) {
  // BERT-base (12 layers, 768 wide, 12 heads) at 384 tokens, explicit attention, BF16, one card.
  PredictRequest r;
  r.workload = "bert-base";
  r.gpu = "a100-80gb-sxm";
  r.batch = 1;
  r.precision = Precision::amp_bf16;
  r.options = {{"seq_len", "384"}};
  const Prediction eager = predict(cat(), r);
  r.options["framework"] = "megatron";
  const Prediction meg = predict(cat(), r);
  // Saved per layer: the scale-mask pass over the scores forward and back (read and write 2 B each over 12 x T^2
  // elements), and for each of the 2 dropouts before a residual add its output written and read back (2 + 2 B a
  // hidden element).
  const double t = 384, scores = 12 * t * t, hidden = 768;
  const double saved = 12 * (2 * 4.0 * scores + 2 * 4.0 * t * hidden);
  EXPECT_NEAR(eager.detail.bytes - meg.detail.bytes, saved, 0.01 * saved);
  EXPECT_LT(meg.detail.kernels, eager.detail.kernels - 12 * 4);
  EXPECT_LT(meg.step_s, eager.step_s);
  EXPECT_DOUBLE_EQ(meg.detail.matrix_flops, eager.detail.matrix_flops);
}

TEST(Framework, TransformerEngineFusionsRemoveTheCastsAndCopiesTheyClaim) {
  // llama2-7b at 2,048 tokens on one H100, FP8: the pytorch profile casts each of the 7 GEMM inputs, the 7 output
  // gradients and the weights apart and permutes q, k, v and the attention output by copies; NeMo's does not.
  PredictRequest r;
  r.workload = "llama2-7b";
  r.gpu = "h100-sxm";
  r.batch = 1;
  r.precision = Precision::amp_fp8;
  r.options = {{"seq_len", "2048"}};
  const Prediction eager = predict(cat(), r);
  r.options["framework"] = "nemo";
  const Prediction te = predict(cat(), r);
  const double tokens = 2048, hidden = 4096, ffn = 11008, layers = 32, bf16 = 2;
  // Saved per block and token (bytes): the input casts of k and v (the fused QKV reads one), of q (its norm writes
  // FP8), of gate and up (likewise) and of down (SwiGLU writes FP8): 4 B per element each; the output-gradient casts
  // of gate and up (written by SwiGLU's gradient kernel): 4 B each; the second half of SwiGLU's gradient (read dY,
  // gate, up, write one: 8 B per ffn element); and 4 permute copies forward and 4 back (2 reads + writes of 2 B).
  const double casts = 4.0 * (3 * hidden + 2 * hidden + ffn) + 4.0 * 2 * ffn;
  const double swiglu_b = 4.0 * ffn * bf16;
  const double copies = 8.0 * 2.0 * hidden * bf16;
  EXPECT_NEAR(eager.detail.bytes - te.detail.bytes, tokens * layers * (casts + swiglu_b + copies), 0.01 * eager.detail.bytes);
  EXPECT_LT(te.detail.kernels, eager.detail.kernels - 32 * 8);
  EXPECT_LT(te.step_s, eager.step_s);
  EXPECT_DOUBLE_EQ(te.detail.matrix_flops, eager.detail.matrix_flops);  // the same math
  // BF16 has no casts to fuse: the permute copies go, and SwiGLU's gradient is still one kernel.
  r.precision = Precision::amp_bf16;
  const Prediction te16 = predict(cat(), r);
  r.options.erase("framework");
  EXPECT_NEAR(predict(cat(), r).detail.bytes - te16.detail.bytes, tokens * layers * (copies + swiglu_b), 1e6);
}

TEST(Validation, CollectivesAtAMessageSizeArePricedAsBusBandwidth) {
  const std::string head = "id,gpu,n_gpus,workload,mode,precision,batch_per_gpu,options,value,unit,per,source\n";
  const auto rows = read_published(head +
                                       "ar,h100-sxm,8,allreduce,micro,,,msg_bytes=1073741824;nvls=0,360,GB/s busbw,gpu,s\n"
                                       "small,h100-sxm,8,allreduce,micro,,,msg_bytes=1024,1,GB/s busbw,gpu,s\n"
                                       "nodes,h100-sxm,16,allgather,micro,,,msg_bytes=1073741824,40,GB/s busbw,gpu,s\n"
                                       "nomsg,h100-sxm,8,allreduce,micro,,,,1,GB/s busbw,gpu,s\n"
                                       "one,h100-sxm,1,allreduce,micro,,,msg_bytes=1024,1,GB/s busbw,gpu,s\n"
                                       "sharp,h100-sxm,8,allreduce,micro,,,msg_bytes=1073741824,466,GB/s busbw,gpu,s\n"
                                       "badnvls,h100-sxm,8,allreduce,micro,,,msg_bytes=1024;nvls=on,1,GB/s busbw,gpu,s\n",
                                   "d/c.csv");
  const ValidationReport rep = validate(cat(), rows);
  // Large messages inside an NVLink node as rings (nvls=0: NCCL_NVLS_ENABLE=0 or an NCCL before 2.17): the link's
  // bus bandwidth (450 GB/s per direction x 0.8), less latency; with NVLink SHARP, NCCL's default on this switch,
  // about 473 (nccl-tests on a DGX H100: 466).
  ASSERT_EQ(rep.rows[0].status, "ok") << rep.rows[0].reason;
  EXPECT_NEAR(rep.rows[0].predicted, 360, 5);
  EXPECT_LT(rep.rows[1].predicted, rep.rows[0].predicted / 10);  // latency-bound small messages
  // 16 GPUs on two nodes over NDR: the rings cross between nodes on all 8 NICs at once (8 x 50 x 0.8), or at the
  // NVLink inside a node where that is slower; less latency.
  EXPECT_NEAR(rep.rows[2].predicted, std::min(8 * 50 * 0.8, link_for(cat().find("h100-sxm"), 8).bus_gbs), 10);
  EXPECT_NE(rep.rows[3].reason.find("msg_bytes"), std::string::npos);
  EXPECT_NE(rep.rows[4].reason.find("at least 2 GPUs"), std::string::npos);
  EXPECT_NEAR(rep.rows[5].predicted, 473, 5);
  EXPECT_NE(rep.rows[6].reason.find("nvls=on must be 0 or 1"), std::string::npos) << rep.rows[6].reason;
}

TEST(Predict, InferenceStreamsAtTheMicrobenchmarkFractionTrainingAtTheFittedOne) {
  // Inference moves the minimum bytes: its memory-bound kernels run at the constants' streaming prior;
  // training keeps the fitted fraction (which absorbs batch-statistics passes and AMP casts).
  PredictRequest r;
  r.workload = "resnet50";
  r.gpu = "v100-sxm2-16gb";
  r.batch = 256;
  r.precision = Precision::fp32;
  r.training = false;
  const double infer = predict(cat(), r).throughput;
  r.training = true;
  const double train = predict(cat(), r).throughput;
  FittedConstants slower_memory = builtin_constants();
  slower_memory.bytes_per_sm_cycle /= 2;
  const ScopedConstants scope(slower_memory);
  EXPECT_LT(predict(cat(), r).throughput, train * 0.9);  // training streams at the fitted memory constants
  r.training = false;
  EXPECT_DOUBLE_EQ(predict(cat(), r).throughput, infer);  // inference at the microbenchmark's fraction
}

// One description of a card for both pricers: the peaks at the sustained clock, the bandwidth, the memory a
// process gets and the fractions (inference streaming at the microbenchmark fraction, training at the fitted one).
TEST(DeviceView, TheCardBothPricersSeeIsAssembledOnce) {
  const catalog::Gpu& h100 = cat().find("h100-sxm");
  const PrecisionPlan plan = plan_precision(Precision::amp_bf16, h100);
  const DeviceView train = device_view(h100, plan, nullptr, true);
  const DeviceView infer = device_view(h100, plan, nullptr, false);
  const double clock = sustained_clock_fraction(h100, builtin_constants().clock_headroom);
  EXPECT_LT(clock, 1.0);
  EXPECT_DOUBLE_EQ(train.clock, clock);
  EXPECT_DOUBLE_EQ(train.matrix_peak, plan.matrix_tflops * 1e12 * clock);
  EXPECT_DOUBLE_EQ(train.vector_peak, plan.vector_tflops * 1e12 * train.eff.vector_max * clock);
  EXPECT_DOUBLE_EQ(train.bandwidth, h100.memory_bandwidth_gbs * 1e9);
  EXPECT_EQ(train.eff.mem_max, efficiency_for(h100, plan).mem_max);
  EXPECT_GT(infer.eff.mem_max, train.eff.mem_max);  // no training-only traffic to absorb
  EXPECT_LE(infer.eff.mem_max, 0.98);
  EXPECT_EQ(infer.eff.gemm_max, train.eff.gemm_max);
  // The capacity a prediction reports is the view's.
  PredictRequest r;
  r.workload = "bert-base";
  r.gpu = "h100-sxm";
  r.batch = 32;
  EXPECT_DOUBLE_EQ(predict(cat(), r).memory.capacity_bytes, train.usable_bytes);
  // The clock follows the active constants.
  FittedConstants hot = builtin_constants();
  hot.clock_headroom = 1.0;
  const ScopedConstants scope(hot);
  EXPECT_GT(device_view(h100, plan, nullptr, true).matrix_peak, train.matrix_peak);
}

// --calibrate-one: a stack whose memory-bound kernels run at 0.8x the model's assumption, measured on each of three
// cards (the model's own figures with that ratio: the truth is known). Calibrated on any one card, the others come
// out exact, where a flat measured/predicted factor is off on cards whose share of memory-bound time differs.
TEST(CalibrateOne, OneCardsFigureCarriesTheStacksKernelsToTheOthersThroughTheirPhysics) {
  const std::string head = "id,gpu,n_gpus,workload,mode,precision,batch_per_gpu,options,value,unit,per,source\n";
  std::string text = head;
  StackRatios truth;
  truth.engine = "pytorch";
  truth.format = "amp-fp16";
  truth.memory = 0.8;
  truth.measured_gpus = {"rtx-3090", "a100-80gb-sxm", "h100-sxm"};  // the stack's ratio, whole on every card
  workload::Workloads workloads;
  int n = 0;
  for (const char* gpu : {"rtx-3090", "a100-80gb-sxm", "h100-sxm"}) {
    const PublishedRow r = read_published(head + fmt::format("R{},{},1,resnet50,train,amp-fp16,128,,1,images/s,gpu,s\n", n, gpu), "t.csv")[0];
    const ValidatedRow v = validate_row(cat(), r, {}, workloads, &truth);
    ASSERT_EQ(v.status, "ok") << v.reason;
    ASSERT_EQ(v.engine, "pytorch");
    ASSERT_EQ(v.format, "amp-fp16");
    text += fmt::format("R{},{},1,resnet50,train,amp-fp16,128,,{},images/s,gpu,s\n", n++, gpu, v.predicted);
  }
  const auto rows = read_published(text, "t.csv");
  // Every bit of the model's error here is the stack's: with a transfer share of 1 the physics carries it exactly.
  FittedConstants whole = active_constants();
  whole.transfer_share = 1;
  const ScopedConstants scope(whole);
  const CalibrateOneReport rep = calibrate_one(cat(), rows, workloads);
  ASSERT_EQ(rep.pairs.size(), 6u);
  ASSERT_EQ(rep.sources.size(), 1u);
  EXPECT_EQ(rep.all.groups, 1);
  double flat_worst = 0;
  for (const auto& p : rep.pairs) {
    EXPECT_EQ(p.op_class, "memory") << p.from << " -> " << p.to;
    EXPECT_NEAR(p.ratio, 0.8, 1e-3) << p.from;
    EXPECT_LT(p.transferred_ape, 1e-3) << p.from << " -> " << p.to;
    EXPECT_GT(p.uncalibrated_ape, 0.02);  // the model alone misses the slower kernels
    // Printed with the model's band around it, which an exact transfer sits inside.
    EXPECT_NEAR(p.band_low, p.transferred * model_band().low(1.0), 1e-9 * p.transferred);
    EXPECT_NEAR(p.band_high, p.transferred * model_band().high(1.0), 1e-9 * p.transferred);
    EXPECT_TRUE(p.in_band) << p.from << " -> " << p.to;
    flat_worst = std::max(flat_worst, p.flat_ape);
  }
  EXPECT_GT(flat_worst, 0.01);  // a flat factor cannot carry what only the memory-bound part of each step took
  EXPECT_EQ(rep.all.worse, 0);
  EXPECT_DOUBLE_EQ(rep.all.in_band, 1.0);
  EXPECT_NEAR(rep.all.spread_low, 1.0, 1e-3);
  EXPECT_NEAR(rep.all.spread_high, 1.0, 1e-3);
  // Another framework's or precision's stack moves nothing.
  StackRatios other = truth;
  other.format = "tf32";
  const ValidatedRow untouched = validate_row(cat(), rows[0], {}, workloads, &other);
  const ValidatedRow plain = validate_row(cat(), rows[0], {}, workloads);
  EXPECT_DOUBLE_EQ(untouched.predicted, plain.predicted);
  // At a share below 1 (the fitted one: part of a published figure's error is its card's), the card measured is
  // still reproduced and the others move part of the way, ratio^share.
  FittedConstants part = active_constants();
  part.transfer_share = 0.4;
  const ScopedConstants partly(part);
  StackRatios on_3090 = truth;
  on_3090.measured_gpus = {"rtx-3090"};
  EXPECT_DOUBLE_EQ(carried_to(on_3090, "rtx-3090").memory, 0.8);
  EXPECT_NEAR(carried_to(on_3090, "h100-sxm").memory, std::pow(0.8, 0.4), 1e-12);
  for (const auto& p : calibrate_one(cat(), rows, workloads).pairs) {
    EXPECT_NEAR(p.ratio, 0.8, 1e-3) << p.from;
    EXPECT_GT(p.transferred_ape, 1e-3) << p.from << " -> " << p.to;
    EXPECT_LT(p.transferred_ape, p.uncalibrated_ape) << p.from << " -> " << p.to;
  }
}

// Rows on one card only and rows without a figure make no pair (another precision is another group); an empty report
// says none.
TEST(CalibrateOne, RowsOnOneCardOrWithoutAFigureMakeNoPair) {
  const std::string head = "id,gpu,n_gpus,workload,mode,precision,batch_per_gpu,options,value,unit,per,source\n";
  const auto rows = read_published(head + "A,a100-80gb-sxm,1,resnet50,train,amp-fp16,128,,2000,images/s,gpu,s\n"
                                          "B,a100-80gb-sxm,1,resnet50,train,amp-fp16,128,,2100,images/s,gpu,s\n"
                                          "C,h100-sxm,1,resnet50,train,amp-fp16,128,,,images/s,gpu,s\n"
                                          "D,h100-sxm,1,resnet50,train,tf32,64,,3000,images/s,gpu,s\n",
                                   "t.csv");
  workload::Workloads workloads;
  const CalibrateOneReport rep = calibrate_one(cat(), rows, workloads);
  EXPECT_TRUE(rep.pairs.empty());
  EXPECT_TRUE(rep.sources.empty());
  EXPECT_EQ(rep.all.pairs, 0);
}
