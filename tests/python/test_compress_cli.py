"""``headrace compress`` (issue 19): a container re-written through codec chains, named per field or chosen
by ``--auto`` from chunks spread over the file; ``inspect``'s chain table and choice; chains and ``auto``
in ``convert``/``generate --codec``; the engine's methods named after a codec on a file of chains."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import numpy as np
import pytest

import headrace
from headrace import FieldSpec, codecs
from headrace.cli import compress
from headrace.cli.main import main
from headrace.errors import UnavailableError

DIMS = (32, 16, 8)  # grid points along x, y, z: delta's rows are 32 points
TIMES = (0.0, 0.5, 1.25)
FLAG_COUNTS = (100, 0, 5000)  # a field off the grid, empty in frame 1
CHUNK = 4096


def rho(t: int) -> np.ndarray:
    z, y, x = np.meshgrid(*(np.arange(n) for n in DIMS[::-1]), indexing="ij")
    return (np.sin(x / 5 + t) * np.cos(y / 7) + z / 8).astype(np.float32).reshape(-1)


def velocity(t: int) -> np.ndarray:
    base = rho(t)
    return np.stack([base, 2 * base, base - t], axis=1)


def flag(t: int) -> np.ndarray:
    return (np.arange(FLAG_COUNTS[t]) // 7 % 5).astype(np.uint8)


@pytest.fixture
def source(tmp_path) -> Path:
    """3 frames of a smooth grid field, a 3-component one and a byte field off the grid (empty in frame
    1), 4 KiB chunks, uncompressed, with attributes of each kind and a frame without a box."""
    path = tmp_path / "in.hrc"
    fields = [FieldSpec("rho", "float32"), FieldSpec("vel", "float32", 3), FieldSpec("flag", "uint8")]
    with headrace.Writer(path, fields, chunk_size_bytes=CHUNK) as writer:
        writer.set_attribute("grid_dims", list(DIMS))
        writer.set_attribute("layout", "linear")
        writer.set_attribute("steps", [1, 2, 3])
        writer.set_attribute("spacing", [0.5, 0.25, 0.125])
        for t, time in enumerate(TIMES):
            frame = writer.add_frame(time=time, bbox=None if t == 1 else ((0, 0, 0), (1, 2, 3 + t)))
            writer.write(frame, "rho", rho(t))
            writer.write(frame, "vel", velocity(t))
            writer.write(frame, "flag", flag(t))
    return path


def run_json(capsys, *argv: str) -> dict:
    assert main([*argv, "--json"]) == 0
    return json.loads(capsys.readouterr().out)


def one_line_error(capsys) -> str:
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and err.startswith("headrace ") and "Traceback" not in err, err
    return err


def field_codecs(path: Path) -> dict[str, set[str]]:
    """Per field, the codecs (chain texts) its chunks are stored with."""
    ds = headrace.open(path)
    table = ds.container.chunk_table()
    result: dict[str, set[str]] = {f.name: set() for f in ds.fields}
    for field, codec in zip(table["field"], table["codec"]):
        result[ds.fields[int(field)].name].add(codec)
    return result


def assert_same_data(a: Path, b: Path) -> None:
    """Every frame's time, box and element counts, every field's values bit for bit, every attribute
    (the choice aside)."""
    first, second = headrace.open(a), headrace.open(b)
    assert second.fields == first.fields
    assert [f.time for f in second.frames] == [f.time for f in first.frames]
    np.testing.assert_array_equal([f.bbox for f in second.frames], [f.bbox for f in first.frames])
    for frame in range(len(first.frames)):
        for f in first.fields:
            np.testing.assert_array_equal(second.read(frame, f.name, stored_order=True),
                                          first.read(frame, f.name, stored_order=True))
    assert {k: v for k, v in second.attributes.items() if k != "codec_choice"} == \
        {k: v for k, v in first.attributes.items() if k != "codec_choice"}


@pytest.fixture
def no_probe(monkeypatch):
    """The disk's rate must come from --disk-rate (or not be needed): a probe fails the test."""
    def refuse(directory):
        raise AssertionError(f"probed {directory}")

    monkeypatch.setattr(codecs, "disk_rate_of", refuse)


