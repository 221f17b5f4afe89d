"""Measures codec chains against the plain nvCOMP codecs, per field of a container, on one GPU.

    python3 -m headrace.bench.cases.codec_chains FILE.hrc [FILE.hrc ...] --device 0 [--sample-chunks 8] --out DIR

For each field, sample chunks are cut from frames spread over the file (the writer's chunk size, 4 MiB by
default), and every chain is tried on them (headrace.codecs.try_chain): stored fraction, and GPU decode
rate of a frame-sized batch (256 MiB of raw bytes: the sample chunks repeated, nvCOMP and the filter
kernels on one stream, timed by CUDA events, the fastest of five), every chunk checked to decode to its
bytes. The chains: each plain nvCOMP codec (lz4, snappy, zstd, deflate, gdeflate, ans,
bitcomp, cascaded; in 64 KiB blocks, and zstd in one stream a chunk) and every candidate of the
automatic choice including the GPU-only codecs, ans's float mode among them. Per field the best plain codec (smallest stored fraction) is set against the best
chain that decodes at 20 GB/s or more: the target is a stored fraction of at most 0.8 x the
plain codec's. Writes codec_chains.csv and codec_chains.json under --out.
"""

from __future__ import annotations

import argparse
import json
import os
from pathlib import Path

import numpy as np

import headrace
from headrace import codecs, errors
from headrace.bench.harness import write_rows

__all__ = ["main", "PLAIN"]

# Each nvCOMP codec alone, in the 64 KiB blocks every candidate uses (nvCOMP decodes blocks in
# parallel); and zstd in one stream a chunk, the plain codec of earlier files, for reference.
PLAIN = tuple(f"{codec}(block={codecs.BLOCK_BYTES})"
              for codec in codecs.LOSSLESS_CODECS if codec != "gdeflate") + ("gdeflate(block=32768)", "zstd(block=0)")
TARGET_DECODE_BYTES_PER_SECOND = 20e9


def sample_chunks(ds: headrace.Dataset, field: str, count: int, chunk_bytes: int) -> list[np.ndarray]:
    """``count`` chunks of ``chunk_bytes`` (whole elements) from frames spread over the file."""
    spec = next(f for f in ds.fields if f.name == field)
    per_chunk = max(1, chunk_bytes // (np.dtype(spec.dtype).itemsize * spec.components)) * spec.components
    frames = sorted({i * len(ds.frames) // count for i in range(count)})
    chunks: list[np.ndarray] = []
    for k, frame in enumerate(frames):
        values = np.ascontiguousarray(ds.read(frame, field)).reshape(-1)
        starts = list(range(0, values.size, per_chunk))
        take = count * (k + 1) // len(frames) - count * k // len(frames)
        chunks += [values[s:s + per_chunk].copy() for s in sorted({starts[j * len(starts) // take] for j in range(take)})]
    return chunks


def measure_field(ds: headrace.Dataset, field: str, device: int | None, sample_count: int, chunk_bytes: int) -> list[dict[str, object]]:
    spec = next(f for f in ds.fields if f.name == field)
    sample = sample_chunks(ds, field, sample_count, chunk_bytes)
    axis = codecs.fastest_axis_points(ds.attributes)
    chains = list(dict.fromkeys(list(PLAIN) + codecs.candidates(spec.dtype, spec.components, chunk_bytes, grid=axis > 0,
                                                                gpu_only=True)
                                + ([f"ans(type=float32,block={codecs.BLOCK_BYTES})", f"split|ans(type=float32,block={codecs.BLOCK_BYTES})"]
                                   if spec.dtype == "float32" else [])))
    rows: list[dict[str, object]] = []
    for text in chains:
        chunks = sample
        row: dict[str, object] = {"file": os.path.basename(ds.path), "field": field, "dtype": spec.dtype,
                                  "components": spec.components, "chain": text, "plain": text in PLAIN,
                                  "chunk_bytes": max(c.nbytes for c in chunks) if chunks else 0}
        try:
            trial = codecs.try_chain(text, chunks, dtype=spec.dtype, components=spec.components, fastest_axis_points=axis,
                                     device=device, repeats=5)
        except (errors.UnavailableError, errors.UsageError, errors.CodecError) as error:
            row.update(error=str(error))
            rows.append(row)
            continue
        row.update(spec=trial.spec, raw_bytes=trial.raw_bytes, stored_bytes=trial.stored_bytes,
                   stored_fraction=round(trial.stored_fraction, 5),
                   decode_gb_per_s=round(trial.decode_bytes_per_second / 1e9, 2),
                   encode_s=round(trial.encode_seconds, 3), decoded_on=trial.decoded_on)
        rows.append(row)
        print(f"{row['file']} {field}: {text:48s} stored {trial.stored_fraction:.3f}  "
              f"GPU decode {trial.decode_bytes_per_second / 1e9:7.1f} GB/s", flush=True)
    return rows


def verdict(rows: list[dict[str, object]]) -> dict[str, object]:
    """The best plain codec against the best chain at >= 20 GB/s, for one field."""
    measured = [r for r in rows if "stored_fraction" in r]
    plain = [r for r in measured if r["plain"]]
    fast = [r for r in measured if float(r["decode_gb_per_s"]) >= TARGET_DECODE_BYTES_PER_SECOND / 1e9]  # type: ignore[arg-type]
    best_plain = min(plain, key=lambda r: r["stored_fraction"]) if plain else None  # type: ignore[arg-type,return-value]
    best_chain = min(fast, key=lambda r: r["stored_fraction"]) if fast else None  # type: ignore[arg-type,return-value]
    result: dict[str, object] = {"best_plain": best_plain and best_plain["chain"],
                                 "best_plain_stored_fraction": best_plain and best_plain["stored_fraction"],
                                 "best_chain_at_20gbps": best_chain and best_chain["spec"],
                                 "best_chain_stored_fraction": best_chain and best_chain["stored_fraction"],
                                 "best_chain_decode_gb_per_s": best_chain and best_chain["decode_gb_per_s"]}
    if best_plain and best_chain:
        result["ratio_to_plain"] = round(float(best_chain["stored_fraction"]) / float(best_plain["stored_fraction"]), 3)  # type: ignore[arg-type]
    return result


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("files", nargs="+")
    parser.add_argument("--device", type=int, default=0, help="the GPU; -1 decodes on the CPU")
    parser.add_argument("--sample-chunks", type=int, default=8)
    parser.add_argument("--chunk-bytes", type=int, default=4 << 20)
    parser.add_argument("--out", required=True)
    args = parser.parse_args(argv)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    rows: list[dict[str, object]] = []
    verdicts: dict[str, object] = {}
    for path in args.files:
        ds = headrace.open(path)
        for spec in ds.fields:
            field_rows = measure_field(ds, spec.name, None if args.device < 0 else args.device, args.sample_chunks,
                                       args.chunk_bytes)
            rows += field_rows
            verdicts[f"{os.path.basename(path)}:{spec.name}"] = verdict(field_rows)
            print(json.dumps({f"{os.path.basename(path)}:{spec.name}": verdicts[f"{os.path.basename(path)}:{spec.name}"]}),
                  flush=True)
    write_rows(str(out / "codec_chains.csv"), rows)
    (out / "codec_chains.json").write_text(json.dumps({"verdicts": verdicts, "rows": rows}, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
