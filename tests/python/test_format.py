"""The container through the Python API: round trips, every backend, codecs, and bad input."""

from __future__ import annotations

import os
import struct

import numpy as np
import pytest

import headrace
from headrace import FieldSpec, errors

BACKENDS = ("posix", "direct", "mmap", "uring", "ram")


def usable(kind: str, path) -> bool:
    return headrace._ext.backend_unavailable_reason(kind, str(path)) is None


@pytest.mark.parametrize("backend", BACKENDS)
def test_every_backend_reads_what_was_written(particle_file, backend):
    path, frames = particle_file
    if not usable(backend, path):
        pytest.skip(f"{backend}: {headrace._ext.backend_unavailable_reason(backend, str(path))}")
    ds = headrace.open(path)
    for t, expected in enumerate(frames):
        np.testing.assert_array_equal(ds.read(t, "particles", backend=backend), expected)


def test_index_round_trip(particle_file):
    path, frames = particle_file
    ds = headrace.open(path)
    assert [f.name for f in ds.fields] == ["particles"]
    assert ds.fields[0].dtype == "float32" and ds.fields[0].components == 8
    assert [f.time for f in ds.frames] == [0.0, 0.5, 1.0]
    assert ds.frames[1].bbox == ((0.0, 0.0, 0.0), (1.0, 1.0, 1.0))
    assert ds.attributes == {"source_format": "test"}
    assert ds.raw_bytes == 3 * 5000 * 32
    assert os.path.getsize(path) == ds.file_size and ds.file_size % 4096 == 0
    table = ds.container.chunk_table()
    assert np.all(table["offset"] % 4096 == 0)
    lo, hi = ds.container.chunk_range(0)
    first_chunk = frames[0][: int(table["element_count"][0])]
    np.testing.assert_allclose(lo, first_chunk.min(axis=0))
    np.testing.assert_allclose(hi, first_chunk.max(axis=0))


@pytest.mark.parametrize("codec", ["lz4", "zstd"])
def test_compressed_round_trip(tmp_path, codec):
    path = tmp_path / f"{codec}.hrc"
    grid = np.tile(np.linspace(0, 1, 64, dtype=np.float32), 4096)  # compressible
    with headrace.Writer(path, [FieldSpec("scalar", "float32", 1), FieldSpec("ids", "int64", 1)],
                         chunk_size_bytes=65536, codec=codec) as w:
        f = w.add_frame(time=0.0)
        w.write(f, "scalar", grid)
        w.write(f, "ids", np.arange(1000, dtype=np.int64))
    ds = headrace.open(path)
    assert ds.stored_bytes < ds.raw_bytes / 2
    assert set(ds.container.chunk_table()["codec"]) == {codec}
    np.testing.assert_array_equal(ds.read(0, "scalar")[:, 0], grid)
    np.testing.assert_array_equal(ds.read(0, "ids")[:, 0], np.arange(1000))


def test_failed_write_leaves_nothing(tmp_path):
    path = tmp_path / "out.hrc"
    with pytest.raises(RuntimeError):
        with headrace.Writer(path, [FieldSpec("v", "float32", 1)]) as w:
            w.write(w.add_frame(time=0.0), "v", np.ones(10, np.float32))
            raise RuntimeError("interrupted")
    assert os.listdir(tmp_path) == []


def test_writer_rejects_a_wrong_dtype_and_appends_after_an_empty_write(tmp_path):
    with headrace.Writer(tmp_path / "x.hrc", [FieldSpec("v", "float32", 2)]) as w:
        f = w.add_frame(time=0.0)
        with pytest.raises(errors.UsageError, match="holds float32, got an array of float64"):
            w.write(f, "v", np.ones(4))
        w.write(f, "v", np.ones(0, np.float32))  # nothing yet (format 1.2 keeps an empty frame-field)
        w.write(f, "v", np.ones(4, np.float32))
    assert headrace.open(tmp_path / "x.hrc").element_count(0, "v") == 2


def corrupt(path, offset: int, data: bytes) -> None:
    with open(path, "r+b") as f:
        f.seek(offset)
        f.write(data)


def superblock(path) -> dict:
    with open(path, "rb") as f:
        raw = f.read(48)
    index_offset, index_size, _, file_size = struct.unpack_from("<QQQQ", raw, 16)
    return {"index_offset": index_offset, "index_size": index_size, "file_size": file_size}


def test_bad_input_raises_specific_errors(particle_file, tmp_path):
    path, _ = particle_file
    good = path.read_bytes()
    cases = [
        ("truncated", lambda p: p.write_bytes(good[:-4096]), errors.TruncatedFileError, "expected a file of"),
        ("magic", lambda p: corrupt(p, 0, b"NOTHRC!!"), errors.BadMagicError, "magic 'HEADRACE'"),
        ("version", lambda p: corrupt(p, 8, struct.pack("<H", 7)), errors.UnsupportedVersionError, "format version 1.x"),
        ("index", lambda p: corrupt(p, superblock(p)["index_offset"] + 100, b"\xff\xff"), errors.CorruptIndexError,
         "index checksum"),
    ]
    for name, damage, error_type, fragment in cases:
        victim = tmp_path / f"{name}.hrc"
        victim.write_bytes(good)
        damage(victim)
        with pytest.raises(error_type) as caught:
            headrace.open(victim)
        message = str(caught.value)
        assert str(victim) in message and "offset" in message and fragment in message, message
        assert isinstance(caught.value, errors.BadDataError)
    with pytest.raises(errors.FileOpenError, match="No such file"):
        headrace.open(tmp_path / "missing.hrc")


def test_checksum_mismatch_names_frame_and_offset(particle_file, tmp_path):
    path, _ = particle_file
    ds = headrace.open(path)
    table = ds.container.chunk_table()
    chunk = int(np.flatnonzero(table["frame"] == 2)[0])
    offset = int(table["offset"][chunk])
    corrupt(path, offset + 10, b"\x00\x01\x02")
    with pytest.raises(errors.ChecksumMismatchError, match=rf"offset {offset}: expected frame 2 field 'particles'"):
        headrace.open(path).read(2, "particles")
    np.testing.assert_array_equal(headrace.open(path).read(2, "particles", verify=False).shape, (5000, 8))
