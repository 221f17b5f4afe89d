"""Format 1.4's publishing writer (docs/format.md 6.1) from Python: each frame visible under the final name once
whole, a grid's attributes with the first, an exception ending the file at its last publication, a writer
killed mid-frame leaving what it published (verified by `headrace verify`), frames in order."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import threading
import time

import numpy as np
import pytest

import headrace
from headrace import FieldSpec
from headrace.cli.main import main


def _frame(f: int) -> np.ndarray:
    return (np.arange(6 * 5 * 4, dtype=np.float32).reshape(6, 5, 4) + 1000 * f)


def test_each_frame_is_visible_once_whole_and_the_closed_file_is_plain(tmp_path):
    path = tmp_path / "sim.hrc"
    with headrace.Writer(path, [FieldSpec("u", "float32", 1)], chunk_size_bytes=64, publish=True) as w:
        w.write(w.add_frame(time=0.0), "u", _frame(0))
        assert not path.exists(), "frame 0 is not published until it is known whole"
        w.write(w.add_frame(time=0.1), "u", _frame(1))  # adding frame 1 published frame 0
        ds = headrace.open(path)
        assert ds.growing and len(ds.frames) == 1
        np.testing.assert_array_equal(ds.read(0, "u"), _frame(0)), "its grid shape recorded with it"
        assert w.publish() == 2
        assert len(headrace.open(path).frames) == 2 and len(ds.frames) == 1, "an earlier reader keeps its prefix"
        w.write(w.add_frame(time=0.2), "u", _frame(2))
    done = headrace.open(path)
    assert not done.growing and done.container.version == (1, 0) and done.file_size == os.path.getsize(path)
    for f in range(3):
        np.testing.assert_array_equal(done.read(f, "u"), _frame(f))
    assert not (tmp_path / "sim.hrc.partial").exists()


def test_an_exception_ends_the_file_at_its_last_publication(tmp_path):
    path = tmp_path / "sim.hrc"
    with pytest.raises(RuntimeError, match="the simulation diverged"):
        with headrace.Writer(path, [FieldSpec("u", "float32", 1)], publish=True) as w:
            for f in range(3):
                w.write(w.add_frame(time=f), "u", _frame(f))
            w.publish()
            w.write(w.add_frame(time=3.0), "u", _frame(3)[:2])  # half a frame, never published
            raise RuntimeError("the simulation diverged")
    ds = headrace.open(path)
    assert not ds.growing and len(ds.frames) == 3 and ds.file_size == os.path.getsize(path)
    assert main(["verify", str(path)]) == 0


def test_a_writer_killed_mid_frame_leaves_what_it_published(tmp_path, capsys):
    path = tmp_path / "sim.hrc"
    child = subprocess.Popen([sys.executable, "-c", textwrap.dedent(f"""
        import sys, time, numpy as np, headrace
        from headrace import FieldSpec
        w = headrace.Writer({str(path)!r}, [FieldSpec("u", "float32", 1)], chunk_size_bytes=64, publish=True)
        for f in range(4):
            w.write(w.add_frame(time=f), "u", np.full((6, 5, 4), f, np.float32))
        w.publish()
        w.write(w.add_frame(time=4.0), "u", np.full((2, 5, 4), 4, np.float32))  # mid-frame
        print("published", flush=True)
        time.sleep(60)
        """)], stdout=subprocess.PIPE, text=True)
    assert child.stdout.readline().strip() == "published"
    child.send_signal(signal.SIGKILL)
    child.wait(30)
    ds = headrace.open(path)
    assert ds.growing and len(ds.frames) == 4, "killed: no last publication, every published frame there"
    assert os.path.getsize(path) > ds.file_size
    for f in range(4):
        assert (ds.read(f, "u") == f).all()
    assert main(["verify", str(path)]) == 0
    capsys.readouterr()
    assert main(["inspect", str(path), "--json"]) == 0
    described = json.loads(capsys.readouterr().out)
    assert described["growing"] is True and described["version"] == "1.4" and len(described["frames"]) == 4


def test_frames_are_published_in_order_and_only_by_a_publishing_writer(tmp_path):
    with headrace.Writer(tmp_path / "a.hrc", [FieldSpec("u", "float32", 1), FieldSpec("v", "float32", 1)],
                         publish=True) as w:
        w.add_frame(time=0.0)
        w.add_frame(time=1.0)
        with pytest.raises(headrace.errors.UsageError, match="writes its frames in order"):
            w.write(1, "u", _frame(1))
        w.write(0, "u", _frame(0))
        w.write(0, "v", _frame(0))
        w.write(1, "u", _frame(1))
        w.write(1, "v", _frame(1))
    with headrace.Writer(tmp_path / "b.hrc", [FieldSpec("u", "float32", 1)]) as plain:
        with pytest.raises(headrace.errors.UsageError, match="does not publish"):
            plain.publish()
        plain.write(plain.add_frame(time=0.0), "u", _frame(0))


def test_a_follower_plays_every_frame_once_in_order_as_it_is_published(tmp_path):
    path = tmp_path / "live.hrc"
    writer = headrace.Writer(path, [FieldSpec("u", "float32", 1)], chunk_size_bytes=64, publish=True)
    writer.write(writer.add_frame(time=0.0), "u", _frame(0))
    writer.publish()
    seen: list[tuple[int, float, np.ndarray]] = []

    def follow() -> None:
        with headrace.open(path).stream(device="cpu", follow=True, follow_poll_s=0.005) as frames:
            for frame in frames:
                seen.append((frame.index, frame.time, np.array(frame["u"])))

    follower = threading.Thread(target=follow)
    follower.start()
    for f in range(1, 12):
        time.sleep(0.01)
        writer.write(writer.add_frame(time=0.1 * f), "u", _frame(f))
        if f % 4 == 0:
            writer.publish()
    writer.close()
    follower.join(60)
    assert not follower.is_alive(), "the follower ends once the writer closed the file"
    assert [index for index, _, _ in seen] == list(range(12))
    for index, when, values in seen:
        assert when == pytest.approx(0.1 * index) and (values == _frame(index)).all()


def test_following_a_finished_file_or_a_dead_writers_plays_what_is_there_and_ends(tmp_path):
    path = tmp_path / "done.hrc"
    with headrace.Writer(path, [FieldSpec("u", "float32", 1)], publish=True) as w:
        for f in range(3):
            w.write(w.add_frame(time=f), "u", _frame(f))
    assert [f.index for f in headrace.open(path).stream(device="cpu", follow=True)] == [0, 1, 2]
    dead = tmp_path / "dead.hrc"
    child = subprocess.Popen([sys.executable, "-c", textwrap.dedent(f"""
        import time, numpy as np, headrace
        from headrace import FieldSpec
        w = headrace.Writer({str(dead)!r}, [FieldSpec("u", "float32", 1)], publish=True)
        for f in range(2):
            w.write(w.add_frame(time=f), "u", np.full((6, 5, 4), f, np.float32))
        w.publish()
        print("published", flush=True)
        time.sleep(60)
        """)], stdout=subprocess.PIPE, text=True)
    assert child.stdout.readline().strip() == "published"
    child.send_signal(signal.SIGKILL)
    child.wait(30)
    assert [f.index for f in headrace.open(dead).stream(device="cpu", follow=True)] == [0, 1]


def test_append_takes_up_a_finished_file_or_a_killed_writers_and_checks_its_fields(tmp_path):
    path = tmp_path / "run.hrc"
    with headrace.Writer(path, [FieldSpec("u", "float32", 1)]) as w:  # a plain writer's finished file
        for f in range(2):
            w.write(w.add_frame(time=f), "u", _frame(f))
    with pytest.raises(headrace.errors.UsageError, match="appending needs its fields"):
        headrace.Writer(path, [FieldSpec("u", "float64", 1)], append=True)
    with pytest.raises(headrace.errors.UsageError, match="as a 5 x 6 x 6 grid"):
        with headrace.Writer(path, [FieldSpec("u", "float32", 1)], append=True, codec="zstd") as w:
            assert w.publishing
            w.write(w.add_frame(time=2.0), "u", np.zeros((6, 6, 5), np.float32))  # not the file's grid
    ds = headrace.open(path)
    assert len(ds.frames) == 2 and not ds.growing, "the failed frame never published"
    with headrace.Writer(path, [FieldSpec("u", "float32", 1)], append=True, codec="zstd") as w:
        for f in range(2, 4):
            w.write(w.add_frame(time=f), "u", _frame(f))
    ds = headrace.open(path)
    assert [f.time for f in ds.frames] == [0, 1, 2, 3] and ds.codecs == ["none", "zstd"]
    for f in range(4):
        np.testing.assert_array_equal(ds.read(f, "u"), _frame(f))
    assert main(["verify", str(path)]) == 0


@pytest.fixture
def small_disk(tmp_path):
    """A 512 KiB file system (tmpfs), as root; skipped where it cannot be mounted."""
    mount = tmp_path / "small"
    mount.mkdir()
    done = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=512k", "tmpfs", str(mount)], capture_output=True, text=True)
    if done.returncode != 0:
        pytest.skip(f"no small file system to fill: mount -t tmpfs: {done.stderr.strip() or done.returncode}")
    yield mount
    subprocess.run(["umount", str(mount)], check=False)


def test_a_full_disk_is_a_clear_error_and_the_published_frames_stay_readable(small_disk):
    path = small_disk / "sim.hrc"
    big = np.arange(40 * 40 * 10, dtype=np.float32).reshape(10, 40, 40)  # 64 KB a frame
    published = 0
    with pytest.raises(OSError, match=r"sim\.hrc.*No space left on device"):
        with headrace.Writer(path, [FieldSpec("u", "float32", 1)], publish=True) as w:
            for f in range(100):
                w.write(w.add_frame(time=f), "u", big + f)
                published = w.publish()
    assert published >= 2
    ds = headrace.open(path)
    assert len(ds.frames) == published and not ds.growing
    for f in range(published):
        np.testing.assert_array_equal(ds.read(f, "u"), big + f)
    assert main(["verify", str(path)]) == 0
