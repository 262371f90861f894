// SPDX-License-Identifier: Apache-2.0
#include "core/progress.hpp"

#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>

namespace gpuvs {

ProgressBar::ProgressBar(std::FILE* out, long total_steps)
    : out_(out), total_(std::max(1L, total_steps)), tty_(::isatty(::fileno(out)) != 0),
      start_(std::chrono::steady_clock::now()), last_draw_(start_) {}

std::string ProgressBar::line(long step, const std::string& metrics) const {
  constexpr int kWidth = 30;
  const int filled = static_cast<int>(kWidth * step / total_);
  std::string bar(static_cast<std::size_t>(filled), '=');
  if (filled < kWidth) bar += '>';
  bar.resize(kWidth, '.');
  const double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
  const double per_step = step > 0 ? elapsed / static_cast<double>(step) : 0.0;
  const std::string per =
      per_step >= 1.0 ? fmt::format("{:.0f}s/step", per_step)
      : per_step >= 1e-3 ? fmt::format("{:.0f}ms/step", per_step * 1e3) : fmt::format("{:.0f}us/step", per_step * 1e6);
  const int w = fmt::formatted_size("{}", total_) > 0 ? static_cast<int>(fmt::formatted_size("{}", total_)) : 1;
  return fmt::format("{:>{}}/{} [{}] - {:.0f}s {} - {}", step, w, total_, bar, elapsed, per, metrics);
}

void ProgressBar::update(long step, const std::string& metrics) {
  if (!tty_) return;  // plain output: only the epoch's final line
  const auto now = std::chrono::steady_clock::now();
  if (step != total_ && now - last_draw_ < std::chrono::milliseconds(100)) return;
  last_draw_ = now;
  fmt::print(out_, "\r{}\033[K", line(step, metrics));
  std::fflush(out_);
}

void ProgressBar::finish(const std::string& metrics) {
  if (tty_) fmt::print(out_, "\r{}\033[K\n", line(total_, metrics));
  else fmt::print(out_, "{}\n", line(total_, metrics));
  std::fflush(out_);
}

}  // namespace gpuvs
