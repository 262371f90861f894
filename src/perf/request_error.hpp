// SPDX-License-Identifier: Apache-2.0
// A request no card could serve: a value an option cannot take, a name gpuvs does not know, a layout the model cannot
// have, weights the model file does not hold. Commands that price one request on many cards (compare) stop at it
// (exit 2); what one card lacks (no FP8, no room for the model) stays a plain InputError, a finding about that card.
#pragma once
#include "core/error.hpp"

namespace gpuvs::perf {

class RequestError : public InputError {
 public:
  using InputError::InputError;
};

}  // namespace gpuvs::perf
