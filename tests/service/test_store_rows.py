"""The served model's database, row by row (SQLite): what is stored, found, ordered and refused.

Every accepted request is one ``events`` row keyed by ``(token, idempotency key)``; a model update
is one ``models`` row written in the same transaction.  These tests exercise the store directly
(no HTTP), on SQLite and PostgreSQL, so that each query's scoping, ordering and atomicity is
checked on its own: two tokens that use the same idempotency key keep two events, the lookup of one
never returns the other's.
"""

from __future__ import annotations

import dataclasses
import sqlite3
from pathlib import Path
from typing import Any

import pytest

try:  # the server's store (service/server/store.py; service/store.py in older layouts)
    from privbandits.service.server import store as st
except ImportError:  # pragma: no cover - layout-dependent
    from privbandits.service import store as st  # type: ignore[no-redef]


def _event(seq: int, token: str = "client-0", key: str = "k1", kind: str = "report") -> st.Event:
    return st.Event(
        seq=seq,
        kind=kind,
        token=token,
        idem_key=key,
        body={"seq": seq, "x": [1.5, -2]},
        body_hash=f"h{seq}",
        response={"seq": seq, "ok": True},
    )


def _integrity_errors() -> tuple[type[BaseException], ...]:
    """Unique-constraint violations of both back ends."""
    try:
        import psycopg
    except ImportError:  # pragma: no cover - depends on the install
        return (sqlite3.IntegrityError,)
    return (sqlite3.IntegrityError, psycopg.errors.IntegrityError)


DUPLICATE = _integrity_errors()


@pytest.fixture()
def store(db_url: str) -> st.Store:
    """A fresh store on each back end (SQLite file; a new PostgreSQL database)."""
    s = st.open_store(db_url)
    s.init({"algorithm": "ldp-sgd", "horizon": 50})
    yield s
    s.close()


def test_lookup_is_scoped_by_token_and_key(store: st.Store) -> None:
    """The same key from two tokens: two events, and each lookup returns its own token's answer."""
    store.append(_event(1, "client-0", "same"), None)
    store.append(_event(2, "client-1", "same"), None)
    a, b = store.find("client-0", "same"), store.find("client-1", "same")
    assert a is not None and b is not None
    assert (a.seq, a.token, a.response) == (1, "client-0", {"seq": 1, "ok": True})
    assert (b.seq, b.token, b.response) == (2, "client-1", {"seq": 2, "ok": True})
    assert store.find("client-2", "same") is None and store.find("client-0", "other") is None
    # a key used by one token only is not found for another
    store.append(_event(3, "client-1", "only-1"), None)
    assert store.find("client-0", "only-1") is None and store.find("client-1", "only-1").seq == 3


def test_the_same_token_and_key_cannot_be_stored_twice(store: st.Store) -> None:
    store.append(_event(1), None)
    with pytest.raises(DUPLICATE):
        store.append(_event(2), None)
    assert [e.seq for e in store.events()] == [1]


def test_events_come_back_whole_and_in_acceptance_order(store: st.Store) -> None:
    for seq in (3, 1, 2):
        store.append(_event(seq, key=f"k{seq}", kind="batch" if seq == 2 else "report"), None)
    events = list(store.events())
    assert [e.seq for e in events] == [1, 2, 3]
    assert events[1] == _event(2, key="k2", kind="batch")
    assert store.find("client-0", "k2") == _event(2, key="k2", kind="batch")


def test_model_rows_are_written_with_their_event_and_read_in_version_order(store: st.Store) -> None:
    assert store.latest_model() is None and store.models() == []
    store.append(_event(1, key="a"), st.ModelRow(version=1, seq=1, rounds=4, digest="d1"))
    store.append(_event(2, key="b"), None)  # no model change
    store.append(_event(3, key="c"), st.ModelRow(version=3, seq=3, rounds=9, digest="d3"))
    store.append(_event(4, key="d"), st.ModelRow(version=2, seq=4, rounds=7, digest="d2"))
    assert [m.version for m in store.models()] == [1, 2, 3]
    assert store.latest_model() == st.ModelRow(3, 3, 9, "d3")
    assert store.models()[0] == st.ModelRow(1, 1, 4, "d1")


