"""The generated "algorithm x environment kind" table: computed from the library's own checks,
with the reason (and its fix) where an algorithm does not run."""

from __future__ import annotations

from docgen.compatibility import ENV_INSTANCES, compatibility

from privbandits.experiments.units import ENV_KINDS


def test_every_file_free_environment_kind_is_a_column() -> None:
    assert set(ENV_INSTANCES) <= set(ENV_KINDS)
    assert set(ENV_KINDS) - set(ENV_INSTANCES) == {"movielens"}  # reads a user-supplied file


def test_cells_and_reasons_come_from_the_library() -> None:
    table = compatibility(names=["linucb", "hanna-local", "fkm"])
    assert table["linucb"]["synthetic"] == "" and table["linucb"]["finite"] == ""
    assert 'encoding = "shared"' in table["linucb"]["supervised"]  # the fix is named
    assert table["hanna-local"]["finite"] == "" and table["hanna-local"]["k-armed"] == ""
    assert 'kind = "finite"' in table["hanna-local"]["synthetic"]
    assert table["fkm"]["convex"] == "" and table["fkm"]["synthetic"]
    assert table["linucb"]["convex"]  # a linear bandit cannot play continuous actions
