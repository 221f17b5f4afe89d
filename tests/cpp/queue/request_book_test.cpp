// The queue's bookkeeping alone: priority order, fences over prefixes, cancellation by state and
// tag, summaries, and a bounded history whose ids stay valid.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "headrace/error.hpp"
#include "headrace/queue/request_book.hpp"

namespace headrace::queue {
namespace {

// A fence's mark: how often the book asked the owner to record it.
struct Marks {
  int recorded = 0;
};
using Book = RequestBook<int, Marks>;

Request request_of(std::uint64_t size, int priority = 0, std::uint64_t tag = 0) {
  Request r;
  r.stored_size = r.raw_size = size;
  r.priority = priority;
  r.tag = tag;
  return r;
}

struct BookTest : ::testing::Test {
  std::vector<FenceId> recorded;
  Book book{1 << 16, [this](FenceId id, Book::Fence& fence) {
              recorded.push_back(id);
              ++fence.mark.recorded;
            }};

  // Submits, then takes every pending request in the order the book gives them.
  std::vector<RequestId> drain_pending() {
    book.submit();
    std::vector<RequestId> order;
    while (book.has_pending()) {
      order.push_back(book.next_pending());
      book.pop_pending();
    }
    return order;
  }
};

TEST_F(BookTest, PendingRequestsComeByPriorityThenInIdOrder) {
  const RequestId low = book.add(request_of(1, 0), 0, false);
  const RequestId high = book.add(request_of(1, 5), 0, false);
  const RequestId low_later = book.add(request_of(1, 0), 0, false);
  const RequestId high_later = book.add(request_of(1, 5), 0, false);
  EXPECT_EQ(drain_pending(), (std::vector<RequestId>{high, high_later, low, low_later}));
  EXPECT_EQ(book.entry(high).status.state, RequestState::submitted);
}

TEST(Book, RequestsWaitInTheListTheOwnerPicksAndTheFirstListIsTheOneWhoseNextComesFirst) {
  Book book{1 << 16, [](FenceId, Book::Fence&) {}, 2};
  const RequestId a = book.add(request_of(1, 0), 0, false);
  const RequestId b = book.add(request_of(1, 0), 1, false);
  const RequestId urgent = book.add(request_of(1, 5), 1, false);
  book.submit([](RequestId, Book::Entry& entry) -> std::size_t { return static_cast<std::size_t>(entry.plan); });
  EXPECT_EQ(book.first_pending_list(), 1u);  // priority 5
  EXPECT_EQ(book.next_pending(1), urgent);
  book.pop_pending(1);
  EXPECT_EQ(book.first_pending_list(), 0u);  // a before b
  EXPECT_EQ(book.next_pending(0), a);
  book.pop_pending(0);
  EXPECT_FALSE(book.has_pending(0));
  EXPECT_TRUE(book.has_pending());
  EXPECT_EQ(book.first_pending_list(), 1u);
  EXPECT_EQ(book.next_pending(1), b);
  book.pop_pending(1);
  EXPECT_FALSE(book.has_pending());
}

TEST_F(BookTest, AFenceSignalsWhenItsRequestsFinishAndIsRecordedWhenTheyAreIssued) {
  const RequestId a = book.add(request_of(10), 0, false);
  const RequestId b = book.add(request_of(20), 0, false);
  const FenceId fence = book.add_fence({});
  const RequestId after = book.add(request_of(30), 0, false);
  EXPECT_FALSE(book.signaled(fence));
  book.submit();
  book.dispatch(a, ReadSource::disk);
  book.dispatch(b, ReadSource::page_cache);
  book.mark_issued(a);
  EXPECT_TRUE(recorded.empty());
  book.mark_issued(b);  // every request of the fence is issued: its event is recorded now, once
  EXPECT_EQ(recorded, std::vector<FenceId>{fence});
  EXPECT_FALSE(book.signaled(fence));
  book.finish(a, RequestState::done, "");
  book.finish(b, RequestState::done, "");
  EXPECT_TRUE(book.signaled(fence));
  EXPECT_EQ(book.fence(fence).mark.recorded, 1);
  EXPECT_FALSE(book.drained());  // `after` is submitted, not finished
  book.finish(after, RequestState::failed, "bad");
  EXPECT_TRUE(book.drained());
  EXPECT_EQ(book.totals().done, 2u);
  EXPECT_EQ(book.totals().failed, 1u);
  EXPECT_EQ(book.totals().bytes_from_disk, 10u);
  EXPECT_EQ(book.totals().bytes_from_cache, 20u);
}

TEST_F(BookTest, AFenceOverNothingOpenIsSignaledAndRecordedAtOnce) {
  const FenceId first = book.add_fence({});
  EXPECT_TRUE(book.signaled(first));
  EXPECT_EQ(recorded, std::vector<FenceId>{first});
}

TEST_F(BookTest, CancellingDependsOnHowFarTheRequestGot) {
  const RequestId enqueued = book.add(request_of(1), 0, false);
  EXPECT_TRUE(book.cancel(enqueued));
  EXPECT_EQ(book.entry(enqueued).status.state, RequestState::cancelled);
  EXPECT_TRUE(book.drained());  // a cancelled enqueued request no longer waits for submit

  const RequestId staged = book.add(request_of(1), 0, true);
  const RequestId direct = book.add(request_of(1), 0, false);
  book.submit();
  book.dispatch(staged, ReadSource::disk);
  book.dispatch(direct, ReadSource::disk);
  EXPECT_TRUE(book.cancel(staged));  // read into staging: dropped after its read
  EXPECT_TRUE(book.entry(staged).cancel_requested);
  EXPECT_EQ(book.entry(staged).status.state, RequestState::reading);
  EXPECT_FALSE(book.cancel(direct));  // its read lands in the destination: too late
  book.finish(direct, RequestState::done, "");
  EXPECT_FALSE(book.cancel(direct));
}

TEST_F(BookTest, CancelTagCancelsOnlyThatTagsUnfinishedRequests) {
  const RequestId mine = book.add(request_of(1, 0, 7), 0, false);
  const RequestId other = book.add(request_of(1, 0, 8), 0, false);
  const RequestId mine_done = book.add(request_of(1, 0, 7), 0, false);
  book.submit();
  book.dispatch(mine_done, ReadSource::disk);
  book.finish(mine_done, RequestState::done, "");
  EXPECT_EQ(book.cancel_tag(7), 1u);
  EXPECT_EQ(book.entry(mine).status.state, RequestState::cancelled);
  EXPECT_EQ(book.entry(other).status.state, RequestState::submitted);
  EXPECT_EQ(book.entry(mine_done).status.state, RequestState::done);
}

TEST_F(BookTest, ClosingAFileWhileARequestReadsItNamesTheRequest) {
  Request r = request_of(1);
  r.file = 3;
  const RequestId reading = book.add(r, 0, false);
  book.expect_unread(2, "other.hrc");
  try {
    book.expect_unread(3, "data.hrc");
    FAIL() << "closing a file in use was allowed";
  } catch (const UsageError& error) {
    EXPECT_NE(std::string(error.what()).find("data.hrc: cannot be closed while request " + std::to_string(reading)),
              std::string::npos)
        << error.what();
  }
}

TEST_F(BookTest, ASummaryAddsUpStatesBytesAndSources) {
  const RequestId cached = book.add(request_of(100), 0, false);
  const RequestId failed = book.add(request_of(50), 0, false);
  const RequestId open = book.add(request_of(25), 0, false);
  book.submit();
  book.dispatch(cached, ReadSource::page_cache);
  book.finish(cached, RequestState::done, "");
  book.finish(failed, RequestState::failed, "frame 3: checksum mismatch");
  const std::vector<RequestId> ids{cached, failed, open};
  const RequestSummary sum = book.summarize(ids);
  EXPECT_EQ(sum.requests, 3u);
  EXPECT_EQ(sum.done, 1u);
  EXPECT_EQ(sum.failed, 1u);
  EXPECT_EQ(sum.unfinished, 1u);
  EXPECT_EQ(sum.stored_bytes, 100u);
  EXPECT_EQ(sum.bytes_from_cache, 100u);
  EXPECT_EQ(sum.first_failure, "frame 3: checksum mismatch");
}

TEST_F(BookTest, BytesFromPinnedPagesAndHeldCopiesCountAsMemoryAndHeldOnesApart) {
  const RequestId disk = book.add(request_of(1000), 0, false);
  const RequestId pinned = book.add(request_of(200), 0, false);
  const RequestId held = book.add(request_of(30), 0, false);
  book.submit();
  book.dispatch(disk, ReadSource::disk);
  book.dispatch(pinned, ReadSource::pinned);
  book.dispatch(held, ReadSource::held);
  for (const RequestId id : {disk, pinned, held}) book.finish(id, RequestState::done, "");
  const RequestSummary sum = book.summarize(std::vector<RequestId>{disk, pinned, held});
  EXPECT_EQ(sum.bytes_from_disk, 1000u);
  EXPECT_EQ(sum.bytes_from_cache, 230u);
  EXPECT_EQ(sum.bytes_pinned, 230u);
  EXPECT_EQ(sum.bytes_held, 30u);
  EXPECT_EQ(book.totals().bytes_held, 30u);
  EXPECT_EQ(book.totals().bytes_from_cache, 230u);
  EXPECT_STREQ(to_string(ReadSource::held), "held");
}

TEST(RequestBook, HistoryIsBoundedAndRetiredIdsSaySo) {
  Book book(8, [](FenceId, Book::Fence&) {});
  std::vector<RequestId> ids;
  for (int i = 0; i < 40; ++i) {
    const RequestId id = book.add(request_of(1), 0, false);
    book.submit();
    book.pop_pending();
    book.dispatch(id, ReadSource::disk);
    book.finish(id, RequestState::done, "");
    ids.push_back(id);
  }
  EXPECT_LE(book.retained(), 8u);
  EXPECT_EQ(book.known(ids.back()).status.state, RequestState::done);
  try {
    (void)book.known(ids.front());
    FAIL() << "a retired request was found";
  } catch (const UsageError& error) {
    EXPECT_NE(std::string(error.what()).find("was retired"), std::string::npos) << error.what();
  }
  EXPECT_THROW((void)book.known(ids.back() + 1), UsageError);
}

TEST(RequestBook, AnUnfinishedRequestHoldsTheHistoryAndItsIdStaysValid) {
  Book book(4, [](FenceId, Book::Fence&) {});
  const RequestId held = book.add(request_of(1), 0, false);
  for (int i = 0; i < 20; ++i) {
    const RequestId id = book.add(request_of(1), 0, true);
    book.finish(id, RequestState::cancelled, "cancelled before it was read");
  }
  EXPECT_EQ(book.known(held).status.state, RequestState::enqueued);
}

TEST(RequestBook, FiredFencesRetireAndReadAsSignaled) {
  Book book(1 << 16, [](FenceId, Book::Fence&) {});
  for (std::size_t i = 0; i < Book::retained_fences + 100; ++i) {
    const RequestId id = book.add(request_of(1), 0, false);
    book.finish(id, RequestState::done, "");
    (void)book.add_fence({});
  }
  EXPECT_TRUE(book.retired_fence(0));
  EXPECT_TRUE(book.signaled(0));
  EXPECT_FALSE(book.retired_fence(book.end_fence() - 1));
  EXPECT_THROW((void)book.signaled(book.end_fence()), UsageError);
}

}  // namespace
}  // namespace headrace::queue
