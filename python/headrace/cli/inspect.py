"""``headrace inspect FILE``: the container's index: fields, frames, chunks, ranges, attributes."""

from __future__ import annotations

import argparse
import math

from rich.table import Table

import headrace
from headrace import amr
from headrace.cli._arguments import Path
from headrace.cli._output import console, human_bytes, print_json


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser("inspect", help="print a container's index", description=__doc__)
    parser.add_argument("file", type=Path(), help="the container to describe")
    parser.add_argument("--chunks", action="store_true", help="also list every chunk")
    parser.add_argument("--json", action="store_true", help="print JSON (always with every chunk)")
    parser.set_defaults(func=run)


def _finite(values):
    return [v if math.isfinite(v) else None for v in values]


def describe(ds: headrace.Dataset) -> dict:
    """The whole index as plain data."""
    container = ds.container
    table = container.chunk_table()
    chunks = []
    for i in range(len(table["offset"])):
        lo, hi = container.chunk_range(i)
        chunks.append({
            "frame": int(table["frame"][i]),
            "field": ds.fields[int(table["field"][i])].name,
            "offset": int(table["offset"][i]),
            "stored_size": int(table["stored_size"][i]),
            "raw_size": int(table["raw_size"][i]),
            "first_element": int(table["first_element"][i]),
            "element_count": int(table["element_count"][i]),
            "codec": table["codec"][i],
            "checksum": f"{int(table['checksum'][i]):016x}",
            "min": _finite(lo),
            "max": _finite(hi),
        })
    frames = []
    for frame in ds.frames:
        counts = {f.name: ds.element_count(frame.index, f.name) for f in ds.fields}
        frames.append({"index": frame.index, "time": frame.time,
                       "bbox": [_finite(frame.bbox[0]), _finite(frame.bbox[1])], "elements": counts})
    attributes = {k: list(v) if isinstance(v, (list, tuple)) else v for k, v in ds.attributes.items()}
    return {
        "path": ds.path,
        "version": "%d.%d" % container.version,
        "file_size": ds.file_size,
        "index_offset": container.index_offset,
        "stored_bytes": ds.stored_bytes,
        "raw_bytes": ds.raw_bytes,
        "fields": [{"name": f.name, "dtype": f.dtype, "components": f.components} for f in ds.fields],
        "frames": frames,
        "attributes": attributes,
        "chunks": chunks,
    }


def run(args: argparse.Namespace) -> int:
    ds = headrace.open(args.file)
    info = describe(ds)
    if args.json:
        print_json(info)
        return 0
    ratio = info["raw_bytes"] / info["stored_bytes"] if info["stored_bytes"] else 1.0
    console.print(f"[bold]{info['path']}[/]: format {info['version']}, {human_bytes(info['file_size'])}, "
                  f"{len(info['frames'])} frames, {len(info['chunks'])} chunks, "
                  f"stored {human_bytes(info['stored_bytes'])} / raw {human_bytes(info['raw_bytes'])} (ratio {ratio:.2f})")
    fields = Table(title="fields")
    for column in ("name", "dtype", "components", "codecs", "min", "max"):
        fields.add_column(column)
    for field in info["fields"]:
        mine = [c for c in info["chunks"] if c["field"] == field["name"]]
        codecs = ", ".join(sorted({c["codec"] for c in mine}))
        lo = [min((c["min"][k] for c in mine if c["min"][k] is not None), default=None) for k in range(field["components"])]
        hi = [max((c["max"][k] for c in mine if c["max"][k] is not None), default=None) for k in range(field["components"])]
        fmt = lambda vs: " ".join("nan" if v is None else f"{v:.4g}" for v in vs)  # noqa: E731
        fields.add_row(field["name"], field["dtype"], str(field["components"]), codecs, fmt(lo), fmt(hi))
    console.print(fields)
    frames = Table(title="frames")
    for column in ("frame", "time", "bbox min", "bbox max", "elements"):
        frames.add_column(column)
    shown = info["frames"] if len(info["frames"]) <= 20 else info["frames"][:10] + info["frames"][-10:]
    for frame in shown:
        box = [" ".join("?" if v is None else f"{v:.4g}" for v in corner) for corner in frame["bbox"]]
        elements = ", ".join(f"{k}={v}" for k, v in frame["elements"].items())
        frames.add_row(str(frame["index"]), f"{frame['time']:.6g}", box[0], box[1], elements)
    console.print(frames)
    if len(shown) < len(info["frames"]):
        console.print(f"({len(info['frames']) - len(shown)} frames not shown; --json lists all)")
    if info["attributes"]:
        # A topology's bricks run to millions of integers: named by their count (--json lists them).
        shown_attributes = {k: f"<{len(v) // amr.BRICK_INTEGERS:,} bricks>" if k == "amr_bricks" else v
                            for k, v in info["attributes"].items()}
        console.print("attributes: " + ", ".join(f"{k}={v}" for k, v in shown_attributes.items()))
        if info["attributes"].get("layout") == "amr":
            topology = amr.topology_of(info["attributes"], ds.path)
            if topology is not None:
                console.print(amr.describe(ds.path, topology))
    if args.chunks:
        chunks = Table(title="chunks")
        for column in ("frame", "field", "offset", "stored", "raw", "elements", "codec", "checksum"):
            chunks.add_column(column)
        for c in info["chunks"]:
            chunks.add_row(str(c["frame"]), c["field"], str(c["offset"]), str(c["stored_size"]), str(c["raw_size"]),
                           f"{c['first_element']}+{c['element_count']}", c["codec"], c["checksum"])
        console.print(chunks)
    return 0
