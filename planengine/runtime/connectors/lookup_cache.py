"""A bounded lookup cache: LRU by key with expire-after-write and expire-after-access (Flink's PARTIAL cache).

Where it lives: lookups run inside Spark's Python workers (an Arrow UDF per micro-batch partition), so each
Python worker process holds its own caches in a process-wide registry keyed by the lookup's operator uid
(``caches_for(uid, …)``). Spark reuses Python workers across tasks (``spark.python.worker.reuse``), so a
cache survives from one micro-batch to the next; in local mode there is one worker per concurrent task.
A restarted driver or worker starts with empty caches: the cache is an optimisation, never state.

Semantics (as Flink's ``DefaultLookupCache``):

* ``max_rows``: at most this many *keys* are kept (a key maps to all its rows, possibly none); the least
  recently used key is evicted first.
* ``expire_after_write_ms``: a key is reloaded this long after it was loaded.
* ``expire_after_access_ms``: a key is dropped when it was not used for this long.
* ``cache_missing_key``: keys that matched no row are cached too (else looked up again every time).

>>> clock = [0.0]
>>> c = LookupCache(max_rows=2, expire_after_write_ms=1000, clock=lambda: clock[0])
>>> c.put((1,), [("a",)]); c.put((2,), []); c.get((1,))
[('a',)]
>>> c.put((3,), [("c",)]); c.get((2,)) is None  # (2,) was the least recently used
True
>>> clock[0] = 1.5; c.get((1,)) is None  # expired after write
True
>>> c.stats()["hits"], c.stats()["misses"], c.stats()["evictions"], c.stats()["expirations"]
(1, 2, 1, 1)
"""

from __future__ import annotations

import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Hashable, Iterable, Sequence
from typing import Any

Rows = list[tuple[Any, ...]]


class LookupCache:
    def __init__(self, max_rows: int, expire_after_write_ms: int | None = None,
                 expire_after_access_ms: int | None = None, cache_missing_key: bool = True,
                 clock: Callable[[], float] = time.monotonic):
        if max_rows <= 0:
            raise ValueError("max_rows must be positive")
        self.max_rows = max_rows
        self.expire_after_write = (expire_after_write_ms or 0) / 1000.0 or None
        self.expire_after_access = (expire_after_access_ms or 0) / 1000.0 or None
        self.cache_missing_key = cache_missing_key
        self._clock = clock
        # key -> (rows, written_at, accessed_at); order = recency of use (last = most recent)
        self._entries: OrderedDict[Hashable, tuple[Rows, float, float]] = OrderedDict()
        self._lock = threading.Lock()
        self.hits = self.misses = self.evictions = self.expirations = self.loads = 0

    def __len__(self) -> int:
        return len(self._entries)

    def _expired(self, written: float, accessed: float, now: float) -> bool:
        if self.expire_after_write is not None and now - written >= self.expire_after_write:
            return True
        return self.expire_after_access is not None and now - accessed >= self.expire_after_access

    def get(self, key: Hashable) -> Rows | None:
        """The cached rows of ``key`` (``[]`` for a cached miss), or None when it must be looked up."""
        with self._lock:
            entry = self._entries.get(key)
            now = self._clock()
            if entry is not None and self._expired(entry[1], entry[2], now):
                del self._entries[key]
                self.expirations += 1
                entry = None
            if entry is None:
                self.misses += 1
                return None
            self.hits += 1
            self._entries[key] = (entry[0], entry[1], now)
            self._entries.move_to_end(key)
            return entry[0]

    def put(self, key: Hashable, rows: Sequence[tuple[Any, ...]]) -> None:
        if not rows and not self.cache_missing_key:
            return
        with self._lock:
            now = self._clock()
            self.loads += 1
            self._entries[key] = (list(rows), now, now)
            self._entries.move_to_end(key)
            while len(self._entries) > self.max_rows:
                self._entries.popitem(last=False)
                self.evictions += 1

    def stats(self) -> dict[str, int]:
        return {"size": len(self._entries), "hits": self.hits, "misses": self.misses, "loads": self.loads,
                "evictions": self.evictions, "expirations": self.expirations}


class NoCache:
    """``'lookup.cache' = 'NONE'``: every key is looked up every time."""

    hits = misses = evictions = expirations = loads = 0

    def get(self, key: Hashable) -> Rows | None:
        self.misses += 1
        return None

    def put(self, key: Hashable, rows: Sequence[tuple[Any, ...]]) -> None:
        self.loads += 1

    def stats(self) -> dict[str, int]:
        return {"size": 0, "hits": 0, "misses": self.misses, "loads": self.loads, "evictions": 0,
                "expirations": 0}


_CACHES: dict[str, LookupCache | NoCache] = {}
_REGISTRY_LOCK = threading.Lock()


def cache_for(cache_id: str, options: dict[str, Any]) -> LookupCache | NoCache:
    """The process-wide cache of one lookup operator (created on first use in this Python process).

    ``options`` are the connector's typed lookup options (``cache``, ``max_rows``, ``expire_after_write_ms``,
    ``expire_after_access_ms``, ``cache_missing_key``); a changed configuration replaces the cache.
    """
    with _REGISTRY_LOCK:
        cache = _CACHES.get(cache_id)
        if cache is not None and getattr(cache, "_options", None) == options:
            return cache
        if (options.get("cache") or "NONE").upper() == "PARTIAL":
            cache = LookupCache(int(options["max_rows"]), options.get("expire_after_write_ms"),
                                options.get("expire_after_access_ms"), bool(options.get("cache_missing_key", True)))
        else:
            cache = NoCache()
        cache._options = dict(options)  # type: ignore[union-attr]
        _CACHES[cache_id] = cache
        return cache


def cached_lookup(cache: LookupCache | NoCache, keys: Iterable[Hashable],
                  load: Callable[[list[Hashable]], dict[Hashable, Rows]]) -> dict[Hashable, Rows]:
    """Rows for every key: cached ones from ``cache``, the others loaded in one call and cached."""
    result: dict[Hashable, Rows] = {}
    missing: list[Hashable] = []
    for key in dict.fromkeys(keys):
        rows = cache.get(key)
        if rows is None:
            missing.append(key)
        else:
            result[key] = rows
    if missing:
        loaded = load(missing)
        for key in missing:
            rows = loaded.get(key, [])
            cache.put(key, rows)
            result[key] = rows
    return result


def reset_caches() -> None:
    """Forget every cache of this process (tests)."""
    with _REGISTRY_LOCK:
        _CACHES.clear()
