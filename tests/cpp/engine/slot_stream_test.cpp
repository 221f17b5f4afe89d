// The streaming seam on the CPU: units delivered in order with their bytes, look-ahead bounded by
// the slots, seek, extend, settle, failures named per unit, slots held by the consumer, explicit loads.
#include "headrace/engine/slot_stream.hpp"

#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <vector>

#include "headrace/error.hpp"
#include "support/random_bytes.hpp"
#include "support/temp_directory.hpp"

namespace headrace::engine {
namespace {

constexpr std::uint64_t unit_bytes = 96 << 10;
constexpr std::uint64_t units = 12;

struct SlotStreamTest : ::testing::Test {
  testing::TempDirectory scratch;
  std::vector<std::byte> contents = testing::pseudo_random_bytes(units * unit_bytes, 77);
  std::string path = scratch.write("units.bin", contents);
  Queue queue{[] {
    QueueOptions options;
    options.staging_bytes = 1 << 20;
    return options;
  }()};
  FileId file = queue.add_file(path);
  std::vector<std::byte> memory;

  // A stream of `slots` host slots, unit u reading bytes [u * unit_bytes, +unit_bytes); a unit at or
  // past `units` reads past the end of the file and fails.
  SlotStream make(std::uint32_t slots) {
    memory.assign(slots * unit_bytes, std::byte{0});
    SlotStreamOptions options;
    options.slots = slots;
    options.name = [](std::uint64_t unit) { return "frame " + std::to_string(unit); };
    return SlotStream(
        queue,
        [this](std::uint64_t unit, std::uint32_t slot) {
          Request r = queue::range_request(file, unit * unit_bytes, unit_bytes, queue::MemoryKind::host,
                                           reinterpret_cast<std::uintptr_t>(memory.data() + slot * unit_bytes));
          r.label = path + ": unit " + std::to_string(unit);
          return std::vector<Request>{r};
        },
        std::move(options));
  }

  bool holds(std::uint32_t slot, std::uint64_t unit) const {
    return std::memcmp(memory.data() + slot * unit_bytes, contents.data() + unit * unit_bytes, unit_bytes) == 0;
  }
};

TEST_F(SlotStreamTest, DeliversEveryUnitInOrderWithItsBytesAndLooksAheadAsFarAsTheSlotsAllow) {
  SlotStream stream = make(3);
  const std::vector<std::uint64_t> order{4, 0, 11, 7, 7, 2, 9};
  stream.play(order);
  EXPECT_EQ(stream.in_flight(), 3u);  // every slot filled at once
  EXPECT_EQ(stream.unscheduled(), order.size() - 3);
  std::vector<std::uint64_t> delivered;
  while (auto unit = stream.next()) {
    EXPECT_TRUE(holds(unit->slot, unit->unit)) << "unit " << unit->unit;
    EXPECT_EQ(unit->summary.done, 1u);
    EXPECT_EQ(unit->summary.stored_bytes, unit_bytes);
    delivered.push_back(unit->unit);
    stream.release(unit->slot);
  }
  EXPECT_EQ(delivered, order);
}

TEST_F(SlotStreamTest, PlayingAgainIsASeekAndExtendAppends) {
  SlotStream stream = make(2);
  stream.play({0, 1, 2, 3});
  auto first = stream.next();
  ASSERT_TRUE(first.has_value());
  EXPECT_EQ(first->unit, 0u);
  stream.release(first->slot);
  stream.play({8, 9});  // what was in flight (1, 2) is cancelled
  const std::uint64_t more[] = {3};
  stream.extend(more);
  std::vector<std::uint64_t> delivered;
  while (auto unit = stream.next()) {
    EXPECT_TRUE(holds(unit->slot, unit->unit));
    delivered.push_back(unit->unit);
    stream.release(unit->slot);
  }
  EXPECT_EQ(delivered, (std::vector<std::uint64_t>{8, 9, 3}));
}

TEST_F(SlotStreamTest, AFailedUnitIsNamedAndTheStreamGoesOn) {
  SlotStream stream = make(2);
  stream.play({1, units + 3, 2});
  auto ok = stream.next();
  ASSERT_TRUE(ok.has_value());
  stream.release(ok->slot);
  try {
    (void)stream.next();
    FAIL() << "a read past the end of the file was delivered";
  } catch (const Error& error) {
    const std::string message = error.what();
    EXPECT_NE(message.find("frame " + std::to_string(units + 3) + ": 1 of 1 reads failed"), std::string::npos) << message;
    EXPECT_NE(message.find(path), std::string::npos) << message;
  }
  auto after = stream.next();
  ASSERT_TRUE(after.has_value());
  EXPECT_EQ(after->unit, 2u);
  EXPECT_TRUE(holds(after->slot, 2));
}

TEST_F(SlotStreamTest, SlotsHeldByTheConsumerAreNotRefilledAndAskingPastThemIsAUsageError) {
  SlotStream stream = make(2);
  stream.play({0, 1, 2});
  auto a = stream.next();
  auto b = stream.next();
  ASSERT_TRUE(a && b);
  EXPECT_TRUE(holds(a->slot, 0));
  EXPECT_TRUE(holds(b->slot, 1));  // unit 2 could not overwrite either while they are held
  EXPECT_THROW((void)stream.next(), UsageError);
  stream.release(a->slot);
  auto c = stream.next();
  ASSERT_TRUE(c.has_value());
  EXPECT_EQ(c->slot, a->slot);
  EXPECT_TRUE(holds(c->slot, 2));
  EXPECT_TRUE(holds(b->slot, 1));
  EXPECT_THROW(stream.release(7), UsageError);
}

TEST_F(SlotStreamTest, SettleRefillsFreedSlotsAndWaitsForWhatIsInFlightWithoutHandingItOut) {
  SlotStream stream = make(3);
  stream.play({0, 1});
  auto first = stream.next();
  ASSERT_TRUE(first.has_value());
  const std::vector<std::uint64_t> ahead{5, 6, 7};
  stream.extend(ahead);  // 1, 5 in flight; the slot of 0 is still held
  stream.release(first->slot);
  stream.settle();  // 1, 5 and 6 in place, 7 waits for a slot
  EXPECT_EQ(stream.in_flight(), 3u);
  EXPECT_EQ(stream.unscheduled(), 1u);
  for (const std::uint64_t unit : {std::uint64_t{1}, std::uint64_t{5}, std::uint64_t{6}}) {  // in place before any is handed out
    bool found = false;
    for (std::uint32_t slot = 0; slot < 3; ++slot) found = found || holds(slot, unit);
    EXPECT_TRUE(found) << "unit " << unit << " not in place after settle";
  }
  std::vector<std::uint64_t> delivered;
  while (auto unit = stream.next()) {
    EXPECT_TRUE(holds(unit->slot, unit->unit)) << "unit " << unit->unit;
    delivered.push_back(unit->unit);
    stream.release(unit->slot);
  }
  EXPECT_EQ(delivered, (std::vector<std::uint64_t>{1, 5, 6, 7}));
}

TEST_F(SlotStreamTest, ExplicitLoadsFillTheSlotsGivenAndReportTheFirstFailure) {
  SlotStream stream = make(3);
  stream.load(5, 2);
  stream.load(6, 0);
  (void)stream.wait_loaded();
  EXPECT_TRUE(holds(2, 5));
  EXPECT_TRUE(holds(0, 6));
  stream.load(units, 1);
  EXPECT_THROW((void)stream.wait_loaded(), Error);
}

TEST_F(SlotStreamTest, StoppingCancelsWhatIsInFlightAndLeavesNoReadBehind) {
  SlotStream stream = make(3);
  stream.play({0, 1, 2, 3, 4});
  stream.stop();
  EXPECT_EQ(stream.in_flight(), 0u);
  EXPECT_FALSE(stream.next().has_value());
  queue.drain();
}

}  // namespace
}  // namespace headrace::engine

