// codec layer: CPU chunk codecs and the verified chunk reader.
#include <nanobind/ndarray.h>
#include <nanobind/stl/function.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include "bindings.hpp"
#include "headrace/codec/chunk_reader.hpp"
#include "headrace/codec/cpu/chunk_codec.hpp"
#include "headrace/error.hpp"

namespace nb = nanobind;
using namespace nb::literals;

namespace headrace::python {

void bind_codec(nb::module_& m) {
  m.def("encode", [](const std::string& codec, nb::bytes raw, int level) {
         auto stored = codec::cpu::encode(format::parse_codec(codec), level, {reinterpret_cast<const std::byte*>(raw.c_str()), raw.size()});
         return nb::bytes(reinterpret_cast<const char*>(stored.data()), stored.size());
       }, "codec"_a, "raw"_a, "level"_a = 0);
  m.def("decode", [](const std::string& codec, nb::bytes stored, std::uint64_t raw_size) {
         std::vector<std::byte> raw(raw_size);
         codec::cpu::decode(format::parse_codec(codec), {reinterpret_cast<const std::byte*>(stored.c_str()), stored.size()}, raw,
                            "<bytes>", 0);
         return nb::bytes(reinterpret_cast<const char*>(raw.data()), raw.size());
       }, "codec"_a, "stored"_a, "raw_size"_a);

  m.def("read_field", [](const format::Container& container, io::Backend& backend, std::uint32_t frame, std::uint32_t field,
                         nb::ndarray<nb::c_contig, nb::device::cpu> destination, bool verify) {
         std::span<std::byte> bytes(static_cast<std::byte*>(destination.data()), destination.nbytes());
         nb::gil_scoped_release release;
         codec::read_field(container, backend, frame, field, bytes, verify);
       }, "container"_a, "backend"_a, "frame"_a, "field"_a, "destination"_a, "verify"_a = true,
       "Reads one field of one frame into destination (its exact raw size), verifying checksums.");

  m.def("scan_chunks", [](const format::Container& container, io::Backend& backend, std::uint64_t window_bytes, bool verify,
                          std::function<void(std::uint64_t)> progress) {
         codec::ChunkScanOptions options;
         options.window_bytes = window_bytes;
         options.verify = verify;
         if (progress) {
           options.progress = [progress](std::uint64_t done) {
             nb::gil_scoped_acquire acquire;
             progress(done);
           };
         }
         codec::ChunkScanReport report;
         {
           nb::gil_scoped_release release;
           report = codec::scan_chunks(container, backend, container.chunks(), options);
         }
         nb::dict result;
         result["chunks"] = report.chunks;
         result["stored_bytes"] = report.stored_bytes;
         result["raw_bytes"] = report.raw_bytes;
         return result;
       }, "container"_a, "backend"_a, "window_bytes"_a = std::uint64_t{256} << 20, "verify"_a = true, "progress"_a = nb::none(),
       "Reads every chunk's stored bytes through backend, window after window, verifying checksums.");
}

}  // namespace headrace::python