# --- chains named by --codec ---------------------------------------------------------------------------


@pytest.mark.parametrize("chain, rho_chain", [
    ("shuffle|zstd", "shuffle(width=4)|zstd(level=3,block=65536)"),
    ("split|bitshuffle|lz4", "split(components=1,width=4)|bitshuffle(width=4)|lz4(level=1,block=65536)"),
    ("delta|shuffle|deflate", "delta(width=4,row=32)|shuffle(width=4)|deflate(level=6,block=65536)"),
    ("xor|shuffle|lz4(level=9)", "xor(width=4,row=32)|shuffle(width=4)|lz4(level=9,block=65536)"),
    ("snappy", "snappy(block=65536)"),
    ("zstd", "zstd"),
    ("none", "none"),
])
def test_every_field_through_one_chain_reads_back_exactly(tmp_path, capsys, source, chain, rho_chain):
    output = tmp_path / "out.hrc"
    summary = run_json(capsys, "compress", str(source), str(output), "--codec", chain)
    assert_same_data(source, output)
    stored = field_codecs(output)
    assert stored["rho"] == {rho_chain}
    assert {f["name"]: f["chain"] for f in summary["fields"]}["rho"] == rho_chain
    assert all(f["source"] == "given" and f["error_bound"] is None for f in summary["fields"])
    # each field's chain is completed from its own dtype and components
    assert stored["vel"] == {codecs.parse(chain, "float32", 3, 32).spec} or chain in ("zstd", "none")
    assert headrace.open(output).container.version == ((1, 3) if chain not in ("zstd", "none") else (1, 2))
    assert summary["raw_bytes"] == headrace.open(source).raw_bytes
    assert summary["stored_bytes_before"] == headrace.open(source).stored_bytes
    assert summary["stored_bytes_after"] == headrace.open(output).stored_bytes
    assert summary["chunk_size_bytes"] == CHUNK  # the input's chunks, kept
    assert [f["name"] for f in summary["fields"]] == ["rho", "vel", "flag"]


def test_per_field_chains_and_the_chain_for_the_rest(tmp_path, capsys, source):
    output = tmp_path / "out.hrc"
    summary = run_json(capsys, "compress", str(source), str(output), "--codec", "rho=delta|shuffle|zstd",
                       "--codec", "vel=split|bitshuffle|lz4", "--codec", "snappy")
    assert_same_data(source, output)
    assert field_codecs(output) == {"rho": {"delta(width=4,row=32)|shuffle(width=4)|zstd(level=3,block=65536)"},
                                    "vel": {"split(components=3,width=4)|bitshuffle(width=4)|lz4(level=1,block=65536)"},
                                    "flag": {"snappy(block=65536)"}}
    assert [f["source"] for f in summary["fields"]] == ["given", "given", "given"]
    assert all(f["stored_fraction"] < 1 for f in summary["fields"])

    output2 = tmp_path / "out2.hrc"  # without a chain alone, the fields not named stay uncompressed
    summary = run_json(capsys, "compress", str(source), str(output2), "--codec", "flag=lz4")
    assert field_codecs(output2) == {"rho": {"none"}, "vel": {"none"}, "flag": {"lz4"}}
    assert [f["source"] for f in summary["fields"]] == ["default", "default", "given"]
    assert_same_data(source, output2)


def test_the_text_summary_names_each_fields_chain_and_the_sizes(tmp_path, capsys, source):
    assert main(["compress", str(source), str(tmp_path / "out.hrc"), "--codec", "rho=shuffle|zstd"]) == 0
    out = capsys.readouterr().out
    assert "rho: shuffle(width=4)|zstd(level=3,block=65536) (named by --codec)" in out
    assert "vel: none (no --codec)" in out
    assert "stored fraction 1.000 ->" in out and "raw " in out


