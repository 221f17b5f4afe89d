// The nvCOMP shim: where the library loads (the wheel's lib64 on LD_LIBRARY_PATH or registered by
// Python), its host-only queries answer with nvCOMP 6's values; where it does not, the reason names it.
#include "headrace/shim/nvcomp.hpp"

#include <gtest/gtest.h>

#include <string>

namespace headrace::shim {
namespace {

bool is_power_of_two(std::size_t value) { return value != 0 && (value & (value - 1)) == 0; }

TEST(NvcompShim, MissingLibrarySaysWhy) {
  if (nvcomp() != nullptr) GTEST_SKIP() << "nvCOMP " << nvcomp()->version() << " loaded from " << nvcomp()->path();
  const std::string& why = why_no_nvcomp();
  // Either the library is missing (the dlerror names it) or it is not nvCOMP 6.
  EXPECT_TRUE(why.find("libnvcomp") != std::string::npos || why.find("headrace uses the batched API of nvCOMP 6") != std::string::npos)
      << why;
}

TEST(NvcompShim, ReportsVersion6AndEveryAlgorithm) {
  const Nvcomp* library = nvcomp();
  if (library == nullptr) GTEST_SKIP() << "nvCOMP not loaded here: " << why_no_nvcomp();
  EXPECT_EQ(library->version().substr(0, 2), "6.") << library->version();
  EXPECT_TRUE(why_no_nvcomp().empty()) << why_no_nvcomp();
  for (std::size_t a = 0; a < nvcomp_algorithm_count; ++a) {
    const auto algorithm = static_cast<NvcompAlgorithm>(a);
    std::string why;
    EXPECT_NE(library->decompress_api(algorithm, &why), nullptr) << to_string(algorithm) << ": " << why;
    EXPECT_NE(library->compress_api(algorithm, &why), nullptr) << to_string(algorithm) << ": " << why;
  }
  std::string why;
  EXPECT_NE(library->bitcomp_host(&why), nullptr) << why;
}

TEST(NvcompShim, AlignmentsAndTempSizesAnswerOnTheHost) {
  const Nvcomp* library = nvcomp();
  if (library == nullptr) GTEST_SKIP() << "nvCOMP not loaded here: " << why_no_nvcomp();
  NvcompOptions options;
  options.put(0, static_cast<int>(NvcompBackend::cuda));
  // nvcomp<Name>RequiredDecompressionAlignment: the most restrictive each algorithm may ask.
  const std::pair<NvcompAlgorithm, std::size_t> most_restrictive[] = {
      {NvcompAlgorithm::lz4, 4}, {NvcompAlgorithm::zstd, 8}, {NvcompAlgorithm::gdeflate, 4}};
  for (const auto& [algorithm, bound] : most_restrictive) {
    const NvcompDecompressApi* api = library->decompress_api(algorithm, nullptr);
    ASSERT_NE(api, nullptr);
    NvcompAlignments alignments{0, 0, 0};
    ASSERT_EQ(api->get_required_alignments(options, &alignments), nvcomp_success) << to_string(algorithm);
    for (std::size_t value : {alignments.input, alignments.output, alignments.temp}) {
      EXPECT_TRUE(is_power_of_two(value)) << to_string(algorithm) << " " << value;
      EXPECT_LE(value, bound) << to_string(algorithm);
    }
    std::size_t small = 0, large = 0;
    ASSERT_EQ(api->get_temp_size(16, 65536, options, &small, 16 * 65536, nullptr), nvcomp_success) << to_string(algorithm);
    ASSERT_EQ(api->get_temp_size(4096, 65536, options, &large, 4096 * 65536, nullptr), nvcomp_success) << to_string(algorithm);
    EXPECT_GE(large, small) << to_string(algorithm);
  }
}

TEST(NvcompShim, StatusTextNamesTheStatus) {
  const Nvcomp* library = nvcomp();
  if (library == nullptr) GTEST_SKIP() << "nvCOMP not loaded here: " << why_no_nvcomp();
  EXPECT_EQ(library->status_text(12).rfind("nvcompErrorCannotDecompress (12)", 0), 0u) << library->status_text(12);
  EXPECT_EQ(library->status_text(4242).rfind("unknown nvcompStatus_t (4242)", 0), 0u) << library->status_text(4242);
}

}  // namespace
}  // namespace headrace::shim
