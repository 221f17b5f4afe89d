"""The modules whose names moved to headrace.workloads and headrace.imaging (issue 36) still hand out every
old name for one release, each with a DeprecationWarning that names its new place."""

from __future__ import annotations

import importlib

import pytest

import headrace
from headrace.generate import generate_volume
from headrace.imaging import recorded_range, value_range

OLD_MODULES = ("headrace.render", "headrace.volume", "headrace.points", "headrace.streamlines", "headrace.sort_last",
               "headrace.viewer.camera", "headrace.viewer.scenes")
# Old names that are functions of the old signature, written again over the new ones (not the same object).
ADAPTED = {("headrace.volume", "recorded_value_range"), ("headrace.volume", "field_value_range")}
# Old names of headrace.viewer.scenes beside those it still defines.
MOVED_FROM_SCENES = ("COLOUR_MAPS", "colour_table", "component_range", "ParticleScene", "PARTICLE_COLUMNS",
                     "particle_scalar_fields", "PointSetScene", "COLOUR_FROM_SCALARS", "VolumeScene")


def moved_names() -> list[tuple[str, str]]:
    names = []
    for module_name in OLD_MODULES:
        module = importlib.import_module(module_name)
        listed = MOVED_FROM_SCENES if module_name == "headrace.viewer.scenes" else module.__all__
        names.extend((module_name, name) for name in listed if (module_name, name) not in ADAPTED)
    return names


@pytest.mark.parametrize(("module_name", "name"), moved_names())
def test_an_old_name_warns_naming_its_new_place_and_is_the_new_object(module_name, name):
    module = importlib.import_module(module_name)
    with pytest.warns(DeprecationWarning, match=rf"{module_name}\.{name} is deprecated: use headrace\.") as caught:
        old = getattr(module, name)
    new_place = str(caught[0].message).rsplit("use ", 1)[1]
    new_module, _, new_name = new_place.rpartition(".")
    assert old is getattr(importlib.import_module(new_module), new_name)


def test_a_name_that_never_was_is_an_attribute_error():
    with pytest.raises(AttributeError, match="'headrace.render' has no attribute 'no_such_name'"):
        importlib.import_module("headrace.render").no_such_name  # noqa: B018


@pytest.fixture(scope="module")
def volume(tmp_path_factory):
    return headrace.open(generate_volume(tmp_path_factory.mktemp("deprecated") / "v.hrc", dims=(12, 10, 8), frames=2))


def test_the_old_value_range_functions_warn_and_keep_their_signature(volume):
    from headrace import volume as old

    with pytest.warns(DeprecationWarning, match="headrace.volume.recorded_value_range is deprecated: use "
                                                "headrace.imaging.recorded_range"):
        assert old.recorded_value_range(volume, "scalar", [1]) == recorded_range(volume, "scalar", frames=[1])
    with pytest.warns(DeprecationWarning, match="headrace.volume.field_value_range is deprecated: use "
                                                "headrace.imaging.value_range"):
        assert old.field_value_range(volume, "scalar", [0]) == value_range(volume, "scalar", frames=[0])