def test_an_event_and_its_model_row_are_stored_together_or_not_at_all(store: st.Store) -> None:
    store.append(_event(1, key="a"), st.ModelRow(version=1, seq=1, rounds=1, digest="d1"))
    with pytest.raises(DUPLICATE):  # the model row collides: the event must not stay
        store.append(_event(2, key="b"), st.ModelRow(version=1, seq=2, rounds=2, digest="dx"))
    assert [e.seq for e in store.events()] == [1] and store.find("client-0", "b") is None
    assert store.models() == [st.ModelRow(1, 1, 1, "d1")]
    store.append(_event(2, key="b"), None)  # the connection is usable after the rollback
    assert [e.seq for e in store.events()] == [1, 2]


def test_quarantined_reports_are_stored_with_their_batch_and_read_in_order(store: st.Store) -> None:
    assert store.quarantined() == []
    q = [
        st.Quarantined(2, "b-2", 5, "box", "does not open"),
        st.Quarantined(2, "b-2", 1, "payload.g", "NaN"),
    ]
    store.append(_event(2, key="batch-2", kind="batch"), st.ModelRow(1, 2, 3, "d"), q)
    store.append(
        _event(1, key="batch-1", kind="batch"), None, [st.Quarantined(1, "b-1", 0, "box", "short")]
    )
    store.append(_event(3, key="r"), None)
    assert store.quarantined() == [
        st.Quarantined(1, "b-1", 0, "box", "short"),
        st.Quarantined(2, "b-2", 1, "payload.g", "NaN"),
        st.Quarantined(2, "b-2", 5, "box", "does not open"),
    ]
    # a quarantine row that collides rolls back its whole event
    with pytest.raises(DUPLICATE):
        store.append(
            _event(4, key="batch-4", kind="batch"),
            None,
            [st.Quarantined(4, "b-4", 0, "box", "x"), st.Quarantined(4, "b-4", 0, "box", "y")],
        )
    assert store.find("client-0", "batch-4") is None and len(store.quarantined()) == 3
    with pytest.raises(dataclasses.FrozenInstanceError):
        q[0].index = 2  # type: ignore[misc]


def test_wipe_keeps_the_configuration(store: st.Store, tmp_path: Path) -> None:
    store.append(_event(1), st.ModelRow(1, 1, 1, "d"), [st.Quarantined(1, "b", 0, "box", "x")])
    store.wipe()
    assert list(store.events()) == [] and store.models() == [] and store.latest_model() is None
    assert store.quarantined() == []
    store.init({"algorithm": "ldp-sgd", "horizon": 50})  # same configuration: accepted
    with pytest.raises(st.StoreError, match="another configuration"):
        store.init({"algorithm": "ldp-sgd", "horizon": 51})


def test_another_configuration_is_named_in_at_most_200_characters(tmp_path: Path) -> None:
    s = st.open_store(tmp_path / "c.sqlite")
    first = {"name": "x" * 300}
    s.init(first)
    text = '{"name": "' + "x" * 300 + '"}'
    with pytest.raises(st.StoreError) as err:
        s.init({"name": "y"})
    assert f"({text[:200]})" in str(err.value) and text[:201] not in str(err.value)
    s.close()


def test_reopening_finds_the_stored_rows(db_url: str) -> None:
    """What one connection wrote (init, an event, a model row) is there for the next one."""
    s = st.open_store(db_url)
    s.init({"a": 1})
    s.append(_event(1), st.ModelRow(1, 1, 2, "d"), [st.Quarantined(1, "b", 0, "box", "x")])
    s.close()
    again = st.open_store(db_url)
    again.init({"a": 1})
    assert [e.seq for e in again.events()] == [1] and again.latest_model() == st.ModelRow(
        1, 1, 2, "d"
    )
    assert again.find("client-0", "k1") == _event(1) and len(again.quarantined()) == 1
    with pytest.raises(st.StoreError, match="another configuration"):
        again.init({"a": 2})
    again.close()


