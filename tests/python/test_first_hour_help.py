"""Help speaks the user's language (issue 35): every command's and subcommand's ``--help`` says first, in
a plain sentence, what the command does, and holds no reference a user cannot decode ("seed 000",
"algorithm 3", "figure 5", "issue 21", "section 4.2"); where a paper is behind a command, one "Where this
comes from" paragraph names it by its title. Guards: about 55 such references in the help texts."""

from __future__ import annotations

import argparse
import re

import pytest

from headrace.cli.main import build_parser, main

# What a user cannot decode: the project's own names for its sources and its tracker, and numbered parts
# of a paper the help does not name.
UNDECODABLE = re.compile(r"seeds? \d{3}|seed \d{3}'s|\bseed ``\d{3}|algorithms? \d|figures? \d|sections? \d|tables? \d|"
                         r"issues? \d|\bT_w\b|\bR_[pg]\b", re.IGNORECASE)
WHERE = "Where this comes from:"
PAPERS = ("Quantifying Performance Gains of DirectStorage for the Visualisation of Time-Dependent Particle Data Sets",
          "Multi-Threaded Streamline Tracing for Data-Intensive Architectures")


def parsers() -> list[tuple[str, argparse.ArgumentParser]]:
    """Every parser of the command line: headrace, each command and each kind of a command."""
    found = []

    def walk(name: str, parser: argparse.ArgumentParser) -> None:
        found.append((name, parser))
        for action in parser._actions:
            if isinstance(action, argparse._SubParsersAction):
                for sub, child in action.choices.items():
                    walk(f"{name} {sub}", child)

    walk("headrace", build_parser())
    return found


PARSERS = parsers()


def first_sentence(description: str) -> str:
    paragraph = " ".join(description.strip().split("\n\n")[0].split())
    return re.split(r"(?<=[.;:])\s", paragraph, maxsplit=1)[0]


def test_every_command_and_kind_is_covered():
    names = {name for name, _ in PARSERS}
    assert {"headrace play", "headrace bench particles", "headrace bench streamlines", "headrace bench scaling",
            "headrace generate amr", "headrace tune", "headrace render", "headrace trace"} <= names
    assert len(names) >= 25


@pytest.mark.parametrize("name, parser", PARSERS, ids=[name for name, _ in PARSERS])
def test_help_says_first_what_the_command_does_in_plain_words(name, parser):
    assert parser.description, f"{name}: no description"
    sentence = first_sentence(parser.description)
    assert re.match(r"[A-Z][a-z-]+ ", sentence), f"{name}: {sentence!r} does not start with a plain word"
    assert not UNDECODABLE.search(sentence) and "paper" not in sentence, sentence


@pytest.mark.parametrize("name, parser", PARSERS, ids=[name for name, _ in PARSERS])
def test_help_holds_no_reference_a_user_cannot_decode(name, parser, capsys):
    argv = name.split()[1:] + ["--help"]
    assert main(argv) == 0
    shown = capsys.readouterr().out
    assert shown.startswith("usage: headrace"), shown[:200]
    flat = " ".join(shown.split())
    assert not UNDECODABLE.search(flat), f"{name}: {UNDECODABLE.search(flat).group(0)!r} in its help"
    # A paper is named once, in the paragraph that says where the command comes from, never as "the paper".
    before = flat.split(WHERE)[0]
    assert "the paper" not in before and "paper's" not in before, name
    where = flat.count(WHERE)
    assert where <= 1, f"{name}: {where} 'where this comes from' paragraphs"
    if where:
        said = flat.split(WHERE)[1]
        assert any(title in said for title in PAPERS) or "docs/" in said, f"{name}: the source is named nowhere"


def test_the_lab_and_play_say_where_they_come_from(capsys):
    for argv, title in ((["bench", "particles"], PAPERS[0]), (["tune"], PAPERS[0]), (["bench", "streamlines"], PAPERS[1]),
                        (["play"], "Exajet")):
        assert main([*argv, "--help"]) == 0
        flat = " ".join(capsys.readouterr().out.split())
        assert title in flat.split(WHERE)[1], argv


def test_plot_titles_say_what_is_plotted(tmp_path):
    """A particle study's panels are titled by what they draw, not by the paper's figure numbers."""
    from headrace.cli.plot import _panels

    rows = [{"method": m, "batch": str(b), "segments": "2", "staging_bytes": "67108864", "frame_seconds": str(0.01 * k),
             "segment_waits_per_frame": "1.5", "design": "grid"}
            for k, (m, b) in enumerate([("auto", 1000), ("auto", 4000), ("pread", 1000), ("pread", 4000)], start=1)]
    titles = [panel[0] for panel in _panels(rows)]
    assert titles == ["frame time per method by particles per batch (best over the other factors)",
                      "waits for a free segment per frame, by particles per batch"]
