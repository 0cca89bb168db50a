"""A persistent catalog: one human-readable YAML file per object in a directory.

Made for definitions shared between jobs and kept in git or a Kubernetes ConfigMap (mounted read-only
into the driver). The layout (nested when written, nested or flat when read) is described in
``planengine.catalog.layout``; the file format in ``planengine.catalog.documents``; secrets are never
written (``planengine.catalog.secret_options``). Writes are atomic (temp file + rename), so a reader never
sees half a file.

The catalog is read-only when opened with ``read_only=True`` (``'read-only' = 'true'``) or when the
directory is not writable — found by trying, since permission bits say nothing when running as root.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Callable, Mapping
from pathlib import Path

from planengine.catalog import layout
from planengine.catalog.base import Catalog, CatalogObject, ObjectKind
from planengine.catalog.documents import DocumentReader, database_to_document, scalar_text, to_document
from planengine.catalog.objects import CatalogDatabase, CatalogTable, ObjectIdentifier
from planengine.catalog.secret_options import plain_secrets, restore_references, suggested_variable
from planengine.catalog.yaml_io import LineMapping, dump_yaml, load_yaml
from planengine.errors import CatalogError, SourceLocation

DEFAULT_FILE_CATALOG_DATABASE = "default"


class FileCatalog(Catalog):
    def __init__(
        self,
        path: str | os.PathLike[str],
        name: str = "file_catalog",
        default_database: str = DEFAULT_FILE_CATALOG_DATABASE,
        read_only: bool = False,
        environ: Mapping[str, str] | None = None,
    ):
        super().__init__(name, default_database)
        self.root = Path(path)
        self._environ = environ  # None: the live process environment, read at lookup time
        self._read_only_reason = self._open(read_only)

    # --- opening -----------------------------------------------------------------------------------
    def _open(self, read_only: bool) -> str | None:
        """Make sure the directory exists and find out whether it can be written; returns why not."""
        if not self.root.is_dir():
            if self.root.exists():
                raise CatalogError(f"catalog path {self.root} is not a directory",
                                   hint="point 'path' at a directory of catalog YAML files")
            if read_only:
                raise CatalogError(f"catalog directory {self.root} does not exist",
                                   hint="create it, or check 'path' (and the ConfigMap volume mount)")
            try:
                self.root.mkdir(parents=True)
            except OSError as e:
                raise CatalogError(f"catalog directory {self.root} does not exist and cannot be created: "
                                   f"{e.strerror}", hint="create it, or check 'path'") from None
        if read_only:
            return "it was opened with 'read-only' = 'true'"
        try:
            with tempfile.NamedTemporaryFile(dir=self.root, prefix=".write-probe-"):
                pass
        except OSError:
            return f"directory {self.root} is not writable (a mounted ConfigMap is always read-only)"
        return None

    @property
    def read_only(self) -> bool:
        return self._read_only_reason is not None

    def _ensure_writable(self, action: str) -> None:
        if self._read_only_reason is not None:
            raise CatalogError(
                f"cannot {action}: catalog `{self.name}` is read-only because {self._read_only_reason}",
                hint="declare the object TEMPORARY instead, or use a writable catalog directory",
            )

    @property
    def environ(self) -> Mapping[str, str]:
        return os.environ if self._environ is None else self._environ

    # --- storage hooks -----------------------------------------------------------------------------
    def _database_names(self) -> list[str]:
        return sorted(layout.scan(self.root).databases | {self.default_database})

    def _load_database(self, name: str) -> CatalogDatabase | None:
        index = layout.scan(self.root)
        if name not in index.databases and name != self.default_database:
            return None
        file = index.database_files.get(name) or index.flat_database_files.get(name)
        if file is None:
            return CatalogDatabase()
        return DocumentReader(file, self.environ).read_database(load_yaml(self._read(file), file))

    def _store_database(self, name: str, database: CatalogDatabase) -> None:
        layout.check_storable_name(name, "database")
        directory = self.root / name
        self._guard(directory, lambda: directory.mkdir(parents=True, exist_ok=True))
        if database.comment or database.properties:
            self._write(directory / layout.DATABASE_FILE, dump_yaml(database_to_document(database)))

    def _delete_database(self, name: str) -> None:
        index = layout.scan(self.root)
        files = [e.path for e in index.in_database(name) if e.layout == "flat"]
        if name in index.flat_database_files:
            files.append(index.flat_database_files[name])
        for file in files:
            self._guard(file, file.unlink)
        directory = self.root / name
        if directory.is_dir():
            self._guard(directory, lambda: shutil.rmtree(directory))

    def _list_objects(self, database: str, kind: ObjectKind) -> list[str]:
        return layout.scan(self.root).names(database, kind)

    def _load_object(self, database: str, kind: ObjectKind, name: str) -> CatalogObject | None:
        entry = layout.scan(self.root).find(database, kind, name)
        if entry is None:
            return None
        document = load_yaml(self._read(entry.path), entry.path)
        return DocumentReader(entry.path, self.environ).read_object(document, kind, name)

    def _store_object(self, database: str, kind: ObjectKind, name: str, obj: CatalogObject) -> None:
        layout.check_storable_name(database, "database")
        layout.check_storable_name(name, kind)
        entry = layout.scan(self.root).find(database, kind, name)
        target = entry.path if entry is not None else layout.nested_path(self.root, database, kind, name)
        if isinstance(obj, CatalogTable):
            obj = self._protect_secrets(ObjectIdentifier(self.name, database, name), obj, target)
        self._write(target, dump_yaml(to_document(name, obj)))

    def _delete_object(self, database: str, kind: ObjectKind, name: str) -> None:
        entry = layout.scan(self.root).find(database, kind, name)
        if entry is not None:
            self._guard(entry.path, entry.path.unlink)

    # --- secrets -----------------------------------------------------------------------------------
    def _protect_secrets(self, identifier: ObjectIdentifier, table: CatalogTable, target: Path) -> CatalogTable:
        """Write references, never values: keep the references the file had, refuse new plain secrets."""
        options = restore_references(table.options_dict, self._stored_options(target), self.environ)
        offending = plain_secrets(options)
        if offending:
            key = offending[0]
            variable = suggested_variable(identifier.name, key)
            raise CatalogError(
                f"table {identifier}: option(s) {', '.join(repr(k) for k in offending)} hold a secret in plain "
                f"text, and catalog `{self.name}` never writes secrets to {target}",
                hint=f"use an environment reference like '{key}' = '${{env:{variable}}}' and set {variable} in "
                "the job's environment (on Kubernetes, from a Secret); or declare the table TEMPORARY",
            )
        return table.with_options(options)

    def _stored_options(self, file: Path) -> dict[str, str]:
        """The raw (unresolved) options of the file being replaced, if it exists and parses."""
        if not file.is_file():
            return {}
        try:
            document = load_yaml(self._read(file), file)
        except CatalogError:
            return {}
        options = document.get("options") if isinstance(document, LineMapping) else None
        if not isinstance(options, dict):
            return {}
        return {k: text for k, v in options.items() if (text := scalar_text(v)) is not None}

    # --- file I/O ----------------------------------------------------------------------------------
    def _read(self, file: Path) -> str:
        try:
            return file.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as e:
            raise CatalogError(f"cannot read catalog file: {e}", location=SourceLocation(source=str(file))) from None

    def _write(self, file: Path, text: str) -> None:
        def write() -> None:
            file.parent.mkdir(parents=True, exist_ok=True)
            fd, temp = tempfile.mkstemp(dir=file.parent, prefix=f".{file.name}.")
            try:
                with os.fdopen(fd, "w", encoding="utf-8") as out:
                    out.write(text)
                os.replace(temp, file)
            except BaseException:
                Path(temp).unlink(missing_ok=True)
                raise

        self._guard(file, write)

    def _guard(self, file: Path, action: Callable[[], object]) -> None:
        """Run a filesystem change; an OS error becomes a CatalogError naming the file."""
        try:
            action()
        except OSError as e:
            raise CatalogError(
                f"catalog `{self.name}` cannot change {file}: {e.strerror or e}",
                hint="check the directory's permissions, or open the catalog with 'read-only' = 'true'",
            ) from None

    def __repr__(self) -> str:
        return f"FileCatalog({str(self.root)!r}, name={self.name!r}, read_only={self.read_only})"
