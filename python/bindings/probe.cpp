// headrace probe: the grid defaults, the test file and run_probe with a Python progress callback.
// Points come back as dicts; python/headrace/probe.py turns them into typed records.
#include <Python.h>
#include <nanobind/nanobind.h>
#include <nanobind/stl/optional.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include <optional>
#include <string>
#include <vector>

#include "bindings.hpp"
#include "headrace/probe/run.hpp"
#include "headrace/probe/test_file.hpp"

namespace nb = nanobind;
using namespace nb::literals;

namespace {

using headrace::probe::ProbeConfig;
using headrace::probe::ProbePoint;

nb::dict point_dict(const ProbePoint& point) {
  nb::dict d;
  d["pattern"] = headrace::probe::to_string(point.pattern);
  d["block_size_bytes"] = point.block_size_bytes;
  d["queue_depth"] = point.queue_depth;
  d["threads"] = point.threads;
  d["bytes"] = point.bytes;
  d["reads"] = point.reads;
  d["seconds"] = point.seconds;
  d["gigabytes_per_second"] = point.gigabytes_per_second;
  d["iops"] = point.iops;
  d["path"] = point.io_path.describe();
  d["backend"] = headrace::io::to_string(point.io_path.backend);
  d["o_direct"] = point.io_path.o_direct;
  d["cache_state"] = headrace::probe::to_string(point.io_path.cache_state);
  d["note"] = point.io_path.note;
  return d;
}

nb::dict config_dict(const ProbeConfig& config) {
  nb::list patterns;
  for (auto pattern : config.patterns) patterns.append(headrace::probe::to_string(pattern));
  nb::dict d;
  d["file_size_bytes"] = config.file_size_bytes;
  d["patterns"] = patterns;
  d["block_sizes_bytes"] = config.block_sizes_bytes;
  d["queue_depths"] = config.queue_depths;
  d["thread_counts"] = config.thread_counts;
  d["seconds_per_point"] = config.seconds_per_point;
  d["min_bytes_per_point"] = config.min_bytes_per_point;
  d["max_seconds_per_point"] = config.max_seconds_per_point;
  d["bytes_per_point"] = config.bytes_per_point;
  d["buffer_limit_bytes"] = config.buffer_limit_bytes;
  d["seed"] = config.seed;
  d["strict"] = config.strict;
  return d;
}

}  // namespace

void bind_probe(nb::module_& m) {
  m.def(
      "probe_defaults",
      [](bool quick) {
        return config_dict(quick ? headrace::probe::quick_config("") : headrace::probe::default_config(""));
      },
      "quick"_a = false, "The probe's default grid and limits (quick: the smaller grid), as a dict.");

  m.def(
      "probe_prepare_test_file",
      [](const std::string& path, std::uint64_t size_bytes, std::uint64_t seed) {
        headrace::probe::TestFile file;
        {
          nb::gil_scoped_release release;
          file = headrace::probe::prepare_test_file(path, size_bytes, seed);
        }
        nb::dict d;
        d["path"] = file.path;
        d["size_bytes"] = file.size_bytes;
        d["created"] = file.created;
        return d;
      },
      "path"_a, "size_bytes"_a, "seed"_a,
      "The file a probe of path reads: path itself (a file or block device), or <dir>/headrace-probe.bin or "
      "path written with size_bytes of seeded random bytes (reused when its size matches).");

  m.def(
      "probe_run",
      [](const std::string& path, bool quick, std::optional<std::uint64_t> file_size_bytes,
         std::optional<std::vector<std::string>> patterns, std::optional<std::vector<std::uint64_t>> block_sizes_bytes,
         std::optional<std::vector<unsigned>> queue_depths, std::optional<std::vector<unsigned>> thread_counts,
         std::optional<double> seconds_per_point, std::optional<std::uint64_t> min_bytes_per_point,
         std::optional<double> max_seconds_per_point, std::optional<std::uint64_t> bytes_per_point,
         std::optional<std::uint64_t> buffer_limit_bytes, std::optional<std::uint64_t> seed, bool strict,
         nb::object progress) {
        ProbeConfig config = quick ? headrace::probe::quick_config(path) : headrace::probe::default_config(path);
        headrace::python::assign_if_given(config.file_size_bytes, file_size_bytes);
        if (patterns) {
          config.patterns.clear();
          for (const auto& name : *patterns) config.patterns.push_back(headrace::probe::parse_pattern(name));
        }
        headrace::python::assign_if_given(config.block_sizes_bytes, block_sizes_bytes);
        headrace::python::assign_if_given(config.queue_depths, queue_depths);
        headrace::python::assign_if_given(config.thread_counts, thread_counts);
        headrace::python::assign_if_given(config.seconds_per_point, seconds_per_point);
        headrace::python::assign_if_given(config.min_bytes_per_point, min_bytes_per_point);
        headrace::python::assign_if_given(config.max_seconds_per_point, max_seconds_per_point);
        headrace::python::assign_if_given(config.bytes_per_point, bytes_per_point);
        headrace::python::assign_if_given(config.buffer_limit_bytes, buffer_limit_bytes);
        headrace::python::assign_if_given(config.seed, seed);
        config.strict = strict;

        // Runs between points on this thread: the GIL is taken only here, and Ctrl-C stops the probe.
        // progress returning False stops it too (None, or anything true, goes on).
        auto between_points = [&progress](std::size_t done, std::size_t total, const ProbePoint& point) {
          nb::gil_scoped_acquire acquire;
          bool go_on = true;
          if (!progress.is_none()) {
            const nb::object answer = progress(done, total, point_dict(point));
            go_on = answer.is_none() || PyObject_IsTrue(answer.ptr()) != 0;
          }
          if (PyErr_CheckSignals() != 0) throw nb::python_error();
          return go_on;
        };
        std::vector<ProbePoint> points;
        {
          nb::gil_scoped_release release;
          points = headrace::probe::run_probe(config, between_points);
        }
        nb::list point_dicts;
        for (const auto& point : points) point_dicts.append(point_dict(point));
        nb::dict result;
        result["points"] = point_dicts;
        const auto ceiling = headrace::probe::find_ceiling(points);
        result["ceiling_index"] = ceiling ? nb::cast(*ceiling) : nb::none();
        return result;
      },
      "path"_a, nb::kw_only(), "quick"_a = false, "file_size_bytes"_a = nb::none(), "patterns"_a = nb::none(),
      "block_sizes_bytes"_a = nb::none(), "queue_depths"_a = nb::none(), "thread_counts"_a = nb::none(),
      "seconds_per_point"_a = nb::none(), "min_bytes_per_point"_a = nb::none(),
      "max_seconds_per_point"_a = nb::none(), "bytes_per_point"_a = nb::none(),
      "buffer_limit_bytes"_a = nb::none(), "seed"_a = nb::none(), "strict"_a = false, "progress"_a = nb::none(),
      "Measures raw read bandwidth of path's device over the grid; None keeps the (quick) default. "
      "progress(done, total, point) is called after each point. Returns {'points': one dict per point in run "
      "order, 'ceiling_index': index of the fastest sequential point or None}.");
}