def test_a_field_is_read_in_pieces_of_whole_chunks(tmp_path, capsys, source, monkeypatch):
    """Memory stays bounded: a frame's field is read a few whole input chunks at a time."""
    monkeypatch.setattr(compress, "PIECE_BYTES", 2 * CHUNK)
    reads: list[tuple[str, int, int]] = []
    original = headrace.Dataset.read

    def spy(self, frame, field=None, **options):
        region = options.get("region")
        if isinstance(region, slice):
            reads.append((field, region.start, region.stop))
        return original(self, frame, field, **options)

    monkeypatch.setattr(headrace.Dataset, "read", spy)
    output = tmp_path / "out.hrc"
    assert main(["compress", str(source), str(output), "--codec", "shuffle|zstd", "--json"]) == 0
    monkeypatch.setattr(headrace.Dataset, "read", original)
    assert_same_data(source, output)
    rho_reads = [(a, b) for f, a, b in reads if f == "rho"]
    assert rho_reads == [(0, 2048), (2048, 4096)] * 3  # two 4 KiB chunks a piece
    assert max((b - a) * 12 for f, a, b in reads if f == "vel") <= 2 * CHUNK


# --- --auto ---------------------------------------------------------------------------------------------


def test_auto_chooses_from_chunks_spread_over_the_file_and_records_why(tmp_path, capsys, source, no_probe):
    output = tmp_path / "out.hrc"
    summary = run_json(capsys, "compress", str(source), str(output), "--auto", "--disk-rate", "1M", "--device", "cpu")
    assert_same_data(source, output)
    fields = {f["name"]: f for f in summary["fields"]}
    assert all(f["source"] == "auto" for f in fields.values())
    choice = fields["rho"]["choice"]
    assert choice["objective"] == "delivery" and choice["disk_bytes_per_second"] == float(1 << 20)
    assert choice["disk_rate_source"] == "given" and choice["sample_chunks"] == 4
    trials = {t["spec"]: t for t in choice["trials"]}
    chosen = trials[choice["spec"]]
    plain_zstd = next(t for spec, t in trials.items() if spec.startswith("zstd("))
    assert chosen["stored_fraction"] < plain_zstd["stored_fraction"]  # smooth: a filter helps
    assert not any("lossy" in spec for spec in trials)  # never a candidate
    assert fields["rho"]["reasons"].startswith(f"rho: {choice['spec']} (stored ")
    # what the file holds: the chosen chain, and the choice as the writer would store it
    stored = json.loads(headrace.open(output).attributes["codec_choice"])
    assert set(stored) == {"rho", "vel", "flag"} and stored["rho"] == choice
    (recorded,) = field_codecs(output)["rho"]
    assert recorded == fields["rho"]["chain"] and codecs.parse(recorded, "float32", 1, 32).spec == choice["spec"]
    # the whole field stores in less than plain zstd stores it
    plain = tmp_path / "zstd.hrc"
    assert run_json(capsys, "compress", str(source), str(plain), "--codec", "zstd")["fields"][0]["stored_bytes_after"] > \
        fields["rho"]["stored_bytes_after"]


def test_objective_smallest_takes_the_smallest_trial_and_needs_no_disk_rate(tmp_path, capsys, source, no_probe):
    output = tmp_path / "out.hrc"
    summary = run_json(capsys, "compress", str(source), str(output), "--auto", "--objective", "smallest",
                       "--device", "cpu", "--sample-chunks", "2", "--codec", "flag=lz4")
    assert_same_data(source, output)
    fields = {f["name"]: f for f in summary["fields"]}
    assert fields["flag"]["source"] == "given" and fields["flag"]["choice"] is None
    for name in ("rho", "vel"):
        choice = fields[name]["choice"]
        smallest = min(choice["trials"], key=lambda t: (t["stored_bytes"], -t["decode_gb_per_s"]))
        assert choice["spec"] == smallest["spec"] and choice["sample_chunks"] == 2
        assert choice["disk_bytes_per_second"] is None
    assert set(json.loads(headrace.open(output).attributes["codec_choice"])) == {"rho", "vel"}


