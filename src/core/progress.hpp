// SPDX-License-Identifier: Apache-2.0
// Keras-style epoch progress: a redrawn bar on a terminal, plain lines otherwise.
#pragma once
#include <chrono>
#include <cstdio>
#include <string>

namespace gpuvs {

class ProgressBar {
 public:
  /// `out` is the stream progress goes to (stdout, or stderr when stdout carries JSON).
  /// Redraws in place only when `out` is a terminal.
  ProgressBar(std::FILE* out, long total_steps);
  /// Called after each step with the running metrics text (e.g. "loss: 0.1234 - accuracy: 0.9").
  void update(long step, const std::string& metrics);
  /// Final line of the epoch: "N/N [====] - 2s 1ms/step - <metrics>".
  void finish(const std::string& metrics);

 private:
  std::string line(long step, const std::string& metrics) const;
  std::FILE* out_;
  long total_;
  bool tty_;
  std::chrono::steady_clock::time_point start_, last_draw_;
};

}  // namespace gpuvs
