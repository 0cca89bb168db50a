"""The job store's contract on a directory and on a real S3 server (moto's, in a process of its own), and the run lock
built on it: one writer per job root with no shared POSIX filesystem.

Each race runs real concurrent writers (threads here, processes in ``test_fencing.py``), many rounds, and counts
winners: a store that ignored a condition would let two win in some round.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from planengine.errors import UserError
from planengine.runtime.storage.fencing import (
    JobRootLocked,
    RunLockLost,
    acquire_run_lock,
    check_run_lock,
    ensure_run_lock,
    release_run_lock,
)
from planengine.runtime.storage.job_store import AlreadyExists, Conflict, JobStore, LocalJobStore
from planengine.runtime.storage.s3_job_store import ObjectStoreError, S3JobStore, parse_s3a_uri
from tests.fixtures.object_store import S3Store
from tests.fixtures.race import race

CONTENDERS = 8
ROUNDS = 10


@pytest.fixture(params=["local", "s3"])
def store(request: pytest.FixtureRequest, tmp_path: Any) -> Iterator[JobStore]:
    if request.param == "local":
        yield LocalJobStore(tmp_path / "root")
    else:
        s3: S3Store = request.getfixturevalue("s3_store")
        yield S3JobStore(s3.uri(s3.prefix("store")))


def test_a_key_is_created_once_and_read_whole(store: JobStore) -> None:
    assert store.read("a/b.json") is None
    first = store.create("a/b.json", b'{"v": 1}')
    assert store.read("a/b.json") == first
    with pytest.raises(AlreadyExists):
        store.create("a/b.json", b'{"v": 2}')
    assert store.read("a/b.json") == first
    store.create("a/c.json", b"")
    assert store.list("a") == store.list("a/") == ["a/b.json", "a/c.json"]
    assert store.list("nothing") == []


def test_replace_and_delete_happen_only_on_the_version_read(store: JobStore) -> None:
    v1 = store.create("lock", b"one")
    v2 = store.replace("lock", b"two", expected=v1.version)
    assert store.read("lock") == v2 and v2.version != v1.version
    with pytest.raises(Conflict):
        store.replace("lock", b"stale writer", expected=v1.version)
    with pytest.raises(Conflict):
        store.delete("lock", expected=v1.version)
    assert store.read("lock") == v2
    store.delete("lock", expected=v2.version)
    assert store.read("lock") is None
    with pytest.raises(Conflict):
        store.replace("lock", b"gone", expected=v2.version)
    with pytest.raises(Conflict):
        store.delete("lock", expected=v2.version)
    assert store.list("") == []  # no temporary or aside objects left behind


def test_of_concurrent_creators_exactly_one_wins(store: JobStore) -> None:
    for round_ in range(ROUNDS):
        results = race(CONTENDERS, lambda i, r=round_: store.create(f"k{r}", f"{i}".encode()))
        winners = [i for i, r in enumerate(results) if not isinstance(r, Exception)]
        assert len(winners) == 1, results
        assert all(isinstance(r, AlreadyExists) for i, r in enumerate(results) if i not in winners), results
        assert store.read(f"k{round_}").data == f"{winners[0]}".encode()


def test_of_concurrent_swaps_of_one_version_exactly_one_wins(store: JobStore) -> None:
    for round_ in range(ROUNDS):
        base = store.create(f"k{round_}", b"base")
        results = race(CONTENDERS, lambda i, r=round_, v=base.version: store.replace(f"k{r}", f"{i}".encode(),
                                                                                     expected=v))
        winners = [i for i, r in enumerate(results) if not isinstance(r, Exception)]
        assert len(winners) == 1, results
        assert all(isinstance(r, Conflict) for i, r in enumerate(results) if i not in winners), results
        assert store.read(f"k{round_}").data == f"{winners[0]}".encode()


def test_keys_never_leave_the_root(store: JobStore) -> None:
    for bad in ("", "/etc/passwd", "../other/RUN_LOCK", "a/../../b", "a//b"):
        with pytest.raises(ValueError, match="relative path inside the root"):
            store.create(bad, b"x")


# -- the run lock on the store -----------------------------------------------------------------------
def test_one_run_holds_the_root_and_releases_it(store: JobStore) -> None:
    lock = acquire_run_lock(store, "r-1")
    assert acquire_run_lock(store, "r-1") == lock  # re-entrant for the holding process
    assert check_run_lock(store, "r-1") and not check_run_lock(store, "r-2")
    assert not release_run_lock(store, "r-2")
    assert release_run_lock(store, "r-1") and store.read("RUN_LOCK") is None
    assert acquire_run_lock(store, "r-2").run_id == "r-2"


def test_a_holder_on_another_host_is_reported_with_where_its_lock_is(store: JobStore) -> None:
    store.create("RUN_LOCK", b'{"runId": "r-remote", "pid": 4242, "hostname": "driver-7f9c", '
                             b'"acquiredAt": "2026-01-01T00:00:00Z"}')
    with pytest.raises(JobRootLocked) as err:
        acquire_run_lock(store, "r-local")
    text = err.value.render()
    assert f"job root {store.describe()} is in use by run r-remote (pid 4242 on driver-7f9c" in text
    assert f"delete {store.location('RUN_LOCK')}" in text
    assert check_run_lock(store, "r-remote")


def test_of_concurrent_takers_of_a_dead_pods_lock_exactly_one_wins(store: JobStore, monkeypatch) -> None:
    """Two driver pods both vouched for (an operator restarted twice): only one may take the dead pod's lock."""
    monkeypatch.setenv("PLANENGINE_TAKE_OVER_RUN_LOCK", "1")
    for round_ in range(ROUNDS):
        dead = f'{{"runId": "r-dead{round_}", "pid": 1, "hostname": "gone", "acquiredAt": "x"}}'.encode()
        current = store.read("RUN_LOCK")
        if current is None:
            store.create("RUN_LOCK", dead)
        else:
            store.replace("RUN_LOCK", dead, expected=current.version)
        # With the vouch each taker may take over the one before it (so several may return), but every swap is
        # on the version that taker read: at the end exactly one holds the root and every other is fenced.
        results = race(CONTENDERS, lambda i, r=round_: acquire_run_lock(store, f"r-{r}-{i}"))
        held_by = [i for i in range(CONTENDERS) if check_run_lock(store, f"r-{round_}-{i}")]
        assert len(held_by) == 1, results
        for i in set(range(CONTENDERS)) - set(held_by):
            with pytest.raises(RunLockLost):
                ensure_run_lock(store, f"r-{round_}-{i}")