def test_sample_chunks_are_spread_from_the_first_frame_to_the_last(source):
    ds = headrace.open(source)
    sample = compress.sample_chunks(ds, "rho", CHUNK, 4)  # 12 chunks of 1024 values: the 0th, 3rd, 7th, 11th
    expected = [rho(0)[0:1024], rho(0)[3072:4096], rho(1)[3072:4096], rho(2)[3072:4096]]
    assert len(sample) == 4
    for got, want in zip(sample, expected):
        np.testing.assert_array_equal(got, want)
    # the byte field: 1 chunk in frame 0, none in frame 1, 2 in frame 2; each sampled once
    sample = compress.sample_chunks(ds, "flag", CHUNK, 4)
    for got, want in zip(sample, [flag(0), flag(2)[:4096], flag(2)[4096:]]):
        np.testing.assert_array_equal(got, want)
    assert len(sample) == 3
    assert len(compress.sample_chunks(ds, "rho", CHUNK, 1)) == 1


# --- lossy chains, only where named --------------------------------------------------------------------


def _lossy_available() -> bool:
    try:
        codecs.try_chain("split|bitcomp_lossy(error=0.001)", [np.zeros(1024, np.float32)], dtype="float32")
    except UnavailableError:
        return False
    return True


def test_a_lossy_chain_is_written_where_named_and_its_bound_is_shown(tmp_path, capsys, source):
    if not _lossy_available():
        pytest.skip("bitcomp_lossy needs nvCOMP's CPU library")
    output = tmp_path / "out.hrc"
    assert main(["compress", str(source), str(output), "--codec", "rho=split|bitcomp_lossy(error=0.001)",
                 "--codec", "shuffle|zstd"]) == 0
    assert "lossy: error bound 0.001" in capsys.readouterr().out
    ds = headrace.open(output)
    for t in range(3):
        assert np.abs(ds.read(t, "rho", stored_order=True).reshape(-1) - rho(t)).max() <= 0.001 + 1e-6
        np.testing.assert_array_equal(ds.read(t, "vel", stored_order=True), velocity(t))  # the others exact
    chains = run_json(capsys, "inspect", str(output))["chains"]
    lossy = [c for c in chains if c["error_bound"] is not None]
    assert len(lossy) == 1 and lossy[0]["error_bound"] == 0.001 and lossy[0]["fields"] == ["rho"]
    assert lossy[0]["chunks"] == 12
    assert main(["inspect", str(output)]) == 0
    assert "lossy, error bound 0.001" in capsys.readouterr().out


def test_a_lossy_chain_on_a_field_of_integers_is_refused(tmp_path, capsys, source):
    output = tmp_path / "out.hrc"
    assert main(["compress", str(source), str(output), "--codec", "flag=bitcomp_lossy(error=0.5)"]) == 2
    err = one_line_error(capsys)
    assert "bitcomp_lossy quantizes floats; the field holds uint8" in err and not output.exists()


# --- refusals: one line, nothing written ---------------------------------------------------------------


@pytest.mark.parametrize("chain, says", [
    ("bogus|zstd", "unknown stage 'bogus' (headrace knows split, shuffle"),
    ("rho=zstd|shuffle", "filter shuffle(width=1) comes after the codec zstd"),
    ("zstd(level=99)", "stage zstd: level=99 is out of range"),
    ("auto", "--auto chooses"),
])
def test_a_bad_chain_is_a_one_line_usage_error_naming_the_stage(tmp_path, capsys, source, chain, says):
    output = tmp_path / "out.hrc"
    assert main(["compress", str(source), str(output), "--codec", chain]) == 2
    err = one_line_error(capsys)
    assert "--codec" in err and says in err, err
    assert not output.exists() and not list(tmp_path.glob("*.partial"))


