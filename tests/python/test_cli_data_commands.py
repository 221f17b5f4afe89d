"""The data subcommands (generate, convert, inspect, verify, info, read, probe, plot) on bad input: each
refusal is one line with its exit status, and no output, partial file or test file is left behind
(issue 16). Also the writer's chunk size, which the audit found silently changed."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import headrace
from headrace import FieldSpec
from headrace.cli.main import main

KiB, MiB = 1 << 10, 1 << 20
TINY_PROBE = ["--size", "8M", "--block-sizes", "4K,64K", "--queue-depths", "1,4", "--threads", "1,2",
              "--bytes-per-point", "256K"]


def one_line_error(capsys) -> str:
    """The command's stderr, which must be one line naming the command, no traceback."""
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and err.startswith("headrace ") and "Traceback" not in err, err
    return err


def leftovers(folder: Path) -> list[str]:
    return sorted(path.name for path in folder.iterdir() if path.name.endswith(".partial"))


def generate_particles(output: Path, *extra: str) -> int:
    return main(["generate", "particles", str(output), "--particles", "1000", "--frames", "2", *extra])


def chunk_sizes(path: Path) -> list[int]:
    return [int(size) for size in headrace.open(path).container.chunk_table()["raw_size"]]


# --- outputs: never replaced without --force, never half written -----------------------------------


def test_generate_refuses_an_existing_output_without_force_and_replaces_it_with_force(tmp_path, capsys):
    output = tmp_path / "p.hrc"
    assert generate_particles(output, "--seed", "1") == 0
    first = output.read_bytes()
    capsys.readouterr()

    assert generate_particles(output, "--seed", "2") == 2
    err = one_line_error(capsys)
    assert str(output) in err and "--force" in err
    assert output.read_bytes() == first

    assert generate_particles(output, "--seed", "2", "--force") == 0
    assert output.read_bytes() != first and headrace.open(output).attributes["seed"] == [2]
    assert leftovers(tmp_path) == []


def test_convert_refuses_to_replace_an_unrelated_file(tmp_path, capsys):
    source = tmp_path / "p.raw"
    np.zeros((16, 8), np.float32).tofile(source)
    notes = tmp_path / "notes.txt"
    notes.write_text("mine")

    assert main(["convert", str(source), str(notes), "--format", "raw-particles"]) == 2
    assert "--force" in one_line_error(capsys) and notes.read_text() == "mine"
    assert main(["convert", str(source), str(notes), "--format", "raw-particles", "--force"]) == 0
    assert headrace.open(notes).read(0, "particles").shape == (16, 8)


@pytest.mark.parametrize("command", ["generate", "convert"])
def test_an_output_that_is_a_folder_or_in_a_missing_folder_is_a_usage_error(tmp_path, capsys, command):
    source = tmp_path / "p.raw"
    np.zeros((16, 8), np.float32).tofile(source)
    folder = tmp_path / "out.hrc"
    folder.mkdir()
    for output, says in ((folder, "is a folder"), (tmp_path / "missing" / "out.hrc", "is not an existing folder")):
        if command == "generate":
            status = generate_particles(output)
        else:
            status = main(["convert", str(source), str(output), "--format", "raw-particles"])
        assert status == 2 and says in one_line_error(capsys)
    assert leftovers(tmp_path) == [] and not (tmp_path / "missing").exists() and not any(folder.iterdir())


