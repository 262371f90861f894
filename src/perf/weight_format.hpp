// SPDX-License-Identifier: Apache-2.0
// Weight formats for serving: how many bytes each weight of a decoder takes, which tensor math the
// matrix work runs on, and what dequantization costs. data/weight-formats.toml (compiled in) holds the
// formats with their sources: 16-bit, FP8 (W8A8), INT8 (W8A8 and W8A16), INT4 AWQ/GPTQ (W4A16) and
// llama.cpp's GGUF types, whose block layouts (ggml-common.h) give their bits per weight and whose
// "_M" mixes give some tensors more bits by llama.cpp's rule (llama_tensor_get_type).
#pragma once
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "catalog/catalog.hpp"
#include "models/networks.hpp"

namespace gpuvs::perf {

/// A GGUF storage type: `block_weights` weights in `block_bytes` bytes.
struct GgmlType {
  std::string id;
  int block_weights = 0, block_bytes = 0;
  double bits() const { return 8.0 * block_bytes / block_weights; }
};

struct WeightFormat {
  std::string id, name, source;
  // The tensor math the matrix work runs on: fp16 | bf16 | fp8 | int8 (activations quantized too: W8A8).
  std::string math;
  // Weight-only quantization (W8A16, W4A16, GGUF): weights are dequantized to 16 bits, in registers by
  // fused kernels or, at large batch where `dequant_pass`, into a 16-bit copy the GEMM then reads.
  bool weight_only = false;
  bool dequant_pass = false;      // large batches: a separate dequantize kernel writes 16-bit weights
  double dequant_ops = 0;         // CUDA-core operations per weight each time it is dequantized
  double bits = 16;               // linear-layer weights (uniform formats), scales and zero points included
  // Group-quantized formats (AWQ, GPTQ): `bits` is at `group_size` weights a group, each group carrying `group_bits`
  // beside its weights (an fp16 scale, a 4-bit zero point). 0: not grouped.
  int group_size = 0;
  double group_bits = 0;
  // Formats quantized to any average rate in a range (EXL2: 2 to 8 bits a weight, mixed within each layer): `bits` is
  // the default, the serving option bpw= names a checkpoint's (perf::with_bits_per_weight). 0: fixed bits.
  double min_bits = 0, max_bits = 0;
  // The LM head's and the embedding table's bits where a uniform format quantizes them (EXL2's head: 6.3 bits; MLC's
  // q4f16_1 both at 4.5); 0: 16 bits, or a GGUF format's types.
  double output_bits = 0, embedding_bits = 0;
  bool embeddings_quantized = false;  // the embedding table and LM head in the format (GGUF) or at 16 bits
  // GGUF: the storage type of each tensor, by llama.cpp's rule (empty for uniform formats).
  std::string base_type, more_bits_type, output_type;
  std::vector<std::string> more_bits_tensors;  // attn_v, ffn_down: more bits in use_more_bits() layers
  int line = 0;
  // A file's weights as stored (a GGUF file): every tensor's bits from the file, not the format's rule; the rest
  // (math, dequantization) from the format that runs them. Points into the workload's network.
  const models::StoredWeights* stored = nullptr;
};

struct FormatData {
  std::vector<GgmlType> types;
  std::vector<WeightFormat> formats;
  const WeightFormat* find(const std::string& id) const;
  const GgmlType* type(const std::string& id) const;
};

const FormatData& builtin_formats();
/// Parses weight-format TOML; InputError "WHERE:LINE: ..." for unknown keys, bad values, unknown types.
FormatData parse_formats(const std::string& text, const std::string& where);
/// By id (case-insensitive); InputError listing the formats when unknown.
const WeightFormat& weight_format(const std::string& id, const FormatData& data = builtin_formats());
std::vector<std::string> weight_format_ids(const FormatData& data = builtin_formats());

/// `f` quantized in groups of `group_size` weights: its bits with each group's scale and zero point spread over that
/// many weights, and its name saying so. InputError when `f` is not group-quantized, or for a size not a power of two
/// in [16, 1024].
WeightFormat with_group_size(const WeightFormat& f, std::int64_t group_size);

/// `f` at `bpw` bits a weight (a format quantized to any average rate in a range, EXL2), its name saying so. InputError
/// when `f` has fixed bits, or for a rate outside its range.
WeightFormat with_bits_per_weight(const WeightFormat& f, double bpw);

/// llama.cpp's use_more_bits(i, n): the first and last eighth of the layers and every third between.
bool use_more_bits(int layer, int layers);

/// A decoder's weights in a format, by tensor role, in bytes (1e9 = 1 GB).
struct WeightBytes {
  double embedding = 0, output = 0;  // token embedding table, LM head (0 when tied)
  double layers = 0;                 // every transformer block's projections and norms
  std::vector<double> per_layer;     // one block each (GGUF mixes differ by layer)
  double total() const { return embedding + output + layers; }
};
WeightBytes weight_bytes(const models::DecoderConfig& d, const WeightFormat& f, const FormatData& data = builtin_formats());

/// Storage bits of one projection of block `layer` ("attn_q", "attn_k", "attn_v", "attn_output",
/// "ffn_gate", "ffn_up", "ffn_down").
double tensor_bits(const WeightFormat& f, const std::string& tensor, int layer, int layers, const FormatData& data = builtin_formats());

/// The format that runs a file's stored weights: the built-in format whose GGUF base type is the file's main type
/// (q4_k: q4_k_m), or fp16/bf16 for 16-bit files, with `stored` set and its name saying where the weights came
/// from. InputError when no format gpuvs prices runs that type.
WeightFormat stored_weight_format(const models::StoredWeights& w, const FormatData& data = builtin_formats());

/// The dense matrix peak (TFLOP/s or TOPS) the format's math runs at on `gpu`; `fp16_accumulate` selects
/// FP16-accumulate FP16 math (llama.cpp's cuBLAS calls). InputError when the card lacks that math.
double format_matrix_peak(const WeightFormat& f, const catalog::Gpu& gpu, bool fp16_accumulate);

}  // namespace gpuvs::perf