def test_a_chain_the_field_cannot_take_fails_naming_the_field_and_leaves_nothing(tmp_path, capsys, source):
    output = tmp_path / "out.hrc"
    assert main(["compress", str(source), str(output), "--codec", "rho=split(components=3)|zstd"]) == 2
    err = one_line_error(capsys)
    assert "field 'rho'" in err and "split(components=3,width=4)" in err and "whole elements" in err
    assert not output.exists() and not list(tmp_path.glob("*.partial"))


@pytest.mark.parametrize("extra, says", [
    (["--objective", "smallest"], "--objective: only with --auto"),
    (["--disk-rate", "2G", "--sample-chunks", "3"], "--disk-rate, --sample-chunks: only with --auto"),
    (["--allow-gpu-only"], "--allow-gpu-only: only with --auto"),
    (["--auto", "--codec", "zstd"], "--auto and --codec zstd"),
    (["--codec", "zstd", "--codec", "lz4"], "one chain for every field"),
    (["--codec", "rho=zstd", "--codec", "rho=lz4"], "one chain a field"),
    (["--codec", "nope=zstd"], "no field 'nope' (fields: rho, vel, flag)"),
    (["--codec", "shuffle|gdeflate(block=0)", "--chunk-size", "128K"], "whose codec gdeflate takes at most 64 KiB"),
])
def test_options_that_contradict_each_other_are_refused(tmp_path, capsys, source, extra, says):
    output = tmp_path / "out.hrc"
    assert main(["compress", str(source), str(output), *extra]) == 2
    assert says in one_line_error(capsys) and not output.exists()


def test_an_existing_output_needs_force_and_the_input_is_never_the_output(tmp_path, capsys, source):
    output = tmp_path / "out.hrc"
    output.write_bytes(b"keep me")
    assert main(["compress", str(source), str(output), "--codec", "zstd"]) == 2
    assert "exists: --force replaces it" in one_line_error(capsys) and output.read_bytes() == b"keep me"
    assert main(["compress", str(source), str(output), "--codec", "zstd", "--force"]) == 0
    assert_same_data(source, output)
    assert main(["compress", str(source), str(source), "--force"]) == 2
    assert "would overwrite the input" in one_line_error(capsys)


def test_an_interrupt_leaves_the_earlier_output_as_it_was(tmp_path, capsys, source, monkeypatch):
    output = tmp_path / "out.hrc"
    output.write_bytes(b"earlier")
    calls = []
    original = headrace.Dataset.read

    def interrupt(self, *args, **options):
        calls.append(1)
        if len(calls) == 4:
            raise KeyboardInterrupt
        return original(self, *args, **options)

    monkeypatch.setattr(headrace.Dataset, "read", interrupt)
    assert main(["compress", str(source), str(output), "--codec", "zstd", "--force"]) == 130
    assert "interrupted; " in capsys.readouterr().err and output.read_bytes() == b"earlier"
    calls.clear()
    fresh = tmp_path / "fresh.hrc"
    assert main(["compress", str(source), str(fresh), "--codec", "zstd"]) == 130
    assert "was not written" in capsys.readouterr().err
    assert not fresh.exists() and not list(tmp_path.glob("*.partial"))


# --- inspect: the chain table and the choice ------------------------------------------------------------


