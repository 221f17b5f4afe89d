// Guards: an int64/float64 attribute with zero values was memcpy'd from a null vector (UB found by
// the index-parser fuzzer); it must open as an empty array.
#include <gtest/gtest.h>

#include "headrace/format/container.hpp"
#include "headrace/format/writer.hpp"
#include "support/temp_directory.hpp"

namespace headrace::format {
namespace {

TEST(Regress, EmptyNumericAttributeOpensEmpty) {
  testing::TempDirectory dir;
  const auto path = dir.file("empty-attribute.hrc");
  ContainerWriter writer(path, {{"v", DType::uint8, 1}}, {});
  writer.set_attribute("no_ints", std::vector<std::int64_t>{});
  writer.set_attribute("no_floats", std::vector<double>{});
  const auto frame = writer.add_frame(0.0, std::nullopt);
  const std::vector<std::uint8_t> value{7};
  writer.write_field(frame, 0, std::as_bytes(std::span<const std::uint8_t>(value)));
  writer.close();
  const auto c = Container::open(path);
  EXPECT_TRUE(std::get<std::vector<std::int64_t>>(c.attributes().at("no_ints")).empty());
  EXPECT_TRUE(std::get<std::vector<double>>(c.attributes().at("no_floats")).empty());
}

}  // namespace
}  // namespace headrace::format
