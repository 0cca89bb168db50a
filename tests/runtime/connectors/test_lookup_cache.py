"""The bounded lookup cache (LRU by key, expire after write / access, cached misses) without Spark."""

from __future__ import annotations

from planengine.runtime.connectors.lookup_cache import LookupCache, NoCache, cache_for, cached_lookup, reset_caches


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def test_lru_evicts_least_recently_used_key() -> None:
    cache = LookupCache(max_rows=2)
    cache.put((1,), [("a",)])
    cache.put((2,), [("b",)])
    assert cache.get((1,)) == [("a",)]  # (1,) is now the most recent
    cache.put((3,), [("c",)])
    assert cache.get((2,)) is None
    assert cache.get((1,)) == [("a",)] and cache.get((3,)) == [("c",)]
    assert len(cache) == 2 and cache.stats()["evictions"] == 1


def test_expire_after_write_reloads_even_when_used() -> None:
    clock = Clock()
    cache = LookupCache(max_rows=10, expire_after_write_ms=1000, clock=clock)
    cache.put((1,), [("a",)])
    clock.now = 0.9
    assert cache.get((1,)) == [("a",)]
    clock.now = 1.0
    assert cache.get((1,)) is None
    assert cache.stats()["expirations"] == 1


def test_expire_after_access_keeps_used_keys() -> None:
    clock = Clock()
    cache = LookupCache(max_rows=10, expire_after_access_ms=1000, clock=clock)
    cache.put((1,), [("a",)])
    for t in (0.5, 1.2, 1.9, 2.6):
        clock.now = t
        assert cache.get((1,)) == [("a",)]
    clock.now = 3.7
    assert cache.get((1,)) is None


def test_missing_keys_cached_only_when_asked() -> None:
    cache = LookupCache(max_rows=10, cache_missing_key=True)
    cache.put((9,), [])
    assert cache.get((9,)) == []
    no_miss = LookupCache(max_rows=10, cache_missing_key=False)
    no_miss.put((9,), [])
    assert no_miss.get((9,)) is None


def test_cached_lookup_loads_only_missing_keys_in_one_call() -> None:
    cache = LookupCache(max_rows=10)
    calls: list[list] = []

    def load(keys: list) -> dict:
        calls.append(list(keys))
        return {k: [(k[0] * 10,)] for k in keys if k[0] != 3}

    assert cached_lookup(cache, [(1,), (2,), (1,), (3,)], load) == {(1,): [(10,)], (2,): [(20,)], (3,): []}
    assert cached_lookup(cache, [(2,), (4,), (3,)], load) == {(2,): [(20,)], (4,): [(40,)], (3,): []}
    assert calls == [[(1,), (2,), (3,)], [(4,)]]


def test_cache_registry_per_operator_and_configuration() -> None:
    reset_caches()
    options = {"cache": "PARTIAL", "max_rows": 5, "expire_after_write_ms": None, "expire_after_access_ms": None,
               "cache_missing_key": True}
    a = cache_for("4_stream-exec-lookup-join-1_lookup-join", options)
    assert cache_for("4_stream-exec-lookup-join-1_lookup-join", dict(options)) is a
    assert cache_for("9_stream-exec-lookup-join-1_lookup-join", options) is not a
    changed = cache_for("4_stream-exec-lookup-join-1_lookup-join", {**options, "max_rows": 6})
    assert changed is not a and changed.max_rows == 6
    assert isinstance(cache_for("x", {"cache": "NONE"}), NoCache)
    reset_caches()
