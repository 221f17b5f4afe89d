#include "headrace/gpu/grid_order.hpp"

#include "headrace/error.hpp"
#include "grid_order_kernel_image.hpp"

namespace headrace::gpu {
namespace {

constexpr unsigned block_threads = 256;

void check_units(const GridUnits& units, std::uint32_t element_bytes) {
  for (int axis = 0; axis < 3; ++axis)
    HEADRACE_EXPECT(units.dims[axis] >= 1 && units.unit[axis] >= 1, UsageError, "grid order: dims and units of at least one point");
  HEADRACE_EXPECT(element_bytes >= 1, UsageError, "grid order: elements of at least one byte");
}

}  // namespace

GridOrderKernel::GridOrderKernel(int device)
    : device_(device),
      module_((device_.make_current(), grid_order_kernel_image()), "the grid-order kernel (grid_order.cu)",
              "stream with stored_order=True and reorder the elements yourself"),
      gather_(module_.function("headrace_gather_grid_order")) {}

void GridOrderKernel::gather(CUdeviceptr stored, CUdeviceptr natural, const GridUnits& units, CUdeviceptr local_order,
                             std::uint32_t element_bytes, CUstream stream) const {
  check_units(units, element_bytes);
  HEADRACE_EXPECT(stored != natural, UsageError, "grid order: out of place");
  device_.make_current();
  auto* source = reinterpret_cast<const unsigned char*>(stored);
  auto* target = reinterpret_cast<unsigned char*>(natural);
  GridUnits g = units;
  auto* order = reinterpret_cast<const unsigned*>(local_order);
  unsigned bytes = element_bytes;
  void* args[] = {&source, &target, &g, &order, &bytes};
  launch_1d(gather_, units.points(), block_threads, stream, args);
}

void gather_grid_order_host(const std::byte* stored, std::byte* natural, const GridUnits& units,
                            const std::uint32_t* local_order, std::uint32_t element_bytes) {
  check_units(units, element_bytes);
  const auto* source = reinterpret_cast<const unsigned char*>(stored);
  auto* target = reinterpret_cast<unsigned char*>(natural);
  for (std::uint64_t p = 0, n = units.points(); p < n; ++p)
    copy_element(source + stored_position(units, local_order, p) * element_bytes, target + p * element_bytes, element_bytes);
}

}  // namespace headrace::gpu
