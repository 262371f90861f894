// SPDX-License-Identifier: Apache-2.0
// Model files describe convolutions and pools the IR builds with symmetric padding and no dilation. One
// spatial axis of any of them (asymmetric or "same" padding, a dilated kernel) is the IR's padding plus a crop
// of the input (a view) that gives the same number of outputs; each output then does the same multiply-adds
// (kernel taps x channels), so the work priced is the layer's. Used by the Keras and ONNX readers.
#pragma once
#include <algorithm>
#include <cstdint>
#include <optional>

namespace gpuvs::ir {

struct AxisFit {
  int pad = 0;             // each side
  std::int64_t crop = 0;   // elements dropped from the end of the input
};

/// The smallest padding (then crop) with which a kernel of `k` taps at stride `s` makes `out` outputs from
/// `in` inputs; nullopt when none does (out < 1, or more outputs than any padding up to k gives).
inline std::optional<AxisFit> fit_axis(std::int64_t in, std::int64_t k, std::int64_t s, std::int64_t out) {
  if (in < 1 || k < 1 || s < 1 || out < 1) return std::nullopt;
  // In closed form, not by trying each padding and crop: sizes from files reach 2^40.
  // outputs(n, p) = (n + 2p - k) / s + 1 is at least `out` once n + 2p - k >= (out - 1) s: the smallest p.
  auto outputs = [&](std::int64_t n, std::int64_t p) { return n + 2 * p < k ? 0 : (n + 2 * p - k) / s + 1; };
  const std::int64_t need = (out - 1) * s + k - in;
  const std::int64_t p = need <= 0 ? 0 : (need + 1) / 2;
  if (p > k) return std::nullopt;
  // It is exactly `out` for n + 2p - k in [(out - 1) s, out s - 1]: the crop keeps the largest such n.
  const std::int64_t keep = std::min(in, out * s - 1 + k - 2 * p);
  if (keep < 1 || outputs(keep, p) != out) return std::nullopt;
  return AxisFit{static_cast<int>(p), in - keep};
}

/// Outputs of a dilated kernel over `in` inputs padded `begin` and `end`: (in + begin + end - d(k-1) - 1) / s + 1,
/// rounded up when `ceil_mode`, less a last window that would start in the end padding (PyTorch's rule, ONNX's
/// since onnx/onnx#5741: 5 inputs, kernel 2, stride 2, pads 1 and 1 give 3, not 4); 0 when the kernel does not fit.
inline std::int64_t window_outputs(std::int64_t in, std::int64_t k, std::int64_t s, std::int64_t dilation, std::int64_t begin,
                                   std::int64_t end, bool ceil_mode = false) {
  const std::int64_t span = in + begin + end - dilation * (k - 1) - 1;
  if (span < 0) return 0;
  std::int64_t out = (ceil_mode ? (span + s - 1) / s : span / s) + 1;
  if (ceil_mode && out > 1 && (out - 1) * s >= in + begin) --out;
  return out;
}

}  // namespace gpuvs::ir
