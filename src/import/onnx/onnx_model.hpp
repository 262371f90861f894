// SPDX-License-Identifier: Apache-2.0
// ONNX model files (.onnx) as workloads, read with the ONNX protobuf definitions Debian ships (libonnx-dev).
// The graph becomes gpuvs's IR for inference pricing and, through autodiff, training pricing (cross-entropy
// on the first output when it holds class scores, else a squared-error stand-in, said in the description).
//
// Shapes: each input's dims from the file; a symbolic dim at axis 0 is the batch (--batch); any other symbolic
// dim takes its size from an option of its name (--options 'sequence=128'). Every other shape is computed by
// the converter (onnx_convert.hpp), and the file's own value_info and output shapes must agree with it.
// Weights are not needed except small constants (masks, shape arithmetic); weights kept as external data are
// fine. What cannot be built — an operator outside the built set, a dilated convolution, a data-dependent
// shape — is an InputError naming the file, the node and what is wrong; nothing is skipped.
#pragma once
#include <map>
#include <string>

#include "models/networks.hpp"

namespace gpuvs::import {

/// True when `path` ends in .onnx (any case).
bool is_onnx_path(const std::string& path);

/// The network an ONNX file describes, with its symbolic dims bound from `options` (keys that name no dim are
/// the caller's). Builds it once, forward and training step, so an unbuildable file fails here.
models::NetworkInfo onnx_network(const std::string& path, const std::map<std::string, std::string>& options);

}  // namespace gpuvs::import
