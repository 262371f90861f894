// SPDX-License-Identifier: Apache-2.0
#include <gtest/gtest.h>

#include "catalog/catalog.hpp"
#include "catalog/featured.hpp"
#include "core/files.hpp"
#include "core/error.hpp"
#include "core/rng.hpp"
#include "test_util.hpp"

using namespace gpuvs;
using namespace gpuvs::catalog;

namespace {
const char* kMine = R"([[gpu]]
id = "my-card"
name = "My Card"
vendor = "nvidia"
segment = "datacenter"
arch = "Hopper"
sm_count = 100
boost_mhz = 1800
memory_gb = 64
memory_bandwidth_gbs = 2500
fp32_tflops = 50
bf16_dense = 500
bf16_sparse = 1000
fp16_dense = 500
fp16_fp32acc_dense = 500
p2p = true
pcie_gen = 5
tdp_w = 500
ecc = "yes"
confidence = "low"
)";

std::string error_of(const std::string& text) {
  Catalog c;
  return test::input_error_of([&] { c.add_text(text, "mine.toml"); });
}

std::string with(const std::string& from, const std::string& to) { return test::replaced(kMine, from, to); }
}  // namespace

TEST(Catalog, BuiltInHasAll24SourcedDevices) {
  const Catalog c = Catalog::builtin();
  EXPECT_EQ(c.gpus().size(), 24u);
  for (const auto& g : c.gpus()) {
    EXPECT_GT(g.memory_gb, 0) << g.id;
    EXPECT_GT(g.memory_bandwidth_gbs, 0) << g.id;
    EXPECT_FALSE(g.confidence.empty()) << g.id;
    for (const Peak* p : {&g.tf32, &g.fp16, &g.fp16_fp32acc, &g.bf16, &g.fp8, &g.fp8_fp32acc, &g.int8}) {
      if (p->sparse) {
        EXPECT_LE(*p->dense, *p->sparse) << g.id;
      }
    }
    for (const auto& s : g.sources) EXPECT_TRUE(sources().count(s)) << g.id << " cites unknown source " << s;
  }
}

TEST(Catalog, FiguresAsPublished) {
  const Catalog c = Catalog::builtin();
  const Gpu& r4090 = c.find("rtx-4090");
  EXPECT_DOUBLE_EQ(*r4090.fp16.dense, 330.3);
  EXPECT_DOUBLE_EQ(*r4090.fp16_fp32acc.dense, 165.2);  // GeForce: FP32 accumulate at half rate
  EXPECT_DOUBLE_EQ(*r4090.bf16.dense, 165.2);
  EXPECT_DOUBLE_EQ(*r4090.fp8_fp32acc.dense, 330.3);   // derived, and says so
  EXPECT_FALSE(r4090.derived.empty());
  EXPECT_FALSE(r4090.p2p);
  EXPECT_FALSE(r4090.has_nvlink());
  EXPECT_EQ(r4090.segment, "geforce");
  const Gpu& a100 = c.find("a100-80gb-sxm");
  EXPECT_DOUBLE_EQ(a100.memory_bandwidth_gbs, 2039);
  EXPECT_DOUBLE_EQ(*a100.bf16.dense, 312);
  EXPECT_FALSE(a100.fp8.present());  // no FP8 on Ampere
  EXPECT_EQ(a100.mig_max, 7);
  EXPECT_TRUE(a100.p2p);
  EXPECT_EQ(a100.ecc, "yes");
  const Gpu& v100 = c.find("v100-sxm2-32gb");
  EXPECT_FALSE(v100.bf16.present());  // no BF16 on Volta
  EXPECT_FALSE(v100.tf32.present());
  EXPECT_EQ(c.find("rtx-a6000").segment, "workstation");
  EXPECT_DOUBLE_EQ(*c.find("rtx-6000-ada").fp8_fp32acc.dense, 728.5);  // pro card: full rate
  EXPECT_DOUBLE_EQ(c.find("h100-sxm").memory_bytes(), 80.0 * 1073741824.0);
}