def test_inspect_lists_the_chain_table_with_its_use(tmp_path, capsys, source):
    output = tmp_path / "out.hrc"
    assert main(["compress", str(source), str(output), "--codec", "rho=delta|shuffle|zstd", "--codec",
                 "vel=split|bitshuffle|lz4", "--codec", "flag=zstd", "--json"]) == 0
    capsys.readouterr()
    info = run_json(capsys, "inspect", str(output))
    assert {"path", "version", "growing", "file_size", "index_offset", "stored_bytes", "raw_bytes", "fields", "frames",
            "attributes", "chunks", "chains"} == set(info)
    expected = []
    for text, bound in headrace.open(output).container.chains:
        mine = [c for c in info["chunks"] if c["codec"] == text]
        stored, raw = sum(c["stored_size"] for c in mine), sum(c["raw_size"] for c in mine)
        expected.append({"chain": text, "chunks": len(mine), "raw_bytes": raw, "stored_bytes": stored,
                         "stored_fraction": round(stored / raw, 4), "fields": sorted({c["field"] for c in mine}),
                         "error_bound": bound})
    assert info["chains"] == expected
    assert [(c["chain"], c["chunks"], c["fields"]) for c in info["chains"]] == [
        ("delta(width=4,row=32)|shuffle(width=4)|zstd(level=3,block=65536)", 12, ["rho"]),
        ("split(components=3,width=4)|bitshuffle(width=4)|lz4(level=1,block=65536)", 39, ["vel"])]  # zstd alone: a plain codec
    assert main(["inspect", str(output)]) == 0
    out = capsys.readouterr().out
    assert "chains" in out and "delta(width=4,row=32)|shuffle(width=4)|zstd(level=3,block=65536)" in out
    assert f"{info['chains'][0]['stored_fraction']:.3f}" in out
    # a file of plain codecs has no chain table
    assert run_json(capsys, "inspect", str(source))["chains"] == []


def test_inspect_shows_the_chain_chosen_per_field_and_what_it_measured(tmp_path, capsys, source, no_probe):
    output = tmp_path / "out.hrc"
    summary = run_json(capsys, "compress", str(source), str(output), "--auto", "--objective", "smallest",
                       "--device", "cpu")
    assert main(["inspect", str(output)]) == 0
    out = capsys.readouterr().out
    assert "codec choice" in out and "codec_choice=<the chains chosen, below>" in out
    for field in summary["fields"]:
        choice = field["choice"]
        best = next(t for t in choice["trials"] if t["spec"] == choice["spec"])
        assert choice["spec"] in out and f"{best['stored_fraction']:.3f}" in out
    info = run_json(capsys, "inspect", str(output))  # the JSON keeps the attribute as stored
    assert json.loads(info["attributes"]["codec_choice"])["rho"]["spec"] == summary["fields"][0]["choice"]["spec"]


def test_inspect_says_when_codec_choice_is_not_a_choice(tmp_path, capsys):
    path = tmp_path / "odd.hrc"
    with headrace.Writer(path, [FieldSpec("a", "float32")]) as writer:
        writer.set_attribute("codec_choice", "not json")
        writer.write(writer.add_frame(0.0), "a", np.zeros(10, np.float32))
    assert main(["inspect", str(path)]) == 0
    assert "attribute codec_choice is not a choice headrace wrote" in capsys.readouterr().out


# --- convert and generate take chains and auto ----------------------------------------------------------


def test_generate_writes_a_chain_and_reads_the_same_values(tmp_path, capsys):
    plain, chained = tmp_path / "p.hrc", tmp_path / "c.hrc"
    args = ["--particles", "3000", "--frames", "2", "--seed", "5"]
    assert main(["generate", "particles", str(plain), *args]) == 0
    assert main(["generate", "particles", str(chained), *args, "--codec", "split|shuffle|zstd(level=5)"]) == 0
    assert headrace.open(chained).codecs == ["split(components=8,width=4)|shuffle(width=4)|zstd(level=5,block=65536)"]
    for t in range(2):
        np.testing.assert_array_equal(headrace.open(chained).read(t), headrace.open(plain).read(t))
    volume = tmp_path / "v.hrc"
    assert main(["generate", "volume", str(volume), "--dims", "24", "8", "8", "--frames", "1", "--codec",
                 "delta|shuffle|lz4"]) == 0
    assert headrace.open(volume).codecs == ["delta(width=4,row=24)|shuffle(width=4)|lz4(level=1,block=65536)"]