def test_a_release_racing_a_takeover_never_removes_the_new_holders_lock(store: JobStore, monkeypatch) -> None:
    for round_ in range(ROUNDS):
        old = f"r-old{round_}"
        acquire_run_lock(store, old)
        monkeypatch.setenv("PLANENGINE_TAKE_OVER_RUN_LOCK", "1")
        results = race(2, lambda i, r=round_, o=old: release_run_lock(store, o) if i == 0
                       else acquire_run_lock(store, f"r-new{r}"))
        monkeypatch.delenv("PLANENGINE_TAKE_OVER_RUN_LOCK")
        assert not isinstance(results[1], Exception), results
        assert check_run_lock(store, f"r-new{round_}"), (results, store.read("RUN_LOCK"))
        assert release_run_lock(store, f"r-new{round_}")


# -- S3 only -------------------------------------------------------------------------------------------
def test_the_test_store_honours_every_conditional_write(s3_store: S3Store) -> None:
    S3JobStore(s3_store.uri(s3_store.prefix("probe"))).probe()
    assert s3_store.keys("probe") == []  # the probe leaves nothing behind


def test_a_store_that_ignores_conditions_is_refused_by_the_probe(s3_store: S3Store) -> None:
    class Careless:
        """A client that drops If-None-Match/If-Match, as some S3-compatible stores do."""

        def __init__(self, real: Any) -> None:
            self.real = real

        def __getattr__(self, name: str) -> Any:
            method = getattr(self.real, name)
            return lambda **kw: method(**{k: v for k, v in kw.items() if k not in ("IfMatch", "IfNoneMatch")})

    uri = s3_store.uri(s3_store.prefix("careless"))
    careless = S3JobStore(uri, client=Careless(s3_store.client()))
    # The races above can fail: on such a store every concurrent creator "wins".
    results = race(CONTENDERS, lambda i: careless.create("k", f"{i}".encode()))
    assert sum(not isinstance(r, Exception) for r in results) > 1, results
    careless.delete("k", expected="ignored")
    with pytest.raises(ObjectStoreError) as err:
        careless.probe()
    text = err.value.render()
    assert "ignores conditional writes (If-None-Match: * on PUT, If-Match on PUT, If-Match on DELETE)" in text
    assert "ReadWriteMany" in text
    assert s3_store.keys(uri.split("/", 3)[3]) == []


def test_a_missing_bucket_and_a_dead_endpoint_are_one_line_naming_what_to_fix(s3_store: S3Store, monkeypatch) -> None:
    with pytest.raises(ObjectStoreError) as err:
        S3JobStore("s3a://no-such-bucket-here/jobs").read("RUN_LOCK")
    assert "bucket 'no-such-bucket-here' does not exist" in err.value.render()
    assert "--job-root" in err.value.render()
    monkeypatch.setenv("PLANENGINE_S3_ENDPOINT", "http://127.0.0.1:9")  # discard port: nothing listens
    with pytest.raises(ObjectStoreError) as err:
        S3JobStore(s3_store.uri("jobs"), client=None).create("RUN_LOCK", b"x")
    assert "cannot reach the object store at http://127.0.0.1:9" in err.value.render()
    assert "PLANENGINE_S3_ENDPOINT" in err.value.render()


@pytest.mark.parametrize("bad", ["s3://bucket/x", "s3a:///x", "s3a://bucket/a/../b", "/local/dir"])
def test_only_s3a_uris_with_plain_prefixes_name_an_object_store_root(bad: str) -> None:
    with pytest.raises(UserError):
        parse_s3a_uri(bad)