TEST(Catalog, LookupByIdAliasAndFamily) {
  const Catalog c = Catalog::builtin();
  EXPECT_EQ(c.find("4090").id, "rtx-4090");
  EXPECT_EQ(c.find("RTX 4090").id, "rtx-4090");
  EXPECT_EQ(c.find("rtx4090").id, "rtx-4090");
  EXPECT_EQ(c.find("H200").id, "h200-sxm");  // the only h200
  try {
    c.find("a100");
    FAIL();
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("ambiguous: a100-40gb-pcie, a100-40gb-sxm, a100-80gb-pcie, a100-80gb-sxm"),
              std::string::npos);
  }
  try {
    c.find("rtx-4900");
    FAIL();
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("did you mean: rtx-4090"), std::string::npos) << e.what();
  }
}

TEST(Catalog, UserFileAddsAndOverrides) {
  Catalog c = Catalog::builtin();
  c.add_text(kMine, "mine.toml");
  EXPECT_EQ(c.gpus().size(), 25u);
  EXPECT_EQ(c.find("my-card").origin, "mine.toml");
  c.add_text(with("id = \"my-card\"", "id = \"rtx-4090\""), "fix.toml");
  EXPECT_EQ(c.gpus().size(), 25u);
  EXPECT_EQ(c.find("rtx-4090").origin, "fix.toml");
  EXPECT_DOUBLE_EQ(c.find("rtx-4090").memory_gb, 64);
}

TEST(Catalog, ValidationNamesFileAndLine) {
  EXPECT_EQ(error_of(kMine), "");
  EXPECT_EQ(error_of(with("bf16_sparse = 1000", "bf16_sparse = 100")),
            "mine.toml:12: 'bf16_dense' = 500 exceeds 'bf16_sparse' = 100: the dense peak cannot be above the sparse one");
  EXPECT_EQ(error_of(with("memory_gb = 64", "memory_gb = -64")), "mine.toml:9: 'memory_gb' must be positive, got -64");
  EXPECT_NE(error_of(with("tdp_w = 500", "tdp_w = 500\ntdp_watts = 3")).find("mine.toml:19: unknown key 'tdp_watts'"),
            std::string::npos);
  EXPECT_NE(error_of(with("boost_mhz = 1800\n", "")).find("device is missing 'boost_mhz'"), std::string::npos);
  EXPECT_NE(error_of(with("bf16_dense = 500\n", "")).find("'bf16_sparse' is given without 'bf16_dense'"),
            std::string::npos);
  EXPECT_NE(error_of(with("ecc = \"yes\"", "ecc = \"maybe\"")).find("'ecc' must be one of yes, no, optional"),
            std::string::npos);
  EXPECT_NE(error_of(with("id = \"my-card\"", "id = \"My Card\"")).find("lowercase"), std::string::npos);
  EXPECT_NE(error_of(std::string(kMine) + "\n" + kMine).find("appears twice"), std::string::npos);
  EXPECT_NE(error_of("[[gpu]\nid=1").find("mine.toml:1: malformed TOML"), std::string::npos);
  EXPECT_NE(error_of("title = 'x'\n").find("unknown top-level key 'title'"), std::string::npos);
  EXPECT_NE(error_of(with("fp16_fp32acc_dense = 500\n", "")).find("fp16_fp32acc_dense"), std::string::npos);
  EXPECT_NE(error_of(with("tdp_w = 500", "tdp_w = 500\nnvlink_mesh_links = 3.5")).find("'nvlink_mesh_links' must be a whole number in [0, 64]"),
            std::string::npos);
}

TEST(Catalog, AFailedFileChangesNothing) {
  Catalog c = Catalog::builtin();
  // The first device is valid and would replace rtx-4090; the second is invalid: neither may land.
  const std::string bad = with("id = \"my-card\"", "id = \"rtx-4090\"") + "\n" + with("memory_gb = 64", "memory_gb = 0");
  EXPECT_THROW(c.add_text(bad, "bad.toml"), InputError);
  EXPECT_DOUBLE_EQ(c.find("rtx-4090").memory_gb, 24);
  EXPECT_EQ(c.gpus().size(), 24u);
}