def test_urls_choose_the_back_end_and_options(tmp_path: Path) -> None:
    full = st.open_store(f"sqlite:///{tmp_path}/a/b.sqlite?synchronous=FULL")
    assert (tmp_path / "a" / "b.sqlite").exists() and "?" not in full.url
    assert full.conn.execute("PRAGMA synchronous").fetchone()[0] == 2  # FULL
    assert full.conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    full.close()
    absolute = st.open_store(f"sqlite:////{str(tmp_path).lstrip('/')}/c.sqlite")
    assert (tmp_path / "c.sqlite").exists()
    absolute.close()
    plain = st.open_store(tmp_path / "d.sqlite")
    assert plain.conn.execute("PRAGMA synchronous").fetchone()[0] == 1  # NORMAL, the default
    plain.close()
    first = st.open_store(f"sqlite:///{tmp_path}/f.sqlite?synchronous=FULL&synchronous=OFF")
    assert first.conn.execute("PRAGMA synchronous").fetchone()[0] == 2  # the first value counts
    first.close()
    mem = st.open_store("sqlite://")
    mem.init({})
    assert mem.url == "sqlite:///:memory:"
    mem.close()
    with pytest.raises(st.StoreError, match="unsupported database URL"):
        st.open_store("mysql://host/db")
    with pytest.raises(st.StoreError, match="synchronous"):
        st.SQLiteStore(str(tmp_path / "e.sqlite"), synchronous="SOMETIMES")
    with pytest.raises(st.StoreError, match="cannot open"):
        st.SQLiteStore(str(tmp_path))  # a directory


def test_sqlite_urls_with_three_slashes_are_relative(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``sqlite:///rel/x.sqlite`` is relative to the working directory (four slashes: absolute)."""
    monkeypatch.chdir(tmp_path)
    s = st.open_store("sqlite:///rel/x.sqlite")
    s.init({})
    s.close()
    assert (tmp_path / "rel" / "x.sqlite").exists()


def test_a_host_in_a_sqlite_url_leaves_the_path_absolute(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``sqlite://host/abs/path``: the host part is ignored and the path stays absolute."""
    (tmp_path / "cwd").mkdir()
    monkeypatch.chdir(tmp_path / "cwd")
    s = st.open_store(f"sqlite://localhost{tmp_path}/h.sqlite")
    s.close()
    assert (tmp_path / "h.sqlite").exists() and not any((tmp_path / "cwd").iterdir())


def test_rows_are_immutable() -> None:
    with pytest.raises(dataclasses.FrozenInstanceError):
        _event(1).seq = 2  # type: ignore[misc]
    with pytest.raises(dataclasses.FrozenInstanceError):
        st.ModelRow(1, 1, 1, "d").rounds = 2  # type: ignore[misc]


def test_snapshots_keep_the_two_newest_by_default(store: st.Store) -> None:
    """``save_snapshot`` keeps the two newest snapshots unless told otherwise (a crash while the
    newest is written still leaves the one before), and ``keep`` overrides it."""
    for seq in (1, 2, 3):
        store.save_snapshot(st.Snapshot(seq, 1, f"d{seq}", bytes([seq])))
    assert [r[0] for r in store._execute("SELECT seq FROM snapshots ORDER BY seq")] == [2, 3]
    store.save_snapshot(st.Snapshot(4, 1, "d4", b"\x04"), keep=1)
    assert [r[0] for r in store._execute("SELECT seq FROM snapshots ORDER BY seq")] == [4]
    latest = store.latest_snapshot()
    assert latest is not None and (latest.seq, latest.state) == (4, b"\x04")


def test_postgres_store_without_retries_runs_each_statement_once(postgres_module: Any) -> None:
    """``retries = 0`` means one attempt per statement, not none: the store still initializes,
    stores and finds an event."""
    s = st.PostgresStore(str(postgres_module.create_database("noretries")), retries=0)
    try:
        s.init({"algorithm": "ldp-sgd", "horizon": 50})
        s.append(_event(1), None)
        found = s.find("client-0", "k1")
        assert found is not None and found.seq == 1
    finally:
        s.close()
