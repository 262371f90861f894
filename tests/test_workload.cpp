// SPDX-License-Identifier: Apache-2.0
// The front door: a workload resolved once, its graphs built once, and one rule for which pricer answers.
#include <gtest/gtest.h>

#include <set>
#include <stdexcept>
#include <thread>
#include <vector>

#include "advise/advisor.hpp"
#include "catalog/catalog.hpp"
#include "core/error.hpp"
#include "perf/predict.hpp"
#include "perf/serving.hpp"
#include "perf/validation.hpp"
#include "test_util.hpp"
#include "workload/workload.hpp"

using namespace gpuvs;
using workload::Pricer;
using workload::Workload;

namespace {

const catalog::Catalog& cat() {
  static const catalog::Catalog c = catalog::Catalog::builtin();
  return c;
}

const std::map<std::string, std::string> kSmallGpt = {{"layers", "4"}, {"hidden", "512"}, {"heads", "8"}};

}  // namespace

TEST(Workload, ResolvesANameOrAFileOnceWithTheOptionsThatShapeIt) {
  const Workload r("resnet50");
  EXPECT_EQ(r.name(), "resnet50");
  EXPECT_EQ(r.family(), models::Family::cnn);
  EXPECT_TRUE(r.shape().empty());
  // gpt: its shape keys shape it, every other key is the caller's.
  auto opts = kSmallGpt;
  opts["seq_len"] = "128";
  opts["framework"] = "pytorch";
  const Workload g("gpt", opts);
  EXPECT_EQ(g.family(), models::Family::decoder);
  EXPECT_EQ(g.shape(), kSmallGpt);
  EXPECT_EQ(g.network().decoder.layers, 4);
  EXPECT_TRUE(g.is("gpt", kSmallGpt));
  EXPECT_TRUE(g.is("gpt", opts));
  auto wider = kSmallGpt;
  wider["hidden"] = "1024";
  EXPECT_FALSE(g.is("gpt", wider));
  EXPECT_FALSE(g.is("llama-7b", kSmallGpt));
  EXPECT_THROW(g.check_is("gpt", wider), std::logic_error);
  // A model file: the reader's network; an ONNX file's symbolic dims are its shape.
  const Workload f(std::string(GPUVS_TEST_DATA) + "/onnx/tiny_gpt.onnx", {{"sequence", "64"}, {"seq_len", "9"}});
  EXPECT_EQ(f.family(), models::Family::onnx);
  EXPECT_EQ(f.shape(), (std::map<std::string, std::string>{{"sequence", "64"}}));
  // What cannot be resolved is one InputError line, as resolve_network's.
  EXPECT_NE(test::input_error_of([] { Workload("resnet-50"); }).find("closest: resnet50"), std::string::npos);
}

TEST(Workload, EachGraphIsBuiltOnceAndNumberedForGood) {
  const Workload w("bert-base");
  const models::NetworkOptions a{8, ir::DType::bf16, 128, false, true};
  models::NetworkOptions b = a;
  b.batch = 16;
  const auto ga = w.graph(a);
  EXPECT_EQ(w.graph(a), ga);  // the same graph, not a rebuild
  const auto gb = w.graph(b);
  EXPECT_NE(gb, ga);
  EXPECT_NE(gb->serial, ga->serial);
  // A copy of the workload prices the graphs its original built; another workload of the same name builds its own.
  const Workload copy = w;
  EXPECT_EQ(copy.graph(a), ga);
  const Workload again("bert-base");
  EXPECT_NE(again.graph(a)->serial, ga->serial);
  // From several threads at once: every caller gets the one graph kept, none a half-built one.
  const Workload fresh("resnet50");
  const models::NetworkOptions c{32, ir::DType::bf16, 0, false, true};
  std::vector<std::shared_ptr<const workload::BuiltGraph>> got(4);
  std::vector<std::thread> threads;
  for (std::size_t i = 0; i < got.size(); ++i) threads.emplace_back([&, i] { got[i] = fresh.graph(c); });
  for (auto& t : threads) t.join();
  const auto kept = fresh.graph(c);
  std::set<std::size_t> sizes;
  for (const auto& g : got) sizes.insert(g->graph.size());
  EXPECT_EQ(sizes.size(), 1u);
  EXPECT_EQ(kept->graph.size(), got[0]->graph.size());
}

