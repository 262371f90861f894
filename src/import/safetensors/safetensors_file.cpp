// SPDX-License-Identifier: Apache-2.0
#include "import/safetensors/safetensors_file.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <limits>
#include <nlohmann/json.hpp>
#include <set>

#include "core/error.hpp"
#include "core/files.hpp"
#include "core/json_input.hpp"
#include "core/strings.hpp"

namespace gpuvs::import {

namespace {

using json = nlohmann::json;

// huggingface/safetensors src/tensor.rs `enum Dtype` and its bitsize() (22 dtypes at 24b0b285).
const std::map<std::string, int>& dtype_bits() {
  static const std::map<std::string, int> bits = {
      {"BOOL", 8},        {"F4", 4},           {"F6_E2M3", 6},     {"F6_E3M2", 6}, {"U8", 8},   {"I8", 8},   {"F8_E5M2", 8}, {"F8_E4M3", 8},
      {"F8_E8M0", 8},     {"F8_E4M3FNUZ", 8},  {"F8_E5M2FNUZ", 8}, {"I16", 16},    {"U16", 16}, {"F16", 16}, {"BF16", 16},   {"I32", 32},
      {"U32", 32},        {"F32", 32},         {"C64", 64},        {"F64", 64},    {"I64", 64}, {"U64", 64}};
  return bits;
}

/// A JSON integer that fits in 64 bits unsigned, or InputError naming `what`.
std::uint64_t unsigned_of(const json& v, const std::string& where, const std::string& what) {
  if (v.is_number_unsigned()) return v.get<std::uint64_t>();
  if (v.is_number_integer() && v.get<std::int64_t>() >= 0) return static_cast<std::uint64_t>(v.get<std::int64_t>());
  throw InputError(fmt::format("{}: {} must be a whole number of at least 0, got {}", where, what, strings::printable(v.dump())));
}

SafetensorsTensor tensor_of(const std::string& name, const json& v, const std::string& where) {
  const std::string shown = fmt::format("tensor '{}'", strings::printable(name));
  if (!v.is_object()) throw InputError(fmt::format("{}: {} must be an object with dtype, shape and data_offsets", where, shown));
  for (const auto& [key, _] : v.items())
    if (key != "dtype" && key != "shape" && key != "data_offsets")
      throw InputError(fmt::format("{}: {}: unknown key '{}' (dtype, shape, data_offsets)", where, shown, strings::printable(key)));
  SafetensorsTensor t;
  t.name = name;
  if (!v.contains("dtype") || !v["dtype"].is_string()) throw InputError(fmt::format("{}: {}: dtype must be a string", where, shown));
  t.dtype = v["dtype"].get<std::string>();
  const int bits = safetensors_dtype_bits(t.dtype);
  if (bits == 0) throw InputError(fmt::format("{}: {}: dtype '{}' is not one gpuvs knows (safetensors 0.6's 22 are)", where, shown, strings::printable(t.dtype)));
  if (!v.contains("shape") || !v["shape"].is_array()) throw InputError(fmt::format("{}: {}: shape must be a list", where, shown));
  // Rank: safetensors has no limit; 8 is past every weight (and keeps a crafted shape from being long).
  if (v["shape"].size() > 8) throw InputError(fmt::format("{}: {}: {} dimensions, more than 8", where, shown, v["shape"].size()));
  t.elements = 1;
  for (const auto& d : v["shape"]) {
    const std::uint64_t n = unsigned_of(d, where, shown + "'s dimensions");
    if (n != 0 && t.elements > std::numeric_limits<std::uint64_t>::max() / 64 / n)
      throw InputError(fmt::format("{}: {}: its shape makes more elements than 64 bits count", where, shown));
    t.elements *= n;
    t.shape.push_back(n);
  }
  if (!v.contains("data_offsets") || !v["data_offsets"].is_array() || v["data_offsets"].size() != 2)
    throw InputError(fmt::format("{}: {}: data_offsets must be [BEGIN, END]", where, shown));
  t.begin = unsigned_of(v["data_offsets"][0], where, shown + "'s data_offsets");
  t.end = unsigned_of(v["data_offsets"][1], where, shown + "'s data_offsets");
  if (t.end < t.begin) throw InputError(fmt::format("{}: {}: data_offsets end {} before they begin ({})", where, shown, t.end, t.begin));
  const std::uint64_t total_bits = t.elements * static_cast<std::uint64_t>(bits);
  if (total_bits % 8 != 0)
    throw InputError(fmt::format("{}: {}: {} elements of {} are not a whole number of bytes", where, shown, t.elements, t.dtype));
  if (t.end - t.begin != total_bits / 8)
    throw InputError(fmt::format("{}: {}: data_offsets hold {} bytes, its shape and dtype {}", where, shown, t.end - t.begin, total_bits / 8));
  return t;
}

}  // namespace

int safetensors_dtype_bits(const std::string& dtype) {
  const auto it = dtype_bits().find(dtype);
  return it == dtype_bits().end() ? 0 : it->second;
}

std::map<std::string, std::uint64_t> SafetensorsHeader::elements_by_dtype() const {
  std::map<std::string, std::uint64_t> out;
  for (const auto& t : tensors) out[t.dtype] += t.elements;
  return out;
}

std::uint64_t SafetensorsHeader::parameters() const {
  std::uint64_t n = 0;
  for (const auto& t : tensors) n += t.elements;
  return n;
}

SafetensorsHeader read_safetensors_bytes(std::string_view bytes, std::uint64_t file_size, const std::string& where) {
  if (bytes.size() < 8) throw InputError(fmt::format("{}: {} bytes, shorter than the 8-byte header length", where, bytes.size()));
  std::uint64_t n = 0;
  std::memcpy(&n, bytes.data(), 8);  // little-endian, as the format and the host are
  if (n > kMaxSafetensorsHeaderBytes)
    throw InputError(fmt::format("{}: a header of {} bytes, more than the {} the format allows (not a safetensors file?)", where, n, kMaxSafetensorsHeaderBytes));
  if (n > bytes.size() - 8) throw InputError(fmt::format("{}: the file ends inside its {}-byte header ({} bytes)", where, n, file_size));
  const std::string text(bytes.substr(8, n));
  if (text.empty() || text[0] != '{') throw InputError(fmt::format("{}: the header must begin with '{{' (not a safetensors file?)", where));
  const json j = parse_json(text, where);
  if (!j.is_object()) throw InputError(fmt::format("{}: the header must be a JSON object", where));
  SafetensorsHeader h;
  h.files.push_back(where);
  for (const auto& [name, v] : j.items()) {
    if (name == "__metadata__") {
      if (!v.is_object()) throw InputError(fmt::format("{}: __metadata__ must be an object of strings", where));
      for (const auto& [k, s] : v.items()) {
        if (!s.is_string()) throw InputError(fmt::format("{}: __metadata__.{}: values must be strings", where, strings::printable(k)));
        h.metadata[k] = s.get<std::string>();
      }
      continue;
    }
    h.tensors.push_back(tensor_of(name, v, where));
    h.tensors.back().file = where;
  }
  // The buffer indexed whole, in offset order: each tensor starts where the one before ended.
  // (begin, end), as the reference parser sorts: an empty tensor at an offset comes before the one that starts there.
  std::stable_sort(h.tensors.begin(), h.tensors.end(), [](const auto& a, const auto& b) { return std::pair(a.begin, a.end) < std::pair(b.begin, b.end); });
  std::uint64_t next = 0;
  for (const auto& t : h.tensors) {
    if (t.begin != next)
      throw InputError(fmt::format("{}: tensor '{}' begins at byte {} of the buffer, not at {} where the one before ends (gaps and overlaps are not allowed)",
                                   where, strings::printable(t.name), t.begin, next));
    next = t.end;
  }
  h.tensor_bytes = next;
  if (file_size - 8 - n != next)
    throw InputError(fmt::format("{}: the tensors index {} bytes after the header, the file holds {}{}", where, next, file_size - 8 - n,
                                 file_size - 8 - n < next ? ": a partial download or a truncated copy?" : ""));
  return h;
}

SafetensorsHeader read_safetensors_file(const std::string& path) {
  files::InputFile in(path, "safetensors file");
  const std::string length = in.read_at(0, std::min<std::uint64_t>(8, in.size()));
  std::uint64_t n = 0;
  if (length.size() == 8) std::memcpy(&n, length.data(), 8);
  if (length.size() < 8 || n > kMaxSafetensorsHeaderBytes || n > in.size() - 8) return read_safetensors_bytes(length, in.size(), path);
  return read_safetensors_bytes(length + in.read_at(8, n), in.size(), path);
}

namespace {

/// The index's weight_map by shard: each shard a plain file name in the index's folder.
std::map<std::string, std::vector<std::string>> index_by_shard(const std::string& path) {
  const json j = parse_json(files::read_all(path, "safetensors index"), path);
  if (!j.is_object() || !j.contains("weight_map") || !j["weight_map"].is_object())
    throw InputError(fmt::format("{}: a safetensors index needs a weight_map object (tensor name: shard file)", path));
  std::map<std::string, std::vector<std::string>> by_shard;
  for (const auto& [name, shard] : j["weight_map"].items()) {
    if (!shard.is_string()) throw InputError(fmt::format("{}: weight_map.{}: must name a shard file", path, strings::printable(name)));
    const std::string file = shard.get<std::string>();
    // A shard is a file beside the index: a name, never a path out of the checkpoint's folder, never a control byte.
    if (file.empty() || file.find('/') != std::string::npos || file == "." || file == ".." || strings::has_control(file))
      throw InputError(fmt::format("{}: weight_map.{}: '{}' is not a file name in the index's folder", path, strings::printable(name), strings::printable(file)));
    by_shard[file].push_back(name);
  }
  if (by_shard.empty()) throw InputError(fmt::format("{}: weight_map names no tensors", path));
  return by_shard;
}

}  // namespace

std::vector<std::string> safetensors_index_shards(const std::string& path) {
  std::vector<std::string> out;
  for (const auto& [file, _] : index_by_shard(path)) out.push_back(file);
  return out;
}

SafetensorsHeader read_safetensors_index(const std::string& path) {
  const auto by_shard = index_by_shard(path);
  // Every shard read first (a missing or broken shard is the news), then each held to the map.
  const std::filesystem::path dir = std::filesystem::path(path).parent_path();
  std::vector<std::pair<std::string, SafetensorsHeader>> shards;
  for (const auto& [file, names] : by_shard) shards.emplace_back(file, read_safetensors_file((dir / file).string()));
  SafetensorsHeader all;
  for (auto& [file, shard] : shards) {
    const std::vector<std::string>& names = by_shard.at(file);
    const std::set<std::string> mapped(names.begin(), names.end());
    std::set<std::string> held;
    for (const auto& t : shard.tensors) {
      held.insert(t.name);
      if (!mapped.count(t.name))
        throw InputError(fmt::format("{}: {} holds tensor '{}', which weight_map does not name (or names in another shard)", path,
                                     strings::printable(file), strings::printable(t.name)));
    }
    for (const auto& name : names)
      if (!held.count(name))
        throw InputError(fmt::format("{}: weight_map puts '{}' in {}, which does not hold it", path, strings::printable(name), strings::printable(file)));
    all.tensor_bytes += shard.tensor_bytes;
    all.files.push_back((dir / file).string());
    for (auto& t : shard.tensors) all.tensors.push_back(std::move(t));
    for (auto& [k, v] : shard.metadata) all.metadata.emplace(k, v);
  }
  return all;
}

}  // namespace gpuvs::import
