"""Prints what a container holds, from its index: fields, frames, chunks, ranges, attributes, the
codec chains its chunks are stored with (how many chunks each, the fraction of their raw bytes stored,
the error bound of a lossy one) and, for a file written by ``headrace compress --auto`` or
``codec="auto"``, the chain chosen per field and the measurements it was chosen by."""

from __future__ import annotations

import argparse
import json
import math

from rich.markup import escape
from rich.table import Table

import headrace
from headrace import amr
from headrace.cli._output import console, human_bytes, print_json
from headrace.cli._shared import Path


def register(subparsers: argparse._SubParsersAction, summary: str) -> None:
    parser = subparsers.add_parser("inspect", help=summary, description=__doc__)
    parser.add_argument("file", type=Path(), help="the container to describe")
    parser.add_argument("--chunks", action="store_true", help="also list every chunk")
    parser.add_argument("--json", action="store_true", help="print JSON (always with every chunk)")
    parser.set_defaults(func=run)


def _rate(bytes_per_second: float) -> str:
    return f"{bytes_per_second / 1e9:.2f} GB/s" if bytes_per_second >= 1e8 else f"{bytes_per_second / 1e6:.3g} MB/s"


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
        "growing": ds.growing,
        "file_size": ds.file_size,
        "index_offset": container.index_offset,
        "stored_bytes": ds.stored_bytes,
        "raw_bytes": ds.raw_bytes,
        "fields": [{"name": f.name, "dtype": f.dtype, "components": f.components} for f in ds.fields],
        "frames": frames,
        "attributes": attributes,
        "chunks": chunks,
        "chains": chain_table(ds, chunks),
    }


def chain_table(ds: headrace.Dataset, chunks: list[dict]) -> list[dict]:
    """The file's chain table (format 1.3; empty for a file of plain codecs) in its order: each chain's
    text, the chunks stored with it and the fraction of their raw bytes stored, the fields using it, and
    the error bound of a lossy one."""
    table = []
    for text, bound in ds.container.chains:
        mine = [c for c in chunks if c["codec"] == text]
        raw = sum(c["raw_size"] for c in mine)
        stored = sum(c["stored_size"] for c in mine)
        table.append({"chain": text, "chunks": len(mine), "raw_bytes": raw, "stored_bytes": stored,
                      "stored_fraction": round(stored / raw, 4) if raw else None,
                      "fields": sorted({c["field"] for c in mine}), "error_bound": bound})
    return table


def codec_choice(attributes: dict) -> tuple[dict[str, dict], str]:
    """The attribute ``codec_choice`` read: per field, the chosen chain and the trial it was chosen by;
    and why it could not be read ("" when it could, or is not there)."""
    text = attributes.get("codec_choice")
    if text is None:
        return {}, ""
    try:
        stored = json.loads(text) if isinstance(text, str) else None
        if not isinstance(stored, dict):
            raise ValueError("expected a JSON object of fields")
        result = {}
        for field, choice in stored.items():
            best: dict = next((t for t in choice.get("trials", []) if t.get("spec") == choice["spec"]), {})
            result[field] = {"chain": choice["spec"], "objective": choice.get("objective"),
                             "disk_bytes_per_second": choice.get("disk_bytes_per_second"),
                             "stored_fraction": best.get("stored_fraction"), "decode_gb_per_s": best.get("decode_gb_per_s"),
                             "decoded_on": best.get("decoded_on"), "trials": len(choice.get("trials", [])),
                             "sample_chunks": choice.get("sample_chunks")}
        return result, ""
    except (ValueError, TypeError, KeyError, AttributeError) as error:
        return {}, f"attribute codec_choice is not a choice headrace wrote ({type(error).__name__}: {error})"


def run(args: argparse.Namespace) -> int:
    ds = headrace.open(args.file)
    info = describe(ds)
    if args.json:
        print_json(info)
        return 0
    ratio = info["raw_bytes"] / info["stored_bytes"] if info["stored_bytes"] else 1.0
    growing = " (growing: its writer publishes frames as it goes, or was stopped before it closed the file)" if info["growing"] else ""
    console.print(f"[bold]{info['path']}[/]: format {info['version']}{growing}, {human_bytes(info['file_size'])}, "
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
        if "codec_choice" in shown_attributes:  # JSON of every trial: the chosen chains are shown below
            shown_attributes["codec_choice"] = "<the chains chosen, below>"
        console.print("attributes: " + ", ".join(f"{k}={v}" for k, v in shown_attributes.items()))
        if info["attributes"].get("layout") == "amr":
            topology = amr.topology_of(info["attributes"], ds.path)
            if topology is not None:
                console.print(amr.describe(ds.path, topology))
    if info["chains"]:
        chains = Table(title="chains")
        for column in ("chain", "chunks", "stored fraction", "fields", "lossy"):
            chains.add_column(column)
        for c in info["chains"]:
            fraction = "-" if c["stored_fraction"] is None else f"{c['stored_fraction']:.3f}"
            lossy = "" if c["error_bound"] is None else f"lossy, error bound {c['error_bound']:g}"
            chains.add_row(escape(c["chain"]), str(c["chunks"]), fraction, ", ".join(c["fields"]), lossy)
        console.print(chains)
    chosen, unreadable = codec_choice(info["attributes"])
    if unreadable:
        console.print(f"[yellow]{escape(unreadable)}[/]")
    if chosen:
        choices = Table(title="codec choice (the chain chosen per field, and what it measured)")
        for column in ("field", "chain", "stored fraction", "decode GB/s", "decoded on", "objective"):
            choices.add_column(column)
        for field, c in chosen.items():
            number = lambda v, f: "?" if not isinstance(v, (int, float)) else format(v, f)  # noqa: E731
            rate = c["disk_bytes_per_second"]
            objective = str(c["objective"]) + (f" (disk {_rate(rate)})" if isinstance(rate, (int, float)) else "")
            choices.add_row(escape(field), escape(str(c["chain"])), number(c["stored_fraction"], ".3f"),
                            number(c["decode_gb_per_s"], ".2f"), escape(str(c["decoded_on"])), objective)
        console.print(choices)
    if args.chunks:
        chunks = Table(title="chunks")
        for column in ("frame", "field", "offset", "stored", "raw", "elements", "codec", "checksum"):
            chunks.add_column(column)
        for c in info["chunks"]:
            chunks.add_row(str(c["frame"]), c["field"], str(c["offset"]), str(c["stored_size"]), str(c["raw_size"]),
                           f"{c['first_element']}+{c['element_count']}", c["codec"], c["checksum"])
        console.print(chunks)
    return 0
