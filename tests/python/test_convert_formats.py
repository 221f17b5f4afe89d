"""The format registry (``headrace.convert.formats.InputFormat``) is the one list of input formats: the
CLI's ``--format`` choices, guessing by suffix, folder and first bytes, the options each reader takes and
docs/converters.md all agree with it."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from headrace import errors
from headrace.cli.main import main
from headrace.convert import open_source
from headrace.convert.formats import InputFormat, guess_format

ROOT = Path(__file__).resolve().parents[2]
NAMES = [kind.value for kind in InputFormat]


def test_the_cli_offers_the_registry_formats_in_order(capsys):
    assert main(["convert", "in.raw", "out.hrc", "--format", "nope"]) == 2
    error = capsys.readouterr().err
    assert "invalid choice: 'nope' (choose from " in error
    offered = re.findall(r"'([\w-]+)'", error.split("choose from", 1)[1].split(")", 1)[0])
    assert offered == NAMES


def test_the_docs_list_the_registry_formats():
    text = (ROOT / "docs" / "converters.md").read_text()
    usage = re.search(r"--format ([\w|-]+)\]", text)
    assert usage is not None and usage.group(1).split("|") == NAMES
    headings = " ".join(re.findall(r"^## (.+)$", text, flags=re.M))
    assert [name for name in NAMES if not re.search(rf"\b{re.escape(name)}\b", headings)] == []


def test_the_options_are_the_readers_keywords():
    options = {kind.value: kind.converter.options for kind in InputFormat}
    assert options == {
        "raw-particles": ("particles_per_frame", "frames"), "raw": ("dims", "dtype", "components", "field"),
        "mmpld": (), "bov": (), "npy": ("field", "time_axis", "components"), "vti": (), "vtp": (), "pvd": (),
        "hdf5": ("dataset", "time_axis", "components"), "h5part": (), "netcdf": ("variables", "time_dim", "time_axis"),
        "zarr": ("variables", "time_axis", "components"), "amrex": (),
    }


def test_a_suffix_belongs_to_one_format():
    suffixes = [suffix for kind in InputFormat for suffix in kind.converter.suffixes]
    assert len(suffixes) == len(set(suffixes))
    assert all(suffix == suffix.lower() and suffix.startswith(".") for suffix in suffixes)


@pytest.mark.parametrize("kind", [kind for kind in InputFormat if kind.converter.suffixes], ids=lambda kind: kind.value)
def test_a_file_is_known_by_its_suffix(tmp_path, kind):
    for suffix in kind.converter.suffixes:
        path = tmp_path / f"data{suffix.upper()}"
        path.write_bytes(b"")
        assert guess_format([path]) is kind


@pytest.mark.parametrize(("head", "kind"), [
    (b"MMPLD\0\x67\x00", InputFormat.MMPLD),
    (b"\x93NUMPY\x01\x00", InputFormat.NPY),
    (b"PK\x03\x04\x14\x00", InputFormat.NPY),
    (b"# a header\nDATA_FILE: d.raw\n", InputFormat.BOV),
    (bytes(512) + b"\x89HDF\r\n\x1a\n\0", InputFormat.HDF5),
    (b"CDF\x02\0\0\0\0", InputFormat.NETCDF),
])
def test_a_file_without_a_known_suffix_is_known_by_its_first_bytes(tmp_path, head, kind):
    path = tmp_path / "data.bin"
    path.write_bytes(head)
    assert guess_format([path]) is kind


def test_a_folder_is_known_by_its_content(tmp_path):
    (tmp_path / "store").mkdir()
    (tmp_path / "store" / "zarr.json").write_text("{}")
    (tmp_path / "plt0").mkdir()
    (tmp_path / "plt0" / "Header").write_text("HyperCLaw-V1.1\n")
    assert guess_format([tmp_path / "store"]) is InputFormat.ZARR
    assert guess_format([tmp_path / "plt0"]) is InputFormat.AMREX


def test_a_format_is_named_by_its_cli_name_or_member():
    assert InputFormat.named("h5part") is InputFormat.named(InputFormat.H5PART) is InputFormat.H5PART
    with pytest.raises(errors.UsageError, match=r"unknown input format 'nope' \(one of raw-particles, raw, mmpld"):
        InputFormat.named("nope")


@pytest.mark.parametrize("kind", [kind for kind in InputFormat if kind.converter.one_input], ids=lambda kind: kind.value)
def test_a_one_input_format_refuses_several(tmp_path, kind):
    paths = [tmp_path / "a", tmp_path / "b"]
    for path in paths:
        path.write_bytes(b"")
    with pytest.raises(errors.UsageError, match=rf"format {kind.value} converts one {kind.converter.one_input} at a "
                                                 r"time, got 2"):
        open_source(paths, kind)
