// workloads layer: streamline tracing of flow containers (seed 002), one rank's share of a handed-off trace and
// the Hilbert layout converter (the streamlines workload).
#include <future>

#include <nanobind/ndarray.h>
#include <nanobind/stl/function.h>
#include <nanobind/stl/optional.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include <array>
#include <cstring>
#include <optional>
#include <span>

#include "bindings.hpp"
#include "headrace/detail/enum_names.hpp"
#include "headrace/error.hpp"
#include "headrace/workloads/streamlines/hilbert_field.hpp"
#include "headrace/workloads/streamlines/pathline_tracer.hpp"
#include "headrace/workloads/streamlines/resident_tracer.hpp"
#include "headrace/workloads/streamlines/trace_container.hpp"

namespace nb = nanobind;
using namespace nb::literals;
namespace sl = headrace::workloads::streamlines;

namespace headrace::python {
namespace {

sl::Integrator parse_integrator(const std::string& name) { return detail::parse_name(sl::integrator_names, name, "integrator"); }

sl::Direction parse_direction(const std::string& name) { return detail::parse_name(sl::direction_names, name, "direction"); }

// "auto": the engine's read path; else the host backend named.
std::optional<io::BackendKind> backend_of(const std::string& name) {
  if (name == "auto") return std::nullopt;
  return io::parse_backend_kind(name);
}

sl::DataManager parse_manager(const std::string& name) { return detail::parse_name(sl::data_manager_names, name, "manager"); }

sl::TraceOptions trace_options_of(const std::string& integrator, const std::string& direction, float step_size,
                                  std::uint32_t max_steps, float stagnant_speed, float tolerance, float min_step, float max_step) {
  sl::TraceOptions o;
  o.integrator = parse_integrator(integrator);
  o.direction = parse_direction(direction);
  o.step_size = step_size, o.max_steps = max_steps, o.stagnant_speed = stagnant_speed;
  o.tolerance = tolerance, o.min_step = min_step, o.max_step = max_step;
  return o;
}

// The vectors as a (count, 3) float32 array over their own memory (moved, not copied).
template <typename Allocator>
nb::ndarray<nb::numpy, float> vector_array(std::vector<sl::Vec3, Allocator>&& vectors) {
  static_assert(sizeof(sl::Vec3) == 3 * sizeof(float));
  const std::size_t count = vectors.size();
  return owned_array_as<float>(std::move(vectors), {count, 3});
}

// Each item's end as text, each distinct end one Python string shared by every line that ends so (a million
// lines end in a handful of ways): `key_of` an item's end as a number below 64, `text_of` it as text.
template <typename Items, typename KeyOf, typename TextOf>
nb::list ends_list(const Items& items, KeyOf&& key_of, TextOf&& text_of) {
  std::array<nb::object, 64> names;
  auto ends = nb::steal<nb::list>(PyList_New(static_cast<Py_ssize_t>(items.size())));
  Py_ssize_t at = 0;
  for (const auto& item : items) {
    nb::object& name = names.at(key_of(item));
    if (!name.is_valid()) name = nb::str(std::string(text_of(item)).c_str());
    PyList_SET_ITEM(ends.ptr(), at++, name.inc_ref().ptr());
  }
  return ends;
}

// Points (N, 3), their integration times, the lines' offsets and "backward/forward" ends of each line.
void put_lines(nb::dict& result, sl::Polylines&& lines) {
  const std::size_t count = lines.points.size();
  result["points"] = vector_array(std::move(lines.points));
  result["times"] = owned_array(std::move(lines.times), {count});
  const std::size_t offsets = lines.offsets.size();
  result["offsets"] = owned_array(std::move(lines.offsets), {offsets});
  result["ends"] = ends_list(
      lines.lines, [](const auto& line) { return 8 * static_cast<int>(line.backward_end) + static_cast<int>(line.forward_end); },
      [](const auto& line) { return std::string(sl::to_string(line.backward_end)) + "/" + sl::to_string(line.forward_end); });
}

// A trace's velocities being sampled by its tracer on a thread of the tracer's own (ContainerTraceRun::
// velocities): result() waits for them without the GIL, once.
struct PendingVelocities {
  std::future<sl::SampledVelocities> sampling;
};

std::vector<sl::Vec3> seeds_of(const nb::ndarray<const float, nb::shape<-1, 3>, nb::c_contig, nb::device::cpu>& seeds) {
  std::vector<sl::Vec3> points(seeds.shape(0));
  std::memcpy(points.data(), seeds.data(), points.size() * sizeof(sl::Vec3));
  return points;
}

// Records of trivially copyable structs as rows of bytes (what ranks send one another), and back.
template <typename T>
nb::ndarray<nb::numpy, std::uint8_t> record_bytes(std::vector<T>&& records) {
  const std::size_t count = records.size();
  return owned_array_as<std::uint8_t>(std::move(records), {count, sizeof(T)});  // rows over the records themselves
}

// A rank's counters, as result() and lines() give them.
void put_resident_stats(nb::dict& out, const sl::ResidentStats& s) {
  out["rounds"] = s.rounds, out["resident_blocks"] = s.slots, out["bytes_read"] = s.bytes_read;
  out["load_seconds"] = s.load_seconds, out["advance_seconds"] = s.advance_seconds;
}

// The resident cache's counters of a trace, as resident_* entries.
void put_resident_counters(nb::dict& out, const sl::ResidentStats& s) {
  out["resident_rounds"] = s.rounds, out["resident_slots"] = s.slots, out["resident_units_loaded"] = s.units_loaded;
  out["resident_evictions"] = s.evictions, out["resident_load_seconds"] = s.load_seconds;
  out["resident_advance_seconds"] = s.advance_seconds, out["resident_make_seconds"] = s.make_seconds;
  out["resident_collect_seconds"] = s.collect_seconds;
}

using RecordBytes = nb::ndarray<const std::uint8_t, nb::ndim<2>, nb::c_contig, nb::device::cpu>;

template <typename T>
void expect_rows_of(const RecordBytes& bytes, const char* what) {
  HEADRACE_EXPECT(bytes.shape(1) == sizeof(T) || bytes.shape(0) == 0, UsageError,
                  std::string(what) + " come as rows of " + std::to_string(sizeof(T)) + " bytes, got " + std::to_string(bytes.shape(1)));
}

template <typename T>
std::vector<T> records_of(const RecordBytes& bytes, const char* what) {
  expect_rows_of<T>(bytes, what);
  std::vector<T> out(bytes.shape(0));
  if (!out.empty()) std::memcpy(out.data(), bytes.data(), out.size() * sizeof(T));
  return out;
}

// The rows as records where they lie (aligned for T, as NumPy's buffers are), else a copy kept in `copy`.
template <typename T>
std::span<const T> records_in(const RecordBytes& bytes, const char* what, std::vector<T>& copy) {
  expect_rows_of<T>(bytes, what);
  if (reinterpret_cast<std::uintptr_t>(bytes.data()) % alignof(T) != 0) return copy = records_of<T>(bytes, what);
  return {reinterpret_cast<const T*>(bytes.data()), bytes.shape(0)};
}

}  // namespace

void bind_streamlines(nb::module_& m) {
  m.def("trace_container",
        [](const std::string& path, nb::ndarray<const float, nb::shape<-1, 3>, nb::c_contig, nb::device::cpu> seeds,
           std::uint32_t frame, const std::string& integrator, const std::string& direction, float step_size,
           std::uint32_t max_steps, float stagnant_speed, float tolerance, float min_step, float max_step,
           const std::string& manager, unsigned threads, std::uint64_t cache_bytes, unsigned banks, bool direct,
           std::uint32_t unit_pages, double madvise_interval_s, std::uint64_t memory_budget_bytes, int device,
           const std::string& backend, std::function<bool(std::uint64_t, std::uint64_t)> progress, bool velocities) {
          sl::ContainerTraceOptions options;
          if (progress) {
            options.progress = [progress](std::uint64_t ended, std::uint64_t lines) {
              nb::gil_scoped_acquire acquire;
              return progress(ended, lines);
            };
          }
          options.trace = trace_options_of(integrator, direction, step_size, max_steps, stagnant_speed, tolerance, min_step,
                                           max_step);
          options.manager = parse_manager(manager);
          options.frame = frame;
          options.threads = threads;
          options.cache_bytes = cache_bytes;
          options.banks = banks;
          options.direct_io = direct;
          options.unit_pages = unit_pages;
          options.mapped = {madvise_interval_s, memory_budget_bytes};
          options.device = device;
          options.backend = backend_of(backend);
          options.sample_velocities = velocities;
          const std::vector<sl::Vec3> points = seeds_of(seeds);
          sl::ContainerTraceRun run;
          {
            nb::gil_scoped_release release;
            run = sl::trace_container(path, points, options);
          }
          nb::dict result;
          put_lines(result, std::move(run.lines));
          if (run.velocities.valid()) result["velocities"] = PendingVelocities{std::move(run.velocities)};
          result["seconds"] = run.seconds;
          result["layout"] = run.layout;
          result["unit_bytes"] = run.unit_bytes;
          result["cache_hits"] = run.cache.hits;
          result["cache_misses"] = run.cache.misses;
          result["cache_evictions"] = run.cache.evictions;
          result["cache_waits"] = run.cache.waits;
          result["bytes_read"] = options.manager == sl::DataManager::resident ? run.resident.bytes_read : run.cache.bytes_read;
          result["max_loads_in_flight"] = run.cache.max_loads_in_flight;
          result["madvise_calls"] = run.mapped.madvise_calls;
          result["budget_drops"] = run.mapped.budget_drops;
          result["max_resident_bytes"] = run.mapped.max_resident_bytes;
          put_resident_counters(result, run.resident);
          return result;
        },
        "path"_a, "seeds"_a, "frame"_a = 0, "integrator"_a = "rk4", "direction"_a = "forward", "step_size"_a = 0.01f,
        "max_steps"_a = 1000u, "stagnant_speed"_a = 1e-6f, "tolerance"_a = 1e-5f, "min_step"_a = 1e-6f, "max_step"_a = 1.0f,
        "manager"_a = "user", "threads"_a = 0u, "cache_bytes"_a = std::uint64_t{1} << 30, "banks"_a = 1u, "direct"_a = false,
        "unit_pages"_a = 96u, "madvise_interval_s"_a = 4.0, "memory_budget_bytes"_a = std::uint64_t{0}, "device"_a = -1,
        "backend"_a = "auto", "progress"_a = nb::none(), "velocities"_a = false,
        "Streamlines of a flow container from (N, 3) float32 seeds: points, offsets, ends and the run's statistics. "
        "progress(ended, lines), now and then: False stops the run, and the lines it cut short end 'stopped'. "
        "velocities (resident): the flow's velocity at every point too, sampled through the cache in rounds "
        "('velocities', a PendingVelocities: on a GPU, sampled meanwhile at the points the tracer kept).");

  m.def("trace_pathlines",
        [](const std::string& path, nb::ndarray<const float, nb::shape<-1, 3>, nb::c_contig, nb::device::cpu> seeds,
           std::optional<nb::ndarray<const double, nb::ndim<1>, nb::c_contig, nb::device::cpu>> seed_times,
           std::optional<double> t0, std::optional<double> t1, const std::string& integrator, float step_size,
           std::uint32_t max_steps, float tolerance, float min_step, float max_step, unsigned threads,
           std::uint64_t cache_bytes, std::uint32_t unit_pages, int device, const std::string& backend,
           std::function<bool(std::uint64_t, std::uint64_t)> progress) {
          sl::PathlineOptions options;
          if (progress) {
            options.progress = [progress](std::uint64_t done, std::uint64_t intervals) {
              nb::gil_scoped_acquire acquire;
              return progress(done, intervals);
            };
          }
          options.trace = trace_options_of(integrator, "forward", step_size, max_steps, 0.0f, tolerance, min_step, max_step);
          options.t0 = t0, options.t1 = t1;
          options.threads = threads;
          options.cache_bytes = cache_bytes;
          options.unit_pages = unit_pages;
          options.device = device;
          options.backend = backend_of(backend);
          const std::vector<sl::Vec3> points = seeds_of(seeds);
          std::vector<double> releases;
          if (seed_times) releases.assign(seed_times->data(), seed_times->data() + seed_times->shape(0));
          sl::PathlineRun run;
          {
            nb::gil_scoped_release release;
            run = sl::trace_pathlines(path, points, releases, options);
          }
          nb::dict result;
          sl::Pathlines& paths = run.lines;
          const std::size_t count = paths.points.size(), lines = paths.ends.size();
          result["points"] = vector_array(std::move(paths.points));
          result["velocities"] = vector_array(std::move(paths.velocities));
          result["times"] = owned_array(std::move(paths.times), {count});
          result["offsets"] = owned_array(std::move(paths.offsets), {lines + 1});
          result["seed_times"] = owned_array(std::move(paths.seed_times), {lines});
          result["ends"] = ends_list(paths.ends, [](sl::Termination end) { return static_cast<int>(end); },
                                     [](sl::Termination end) { return sl::to_string(end); });
          const sl::PathlineStats& s = run.stats;
          result["seconds"] = run.seconds;
          result["layout"] = run.layout;
          result["unit_bytes"] = run.unit_bytes;
          result["t0"] = s.t0, result["t1"] = s.t1;
          result["intervals"] = s.intervals;
          result["frames_loaded"] = s.frames_loaded;
          result["whole_frames"] = s.whole_frames;
          result["home_seconds"] = s.home_seconds;
          result["point_capacity"] = s.point_capacity;
          result["fault_seconds"] = s.fault_seconds;
          result["bytes_read"] = s.resident.bytes_read;
          put_resident_counters(result, s.resident);
          return result;
        },
        "path"_a, "seeds"_a, "seed_times"_a = nb::none(), "t0"_a = nb::none(), "t1"_a = nb::none(), "integrator"_a = "rk4",
        "step_size"_a = 0.01f, "max_steps"_a = 1000u, "tolerance"_a = 1e-5f, "min_step"_a = 1e-6f, "max_step"_a = 1.0f,
        "threads"_a = 0u, "cache_bytes"_a = std::uint64_t{1} << 30, "unit_pages"_a = 96u, "device"_a = -1,
        "backend"_a = "auto", "progress"_a = nb::none(),
        "Pathlines of a flow series from (N, 3) float32 seeds released at seed_times (float64, N; none: each at t0), "
        "from t0 to t1 (default: the first frame's time and the last's; t1 < t0 traces backward): points, velocities, "
        "times (float64), offsets, seed_times, ends and the run's statistics. progress(intervals done, intervals) "
        "after each frame interval: False stops the run, and the paths it cut short end 'stopped'.");

  nb::class_<PendingVelocities>(m, "PendingVelocities",
                                "A trace's velocities at its points, sampled by the tracer on a thread of its own while the "
                                "caller writes the lines.")
      .def(
          "result",
          [](PendingVelocities& self) {
            HEADRACE_EXPECT(self.sampling.valid(), UsageError, "the velocities were taken already");
            sl::SampledVelocities sampled;
            {
              nb::gil_scoped_release release;
              sampled = self.sampling.get();
            }
            // None: a cache too small for the cells of the points at once stopped them (sample_flow reads the file)
            nb::object values = sampled.values.empty() ? nb::none() : nb::cast(vector_array(std::move(sampled.values)));
            return nb::make_tuple(values, sampled.seconds);
          },
          "(velocities (N, 3) float32 with NaN outside the grid, or None where a cache too small for a cell's corners "
          "stopped them; the seconds their sampling took): waits for them, once.");

  nb::class_<sl::HandOffTrace>(m, "HandOffTrace",
                                "One rank's share of a trace handed between the ranks of a job (native blocks): its planes of "
                                "blocks along z and their neighbours resident; lines leave for the rank holding the block they need.")
      .def("__init__",
           [](sl::HandOffTrace* self, const std::string& path, std::uint32_t rank, std::uint32_t ranks, std::uint32_t frame,
              const std::string& integrator, const std::string& direction, float step_size, std::uint32_t max_steps,
              float stagnant_speed, float tolerance, float min_step, float max_step, unsigned threads, std::uint64_t cache_bytes,
              int device, const std::string& backend) {
             sl::ContainerTraceOptions options;
             options.trace = trace_options_of(integrator, direction, step_size, max_steps, stagnant_speed, tolerance, min_step,
                                              max_step);
             options.frame = frame, options.threads = threads, options.cache_bytes = cache_bytes, options.device = device;
             options.backend = backend_of(backend);
             nb::gil_scoped_release release;
             new (self) sl::HandOffTrace(sl::open_flow(path, frame), rank, ranks, options);
           },
           "path"_a, "rank"_a, "ranks"_a, "frame"_a = 0, "integrator"_a = "rk4", "direction"_a = "forward", "step_size"_a = 0.01f,
           "max_steps"_a = 1000u, "stagnant_speed"_a = 1e-6f, "tolerance"_a = 1e-5f, "min_step"_a = 1e-6f, "max_step"_a = 1.0f,
           "threads"_a = 0u, "cache_bytes"_a = std::uint64_t{1} << 30, "device"_a = -1, "backend"_a = "auto")
      .def_prop_ro("resident_blocks", &sl::HandOffTrace::resident_blocks)
      .def_prop_ro("held", &sl::HandOffTrace::held)
      .def("owner_of", &sl::HandOffTrace::owner_of, "unit"_a)
      .def("start",
           [](sl::HandOffTrace& self, nb::ndarray<const float, nb::shape<-1, 3>, nb::c_contig, nb::device::cpu> seeds,
              std::uint64_t first_seed) { self.start(seeds_of(seeds), first_seed); },
           "seeds"_a, "first_seed"_a, "The half-lines of seeds first_seed, first_seed + 1, ... of the whole trace start here.")
      .def("run",
           [](sl::HandOffTrace& self) {
             std::vector<sl::HandedLine> leaving;
             {
               nb::gil_scoped_release release;
               leaving = self.run();
             }
             std::vector<std::uint32_t> to;
             for (const auto& h : leaving) to.push_back(self.owner_of(h.waits_for));
             const std::size_t n = to.size();
             return nb::make_tuple(record_bytes(std::move(leaving)), owned_array(std::move(to), {n}));
           },
           "One round over the lines held: (the lines that leave, as rows of bytes; the rank each goes to).")
      .def("add", [](sl::HandOffTrace& self, RecordBytes lines) { self.add(records_of<sl::HandedLine>(lines, "handed lines")); },
           "lines"_a, "Lines handed here (rows of bytes from another rank's run()).")
      .def("result",
           [](sl::HandOffTrace& self, std::optional<std::vector<std::uint64_t>> seed_bounds) {
             nb::dict out;
             sl::HandOffTrace::Traced traced = self.take_traced();
             if (!seed_bounds) {
               out["segments"] = record_bytes(std::move(traced.segments));
               out["points"] = record_bytes(std::move(traced.points));
               out["ended"] = record_bytes(std::move(traced.ended));
             } else {
               std::vector<sl::HandOffTrace::Traced> parts;
               {
                 nb::gil_scoped_release release;
                 parts = sl::part_by_seed_owner(traced, *seed_bounds, self.direction());
               }
               nb::list segments, points, ended;
               for (auto& part : parts) {
                 segments.append(record_bytes(std::move(part.segments)));
                 points.append(record_bytes(std::move(part.points)));
                 ended.append(record_bytes(std::move(part.ended)));
               }
               out["segments"] = segments, out["points"] = points, out["ended"] = ended;
             }
             put_resident_stats(out, self.stats());
             return out;
           },
           "seed_bounds"_a = nb::none(),
           "What this rank traced: segments, points and ended lines as rows of bytes (for assemble_handed), handed over "
           "(a second call gives none of them), and its counters. With seed_bounds (ranks + 1 seed numbers: rank r owns "
           "seeds [bounds[r], bounds[r + 1])), each of the three is a list of rows, one a rank, for the rank owning the seed.")
      .def("lines",
           [](const sl::HandOffTrace& self, nb::ndarray<const float, nb::shape<-1, 3>, nb::c_contig, nb::device::cpu> seeds) {
             const std::vector<sl::Vec3> starts = seeds_of(seeds);
             sl::Polylines lines;
             {
               nb::gil_scoped_release release;
               lines = self.own_lines(starts);
             }
             nb::dict result;
             put_lines(result, std::move(lines));
             put_resident_stats(result, self.stats());
             return result;
           },
           "seeds"_a, "A job of one rank: the lines of seeds (points, times, offsets, ends) and its counters; what it traced "
           "stays held, its memory reused by the next trace after forget_lines.")
      .def("forget_lines", &sl::HandOffTrace::forget_lines,
           "Forgets the lines traced and the counters, keeping the cache and the blocks it holds (the next trace starts warm).");
  m.def("assemble_handed",
        [](nb::ndarray<const float, nb::shape<-1, 3>, nb::c_contig, nb::device::cpu> seeds, const std::string& direction,
           std::uint32_t max_steps, RecordBytes ended, RecordBytes segments, RecordBytes points, std::uint64_t first_seed) {
          sl::TraceOptions options;
          options.direction = parse_direction(direction);
          options.max_steps = max_steps;
          std::vector<sl::HandedLine> ended_copy;
          std::vector<sl::TracedSegment> segments_copy;
          std::vector<sl::TracedPoint> points_copy;
          sl::Polylines lines;
          const std::vector<sl::Vec3> starts = seeds_of(seeds);
          const auto ended_rows = records_in(ended, "ended lines", ended_copy);
          const auto segment_rows = records_in(segments, "segments", segments_copy);
          const auto point_rows = records_in(points, "points", points_copy);
          {
            nb::gil_scoped_release release;
            lines = sl::assemble_handed(starts, options, ended_rows, segment_rows, point_rows, first_seed);
          }
          nb::dict result;
          put_lines(result, std::move(lines));
          return result;
        },
        "seeds"_a, "direction"_a, "max_steps"_a, "ended"_a, "segments"_a, "points"_a, "first_seed"_a = 0,
        "The lines of seeds first_seed, first_seed + 1, ... (seeds) of a handed-off trace from the result() rows of every "
        "rank (concatenated) that belong to them: points, times, offsets, ends.");

  m.def("feature_seeds",
        [](const std::string& path, float low, float high, std::uint32_t stride, std::uint32_t frame, unsigned threads) {
          std::vector<sl::Vec3> seeds;
          {
            nb::gil_scoped_release release;
            seeds = sl::feature_seeds(path, low, high, stride, frame, threads);
          }
          std::vector<float> flat(3 * seeds.size());
          std::memcpy(flat.data(), seeds.data(), flat.size() * sizeof(float));
          return owned_array(std::move(flat), {seeds.size(), 3});
        },
        "path"_a, "low"_a, "high"_a, "stride"_a = 1u, "frame"_a = 0u, "threads"_a = 0u,
        "Interior grid points (every stride-th) whose vorticity magnitude lies in [low, high), as (N, 3) float32.");

  m.def("sample_flow",
        [](const std::string& path, nb::ndarray<const float, nb::shape<-1, 3>, nb::c_contig, nb::device::cpu> points,
           std::uint32_t frame, unsigned threads) {
          static_assert(sizeof(sl::Vec3) == 3 * sizeof(float));
          const std::size_t count = points.shape(0);
          std::vector<float> flat(3 * count);
          {
            nb::gil_scoped_release release;
            sl::sample_flow(path, {reinterpret_cast<const sl::Vec3*>(points.data()), count},
                            {reinterpret_cast<sl::Vec3*>(flat.data()), count}, frame, threads);
          }
          return owned_array(std::move(flat), {count, 3});
        },
        "path"_a, "points"_a, "frame"_a = 0u, "threads"_a = 0u,
        "The flow's velocity at (N, 3) float32 points, trilinear as the tracers sample it (NaN outside the grid).");

  m.def("hilbert_order",
        [](std::uint32_t bits) {
          std::vector<std::uint32_t> order = sl::hilbert_order(bits);
          const std::size_t n = order.size();
          return owned_array(std::move(order), {n});
        },
        "bits"_a, "The partition-local point (x fastest) at each Hilbert index of a cube of 2^bits points a side.");

  m.def("convert_blocks_to_hilbert",
        [](const std::string& input, const std::string& output, std::uint32_t bits, std::uint32_t chunk_pages,
           std::function<void(std::uint64_t, std::uint64_t)> progress) {
          std::function<void(std::uint64_t, std::uint64_t)> report;
          if (progress)
            report = [&progress](std::uint64_t done, std::uint64_t total) {
              nb::gil_scoped_acquire acquire;
              progress(done, total);
            };
          nb::gil_scoped_release release;
          return sl::convert_blocks_to_hilbert(input, output, bits, chunk_pages, report);
        },
        "input"_a, "output"_a, "bits"_a, "chunk_pages"_a, "progress"_a = nb::none(),
        "Rewrites a blocks-layout flow container in the Hilbert layout; returns the seconds it took.");
}

}  // namespace headrace::python
