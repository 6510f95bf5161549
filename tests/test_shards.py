"""`make test`'s parts (tests/conftest.py, tests/parallel.py): each emulator shard imports only the test
files dealt to it, so the deal must give every file to exactly one shard of each kind that has tests of
it, and a run must refuse a record that would leave a file to no process; the other tests' workers take
whole files, longest first; whatever waits on an emulator runs in the emulator shards."""

from __future__ import annotations

from types import SimpleNamespace

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tests.conftest import EMULATOR_SHARD as EMULATOR
from tests.conftest import OTHER_TESTS as OTHER
from tests.conftest import ROOT, check_recorded, deal, kinds_of, longest_first


def test_files_are_dealt_longest_first_onto_the_lightest_shard_and_new_files_follow_at_the_average():
    # Given: three files recorded for the emulator shards, two for the others (one of them in both), a
    # file recorded that is gone, and one on disk that no run has recorded yet
    recorded = {EMULATOR: {"a": 5.0, "b": 3.0, "c": 2.0, "gone": 9.0}, OTHER: {"x": 4.0, "c": 1.0}}
    on_disk = {"a", "b", "c", "x", "new"}
    # Then: a (5) to the first shard, b (3) and c (2) to the second; the new file, at the average of
    # 10/3 s, to the first of the two equally loaded; x, recorded for the others only, to no emulator shard
    assert deal(recorded, on_disk, EMULATOR, 2) == [{"a", "new"}, {"b", "c"}]
    # And for the others: x (4) first, c (1) second, the new file (2.5 s) to the lighter second
    assert deal(recorded, on_disk, OTHER, 2) == [{"x"}, {"c", "new"}]


name = st.text("abcdefgh", min_size=1, max_size=3)
seconds = st.floats(min_value=0.0, max_value=500.0, allow_nan=False)


@given(emulator=st.dictionaries(name, seconds, max_size=12), other=st.dictionaries(name, seconds, max_size=12),
       unrecorded=st.sets(name, max_size=12), count=st.integers(min_value=1, max_value=4))
def test_every_file_with_tests_of_a_kind_is_in_exactly_one_of_its_shards_and_the_loads_stay_within_one_file(
        emulator, other, unrecorded, count):
    recorded = {EMULATOR: emulator, OTHER: other}
    on_disk = set(emulator) | set(other) | unrecorded
    new = on_disk - set(emulator) - set(other)
    for option, files in recorded.items():
        shards = deal(recorded, on_disk, option, count)
        # exactly one shard each: the files recorded for this kind and those recorded for none
        assert sorted(name for shard in shards for name in shard) == sorted(set(files) | new)
        # longest first onto the lightest: no shard ends more than one file's seconds above another
        average = sum(files.values()) / len(files) if files else 1.0
        weight = {**{name: average for name in new}, **files}
        loads = [sum(weight[name] for name in shard) for shard in shards]
        assert max(loads) - min(loads) <= max(weight.values(), default=0.0) + 1e-6


def _items(*names: str) -> list[SimpleNamespace]:
    return [SimpleNamespace(path=ROOT / name) for name in names]


def test_a_run_refuses_a_record_that_leaves_a_file_with_tests_of_a_kind_to_no_shard_of_that_kind():
    recorded = {EMULATOR: {"tests/test_a.py": 5.0}, OTHER: {"tests/test_b.py": 1.0, "tests/test_a.py": 2.0}}
    # A file recorded for both kinds, and a new file, may have tests of either
    check_recorded(recorded, {EMULATOR: _items("tests/test_a.py", "tests/test_new.py"), OTHER: _items("tests/test_a.py")})
    # A file recorded for the other tests only that now has a test on the deployment is refused, named
    with pytest.raises(pytest.UsageError, match=r"tests/test_b\.py \(--emulator-shard\).*--record-durations"):
        check_recorded(recorded, {EMULATOR: _items("tests/test_b.py"), OTHER: _items("tests/test_b.py")})


def test_the_other_tests_go_whole_files_longest_first_and_an_unrecorded_file_at_the_average():
    # Given: x (4 s) and c (1 s) recorded for the other tests, a file no run has recorded (2.5 s, the
    # average), and c's seconds as an emulator shard's, which do not count here
    recorded = {EMULATOR: {"tests/test_c.py": 9.0}, OTHER: {"tests/test_x.py": 4.0, "tests/test_c.py": 1.0}}
    items = _items("tests/test_c.py", "tests/test_c.py", "tests/test_new.py", "tests/test_x.py", "tests/test_x.py")
    # Then: x's tests, the new file's, then c's; each file's tests in their collected order
    ordered = longest_first(recorded, items, OTHER)
    assert [id(item) for item in ordered] == [id(items[i]) for i in (3, 4, 2, 0, 1)]


def test_the_emulator_shards_run_the_tests_on_the_deployment_and_those_starting_emulators_of_their_own():
    # Given: a test on the deployment, one marked emulator that starts an emulator of its own, and one
    # on moto (only the first two can wait on an emulator's Lambda instances)
    def item(name: str, marked: bool, fixtures: tuple[str, ...]) -> SimpleNamespace:
        return SimpleNamespace(name=name, fixturenames=fixtures,
                               get_closest_marker=lambda marker: object() if marked and marker == "emulator" else None)
    on_deployment = item("on the deployment", False, ("deployment", "aws"))
    own = item("its own emulator", True, ("aws",))
    on_moto = item("on moto", False, ("aws",))
    # When / Then: the shards take the one with its own emulator first (before the deployment starts),
    # then the deployment's; the other tests only the one on moto
    assert kinds_of([on_deployment, on_moto, own]) == {EMULATOR: [own, on_deployment], OTHER: [on_moto]}
