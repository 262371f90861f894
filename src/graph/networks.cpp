#include "graph/networks.hpp"

#include <fmt/format.h>

#include "core/error.hpp"
#include "core/strings.hpp"
#include "graph/autodiff.hpp"
#include "graph/builder.hpp"
#include "graph/model_file.hpp"
#include "graph/workloads.hpp"

#include <filesystem>

namespace gpuvs::graph {

namespace {

NetworkInfo decoder_info(const std::string& id, const std::string& desc, double published, const std::string& source) {
  const DecoderConfig cfg = decoder_preset(id);
  return {id, desc, "decoder", "sequences", cfg.seq_len, published, source, cfg.layers, cfg.hidden,
          [id](const NetworkOptions& o) { return build_decoder(o, decoder_preset(id)); }};
}

std::vector<NetworkInfo> make_networks() {
  std::vector<NetworkInfo> v;
  v.push_back({"seed-mlp", "Keras Dense(128, relu, input 780) -> Dropout(0.2) -> Dense(10, softmax)", "mlp", "samples",
               0, 101258, "Keras model.summary() of the seed model (780 inputs)", 0, 0, [](const NetworkOptions& o) {
                 BuildOptions b{o.batch, o.dtype, o.training ? Mode::train : Mode::eval, false};
                 return build_graph(builtin_workload("seed-mlp"), b);
               }});
  v.push_back({"resnet50", "ResNet-50 v1.5, ImageNet 224x224, 1000 classes", "cnn", "images", 0, 25557032,
               "torchvision resnet50 (25,557,032 parameters)", 0, 0,
               [](const NetworkOptions& o) { return build_resnet(o, {3, 4, 6, 3}); }});
  v.push_back({"resnet152", "ResNet-152 v1.5, ImageNet 224x224, 1000 classes", "cnn", "images", 0, 60192808,
               "torchvision resnet152 (60,192,808 parameters)", 0, 0,
               [](const NetworkOptions& o) { return build_resnet(o, {3, 8, 36, 3}); }});
  v.push_back({"vgg16", "VGG-16, ImageNet 224x224, 1000 classes", "cnn", "images", 0, 138357544,
               "torchvision vgg16 (138,357,544 parameters)", 0, 0, [](const NetworkOptions& o) { return build_vgg16(o); }});
  v.push_back({"bert-base", "BERT-base (12 layers, 768 hidden) with a SQuAD span head", "encoder", "sequences", 384,
               110e6, "Devlin et al. 2018: BERT-base 110M", 12, 768,
               [](const NetworkOptions& o) { return build_bert(o, 12, 768, 12); }});
  v.push_back({"bert-large", "BERT-large (24 layers, 1024 hidden) with a SQuAD span head", "encoder", "sequences", 384,
               335141888, "bert-large-uncased with pooler, 335,141,888 (Hugging Face); Devlin et al.: 340M", 24, 1024,
               [](const NetworkOptions& o) { return build_bert(o, 24, 1024, 16); }});
  v.push_back({"sd15-unet", "Stable Diffusion 1.5 denoiser (UNet, 512x512 images as 64x64x4 latents, 77 text tokens)",
               "unet", "latents", 0, 859520964, "diffusers UNet2DConditionModel for SD 1.5: 859,520,964", 0, 0,
               [](const NetworkOptions& o) { return build_sd15_unet(o); }});
  v.push_back(decoder_info("mpt-760m", "MPT 760M (llm-foundry: 24 layers, d 1536)", 760e6, "llm-foundry MPT 760M"));
  v.push_back(decoder_info("mpt-1b", "MPT 1B (llm-foundry: 24 layers, d 2048)", 1.3e9, "mosaicml mpt-1b: 1.3B"));
  v.push_back(decoder_info("mpt-3b", "MPT 3B (llm-foundry: 32 layers, d 2560)", 2.7e9, "llm-foundry MPT 3B: 2.7B"));
  v.push_back(decoder_info("mpt-7b", "MPT 7B (32 layers, d 4096)", 6.7e9, "mosaicml/mpt-7b: 6.7B"));
  v.push_back(decoder_info("mpt-13b", "MPT 13B (40 layers, d 5120)", 13e9, "llm-foundry MPT 13B"));
  v.push_back(decoder_info("mpt-30b", "MPT 30B (48 layers, d 7168)", 30e9, "mosaicml/mpt-30b: 30B"));
  v.push_back(decoder_info("llama-7b", "LLaMA 7B (32 layers, d 4096, SwiGLU 11008)", 6738415616, "LLaMA-7B: 6,738,415,616"));
  v.push_back(decoder_info("llama3-8b", "Llama 3 8B (32 layers, d 4096, 8 KV heads, vocab 128256)", 8030261248,
                           "Meta-Llama-3-8B: 8,030,261,248"));
  v.push_back(decoder_info("llama-13b", "LLaMA 13B (40 layers, d 5120)", 13015864320, "LLaMA-13B: 13,015,864,320"));
  v.push_back(decoder_info("llama-70b", "Llama 2 70B (80 layers, d 8192, 8 KV heads)", 68976648192,
                           "Llama-2-70b: 68,976,648,192"));
  return v;
}

}  // namespace

const std::vector<NetworkInfo>& networks() {
  static const std::vector<NetworkInfo> v = make_networks();
  return v;
}

const NetworkInfo& network(const std::string& id) {
  for (const auto& n : networks())
    if (n.id == id) return n;
  std::vector<std::string> ids;
  for (const auto& n : networks()) ids.push_back(n.id);
  throw InputError(fmt::format("unknown workload '{}' (closest: {}; or give a .toml/.json model file)",
                               strings::printable(id), strings::join(strings::closest(id, ids), ", ")));
}

NetworkInfo resolve_network(const std::string& id_or_path) {
  for (const auto& n : networks())
    if (n.id == id_or_path) return n;
  const std::string ext = strings::lower(std::filesystem::path(id_or_path).extension().string());
  if (ext != ".toml" && ext != ".json") return network(id_or_path);  // unknown id: the closest-ids error
  const ModelSpec spec = load_model_file(id_or_path);
  return {spec.name, "model file " + id_or_path, "mlp", "samples", 0, static_cast<double>(spec.param_count()),
          "the model file", 0, 0, [spec](const NetworkOptions& o) {
            return build_graph(spec, {o.batch, o.dtype, o.training ? Mode::train : Mode::eval, false});
          }};
}

Graph build_network(const NetworkInfo& net, const NetworkOptions& opt) {
  if (opt.batch < 1) throw InputError(fmt::format("batch must be at least 1, got {}", opt.batch));
  if (opt.seq_len < 0) throw InputError(fmt::format("seq_len must be positive, got {}", opt.seq_len));
  Graph g = net.forward(opt);
  if (opt.training) append_training_step(g, AdamConfig{});
  return g;
}

std::int64_t param_count(const Graph& g, bool trainable_only) {
  std::int64_t n = 0;
  for (const auto& node : g.nodes())
    if (node.op == OpKind::param && (node.trainable || !trainable_only)) n += numel(node.shape);
  return n;
}

}  // namespace gpuvs::graph
