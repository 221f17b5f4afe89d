// format layer: Container (reader of the index) and ContainerWriter.
#include <nanobind/ndarray.h>
#include <nanobind/stl/array.h>
#include <nanobind/stl/map.h>
#include <nanobind/stl/optional.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/tuple.h>
#include <nanobind/stl/variant.h>
#include <nanobind/stl/vector.h>

#include "bindings.hpp"
#include "headrace/codec/cpu/chunk_codec.hpp"
#include "headrace/error.hpp"
#include "headrace/format/container.hpp"
#include "headrace/format/writer.hpp"

namespace nb = nanobind;
using namespace nb::literals;

namespace headrace::python {
namespace {

using format::Container;
using format::ContainerWriter;

template <typename T>
nb::ndarray<nb::numpy, T, nb::ndim<1>> column(const Container& container, T format::ChunkInfo::*member) {
  const auto& chunks = container.chunks();
  auto* values = new T[chunks.size()];
  for (std::size_t i = 0; i < chunks.size(); ++i) values[i] = chunks[i].*member;
  nb::capsule owner(values, [](void* p) noexcept { delete[] static_cast<T*>(p); });
  return nb::ndarray<nb::numpy, T, nb::ndim<1>>(values, {chunks.size()}, owner);
}

std::span<const std::byte> bytes_of(const nb::ndarray<nb::ro, nb::c_contig, nb::device::cpu>& array) {
  return {static_cast<const std::byte*>(array.data()), array.nbytes()};
}

}  // namespace

void bind_format(nb::module_& m) {
  nb::class_<format::FieldInfo>(m, "FieldInfo")
      .def_ro("name", &format::FieldInfo::name)
      .def_prop_ro("dtype", [](const format::FieldInfo& f) { return std::string(format::to_string(f.dtype)); })
      .def_ro("components", &format::FieldInfo::components)
      .def_prop_ro("element_bytes", &format::FieldInfo::element_bytes);

  nb::class_<format::FrameInfo>(m, "FrameInfo")
      .def_ro("time", &format::FrameInfo::time)
      .def_prop_ro("bbox", [](const format::FrameInfo& f) { return std::make_tuple(f.bbox.min, f.bbox.max); });

  nb::class_<Container>(m, "Container")
      .def_static("open", &Container::open, "path"_a, nb::call_guard<nb::gil_scoped_release>(),
                  "Reads and validates superblock and index (two reads).")
      .def_prop_ro("path", &Container::path)
      .def_prop_ro("file_size", &Container::file_size)
      .def_prop_ro("index_offset", &Container::index_offset)
      .def_prop_ro("version", [](const Container& c) { return std::make_tuple(1, int{c.version_minor()}); })
      .def_prop_ro("fields", &Container::fields)
      .def_prop_ro("frames", &Container::frames)
      .def_prop_ro("attributes", &Container::attributes)
      .def_prop_ro("stored_bytes", &Container::stored_bytes)
      .def_prop_ro("raw_bytes", &Container::raw_bytes)
      .def("field_index", &Container::field_index, "name"_a)
      .def("frame_field", [](const Container& c, std::uint32_t frame, std::uint32_t field) {
             const auto& info = c.frame_field(frame, field);
             return std::make_tuple(info.element_count, info.first_chunk, info.chunk_count);
           }, "frame"_a, "field"_a, "(element_count, first_chunk, chunk_count)")
      .def("chunk_table", [](const Container& c) {
             nb::dict table;
             table["offset"] = column(c, &format::ChunkInfo::offset);
             table["stored_size"] = column(c, &format::ChunkInfo::stored_size);
             table["raw_size"] = column(c, &format::ChunkInfo::raw_size);
             table["first_element"] = column(c, &format::ChunkInfo::first_element);
             table["element_count"] = column(c, &format::ChunkInfo::element_count);
             table["checksum"] = column(c, &format::ChunkInfo::checksum);
             table["frame"] = column(c, &format::ChunkInfo::frame);
             table["field"] = column(c, &format::ChunkInfo::field);
             std::vector<std::string> codecs;
             for (const auto& chunk : c.chunks()) codecs.emplace_back(format::to_string(chunk.codec));
             table["codec"] = codecs;
             return table;
           }, "The chunk records as NumPy columns (codec as a list of names).")
      .def("chunk_range", [](const Container& c, std::uint64_t chunk) {
             HEADRACE_EXPECT(chunk < c.chunks().size(), UsageError, "chunk " + std::to_string(chunk) + " out of range");
             const auto& info = c.chunks()[chunk];
             const auto lo = c.range_min(info);
             const auto hi = c.range_max(info);
             return std::make_tuple(std::vector<double>(lo.begin(), lo.end()), std::vector<double>(hi.begin(), hi.end()));
           }, "chunk"_a, "Per component (minima, maxima) of one chunk.");

  nb::class_<ContainerWriter>(m, "ContainerWriter")
      .def("__init__", [](ContainerWriter* self, const std::string& path,
                          const std::vector<std::tuple<std::string, std::string, std::uint32_t>>& fields,
                          std::uint64_t chunk_size_bytes, const std::string& codec, int codec_level, unsigned encode_threads) {
             std::vector<format::FieldInfo> infos;
             for (const auto& [name, dtype, components] : fields) infos.push_back({name, format::parse_dtype(dtype), components});
             format::WriterOptions options;
             options.chunk_size_bytes = chunk_size_bytes;
             options.codec = format::parse_codec(codec);
             options.codec_level = codec_level;
             options.encode_threads = encode_threads;
             options.encoder = &codec::cpu::encode;
             new (self) ContainerWriter(path, std::move(infos), std::move(options));
           }, "path"_a, "fields"_a, "chunk_size_bytes"_a = std::uint64_t{4} << 20, "codec"_a = "none", "codec_level"_a = 0,
           "encode_threads"_a = 0)
      .def("set_attribute", &ContainerWriter::set_attribute, "name"_a, "value"_a)
      .def("add_frame", [](ContainerWriter& w, double time, std::optional<std::tuple<std::array<double, 3>, std::array<double, 3>>> bbox) {
             std::optional<format::BoundingBox> box;
             if (bbox) box = format::BoundingBox{std::get<0>(*bbox), std::get<1>(*bbox)};
             return w.add_frame(time, box);
           }, "time"_a, "bbox"_a = nb::none())
      .def("write_field", [](ContainerWriter& w, std::uint32_t frame, std::uint32_t field,
                             const nb::ndarray<nb::ro, nb::c_contig, nb::device::cpu>& data) {
             const auto bytes = bytes_of(data);
             nb::gil_scoped_release release;
             w.write_field(frame, field, bytes);
           }, "frame"_a, "field"_a, "data"_a, "Appends raw elements (any C-contiguous array; its bytes are used).")
      .def("close", &ContainerWriter::close, nb::call_guard<nb::gil_scoped_release>())
      .def("abort", &ContainerWriter::abort);
}

}  // namespace headrace::python