namespace headrace::engine {
namespace {

// A frame of more reads than the queue keeps statuses of, several frames ahead: the stream holds units
// back rather than let the queue forget the statuses next() reads (a 100 M-particle frame of 128 KB chunks
// looped by `headrace stream` failed so: "request 25000 was retired").
TEST(SlotStreamStatusHistory, UnitsAheadNeverPushTheStatusesOfTheUnitBeingHandedOutOut) {
  testing::TempDirectory scratch;
  constexpr std::uint64_t piece = 4096, pieces = 600;  // 600 reads a unit, 1024 statuses kept
  const std::vector<std::byte> contents = testing::pseudo_random_bytes(piece * pieces, 5);
  const std::string path = scratch.write("pieces.bin", contents);
  QueueOptions queue_options;
  queue_options.status_history = 1024;
  Queue queue(queue_options);
  const FileId file = queue.add_file(path);
  std::vector<std::byte> memory(3 * piece * pieces);
  SlotStreamOptions options;
  options.slots = 3;
  SlotStream stream(
      queue,
      [&](std::uint64_t, std::uint32_t slot) {
        std::vector<Request> requests;
        for (std::uint64_t k = 0; k < pieces; ++k)
          requests.push_back(queue::range_request(file, k * piece, piece, queue::MemoryKind::host,
                                                  reinterpret_cast<std::uintptr_t>(memory.data() + (slot * pieces + k) * piece)));
        return requests;
      },
      std::move(options));
  stream.play({0, 1, 2, 3, 4, 5});
  EXPECT_EQ(stream.in_flight(), 1u);  // a second unit would take 1200 statuses
  int delivered = 0;
  while (auto unit = stream.next()) {
    EXPECT_EQ(unit->summary.done, pieces);
    EXPECT_EQ(std::memcmp(memory.data() + unit->slot * pieces * piece, contents.data(), piece * pieces), 0);
    stream.release(unit->slot);
    ++delivered;
  }
  EXPECT_EQ(delivered, 6);
  // A unit larger than the queue's memory of statuses alone is refused, named.
  SlotStreamOptions one;
  one.name = [](std::uint64_t unit) { return "frame " + std::to_string(unit); };
  SlotStream huge(queue, [&](std::uint64_t, std::uint32_t) { return std::vector<Request>(2000, queue::range_request(file, 0, piece, queue::MemoryKind::host, reinterpret_cast<std::uintptr_t>(memory.data()))); },
                  std::move(one));
  EXPECT_THROW(
      {
        try {
          huge.play({0});
        } catch (const UsageError& e) {
          EXPECT_NE(std::string(e.what()).find("frame 0 takes 2000 reads, more than the queue keeps the status of (1024"), std::string::npos)
              << e.what();
          throw;
        }
      },
      UsageError);
}

}  // namespace
}  // namespace headrace::engine
