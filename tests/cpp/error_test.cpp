// rethrow_with_context: an error found on one thread and reported on another keeps its type, its
// errno or CUDA result, and gains where it was found in front of its message.
#include "headrace/error.hpp"

#include <gtest/gtest.h>

#include <cerrno>

namespace headrace {
namespace {

template <class Thrown>
Thrown rethrown(const Thrown& original) {
  try {
    rethrow_with_context(std::make_exception_ptr(original), "frame 2 (particles): ");
  } catch (const Thrown& error) {
    return error;
  }
  ADD_FAILURE() << "not rethrown as its own type";
  return original;
}

TEST(RethrowWithContext, KeepsTheTypeAndItsNumbersAndLeadsWithTheContext) {
  EXPECT_STREQ(rethrown(ChecksumMismatchError("p.hrc: offset 8: expected checksum 1, found 2")).what(),
               "frame 2 (particles): p.hrc: offset 8: expected checksum 1, found 2");
  EXPECT_EQ(rethrown(SystemError("pread(p.hrc) failed", EIO)).error_number(), EIO);
  EXPECT_EQ(rethrown(FileNotFoundError("open(p.hrc) failed", ENOENT)).error_number(), ENOENT);
  EXPECT_EQ(rethrown(GpuOutOfMemoryError("cuMemAlloc", 2)).result(), 2);
  (void)rethrown(TruncatedFileError("short"));
  (void)rethrown(CodecError("bad lz4"));
  (void)rethrown(UnknownNameError("no field 'v'"));
  // A most derived type is not flattened to its base on the way.
  EXPECT_THROW(rethrow_with_context(std::make_exception_ptr(ChecksumMismatchError("x")), ""), ChecksumMismatchError);
}

TEST(RethrowWithContext, AnotherExceptionBecomesAnErrorAndMessageOfReadsIt) {
  try {
    rethrow_with_context(std::make_exception_ptr(std::out_of_range("index 9")), "batch 1: ");
    FAIL() << "nothing thrown";
  } catch (const Error& error) {
    EXPECT_STREQ(error.what(), "batch 1: index 9");
  }
  EXPECT_EQ(message_of(std::make_exception_ptr(CodecError("bad lz4"))), "bad lz4");
}

}  // namespace
}  // namespace headrace
