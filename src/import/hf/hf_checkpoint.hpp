// SPDX-License-Identifier: Apache-2.0
// A Hugging Face checkpoint as a workload: a folder holding config.json (the shape) and its safetensors weights
// (the exact parameter count and dtypes, from their headers alone), named by its path, by one of its weight files,
// or by a hub id (`meta-llama/Meta-Llama-3-8B`) found in the local hub cache. gpuvs never downloads: a hub id not
// in the cache is an InputError saying where it looked and how to fetch the config.
#pragma once
#include <filesystem>
#include <map>
#include <string>

#include "models/networks.hpp"

namespace gpuvs::import {

/// The hub cache huggingface_hub uses (constants.py): $HF_HUB_CACHE, else $HUGGINGFACE_HUB_CACHE, else
/// $HF_HOME/hub, else ${XDG_CACHE_HOME:-$HOME/.cache}/huggingface/hub.
std::filesystem::path hf_hub_cache();

/// True for a safetensors weights file or a sharded checkpoint's index (*.safetensors, *.safetensors.index.json,
/// any case): what names the checkpoint of its folder.
bool is_safetensors_path(const std::string& name);

/// True for a name that is a checkpoint rather than a built-in id or a model file: an existing folder, a
/// .safetensors file or a sharded checkpoint's *.safetensors.index.json, or a hub id ("org/name" or
/// "org/name@revision", hub characters only, naming no existing path).
bool is_checkpoint(const std::string& name);

/// The snapshot folder the cache holds for hub id `id` (the commit refs/main names, or `@revision`: a branch, a tag
/// or a 40-hex commit). InputError when the model, the revision or its config.json is not cached.
std::filesystem::path hf_cached_snapshot(const std::string& id);

/// The network the checkpoint `name` describes (see is_checkpoint). A `gpt` shape key in `options` is an
/// InputError: the checkpoint has its own shape.
models::NetworkInfo checkpoint_network(const std::string& name, const std::map<std::string, std::string>& options = {});

}  // namespace gpuvs::import
