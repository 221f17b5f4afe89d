// format layer: Container (reader of the index) and ContainerWriter.
#include <nanobind/ndarray.h>
#include <nanobind/stl/array.h>
#include <nanobind/stl/function.h>
#include <nanobind/stl/map.h>
#include <nanobind/stl/optional.h>
#include <nanobind/stl/pair.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/tuple.h>
#include <nanobind/stl/variant.h>
#include <nanobind/stl/vector.h>

#include <algorithm>

#include "bindings.hpp"
#include "headrace/codec/chain_writer.hpp"
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

// A writer with the chain encoder that encodes its chunks (the writer holds the encoder's function,
// which shares the encoder's state).
struct ChainedWriter {
  std::shared_ptr<codec::ChainEncoder> chains;
  std::unique_ptr<ContainerWriter> writer;
};

std::span<const std::byte> bytes_of(const nb::ndarray<nb::ro, nb::c_contig, nb::device::cpu>& array) {
  return {static_cast<const std::byte*>(array.data()), array.nbytes()};
}

}  // namespace

void bind_format(nb::module_& m) {
  m.def("record_codecs", [] { return detail::names_of(format::codec_id_names); },
        "The codecs a chunk record names (docs/format.md 5.7): none, the plain codecs, and chain.");
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
      .def_prop_ro("growing", &Container::growing,
                   "A publishing writer's file (format 1.4): the frames it has published so far; it may grow.")
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
             table["chain"] = column(c, &format::ChunkInfo::chain);
             std::vector<std::string> codecs;
             for (const auto& chunk : c.chunks())
               codecs.push_back(format::coding_of(chunk));
             table["codec"] = codecs;
             return table;
           }, "The chunk records as NumPy columns (codec as a list of names: a plain codec's, or a chain's text).")
      .def_prop_ro("chains", [](const Container& c) {
             std::vector<std::tuple<std::string, std::optional<double>>> chains;
             for (const auto& chain : c.chains()) chains.emplace_back(*chain.spec, chain.error_bound);
             return chains;
           }, "The chain table (format 1.3): (text, error bound when lossy) per chain.")
      .def("chunk_range", [](const Container& c, std::uint64_t chunk) {
             HEADRACE_EXPECT(chunk < c.chunks().size(), UsageError, "chunk " + std::to_string(chunk) + " out of range");
             const auto& info = c.chunks()[chunk];
             const auto lo = c.range_min(info);
             const auto hi = c.range_max(info);
             return std::make_tuple(std::vector<double>(lo.begin(), lo.end()), std::vector<double>(hi.begin(), hi.end()));
           }, "chunk"_a, "Per component (minima, maxima) of one chunk.")
      .def("chunk_ranges", [](const Container& c, std::uint64_t first, std::uint64_t count) {
             HEADRACE_EXPECT(first + count <= c.chunks().size() && first + count >= first, UsageError,
                             "chunks " + std::to_string(first) + " to " + std::to_string(first + count) + " of " +
                                 std::to_string(c.chunks().size()));
             const std::size_t components = count ? c.range_min(c.chunks()[first]).size() : 0;
             std::vector<double> lows(count * components), highs(count * components);
             for (std::uint64_t k = 0; k < count; ++k) {
               const auto& info = c.chunks()[first + k];
               const auto lo = c.range_min(info), hi = c.range_max(info);
               HEADRACE_EXPECT(lo.size() == components, UsageError, "chunks of one field: every range has as many components");
               std::copy(lo.begin(), lo.end(), lows.begin() + static_cast<std::ptrdiff_t>(k * components));
               std::copy(hi.begin(), hi.end(), highs.begin() + static_cast<std::ptrdiff_t>(k * components));
             }
             return std::make_pair(owned_array(std::move(lows), {count, components}), owned_array(std::move(highs), {count, components}));
           }, "first"_a, "count"_a,
           "Per chunk and component, the minima and maxima of chunks first..first + count (one field's): two (count, "
           "components) float64 arrays.");

  nb::class_<ChainedWriter>(m, "ContainerWriter")
      .def("__init__", [](ChainedWriter* self, const std::string& path,
                          const std::vector<std::tuple<std::string, std::string, std::uint32_t>>& fields,
                          std::uint64_t chunk_size_bytes, unsigned encode_threads, int device, bool publish) {
             std::vector<format::FieldInfo> infos;
             for (const auto& [name, dtype, components] : fields) infos.push_back({name, format::parse_dtype(dtype), components});
             auto chains = std::make_shared<codec::ChainEncoder>(infos.size(), device);
             format::WriterOptions options;
             options.chunk_size_bytes = chunk_size_bytes;
             options.encode_threads = encode_threads;
             options.encoder = chains->encoder();
             options.publish = publish;
             new (self) ChainedWriter{chains, std::make_unique<ContainerWriter>(path, std::move(infos), std::move(options))};
           }, "path"_a, "fields"_a, "chunk_size_bytes"_a = std::uint64_t{4} << 20, "encode_threads"_a = 0, "device"_a = 0,
           "publish"_a = false,
           "Every field stored as it is until set_chain() says otherwise; device: the GPU that encodes the codecs only "
           "a GPU encodes; publish: each frame visible in path once whole (format 1.4).")
      .def_static("append", [](const std::string& path, std::uint64_t chunk_size_bytes, unsigned encode_threads, int device) {
             auto chains = std::make_shared<codec::ChainEncoder>(format::Container::open(path).fields().size(), device);
             format::WriterOptions options;
             options.chunk_size_bytes = chunk_size_bytes;
             options.encode_threads = encode_threads;
             options.encoder = chains->encoder();
             return ChainedWriter{chains, ContainerWriter::append(path, std::move(options))};
           }, "path"_a, "chunk_size_bytes"_a = std::uint64_t{4} << 20, "encode_threads"_a = 0, "device"_a = 0,
           "A publishing writer of the container at path, its frames kept, new ones after them (format 1.4).")
      .def("publish", [](ChainedWriter& w) { w.writer->publish(); }, nb::call_guard<nb::gil_scoped_release>(),
           "Publishing writers: every frame written whole so far made visible in path.")
      .def_prop_ro("published_frames", [](const ChainedWriter& w) { return w.writer->published_frames(); })
      .def("set_chain", [](ChainedWriter& w, std::uint32_t field, const std::string& chain, std::uint64_t fastest_axis_points) {
             HEADRACE_EXPECT(field < w.writer->fields().size(), UsageError, "field " + std::to_string(field) + " out of range");
             const auto& info = w.writer->fields()[field];
             const codec::ElementShape shape{info.dtype, info.components, fastest_axis_points};
             const auto coding = w.chains->use(field, codec::Chain::parse(chain, shape));
             w.writer->set_coding(field, coding);
             return coding.chain.empty() ? std::string(format::to_string(coding.codec)) : coding.chain;
           }, "field"_a, "chain"_a, "fastest_axis_points"_a = 0,
           "Stores the field through the chain from its first chunk on; returns the chain as recorded.")
      .def("set_attribute", [](ChainedWriter& w, const std::string& name, format::AttributeValue value) {
             w.writer->set_attribute(name, std::move(value));
           }, "name"_a, "value"_a)
      .def("add_frame", [](ChainedWriter& w, double time, std::optional<std::tuple<std::array<double, 3>, std::array<double, 3>>> bbox) {
             std::optional<format::BoundingBox> box;
             if (bbox) box = format::BoundingBox{std::get<0>(*bbox), std::get<1>(*bbox)};
             return w.writer->add_frame(time, box);
           }, "time"_a, "bbox"_a = nb::none())
      .def("write_field", [](ChainedWriter& w, std::uint32_t frame, std::uint32_t field,
                             const nb::ndarray<nb::ro, nb::c_contig, nb::device::cpu>& data) {
             const auto bytes = bytes_of(data);
             nb::gil_scoped_release release;
             w.writer->write_field(frame, field, bytes);
           }, "frame"_a, "field"_a, "data"_a, "Appends raw elements (any C-contiguous array; its bytes are used).")
      .def("close", [](ChainedWriter& w) { w.writer->close(); }, nb::call_guard<nb::gil_scoped_release>())
      .def("abort", [](ChainedWriter& w) { w.writer->abort(); });
}

}  // namespace headrace::python
