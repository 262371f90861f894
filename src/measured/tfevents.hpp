// SPDX-License-Identifier: Apache-2.0
// TensorBoard event files (events.out.tfevents.*): the training rate a run logged. TFRecord framing (u64 length,
// masked CRC-32C of it, the payload, masked CRC-32C of the payload) around tensorflow.Event protos, whose summaries
// hold scalars as simple_value (PyTorch's SummaryWriter, Keras in TF 1) or as a scalar tensor (TF 2's
// tf.summary.scalar, Keras's TensorBoard callback). One Measurement per file, mode "train", from the first of:
//  - a samples/s scalar (Hugging Face Trainer's train/train_samples_per_second, over every process; TF's
//    examples/sec): its last value, unit "samples/s";
//  - a steps/s scalar (TF Estimator's global_step/sec, the Trainer's train/train_steps_per_second): the median of its
//    values after the first (which holds tracing and warm-up), unit "steps/s";
//  - a per-step loss series (Keras's batch_loss with update_freq='batch', the Trainer's train/loss, a SummaryWriter's
//    loss): steps over wall time from its second event to its last, unit "steps/s".
// A steps/s figure becomes samples/s with the batch the command line says (a spec's batch=, per GPU, times gpus=):
// with gradient accumulation, the batch an optimizer step takes (micro-batch x accumulation steps), as the
// series' steps are the optimizer's.
// The file names neither the card nor the model: a --measured spec with file= says them. `where` is FILE:N, N the
// record the figure came from (1 is the file_version record).
#pragma once
#include <string>
#include <vector>

#include "measured/measurement.hpp"

namespace gpuvs::measured {

/// True when `bytes` starts with a TFRecord whose length CRC holds and whose event carries file_version "brain.Event:".
bool looks_like_tfevents(const std::string& bytes);

/// The training rate in the event file `bytes` (named `where`). InputError "WHERE: ..." for a truncated record or a
/// CRC that does not hold (naming the record and byte offset), a malformed Event, a rate that is not a positive
/// finite number, a file with only per-epoch scalars (Keras's default: an epoch's steps are not in the file), or
/// none of the figures above.
std::vector<Measurement> read_tfevents(const std::string& bytes, const std::string& where);

}  // namespace gpuvs::measured
