"""Bytes under a job root, addressed by relative keys: the one interface that knows whether the root is a directory
or an object-store prefix.

Why an interface: the job root's own files (the lock, the plan in force, run markers, manifests) need three
guarantees that a directory and an object store give in different ways, and everything above this module should
use the guarantees, not the mechanism:

* **whole objects**: a reader sees the old bytes or the new, never a torn write (a directory: write a temporary
  file, then rename or link it into place; a store: every PUT is atomic);
* **create if absent**: of any number of concurrent creators of one key exactly one succeeds (a directory:
  ``link``, which fails when the target exists; a store: ``If-None-Match: *``);
* **compare and swap**: a replace or a delete that happens only if the object is still the version the caller
  read (a directory: rename the current file aside, where only one renamer can win, compare, then link the new
  one in or put the old one back; a store: ``If-Match: <ETag>``).

Fencing (``fencing.py``) is built on these three alone, so one writer per job root holds on a shared POSIX
volume and on S3 alike, without a lock server. ``LocalJobStore`` is here; ``S3JobStore`` is in ``s3_job_store``
(it needs boto3, an optional dependency). The design of the rest (runs, snapshots and forks on a store) is in
``docs/object-store.md``.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from planengine.runtime.storage.files import atomic_write_bytes


@dataclass(frozen=True)
class Versioned:
    """An object's bytes and the version tag a conditional write compares against (a digest locally, an ETag on
    a store). Tags are opaque: compare them for equality, never parse them."""

    data: bytes
    version: str


class AlreadyExists(Exception):
    """``create`` lost: the key exists (another creator won, or it was there before)."""


class Conflict(Exception):
    """A conditional ``replace`` or ``delete`` lost: the object is not the version the caller read (changed or gone)."""


class JobStore(Protocol):
    """Whole objects under one root, with create-if-absent and compare-and-swap (module doc)."""

    def describe(self) -> str:
        """The root as a user names it (a directory, or ``s3a://bucket/prefix``), for messages."""
        ...

    def location(self, key: str) -> str:
        """Where ``key`` is, as a user would name it in a message (a path, or ``s3a://bucket/prefix/key``)."""
        ...

    def read(self, key: str) -> Versioned | None:
        """The object and its version, or None when it does not exist."""
        ...

    def create(self, key: str, data: bytes) -> Versioned:
        """Write ``key`` only if it does not exist; ``AlreadyExists`` otherwise."""
        ...

    def replace(self, key: str, data: bytes, *, expected: str) -> Versioned:
        """Overwrite ``key`` only if its version is still ``expected``; ``Conflict`` otherwise (changed or gone)."""
        ...

    def delete(self, key: str, *, expected: str) -> None:
        """Delete ``key`` only if its version is still ``expected``; ``Conflict`` otherwise (changed or gone)."""
        ...

    def list(self, prefix: str) -> list[str]:
        """Every key under ``prefix`` (a "directory", with or without its trailing ``/``), sorted."""
        ...


class LocalJobStore:
    """A job root that is a directory: a local disk or a mounted shared volume (ReadWriteMany).

    Versions are SHA-256 digests of the content, not modification times: a timestamp's granularity (a second
    on some network filesystems) could let two different writes share a version. Every write goes through a
    temporary file in the target's directory, so no reader sees half an object; no write takes a lock, so a
    crashed writer leaves at worst a ``.*.tmp``/``.*.aside`` file, never a held lock.
    """

    def __init__(self, root: str | os.PathLike[str]):
        self.root = Path(root)

    def __repr__(self) -> str:
        return f"LocalJobStore({str(self.root)!r})"

    def path(self, key: str) -> Path:
        """The file of ``key``; a key is relative and never leaves the root."""
        parts = key.split("/")
        if not key or key.startswith("/") or any(p in ("", ".", "..") for p in parts[:-1]) or parts[-1] in (".", ".."):
            raise ValueError(f"job store key {key!r} must be a relative path inside the root")
        return self.root.joinpath(*[p for p in parts if p])

    def describe(self) -> str:
        return str(self.root)

    def location(self, key: str) -> str:
        return str(self.path(key))

    def read(self, key: str) -> Versioned | None:
        try:
            data = self.path(key).read_bytes()
        except (FileNotFoundError, NotADirectoryError):
            return None
        return Versioned(data, _digest(data))

    def create(self, key: str, data: bytes) -> Versioned:
        try:
            atomic_write_bytes(self.path(key), data, overwrite=False)
        except FileExistsError:
            raise AlreadyExists(self.location(key)) from None
        return Versioned(data, _digest(data))

    def replace(self, key: str, data: bytes, *, expected: str) -> Versioned:
        self._take_aside_if(key, expected, lambda aside: atomic_write_bytes(self.path(key), data, overwrite=False))
        return Versioned(data, _digest(data))

    def delete(self, key: str, *, expected: str) -> None:
        self._take_aside_if(key, expected, lambda aside: None)

    def list(self, prefix: str) -> list[str]:
        base = self.path(prefix.rstrip("/")) if prefix.strip("/") else self.root
        if not base.is_dir():
            return []
        return sorted(p.relative_to(self.root).as_posix() for p in base.rglob("*")
                      if p.is_file() and not _is_scratch(p.name))

    def _take_aside_if(self, key: str, expected: str, then: Callable[[Path], None]) -> None:
        """Compare and swap without a lock: rename the current file aside (of concurrent renamers exactly one
        gets it), compare what was taken, then run ``then`` (which links the new object in, exclusively) or put
        the old one back. A creator that slips in while the key is aside wins, and this call reports Conflict."""
        path = self.path(key)
        aside = path.with_name(f".{path.name}.{os.getpid()}.{os.urandom(4).hex()}.aside")
        try:
            os.rename(path, aside)
        except (FileNotFoundError, NotADirectoryError):
            raise Conflict(f"{self.location(key)} is gone") from None
        try:
            if _digest(aside.read_bytes()) != expected:
                with contextlib.suppress(FileExistsError):  # someone created it meanwhile: theirs stays
                    os.link(aside, path)
                raise Conflict(f"{self.location(key)} changed")
            try:
                then(aside)
            except FileExistsError:
                raise Conflict(f"{self.location(key)} was created by another writer meanwhile") from None
        finally:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(aside)


def _digest(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _is_scratch(name: str) -> bool:
    """Files of an unfinished write (``atomic_write_bytes``' temporary, a compare-and-swap's aside)."""
    return name.startswith(".") and (name.endswith(".tmp") or name.endswith(".aside"))