def test_an_interrupt_says_what_is_on_disk(tmp_path, capsys, monkeypatch):
    import headrace.cli.generate as generate_command
    from headrace.writer import Writer

    output = tmp_path / "p.hrc"
    real_write = Writer.write

    def interrupted_write(self, *args, **kwargs):
        raise KeyboardInterrupt

    # Before the rename: nothing at the output, no partial file.
    monkeypatch.setattr(Writer, "write", interrupted_write)
    assert generate_particles(output) == 130
    assert one_line_error(capsys).endswith(f"interrupted; {output} was not written")
    assert not output.exists() and leftovers(tmp_path) == []

    # With --force over an earlier file: that file is as it was.
    monkeypatch.setattr(Writer, "write", real_write)
    assert generate_particles(output, "--seed", "1") == 0
    earlier = output.read_bytes()
    capsys.readouterr()
    monkeypatch.setattr(Writer, "write", interrupted_write)
    assert generate_particles(output, "--force") == 130
    assert "was not replaced: the earlier file is as it was" in one_line_error(capsys)
    assert output.read_bytes() == earlier and leftovers(tmp_path) == []

    # After the rename (the audit's case: "was not written" for a file that was): it is whole.
    monkeypatch.setattr(Writer, "write", real_write)

    def interrupted_summary(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(generate_command, "container_summary", interrupted_summary)
    assert generate_particles(output, "--force", "--seed", "3") == 130
    assert one_line_error(capsys).endswith(f"interrupted; {output} had been written in full")
    assert headrace.open(output).attributes["seed"] == [3] and leftovers(tmp_path) == []


# --- the chunk size: as asked, or a usage error stating the range -----------------------------------


def test_a_chunk_size_below_a_page_is_a_usage_error_stating_the_range(tmp_path, capsys):
    output = tmp_path / "v.hrc"
    assert main(["generate", "volume", str(output), "--dims", "8", "8", "8", "--frames", "1", "--chunk-size", "1"]) == 2
    err = one_line_error(capsys)
    assert "--chunk-size" in err and "4 KiB to 256 MiB" in err and not output.exists()

    assert main(["generate", "volume", str(output), "--dims", "16", "16", "16", "--frames", "1",
                 "--chunk-size", "4K"]) == 0
    assert chunk_sizes(output) == [4096] * 4
    assert output.stat().st_size < 8 * 4096  # superblock, 4 chunks, index: not a page per element


def test_chunks_hold_the_size_asked_for_whatever_the_slices_a_generator_writes(tmp_path, monkeypatch):
    from headrace.generate import particles

    monkeypatch.setattr(particles, "SLICE_PARTICLES", 1000)  # 32,000-byte slices
    output = tmp_path / "p.hrc"
    assert main(["generate", "particles", str(output), "--particles", "5000", "--frames", "2",
                 "--chunk-size", "64K"]) == 0
    # 2048 particles a chunk: 2 whole chunks and the rest, per frame (before: a chunk per 32,000-byte slice)
    assert chunk_sizes(output) == [64 * KiB, 64 * KiB, 5000 * 32 - 128 * KiB] * 2
    np.testing.assert_array_equal(headrace.open(output).read(1, "particles"),
                                  np.concatenate(list(particles.particle_slices(5000, 0))))


def test_the_writer_cuts_chunks_from_the_start_of_each_field_and_copies_what_it_holds(tmp_path):
    path = tmp_path / "w.hrc"
    values = np.arange(4000, dtype=np.float32).reshape(-1, 2)  # 8 bytes an element
    with headrace.Writer(path, [FieldSpec("a", "float32", 2), FieldSpec("b", "int32", 1)], chunk_size_bytes=4096) as w:
        frame = w.add_frame(time=0.0)
        piece = np.empty((0, 2), np.float32)
        for start, stop in ((0, 100), (100, 900), (900, 2000)):
            piece = values[start:stop].copy()
            w.write(frame, "a", piece)
            piece[:] = -1  # the caller reuses its array: what the writer held must not change
        w.write(frame, "b", np.arange(10, dtype=np.int32))
    ds = headrace.open(path)
    assert chunk_sizes(path) == [4096] * 3 + [2000 * 8 - 3 * 4096, 40]
    np.testing.assert_array_equal(ds.read(0, "a"), values)
    np.testing.assert_array_equal(ds.read(0, "b").reshape(-1), np.arange(10))


def test_a_flow_block_larger_than_the_chunk_size_is_a_usage_error(tmp_path, capsys):
    output = tmp_path / "f.hrc"
    assert main(["generate", "flow", str(output), "--dims", "32", "32", "32", "--block", "16", "16", "16",
                 "--chunk-size", "4K"]) == 2
    err = one_line_error(capsys)
    assert "--block 16 16 16" in err and "--chunk-size" in err and not output.exists()


def test_a_gdeflate_flow_takes_gdeflate_chunks_by_default(tmp_path):
    output = tmp_path / "f.hrc"  # before: 4 MiB chunks, refused by the gdeflate encoder
    assert main(["generate", "flow", str(output), "--dims", "32", "32", "32", "--block", "8", "8", "8",
                 "--codec", "gdeflate"]) == 0
    assert max(chunk_sizes(output)) <= 64 * KiB


@pytest.mark.parametrize("extra, says", [
    (["--codec-level", "3"], "--codec-level 3 needs --codec"),
    (["--codec", "lz4", "--codec-level", "13"], "--codec lz4 takes levels 1 to 12"),
    (["--codec", "gdeflate", "--codec-level", "13"], "--codec gdeflate takes levels 1 to 12"),
    (["--codec", "zstd", "--codec-level", "23"], "--codec-level"),
    (["--codec", "zstd", "--chunk-size", "32M"], "--codec zstd, which takes at most 16 MiB"),
    (["--codec", "gdeflate", "--chunk-size", "128K"], "--codec gdeflate, which takes at most 64 KiB"),
])
def test_codec_options_are_checked_against_the_codec(tmp_path, capsys, extra, says):
    output = tmp_path / "p.hrc"
    assert generate_particles(output, *extra) == 2
    assert says in one_line_error(capsys) and not output.exists()


def test_the_top_codec_level_is_taken(tmp_path):
    assert generate_particles(tmp_path / "p.hrc", "--codec", "zstd", "--codec-level", "22") == 0


# --- sizes and counts: bounded before anything is written --------------------------------------------


@pytest.mark.parametrize("extra, says", [
    (["--particles", "99999999999999"], "--particles"),
    (["--particles", "34359738368", "--frames", "2"], "at most 1 TiB"),
    (["--particles", "1000", "--frames", "2", "--seed", "-1"], "--seed"),
    (["--particles", "1000", "--frames", "2", "--seed", str(1 << 32)], "--seed"),
])
def test_huge_or_negative_counts_are_usage_errors(tmp_path, capsys, extra, says):
    output = tmp_path / "p.hrc"
    assert main(["generate", "particles", str(output), *extra]) == 2
    assert says in one_line_error(capsys) and not any(tmp_path.glob("p.hrc*"))


def test_a_data_set_larger_than_the_free_space_is_refused_before_writing(tmp_path, capsys, monkeypatch):
    from types import SimpleNamespace

    import headrace.cli.generate as generate_command

    monkeypatch.setattr(generate_command.shutil, "disk_usage", lambda path: SimpleNamespace(total=1 << 30, free=1000))
    output = tmp_path / "p.hrc"
    assert generate_particles(output) == 2
    assert "bytes free" in one_line_error(capsys) and not any(tmp_path.glob("p.hrc*"))
    assert generate_particles(output, "--codec", "lz4") == 0  # compressed, the size is not known ahead


@pytest.mark.parametrize("extra, says", [
    (["--field", "a/b"], "--field"),
    (["--hilbert-bits", "4"], "--hilbert-bits: only with --layout"),
    (["--frames", "0"], "--frames"),
])
def test_convert_options_are_checked(tmp_path, capsys, extra, says):
    np.save(tmp_path / "rho.npy", np.zeros((4, 4), np.float32))
    output = tmp_path / "out.hrc"
    assert main(["convert", str(tmp_path / "rho.npy"), str(output), *extra]) == 2
    assert says in one_line_error(capsys) and not output.exists()


def test_layout_options_are_checked(tmp_path, capsys):
    flow = tmp_path / "f.hrc"
    assert main(["generate", "flow", str(flow), "--dims", "16", "16", "16", "--block", "8", "8", "8"]) == 0
    capsys.readouterr()
    output = tmp_path / "h.hrc"
    for extra, says in ((["--layout", "hilbert", "--chunk-pages", "4"], "multiple of 3"),
                        (["--layout", "hilbert", "--hilbert-bits", "21"], "--hilbert-bits"),
                        (["--layout", "hilbert", "--codec", "lz4"], "--codec: not with --layout hilbert"),
                        (["--layout", "hilbert", "--block", "4", "4", "4"], "--block: not with --layout hilbert")):
        assert main(["convert", str(flow), str(output), *extra]) == 2
        assert says in one_line_error(capsys)
    assert main(["convert", str(flow), str(flow), "--layout", "hilbert", "--hilbert-bits", "3", "--force"]) == 2
    assert "would overwrite an input" in one_line_error(capsys)
    assert main(["convert", str(flow), str(output), "--layout", "hilbert", "--hilbert-bits", "3", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["hilbert_bits"] == 3
    assert not list(tmp_path.glob("*.partial"))


# --- probe ---------------------------------------------------------------------------------------------


def test_probe_refuses_a_missing_path_that_does_not_name_a_new_file(tmp_path, capsys):
    mnt = tmp_path / "mnt"  # /mnt/nvme with that drive not mounted: nothing may be written in /mnt
    mnt.mkdir()
    for path, says in ((mnt / "nvme", "does not exist"), (f"{mnt}/nvme/", "does not exist"),
                       (mnt / "gone" / "probe.bin", "not an existing folder")):
        assert main(["probe", str(path), *TINY_PROBE]) == 2
        assert says in one_line_error(capsys)
    assert not any(mnt.iterdir())


def test_probe_writes_a_new_file_named_with_an_ending(tmp_path, capsys):
    path = tmp_path / "probe.bin"
    assert main(["probe", str(path), *TINY_PROBE, "--patterns", "sequential", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["created"] and path.stat().st_size == 8 * MiB


@pytest.mark.parametrize("extra, says", [
    (["--csv", "{folder}"], "is a folder"),
    (["--csv", "{tmp}/gone/x.csv"], "not an existing folder"),
    (["--png", "{tmp}/x.xyz"], ".png or .ps"),
    (["--block-sizes", "4K,4K"], "--block-sizes lists a value twice"),
    (["--block-sizes", "1M", "--threads", "16"], "a larger --size"),
    (["--seconds", "0"], "--seconds"),
    (["--patterns", "sequential,bogus"], "--patterns"),
])
def test_probe_options_are_checked_before_the_test_file_is_written(tmp_path, capsys, extra, says):
    device, folder = tmp_path / "device", tmp_path / "out"
    device.mkdir()
    folder.mkdir()
    words = [word.format(folder=folder, tmp=tmp_path) for word in extra]
    assert main(["probe", str(device), *TINY_PROBE, *words]) == 2
    assert says in one_line_error(capsys)
    assert not any(device.iterdir()) and not any(folder.iterdir()) and leftovers(tmp_path) == []


def test_probe_takes_seconds_past_the_default_cap(tmp_path, monkeypatch):
    from headrace import probe as probe_api

    asked = {}

    def fake_run(path, **options):
        asked.update(options)
        return {"points": [], "ceiling_index": None}

    monkeypatch.setattr(probe_api._ext, "probe_run", fake_run)
    probe_api.probe(tmp_path, file_size_bytes=64 * KiB, seconds_per_point=5.0)
    assert asked["seconds_per_point"] == 5.0 and asked["max_seconds_per_point"] == 5.0


def test_a_failed_csv_leaves_no_partial_file(tmp_path, monkeypatch):
    from headrace import probe as probe_api

    result = probe_api.probe(tmp_path, file_size_bytes=8 * MiB, block_sizes_bytes=[64 * KiB], queue_depths=[1],
                             thread_counts=[1], patterns=["sequential"], bytes_per_point=64 * KiB)

    def broken_row(self, row):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr("csv.DictWriter.writerow", broken_row)
    with pytest.raises(OSError):
        result.to_csv(tmp_path / "p.csv")
    assert not (tmp_path / "p.csv").exists() and leftovers(tmp_path) == []


# --- read, info, plot, inspect, verify ------------------------------------------------------------------


def test_read_cache_states_say_what_was_done(particle_file, capsys, monkeypatch):
    from headrace import page_cache

    path, _ = particle_file
    assert main(["read", str(path), "--backend", "posix"]) == 0
    assert "cold: this file evicted from the page cache (fadvise" in capsys.readouterr().out

    dropped = []
    monkeypatch.setattr(page_cache, "drop_all_page_caches", lambda paths=(): dropped.append(list(paths)) or "drop_caches")
    assert main(["read", str(path), "--backend", "posix", "--cache", "drop-all", "--repeats", "2"]) == 0
    assert "drop-all: the whole machine's page cache dropped" in capsys.readouterr().out
    assert dropped == [[str(path)]] * 2
    assert main(["read", str(path), "--backend", "posix", "--cache", "drop-all", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["cache"] == "drop-all"


@pytest.mark.parametrize("extra, says", [
    (["--window-bytes", "64M"], None),
    (["--window-bytes", "0"], "--window-bytes"),
    (["--repeats", "101"], "--repeats"),
    (["--cache", "bogus"], "--cache"),
])
def test_read_options(particle_file, capsys, extra, says):
    path, _ = particle_file
    status = main(["read", str(path), "--backend", "posix", *extra])
    if says is None:
        assert status == 0
    else:
        assert status == 2 and says in one_line_error(capsys)


def test_read_budget_stops_starting_repeats_and_says_how_many_were_made(particle_file, capsys):
    path, _ = particle_file
    assert main(["read", str(path), "--backend", "posix", "--cache", "hot", "--repeats", "5",
                 "--budget", "0.000001"]) == 0
    said = capsys.readouterr().out
    assert "budget of 1e-06 s spent: 1 of 5 repeats made" in said and "best of 1 " in said


def test_info_path_must_be_a_folder(particle_file, tmp_path, capsys):
    path, _ = particle_file
    assert main(["info", "--path", str(path)]) == 2
    assert "is not a folder" in one_line_error(capsys)
    assert main(["info", "--path", str(tmp_path / "missing")]) == 2
    assert "does not exist" in one_line_error(capsys)


def test_plot_errors_are_one_line_and_leave_nothing(particle_file, tmp_path, capsys):
    path, _ = particle_file
    results = tmp_path / "r.csv"
    results.write_text("study,implementation,threads,scaling,seconds_min\nscaling,hilbert-user,1,strong,0.5\n"
                       "scaling,hilbert-user,2,strong,0.3\n")
    folder = tmp_path / "fig.png"
    folder.mkdir()
    for argv, status, says in (([str(tmp_path / "missing.csv"), "--out", str(tmp_path / "a.png")], 2, "no such file"),
                               ([str(path), "--out", str(tmp_path / "a.png")], 1, "expected a CSV text file"),
                               ([str(results), "--out", str(folder)], 2, "is a folder"),
                               ([str(results), "--out", str(tmp_path / "a.xyz")], 2, ".png")):
        assert main(["plot", *argv]) == status
        assert says in one_line_error(capsys)
    assert leftovers(tmp_path) == [] and not (tmp_path / "a.png").exists() and not any(folder.iterdir())
    assert main(["plot", str(results), "--out", str(tmp_path / "a.svg")]) == 0
    assert (tmp_path / "a.svg").read_text().lstrip().startswith("<?xml") and leftovers(tmp_path) == []


def test_verify_takes_the_host_backends_only(particle_file, capsys):
    path, _ = particle_file
    assert main(["verify", str(path), "--backend", "cufile"]) == 2
    assert "--backend" in one_line_error(capsys)


def test_inspect_json_into_a_closed_pipe_is_quiet(tmp_path):
    path = tmp_path / "many.hrc"  # 3125 chunks: megabytes of JSON, more than a pipe holds
    assert main(["generate", "particles", str(path), "--particles", "400000", "--frames", "1",
                 "--chunk-size", "4K"]) == 0
    for extra in (["--json"], ["--chunks"]):
        reader = subprocess.Popen([sys.executable, "-m", "headrace", "inspect", str(path), *extra],
                                  stdout=subprocess.PIPE, stderr=subprocess.PIPE, env={**os.environ, "COLUMNS": "120"})
        reader.stdout.read(100)
        reader.stdout.close()  # as `| head -c 100` does
        err = reader.stderr.read().decode()
        status = reader.wait(timeout=60)
        assert err == "", err
        if extra == ["--json"]:
            assert status == 0
