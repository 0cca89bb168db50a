"""Where the file catalog keeps each object: two directory layouts, one index.

*Nested* (what the catalog writes)::

    <root>/<database>/database.yaml          optional: comment and properties
    <root>/<database>/tables/<name>.yaml
    <root>/<database>/views/<name>.yaml
    <root>/<database>/functions/<name>.yaml

*Flat* (read only as written by hand; what a Kubernetes ConfigMap can hold, since its keys cannot contain
``/``)::

    <root>/<database>.<name>.table.yaml      (also .view.yaml, .function.yaml; .yml accepted)
    <root>/<database>.database.yaml

In the flat form the database is everything before the first dot, so database names there cannot contain
dots (object names can). Entries starting with ``.`` are skipped: they are temporary files of atomic
writes and the ``..data`` links of a mounted ConfigMap. Other files (``README.md``, ``catalog.sql``) are
ignored; a ``.yaml`` file in no known place is an error, so a misplaced table is reported instead of
silently missing. The directory is rescanned on every lookup, so edits (and ConfigMap updates, which the
kubelet swaps in atomically) are seen without a restart.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from planengine.catalog.base import ObjectKind, normalize_function_name
from planengine.errors import CatalogError, SourceLocation

YAML_SUFFIXES = (".yaml", ".yml")
KIND_DIRECTORIES: dict[ObjectKind, str] = {"table": "tables", "view": "views", "function": "functions"}
DATABASE_FILE = "database.yaml"
_LAYOUT_HINT = (
    "name flat files <database>.<name>.table.yaml (or .view.yaml, .function.yaml, <database>.database.yaml), "
    "or nest them as <database>/tables/<name>.yaml (views/, functions/); see docs/catalogs.md"
)


@dataclass(frozen=True)
class Entry:
    database: str
    kind: ObjectKind
    name: str
    path: Path
    layout: Literal["nested", "flat"]


@dataclass
class CatalogIndex:
    """What one scan of the directory found."""

    databases: set[str] = field(default_factory=set)
    database_files: dict[str, Path] = field(default_factory=dict)
    flat_database_files: dict[str, Path] = field(default_factory=dict)
    entries: dict[tuple[str, str, str], Entry] = field(default_factory=dict)  # (database, namespace, name)

    def find(self, database: str, kind: ObjectKind, name: str) -> Entry | None:
        entry = self.entries.get((database, _namespace(kind), name))
        return entry if entry is not None and entry.kind == kind else None

    def names(self, database: str, kind: ObjectKind) -> list[str]:
        return [e.name for e in self.entries.values() if e.database == database and e.kind == kind]

    def in_database(self, database: str) -> list[Entry]:
        return [e for e in self.entries.values() if e.database == database]

    def add(self, entry: Entry) -> None:
        key = (entry.database, _namespace(entry.kind), entry.name)
        other = self.entries.get(key)
        if other is not None:
            raise CatalogError(
                f"`{entry.database}`.`{entry.name}` is defined twice: {other.path} ({other.kind}) and "
                f"{entry.path} ({entry.kind})",
                location=SourceLocation(source=str(entry.path)),
                hint="tables and views share one namespace; delete one of the two files",
            )
        self.entries[key] = entry
        self.databases.add(entry.database)


def _namespace(kind: ObjectKind) -> str:
    return "function" if kind == "function" else "relation"


def _hidden(path: Path) -> bool:
    return path.name.startswith(".")


def _is_yaml(path: Path) -> bool:
    return path.suffix in YAML_SUFFIXES


def _object_name(kind: ObjectKind, name: str) -> str:
    return normalize_function_name(name) if kind == "function" else name


def scan(root: Path) -> CatalogIndex:
    index = CatalogIndex()
    if not root.is_dir():
        return index
    for entry in sorted(root.iterdir()):
        if _hidden(entry):
            continue
        if entry.is_dir():
            _scan_database_directory(entry, index)
        elif entry.is_file() and _is_yaml(entry):
            _scan_flat_file(entry, index)
    return index


def _scan_database_directory(directory: Path, index: CatalogIndex) -> None:
    database = directory.name
    index.databases.add(database)
    kinds = {d: k for k, d in KIND_DIRECTORIES.items()}
    for child in sorted(directory.iterdir()):
        if _hidden(child):
            continue
        if child.is_file() and child.stem == "database" and _is_yaml(child):
            index.database_files[database] = child
        elif child.is_dir() and child.name in kinds:
            kind = kinds[child.name]
            for file in sorted(child.iterdir()):
                if _hidden(file) or not file.is_file():
                    continue
                if not _is_yaml(file):
                    continue
                index.add(Entry(database, kind, _object_name(kind, file.stem), file, "nested"))
        elif child.is_file() and _is_yaml(child):
            raise CatalogError(
                f"catalog file {child} is not in a known place",
                location=SourceLocation(source=str(child)),
                hint=f"move it to {directory}/tables/{child.name} (or views/, functions/); {_LAYOUT_HINT}",
            )


def _scan_flat_file(file: Path, index: CatalogIndex) -> None:
    stem = file.name[: -len(file.suffix)]
    head, _, kind = stem.rpartition(".")
    if kind == "database" and head and "." not in head:
        index.databases.add(head)
        index.flat_database_files[head] = file
        return
    database, _, name = head.partition(".")
    if kind not in KIND_DIRECTORIES or not database or not name:
        raise CatalogError(
            f"cannot tell which object catalog file {file.name} holds",
            location=SourceLocation(source=str(file)),
            hint=_LAYOUT_HINT,
        )
    index.add(Entry(database, kind, _object_name(kind, name), file, "flat"))  # type: ignore[arg-type]


def nested_path(root: Path, database: str, kind: ObjectKind, name: str) -> Path:
    return root / database / KIND_DIRECTORIES[kind] / f"{name}.yaml"


def check_storable_name(name: str, what: str) -> None:
    """Names become file names: refuse the few that cannot be one (instead of escaping them unreadably)."""
    if not name or name.startswith(".") or any(c in name for c in "/\\\0"):
        raise CatalogError(
            f"the file catalog cannot store a {what} named `{name}`",
            hint="names stored in a file catalog cannot be empty, start with '.', or contain '/', '\\' or NUL; "
            "rename it, or create it in a memory catalog or as TEMPORARY",
        )