TEST(Catalog, MissingFileIsAnInputError) {
  Catalog c;
  EXPECT_THROW(c.add_file("/nonexistent/gpus.toml"), InputError);
}

// Fuzz-style: random edits of a valid device file parse or fail with one clean line.
TEST(Catalog, FuzzedFilesFailCleanly) {
  const CounterRng rng(11, 2);
  std::uint64_t k = 0;
  const std::string alphabet = "[]{}\"'=,.#\n -0123456789abcdefxyz_";
  int ok = 0;
  for (int round = 0; round < 1500; ++round) {
    std::string t = kMine;
    const int edits = 1 + static_cast<int>(rng.uniform(k++) * 3);
    for (int e = 0; e < edits; ++e) {
      const auto pos = static_cast<std::size_t>(rng.uniform(k++) * static_cast<double>(t.size()));
      const char c = alphabet[static_cast<std::size_t>(rng.uniform(k++) * static_cast<double>(alphabet.size()))];
      const double r = rng.uniform(k++);
      if (r < 0.5) t[pos] = c;
      else if (r < 0.8) t.erase(pos, 1 + static_cast<std::size_t>(rng.uniform(k++) * 6));
      else t.insert(pos, 1, c);
    }
    Catalog cat;
    try {
      cat.add_text(t, "fuzz.toml");
      ++ok;
    } catch (const InputError& e) {
      EXPECT_EQ(std::string(e.what()).rfind("fuzz.toml", 0), 0u) << e.what();
      EXPECT_EQ(std::string(e.what()).find('\n'), std::string::npos) << e.what();
    }
  }
  EXPECT_GT(ok, 0);
}

// The cards gpuvs names on its own come from data/featured-gpus.toml, checked against the catalog.
TEST(Catalog, FeaturedCardsAreCatalogIdsFromData) {
  const Catalog cat = Catalog::builtin();
  const Featured& f = featured();
  ASSERT_EQ(f.seed_question.size(), 2u);
  for (const auto* l : {&f.seed_question, &f.scaling_chart, &f.serving_chart})
    for (const auto& id : *l) EXPECT_EQ(cat.find(id).id, id);
  const std::string good = "seed_question = [\"4090\", \"a100-80gb-sxm\"]\nscaling_chart = [\"l40s\"]\nserving_chart = [\"h100-sxm\"]\n";
  EXPECT_EQ(parse_featured(good, "f.toml", cat).seed_question.front(), "rtx-4090");  // an alias becomes its id
  test::expect_refused({{good + "chart = [\"l4\"]\n", "f.toml:4: unknown key 'chart'"},
                        {"seed_question = [\"rtx-4099\", \"l4\"]\nscaling_chart = [\"l4\"]\nserving_chart = [\"l4\"]\n", "f.toml:1: seed_question: "},
                        {"seed_question = [\"l4\"]\nscaling_chart = [\"l4\"]\nserving_chart = [\"l4\"]\n", "seed_question must name two cards"},
                        {"seed_question = [\"l4\", \"l40s\"]\nscaling_chart = []\nserving_chart = [\"l4\"]\n", "one to eight cards"},
                        {"seed_question = \"l4\"\n", "f.toml:1: seed_question must be a list of catalog ids"},
                        {"seed_question = [1, 2]\n", "must hold catalog ids (strings)"}},
                       [&](const std::string& text) { parse_featured(text, "f.toml", cat); });
  const std::string builtin = files::read_all(std::string(GPUVS_SOURCE_DIR) + "/data/featured-gpus.toml", "data");
  EXPECT_GT(test::fuzz_parser(builtin, "[]\",=#\n -0123456789abdehlmoprstx_", 400, 5,
                              [&](const std::string& t, const std::string& w) { parse_featured(t, w, cat); }),
            0);
}
