// SPDX-License-Identifier: Apache-2.0
// What a recipe computes on data of varying length (issue 34 mechanism 1): a data set's samples hold fewer real
// tokens than the sequence length (half of BERT's 512-token Wikipedia samples is padding), and a data loader that pads
// each batch only to its longest sample computes far fewer positions than one that pads every sample to the full
// length. NVIDIA's LDDL goes further: it sorts samples into bins of similar length and draws every batch from one bin
// (chosen with the bin's share of the samples), so a batch is padded to little more than its own samples. The data
// sets' histograms are data (data/sequence-lengths.toml, compiled in); this module turns one, a bin width and a batch
// into the lengths the batches are computed at, and how often each occurs.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace gpuvs::perf {

/// How many samples of a data set hold each number of real tokens: counts[i] samples of i + 1 tokens, i < max_len.
struct LengthHistogram {
  std::string id, name, source;
  std::int64_t max_len = 0;  // the sequence length the data set was made for
  std::vector<std::int64_t> counts;
  int line = 0;
  std::int64_t samples() const;
  double mean_len() const;  // real tokens a sample holds on average
};

/// The compiled-in histograms.
const std::vector<LengthHistogram>& length_histograms();
/// The one named `id`; InputError "option lengths: unknown data set 'ID' (known: ...)" otherwise.
const LengthHistogram& length_histogram(const std::string& id);
/// Parses histograms; InputError "WHERE:LINE: ..." for unknown keys, missing fields, a counts list whose length is not
/// max_len, negative or non-integer counts, a histogram with no samples, an id listed twice.
std::vector<LengthHistogram> parse_length_histograms(const std::string& text, const std::string& where);

/// The batches of one bin: the samples of lo..hi tokens.
struct PaddedBin {
  std::int64_t lo = 0, hi = 0;
  double share = 0;       // of all batches: the bin's share of the samples
  double padded_len = 0;  // the expected length a batch from it is padded to
};

/// Batches of `batch` samples each drawn from one bin of `bin_size` tokens (bins 1..bin_size, bin_size+1..2 bin_size,
/// ...; a bin chosen with its share of the samples), each padded to its longest sample rounded up to a multiple of
/// `multiple` (LDDL's collate: 8) and at most max_len. bin_size = max_len is plain dynamic padding (every batch padded
/// to its longest sample). Bins holding no sample are left out. std::invalid_argument for bin_size, batch or multiple
/// below 1.
std::vector<PaddedBin> padded_bins(const LengthHistogram& h, std::int64_t bin_size, std::int64_t batch, std::int64_t multiple = 8);

}  // namespace gpuvs::perf
