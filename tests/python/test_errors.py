"""headrace's exceptions: each also the Python built-in of its kind, messages without source locations
(kept in ``source_location``), the file, offset and what was expected named."""

from __future__ import annotations

import errno

import numpy as np
import pytest

import headrace
from headrace import errors


def test_a_missing_file_is_a_file_not_found_error_naming_it(tmp_path):
    missing = tmp_path / "absent.hrc"
    with pytest.raises(FileNotFoundError) as caught:
        headrace.open(missing)
    error = caught.value
    assert isinstance(error, errors.MissingFileError) and isinstance(error, errors.Error)
    assert error.errno == errno.ENOENT and str(missing) in str(error)
    assert "[" not in str(error) and error.source_location.endswith(tuple(f":{n}" for n in range(1, 10000)))
    assert ".cpp:" in error.source_location and not error.source_location.startswith("/")


def test_a_directory_is_an_is_a_directory_error(tmp_path):
    with pytest.raises(IsADirectoryError) as caught:
        headrace.open(tmp_path)
    assert str(tmp_path) in str(caught.value) and isinstance(caught.value, errors.NotAFileError)


def test_a_bad_argument_is_a_value_error_and_an_unknown_field_a_key_error(particle_file):
    particle_file, _ = particle_file
    ds = headrace.open(particle_file)
    with pytest.raises(ValueError, match="prefetch must be at least 1"):
        ds.stream(device="cpu", prefetch=0)
    with pytest.raises(KeyError) as caught:
        ds.field("velocity")
    assert isinstance(caught.value, errors.UnknownNameError) and isinstance(caught.value, errors.UsageError)
    assert str(caught.value).startswith(str(particle_file) + ": no field 'velocity'")  # not quoted as KeyError's


def test_not_a_container_is_a_value_error_naming_the_offset_and_the_expectation(tmp_path):
    path = tmp_path / "notes.txt"
    path.write_bytes(b"not a container at all" * 300)
    with pytest.raises(ValueError) as caught:
        headrace.open(path)
    assert isinstance(caught.value, errors.BadDataError)
    assert str(path) in str(caught.value) and "offset 0" in str(caught.value) and "expected" in str(caught.value)


def test_a_corrupt_chunk_is_a_checksum_mismatch_naming_the_file_and_offset(particle_file):
    particle_file, _ = particle_file
    ds = headrace.open(particle_file)
    offset = int(ds.container.chunk_table()["offset"][0])
    with open(particle_file, "r+b") as f:
        f.seek(offset + 8)
        byte = f.read(1)
        f.seek(offset + 8)
        f.write(bytes([byte[0] ^ 0xFF]))
    with pytest.raises(errors.ChecksumMismatchError) as caught:
        headrace.open(particle_file).read(0, "particles", backend="posix")
    assert isinstance(caught.value, ValueError) and str(particle_file) in str(caught.value)
    assert f"offset {offset}" in str(caught.value)


def _flip_a_byte(path, offset):
    with open(path, "r+b") as f:
        f.seek(offset)
        byte = f.read(1)
        f.seek(offset)
        f.write(bytes([byte[0] ^ 0xFF]))


@pytest.mark.parametrize("device", ["cpu", pytest.param(0, marks=pytest.mark.gpu)])
def test_a_stream_over_a_corrupt_chunk_raises_a_checksum_mismatch_naming_its_frame(particle_file, device):
    particle_file, frames = particle_file
    table = headrace.open(particle_file).container.chunk_table()
    second_frame = int(np.flatnonzero(table["frame"] == 1)[0])
    offset = int(table["offset"][second_frame])
    _flip_a_byte(particle_file, offset + 100)
    seen = []
    with pytest.raises(errors.ChecksumMismatchError) as caught:
        for frame in headrace.open(particle_file).stream(device=device):
            seen.append(frame.index)
            frame.release()
    message = str(caught.value)
    assert seen == [0] and message.startswith("frame 1: 1 of ")
    assert str(particle_file) in message and f"offset {offset}" in message and "expected checksum" in message
    assert "[" not in message and "chunk_checks.cpp" in caught.value.source_location


def test_a_stream_over_a_truncated_file_raises_a_truncated_file_error_naming_its_frame(particle_file):
    particle_file, _ = particle_file
    ds = headrace.open(particle_file)
    table = ds.container.chunk_table()
    last_frame = int(np.flatnonzero(table["frame"] == 2)[-1])
    stream = ds.stream(device="cpu", prefetch=1)
    with open(particle_file, "r+b") as f:  # cut after the index was read: the last chunk ends past the file
        f.truncate(int(table["offset"][last_frame]) + 10)
    with pytest.raises(errors.TruncatedFileError) as caught:
        for frame in stream:
            frame.release()
    assert isinstance(caught.value, EOFError) and str(caught.value).startswith("frame 2: ")


def test_a_queue_summary_raises_its_first_failure_as_its_own_type(particle_file):
    particle_file, _ = particle_file
    ds = headrace.open(particle_file)
    offset = int(ds.container.chunk_table()["offset"][0])
    _flip_a_byte(particle_file, offset + 8)
    with headrace.Queue(device="cpu") as queue:
        file = queue.add_file(particle_file)
        destination = np.empty((ds.element_count(0, "particles"), 8), dtype=np.float32)
        requests = queue.enqueue_chunks(file, ds, 0, "particles", destination)
        queue.submit()
        queue.drain()
        summary = queue.summarize(requests)
        assert summary.failed == 1 and f"offset {offset}" in summary.first_failure
        with pytest.raises(errors.ChecksumMismatchError, match=f"offset {offset}: .*expected checksum"):
            summary.raise_first_failure()
        queue.summarize(requests[1:]).raise_first_failure()  # the others read fine: nothing raised


def test_a_destination_of_the_wrong_dtype_or_shape_is_refused(particle_file):
    particle_file, _ = particle_file
    ds = headrace.open(particle_file)
    queue = headrace.Queue(device="cpu")
    file = queue.add_file(particle_file)
    count = ds.element_count(0, "particles")
    with pytest.raises(headrace.UsageError, match="float32"):
        queue.enqueue_chunks(file, ds, 0, "particles", np.empty((count, 8), dtype=np.float64))
    with pytest.raises(headrace.UsageError, match="bytes"):
        queue.enqueue_chunks(file, ds, 0, "particles", np.empty((count - 1, 8), dtype=np.float32))


@pytest.mark.parametrize("device", ["gpu", "-2", 1.5, True])
def test_a_device_that_is_neither_a_gpu_number_nor_cpu_says_what_is(device):
    for make in (lambda: headrace.Queue(device=device), lambda: headrace.shared_engine(device)):
        with pytest.raises(headrace.UsageError, match="expected a GPU number .* or 'cpu'"):
            make()


def test_cpu_is_a_device_everywhere():
    assert headrace.Queue(device="cpu").device is None
    assert headrace.shared_engine("cpu").device is None
