// codec layer: CPU chunk codecs and the verified chunk reader.
#include <nanobind/ndarray.h>
#include <nanobind/stl/optional.h>
#include <nanobind/stl/function.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/tuple.h>
#include <nanobind/stl/vector.h>

#include "bindings.hpp"
#include "headrace/codec/chain.hpp"
#include "headrace/codec/chain_trial.hpp"
#include "headrace/codec/chunk_reader.hpp"
#include "headrace/codec/registry.hpp"
#include "headrace/error.hpp"

namespace nb = nanobind;
using namespace nb::literals;

namespace headrace::python {
namespace {

// dtype "": no field yet (a command line's chain, checked before the fields are known).
codec::Chain chain_of(const std::string& text, const std::string& dtype, std::uint32_t components, std::uint64_t fastest) {
  if (dtype.empty()) return codec::Chain::parse(text, codec::ElementShape{format::DType::uint8, components, fastest, false});
  return codec::Chain::parse(text, codec::ElementShape{format::parse_dtype(dtype), components, fastest});
}

std::span<const std::byte> bytes_view(const nb::bytes& bytes) { return {reinterpret_cast<const std::byte*>(bytes.c_str()), bytes.size()}; }

}  // namespace

void bind_codec(nb::module_& m) {
  m.def("stages", [] {
         std::vector<std::tuple<std::string, std::string, std::string>> stages;
         for (const auto& entry : codec::stage_registry())
           stages.emplace_back(std::string(entry.name), codec::to_string(entry.kind), std::string(entry.summary));
         return stages;
       }, "The registry of stages: (name, kind, summary) each.");
  m.def("stage_facts", [] {
         std::vector<nb::dict> facts;
         for (const auto& entry : codec::stage_registry()) {
           nb::dict d;
           d["name"] = std::string(entry.name);
           d["kind"] = std::string(codec::to_string(entry.kind));
           d["summary"] = std::string(entry.summary);
           d["levels"] = entry.codec && entry.codec->levels
                             ? nb::cast(std::make_tuple(entry.codec->levels->least, entry.codec->levels->most))
                             : nb::none();
           d["default_level"] = entry.codec && entry.codec->levels ? nb::cast(entry.codec->levels->fallback) : nb::none();
           d["max_block_bytes"] = entry.codec ? nb::cast(entry.codec->max_block_bytes) : nb::none();
           d["gpu_only"] = entry.codec && entry.codec->gpu_only;
           d["lossy"] = entry.codec && entry.codec->lossy;
           facts.push_back(std::move(d));
         }
         return facts;
       }, "Each stage of the registry, in its order: name, kind (filter|codec), summary, and for a codec its levels "
          "((least, most), or None), default_level, max_block_bytes (the largest raw block it encodes), gpu_only and lossy.");
  m.def("parse_chain", [](const std::string& text, const std::string& dtype, std::uint32_t components, std::uint64_t fastest) {
         const auto chain = chain_of(text, dtype, components, fastest);
         nb::dict result;
         result["spec"] = chain.spec();
         result["record_codec"] = std::string(format::to_string(chain.record_codec()));
         result["error_bound"] = chain.error_bound() ? nb::cast(*chain.error_bound()) : nb::none();
         std::vector<std::string> filters;
         for (const auto& filter : chain.filters()) filters.push_back(filter->spec());
         result["filters"] = filters;
         result["codec"] = chain.codec() ? nb::cast(chain.codec()->spec()) : nb::none();
         std::string why;
         result["cpu_encodes"] = chain.cpu_encodes(&why);
         result["cpu_decodes"] = chain.cpu_decodes(&why);
         result["why_not_cpu"] = why;
         return result;
       }, "text"_a, "dtype"_a = "uint8", "components"_a = 1, "fastest_axis_points"_a = 0,
       "A chain as a user writes it, checked and completed for a field: its stored text, stages and where it runs.");
  m.def("chain_encode", [](const std::string& text, nb::bytes raw, const std::string& dtype, std::uint32_t components,
                           std::uint64_t fastest) {
         const auto chain = chain_of(text, dtype, components, fastest);
         std::vector<std::byte> stored;
         {
           nb::gil_scoped_release release;
           stored = chain.encode(bytes_view(raw));
         }
         return nb::bytes(reinterpret_cast<const char*>(stored.data()), stored.size());
       }, "chain"_a, "raw"_a, "dtype"_a = "uint8", "components"_a = 1, "fastest_axis_points"_a = 0);
  m.def("chain_decode", [](const std::string& spec, nb::bytes stored, std::uint64_t raw_size) {
         const auto chain = codec::Chain::of_stored(spec, "<bytes>");
         std::vector<std::byte> raw(raw_size);
         {
           nb::gil_scoped_release release;
           chain.decode(bytes_view(stored), raw, "<bytes>");
         }
         return nb::bytes(reinterpret_cast<const char*>(raw.data()), raw.size());
       }, "spec"_a, "stored"_a, "raw_size"_a, "Decodes on the CPU through a chain as the index stores it.");
  m.def("try_chain", [](const std::string& text, const std::vector<nb::ndarray<nb::ro, nb::c_contig, nb::device::cpu>>& chunks,
                        const std::string& dtype, std::uint32_t components, std::uint64_t fastest, int device, int repeats) {
         const auto chain = chain_of(text, dtype, components, fastest);
         std::vector<std::span<const std::byte>> views;
         for (const auto& chunk : chunks) views.emplace_back(static_cast<const std::byte*>(chunk.data()), chunk.nbytes());
         codec::ChainTrial trial;
         {
           nb::gil_scoped_release release;
           trial = codec::try_chain(chain, views, device, repeats);
         }
         nb::dict result;
         result["spec"] = chain.spec();
         result["raw_bytes"] = trial.raw_bytes;
         result["stored_bytes"] = trial.stored_bytes;
         result["encode_seconds"] = trial.encode_seconds;
         result["decode_seconds"] = trial.decode_seconds;
         result["decoded_on"] = trial.decoded_on;
         return result;
       }, "chain"_a, "chunks"_a, "dtype"_a = "uint8", "components"_a = 1, "fastest_axis_points"_a = 0, "device"_a = -1,
       "repeats"_a = 3,
       "Encodes sample chunks through the chain and times decoding them (GPU `device`, or the CPU for -1), checking "
       "every chunk decodes to its raw bytes.");
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