@pytest.mark.parametrize("extra, says", [
    (["--codec", "bogus"], "unknown stage 'bogus' (headrace knows"),
    (["--codec", "shuffle|zstd", "--codec-level", "5"], "write the level into the chain's codec, e.g. zstd(level=5)"),
    (["--codec", "auto", "--codec-level", "5"], "goes with --codec lz4, zstd or gdeflate, not auto"),
    (["--codec", "shuffle|gdeflate(block=0)", "--chunk-size", "128K"], "--codec shuffle|gdeflate(block=0), whose codec gdeflate takes at "
                                                              "most 64 KiB"),
    (["--codec", "snappy", "--chunk-size", "32M"], "--codec snappy, which takes at most 16 MiB"),
    (["--codec", "auto", "--chunk-size", "32M"], "--codec auto, which takes at most 16 MiB"),
])
def test_generate_checks_a_chain_before_writing(tmp_path, capsys, extra, says):
    output = tmp_path / "p.hrc"
    assert main(["generate", "particles", str(output), "--particles", "100", "--frames", "1", *extra]) == 2
    assert says in one_line_error(capsys) and not output.exists()


def test_convert_auto_chooses_per_field_and_stores_the_choice(tmp_path, capsys, monkeypatch):
    monkeypatch.setattr(codecs, "disk_rate_of", lambda directory: (1e6, "a test's disk"))
    np.save(tmp_path / "rho.npy", rho(0).reshape(DIMS[::-1]))
    output = tmp_path / "out.hrc"
    summary = run_json(capsys, "convert", str(tmp_path / "rho.npy"), str(output), "--codec", "auto", "--chunk-size", "4K")
    choice = json.loads(summary["attributes"]["codec_choice"])["rho"]
    assert choice["disk_rate_source"] == "a test's disk" and choice["objective"] == "delivery"
    assert codecs.parse(headrace.open(output).codecs[0], "float32").spec == choice["spec"]
    np.testing.assert_array_equal(headrace.open(output).read(0).reshape(-1), rho(0))


# --- methods named after a codec, on a file of chains ---------------------------------------------------


def test_a_file_of_chains_streams_through_compressed_chain(tmp_path, particle_file):
    from headrace.workloads.particles import render_frame, render_streamed
    from headrace.cli._particles import particle_space

    path, _ = particle_file
    chained = tmp_path / "chained.hrc"
    assert main(["compress", str(path), str(chained), "--codec", "shuffle|zstd", "--json"]) == 0
    image, stats = render_streamed(chained, 0, method="compressed-chain", width=80, height=60, batch=4096)
    np.testing.assert_array_equal(image, render_frame(path, 0, width=80, height=60))
    table = headrace.open(chained).container.chunk_table()
    assert stats["stored_bytes"] == int(table["stored_size"][table["frame"] == 0].sum()) < 5000 * 32
    with pytest.raises(headrace.UsageError, match=r"holds shuffle\(width=4\)\|zstd\(level=3,block=65536\) \(method compressed-chain"):
        render_streamed(chained, 0, method="compressed-zstd")
    with pytest.raises(headrace.UsageError, match="reads chunks of codec chains, the file holds none"):
        render_streamed(path, 0, method="compressed-chain")
    args = argparse.Namespace(methods=None, batches=[4096], segments=[2], staging=[64 << 20])
    assert particle_space(args, "cpu", headrace.open(chained).codecs, str(chained)).methods == ("auto", "compressed-chain")
    zstd = tmp_path / "zstd.hrc"
    assert main(["compress", str(path), str(zstd), "--codec", "zstd", "--json"]) == 0
    assert particle_space(args, "cpu", headrace.open(zstd).codecs, str(zstd)).methods == ("auto", "compressed-zstd")