TEST(Workload, OneRuleDecidesWhichPricerAnswers) {
  using models::Family;
  for (const char* mode : {"prefill", "decode"})
    for (Family f : {Family::decoder, Family::cnn, Family::mlp, Family::onnx})
      EXPECT_EQ(workload::pricer_for(mode, f), Pricer::serving) << mode;
  EXPECT_EQ(workload::pricer_for("infer", Family::decoder), Pricer::serving);
  for (Family f : {Family::mlp, Family::cnn, Family::encoder, Family::unet, Family::keras, Family::onnx})
    EXPECT_EQ(workload::pricer_for("infer", f), Pricer::graph);
  for (Family f : {Family::decoder, Family::cnn, Family::mlp}) EXPECT_EQ(workload::pricer_for("train", f), Pricer::graph);
}

TEST(Workload, APredictionPricedWithItsResolvedWorkloadEqualsOneResolvedByName) {
  perf::PredictRequest req;
  req.workload = "gpt";
  req.gpu = "h100-sxm";
  req.batch = 4;
  req.options = kSmallGpt;
  req.options["seq_len"] = "256";
  const Workload w(req.workload, req.options);
  const perf::Prediction by_name = perf::predict(cat(), req);
  const perf::Prediction resolved = perf::predict(cat(), w, req);
  EXPECT_EQ(resolved.throughput, by_name.throughput);
  EXPECT_EQ(resolved.params, by_name.params);
  EXPECT_EQ(resolved.memory.peak_bytes, by_name.memory.peak_bytes);
  // The same workload priced twice builds its graph once and prices it the same.
  EXPECT_EQ(perf::predict(cat(), w, req).throughput, resolved.throughput);
  // A request priced with another request's workload is a bug, not a prediction.
  perf::PredictRequest other = req;
  other.options["layers"] = "8";
  EXPECT_THROW(perf::predict(cat(), w, other), std::logic_error);
  perf::ServingRequest s;
  s.workload = "llama-7b";
  s.gpu = "h100-sxm";
  s.mode = "decode";
  EXPECT_THROW(perf::predict_serving(cat(), w, s), std::logic_error);
}

// The advisor priced LLM serving without the scenario's shape options, so a `gpt` decoder described by
// layers/hidden/heads was refused on every card ("gpt needs ..."): serving now prices the decoder the
// scenario names, as training did.
TEST(Workload, TheAdvisorServesTheDecoderTheScenarioShapes) {
  advise::Scenario s;
  s.workload = "gpt";
  s.workload_options = kSmallGpt;
  s.task = "infer";
  s.requests_per_s = 1;
  s.gpus = {"l4"};
  const advise::Advice a = advise::advise(cat(), s, advise::Assumptions::defaults());
  bool served = false;
  for (const auto& o : a.ranked)
    if (o.strategy == "serve-llm" && o.fits && o.throughput > 0) served = true;
  std::string why;
  for (const auto& o : a.ruled_out)
    for (const auto& w : o.why_not) why += w + "; ";
  EXPECT_TRUE(served) << why;
}

TEST(Workload, ValidationResolvesEachRowsWorkloadOnceAcrossCalls) {
  const std::string text =
      "id,gpu,workload,mode,precision,batch_per_gpu,value,unit\n"
      "a,h100-sxm,resnet50,train,amp-bf16,256,3000,images/s\n"
      "b,a100-80gb-sxm,resnet50,train,amp-bf16,256,2500,images/s\n";
  const auto rows = perf::read_published(text, "rows.csv");
  workload::Workloads held;
  const auto first = perf::validate(cat(), rows, {}, held);
  const auto& w = held.get("resnet50", {});
  EXPECT_EQ(&held.get("resnet50", {}), &w);  // the one resolved, not another
  const auto second = perf::validate(cat(), rows, {}, held);
  ASSERT_EQ(first.rows.size(), 2u);
  for (std::size_t i = 0; i < 2; ++i) EXPECT_EQ(first.rows[i].predicted, second.rows[i].predicted);
  EXPECT_EQ(first.rows[0].predicted, perf::validate(cat(), rows).rows[0].predicted);
}
