"""Pathlines against VTK's vtkParticlePathFilter (issue 40) on the same series and seeds, in one process: VTK in
core on the CPU (the series read once into a temporal source, its reads not timed), headrace's tracer on
``--device`` (cpu: the reference rounds on this machine's threads) from the file. Reports where each
particle ends at t1 in both (the largest and median distance, against the grid's spacing) and the speed
ratio, as one JSON line and a CSV row. Needs the ``vtk`` wheel (not a dependency of headrace).

    python3 bench/pathlines_vs_vtk.py SERIES.hrc --seeds 2000 --step-size 0.05 [--device 0] --out DIR
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import numpy as np
from vtkmodules.util.numpy_support import numpy_to_vtk, vtk_to_numpy
from vtkmodules.util.vtkAlgorithm import VTKPythonAlgorithmBase
from vtkmodules.vtkCommonCore import vtkPoints
from vtkmodules.vtkCommonDataModel import vtkImageData, vtkPolyData
from vtkmodules.vtkCommonExecutionModel import vtkStreamingDemandDrivenPipeline as Pipeline
from vtkmodules.vtkFiltersFlowPaths import vtkParticlePathFilter

import headrace
from headrace._files import write_rows
from headrace.workloads import streamlines


class SeriesSource(VTKPythonAlgorithmBase):
    """The series' frames as VTK's temporal pipeline asks for them (each frame's velocity in grid order,
    read from the container once, up front)."""

    def __init__(self, path: str) -> None:
        super().__init__(nInputPorts=0, nOutputPorts=1, outputType="vtkImageData")
        ds = headrace.open(path)
        self.times = [float(frame.time) for frame in ds.frames]
        self.dims = [int(d) for d in ds.attributes["grid_dims"]]
        self.origin = [float(o) for o in ds.attributes["grid_origin"]]
        self.spacing = [float(s) for s in ds.attributes["grid_spacing"]]
        self.frames = [np.ascontiguousarray(ds.read(k, "velocity").reshape(-1, 3)) for k in range(len(self.times))]

    def RequestInformation(self, request, in_info, out_info):  # noqa: N802 (VTK's names)
        info = out_info.GetInformationObject(0)
        info.Set(Pipeline.TIME_STEPS(), self.times, len(self.times))
        info.Set(Pipeline.TIME_RANGE(), [self.times[0], self.times[-1]], 2)
        nx, ny, nz = self.dims
        info.Set(Pipeline.WHOLE_EXTENT(), (0, nx - 1, 0, ny - 1, 0, nz - 1), 6)
        return 1

    def RequestData(self, request, in_info, out_info):  # noqa: N802
        info = out_info.GetInformationObject(0)
        asked = info.Get(Pipeline.UPDATE_TIME_STEP()) if info.Has(Pipeline.UPDATE_TIME_STEP()) else self.times[0]
        k = int(np.argmin([abs(t - asked) for t in self.times]))
        out = vtkImageData.GetData(out_info)
        out.SetDimensions(*self.dims)
        out.SetOrigin(*self.origin)
        out.SetSpacing(*self.spacing)
        velocity = numpy_to_vtk(self.frames[k], deep=0)
        velocity.SetName("velocity")
        out.GetPointData().SetVectors(velocity)
        out.GetInformation().Set(out.DATA_TIME_STEP(), self.times[k])
        return 1


def vtk_ends(path: str, seeds: np.ndarray, t1: float) -> tuple[np.ndarray, float, float]:
    """Where each seed released at the series' first time stands at t1 after vtkParticlePathFilter (NaN where
    VTK lost it), its seconds, and the seconds its source took to read the series (not counted)."""
    started = time.perf_counter()
    source = SeriesSource(path)
    read = time.perf_counter() - started
    points = vtkPoints()
    points.SetData(numpy_to_vtk(np.ascontiguousarray(seeds, dtype=np.float32), deep=1))
    seed_data = vtkPolyData()
    seed_data.SetPoints(points)
    tracer = vtkParticlePathFilter()
    tracer.SetInputConnection(0, source.GetOutputPort())
    tracer.SetInputData(1, seed_data)
    tracer.SetForceReinjectionEveryNSteps(0)
    tracer.SetComputeVorticity(False)
    tracer.SetIgnorePipelineTime(False)  # VTK 9.3 on: from the input's first time to the time asked for
    started = time.perf_counter()
    tracer.UpdateTimeStep(t1)
    seconds = time.perf_counter() - started
    out = tracer.GetOutput()
    ends = np.full((len(seeds), 3), np.nan)
    ids = vtk_to_numpy(out.GetPointData().GetArray("InjectedPointId"))
    xyz = vtk_to_numpy(out.GetPoints().GetData()) if out.GetNumberOfPoints() else np.zeros((0, 3))
    lines = out.GetLines()
    connectivity = vtk_to_numpy(lines.GetConnectivityArray()) if lines.GetNumberOfCells() else np.zeros(0, np.int64)
    offsets = vtk_to_numpy(lines.GetOffsetsArray()) if lines.GetNumberOfCells() else np.zeros(1, np.int64)
    for c in range(len(offsets) - 1):
        last = connectivity[offsets[c + 1] - 1]
        ends[ids[last]] = xyz[last]
    return ends, seconds, read


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("file")
    parser.add_argument("--seeds", type=int, default=2000)
    parser.add_argument("--step-size", type=float, default=0.05)
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--t1", type=float, default=None)
    parser.add_argument("--out", required=True)
    args = parser.parse_args()
    times = [frame.time for frame in headrace.open(args.file).frames]
    t0 = times[0]  # VTK releases at its input's first time
    t1 = times[-1] if args.t1 is None else args.t1
    seeds = streamlines.uniform_seeds(args.file, args.seeds)
    theirs, vtk_seconds, read_seconds = vtk_ends(args.file, seeds, t1)
    started = time.perf_counter()
    ours = streamlines.trace_pathlines(args.file, seeds, t0=t0, t1=t1, step_size=args.step_size, device=args.device,
                                       steps=int(np.ceil((t1 - t0) / args.step_size)) + len(times) + 1)
    our_seconds = time.perf_counter() - started
    ends = ours.points[ours.offsets[1:] - 1]
    # The same paths to any precision: ours with a step a tenth as long (the interpolated field's own paths).
    fine_step = args.step_size / 10
    fine = streamlines.trace_pathlines(args.file, seeds, t0=t0, t1=t1, step_size=fine_step, device=args.device,
                                       steps=int(np.ceil((t1 - t0) / fine_step)) + len(times) + 1)
    exact = fine.points[fine.offsets[1:] - 1]
    both = (np.array([end == "end_time" for end in ours.ends]) & np.array([end == "end_time" for end in fine.ends]) &
            ~np.isnan(theirs).any(axis=1))
    distance = np.linalg.norm(ends[both] - theirs[both], axis=1)

    def off(points: np.ndarray) -> dict[str, float]:
        gap = np.linalg.norm(points[both] - exact[both], axis=1)
        return {"median": float(np.median(gap)), "max": float(gap.max(initial=0.0))} if len(gap) else {"median": 0.0, "max": 0.0}

    spacing = float(min(headrace.open(args.file).attributes["grid_spacing"]))
    row = {"file": args.file, "seeds": len(seeds), "t0": t0, "t1": t1, "frames": len(times), "step_size": args.step_size,
           "device": args.device, "compared": int(both.sum()), "vtk_lost": int(np.isnan(theirs).any(axis=1).sum()),
           "ours_left_domain": ours.ends.count("left_domain"), "max_distance": float(distance.max(initial=0.0)),
           "median_distance": float(np.median(distance)) if len(distance) else 0.0, "grid_spacing": spacing,
           "vtk_off_median": off(theirs)["median"], "vtk_off_max": off(theirs)["max"],
           "headrace_off_median": off(ends)["median"], "headrace_off_max": off(ends)["max"],
           "vtk_seconds": vtk_seconds, "vtk_read_seconds": read_seconds, "headrace_seconds": our_seconds,
           "headrace_trace_seconds": ours.stats["seconds"], "speedup": vtk_seconds / our_seconds}
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    write_rows(str(out / "pathlines_vs_vtk.csv"), [row])
    print(json.dumps(row))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
