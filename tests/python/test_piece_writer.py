"""Files written in pieces side by side (``headrace._files.PieceWriter``) and the ``.npz`` of a trace's lines
written through it: the bytes where they belong, archives that zipfile and NumPy read back whole."""

from __future__ import annotations

import os
import zipfile
from concurrent.futures import Future

import numpy as np
import pytest

from headrace._files import PieceWriter
from headrace.workloads.streamlines import lines


def test_pieces_land_at_their_offsets_in_chunks_written_side_by_side(tmp_path):
    path = tmp_path / "pieces.bin"
    rng = np.random.default_rng(7)
    pieces = [(0, rng.integers(0, 256, 1000, dtype=np.uint8)), (1000, b"between"),
              (1007, rng.integers(0, 256, 70_001, dtype=np.uint8))]
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    try:
        with PieceWriter(fd, threads=4, chunk_bytes=4096) as out:  # the large piece in 18 chunks on 4 threads
            for offset, data in reversed(pieces):
                out.write_at(offset, data)
            summed = out.submit(lambda: sum(len(p) for _, p in pieces))
    finally:
        os.close(fd)
    assert summed.result() == 71_008
    assert path.read_bytes() == b"".join(bytes(p) for _, p in pieces)


def test_a_failed_piece_fails_the_writer(tmp_path):
    fd = os.open(tmp_path / "x.bin", os.O_RDONLY | os.O_CREAT, 0o644)  # pwrite on a read-only descriptor: EBADF
    try:
        with pytest.raises(OSError):
            with PieceWriter(fd, threads=2) as out:
                out.write_at(0, b"refused")
    finally:
        os.close(fd)


@pytest.mark.filterwarnings("ignore:Stored array in format 2.0")  # np.savez's, of the reference
@pytest.mark.parametrize("chunk_bytes", [1 << 12, 8 << 20])
def test_an_npz_written_in_pieces_is_what_numpy_saves(tmp_path, chunk_bytes):
    """Every kind of array a trace writes, empty ones, a Future, and a header of .npy version 2.0: np.load
    gives them back, zipfile checks every entry's CRC, and the names and contents are np.savez's."""
    rng = np.random.default_rng(3)
    wide = np.dtype([(f"field_{k:05d}", np.float32) for k in range(3000)])  # a header past 64 KiB: version 2.0
    ready: Future = Future()
    ready.set_result(rng.random((5000, 3), dtype=np.float32))
    arrays = {"points": rng.random((20_000, 3), dtype=np.float32), "offsets": np.arange(0, 20_001, 100, dtype=np.int64),
              "ends": np.array(["left_domain/max_steps", "stagnant/left_domain"]), "empty": np.zeros((0, 3), np.float32),
              "wide": np.zeros(2, dtype=wide), "strided": np.arange(30, dtype=np.int32)[::3], "Velocity": ready}
    path = tmp_path / "lines.npz"
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    try:
        with PieceWriter(fd, threads=3, chunk_bytes=chunk_bytes) as out:
            lines._write_npz(out, arrays)
    finally:
        os.close(fd)
    with zipfile.ZipFile(path) as archive:
        assert archive.testzip() is None  # every CRC-32 right
        names = [info.filename for info in archive.infolist()]
    assert names[-1] == "Velocity.npy" and sorted(names) == sorted(f"{name}.npy" for name in arrays)
    saved = np.load(path, max_header_size=1 << 20)  # the wide dtype's header: ours, so trusted
    reference = tmp_path / "savez.npz"
    np.savez(reference, **{name: a.result() if isinstance(a, Future) else a for name, a in arrays.items()})
    expected = np.load(reference, max_header_size=1 << 20)
    for name in arrays:
        assert saved[name].dtype == expected[name].dtype and saved[name].shape == expected[name].shape, name
        np.testing.assert_array_equal(saved[name], expected[name])


def test_an_npz_refuses_object_arrays_and_leaves_no_file(tmp_path):
    path = tmp_path / "lines.npz"
    with pytest.raises(Exception, match="object"):
        lines.write_lines(path, np.zeros((2, 3), np.float32), np.array([0, 2]), extra=np.array([None, 1], dtype=object))
    assert list(tmp_path.iterdir()) == []
