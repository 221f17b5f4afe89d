// gpu::HomeCopy: device memory brought home through its ring of staging, every byte where it belongs, for
// results smaller than a piece, of many pieces, and of a last piece cut short; and detail::HostArray, the
// arrays it fills, sized without being written.
#include <gtest/gtest.h>

#include <cstdint>
#include <numeric>
#include <vector>

#include "headrace/detail/host_array.hpp"
#include "headrace/gpu/cuda_driver.hpp"
#include "headrace/gpu/device.hpp"
#include "headrace/gpu/memory.hpp"
#include "headrace/gpu/stream.hpp"

namespace headrace {
namespace {

TEST(HostArray, HoldsWhatIsWrittenInSmallAndHugeBuffers) {
  for (const std::size_t count : {std::size_t{10}, std::size_t{3} << 20}) {  // 40 B, 12 MiB of uint32
    detail::HostArray<std::uint32_t> values;
    values.resize(count);
    std::iota(values.begin(), values.end(), 7u);
    EXPECT_EQ(values.front(), 7u);
    EXPECT_EQ(values.back(), 7u + count - 1);
    if (count * 4 >= detail::DefaultInitAllocator<std::uint32_t>::huge_from)
      EXPECT_EQ(reinterpret_cast<std::uintptr_t>(values.data()) % detail::DefaultInitAllocator<std::uint32_t>::huge_page, 0u);
  }
}

TEST(HomeCopyGpu, EveryByteComesHomeWhereItBelongs) {
  if (gpu::device_count() == 0) GTEST_SKIP() << "no GPU: " << (gpu::driver() ? "no device" : gpu::why_no_driver());
  gpu::Device device(0);
  device.make_current();
  gpu::Stream stream;
  gpu::HomeCopy home(std::size_t{1} << 20, 3, 4);  // pieces of 1 MiB, 3 in the ring
  for (const std::size_t count : {std::size_t{1000}, std::size_t{5} << 20, (std::size_t{3} << 20) + 12345}) {
    std::vector<std::uint32_t> sent(count);
    std::iota(sent.begin(), sent.end(), static_cast<std::uint32_t>(count));
    gpu::DeviceBuffer on_device(count * 4);
    gpu::copy_to_device(on_device.pointer(), sent.data(), count * 4);
    detail::HostArray<std::uint32_t> back;
    back.resize(count);
    home.copy(back.data(), on_device.pointer(), count * 4, stream.handle());
    EXPECT_TRUE(std::equal(sent.begin(), sent.end(), back.begin())) << count << " values";
  }
}

}  // namespace
}  // namespace headrace
