// SPDX-License-Identifier: Apache-2.0
// Reads TensorBoard files back with a decoder written here from the format's definition (TFRecord framing
// and protobuf wire format), independent of the writer's protobuf library.
#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>

#include "engine/tfevents.hpp"
#include "test_util.hpp"
#include "tfevent_reader.hpp"

using namespace gpuvs;

TEST(TfEvents, FramingHasBothMaskedCrcs) {
  const std::string rec = engine::tfrecord_frame("hello");
  ASSERT_EQ(rec.size(), 8u + 4u + 5u + 4u);
  std::uint64_t len;
  std::memcpy(&len, rec.data(), 8);
  EXPECT_EQ(len, 5u);
  std::uint32_t len_crc, data_crc;
  std::memcpy(&len_crc, rec.data() + 8, 4);
  std::memcpy(&data_crc, rec.data() + 17, 4);
  EXPECT_EQ(len_crc, test::masked_crc_bitwise(rec.data(), 8));
  EXPECT_EQ(data_crc, test::masked_crc_bitwise("hello", 5));
}

TEST(TfEvents, WriterOutputDecodesToVersionAndScalars) {
  test::TempDir dir;
  std::filesystem::path file;
  {
    engine::EventFileWriter w(dir.path());
    w.add_scalar("epoch_loss", 0, 0.75);
    w.add_scalar("epoch_accuracy", 0, 0.5);
    w.add_scalar("epoch_loss", 1, 0.25);
    w.flush();
    file = w.path();
  }
  EXPECT_EQ(file.filename().string().rfind("events.out.tfevents.", 0), 0u);
  const auto events = test::read_event_file(file);
  ASSERT_EQ(events.size(), 4u);
  EXPECT_EQ(events[0].file_version, "brain.Event:2");
  EXPECT_GT(events[0].wall_time, 1.6e9);
  EXPECT_EQ(events[1].tag, "epoch_loss");
  EXPECT_EQ(events[1].step, 0);
  EXPECT_FLOAT_EQ(events[1].value, 0.75f);
  EXPECT_EQ(events[2].tag, "epoch_accuracy");
  EXPECT_FLOAT_EQ(events[2].value, 0.5f);
  EXPECT_EQ(events[3].step, 1);
  EXPECT_FLOAT_EQ(events[3].value, 0.25f);
}

TEST(TfEvents, DecoderRejectsCorruption) {
  test::TempDir dir;
  std::filesystem::path file;
  {
    engine::EventFileWriter w(dir.path());
    w.add_scalar("epoch_loss", 0, 1.0);
    file = w.path();
  }
  std::string bytes = test::slurp(file);
  bytes[bytes.size() - 6] ^= 0x01;  // a payload byte of the last record
  test::write_text(file, bytes);
  EXPECT_THROW(test::read_event_file(file), std::runtime_error);
}
