"""The file catalog: YAML a person can read and write, both layouts, secrets, read-only mounts, errors."""

from __future__ import annotations

import errno
import os
import stat
import tempfile
import textwrap
from pathlib import Path

import pytest

from planengine.catalog.file_catalog import FileCatalog
from planengine.catalog.objects import CatalogDatabase, CatalogFunction
from planengine.errors import CatalogError


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(textwrap.dedent(text).lstrip("\n"))
    return path


@pytest.fixture
def root(tmp_path) -> Path:
    return tmp_path / "catalog"


def open_catalog(root: Path, **kwargs) -> FileCatalog:
    kwargs.setdefault("environ", {})
    return FileCatalog(root, name="files", **kwargs)


# --- format ------------------------------------------------------------------------------------------
def test_a_small_table_is_written_as_this_exact_yaml(root, small_table):
    catalog = open_catalog(root)
    table = small_table({"connector": "datagen", "rows-per-second": "20", "fields.id.kind": "sequence"}, "clicks")
    catalog.create_table(("default", "clicks"), table)
    assert (root / "default" / "tables" / "clicks.yaml").read_text() == textwrap.dedent("""\
        kind: table
        name: clicks
        comment: clicks
        columns:
          - name: id
            type: BIGINT NOT NULL
          - name: name
            type: STRING
        options:
          connector: datagen
          fields.id.kind: sequence
          rows-per-second: '20'
        """)


def test_rich_table_yaml_states_only_what_a_person_writes(root, rich_table):
    open_catalog(root).create_table(("default", "orders"), rich_table)
    text = (root / "default" / "tables" / "orders.yaml").read_text()
    # the rowtime / proctime markers and PK nullability are derived on read, not written
    assert "*ROWTIME*" not in text and "*PROCTIME*" not in text
    assert "  - name: ts\n    type: TIMESTAMP(3)\n" in text
    assert "watermark:\n  column: ts\n  expression: \"`ts` - INTERVAL '5' SECOND\"\n" in text
    assert "primaryKey: [id, dt]\npartitionedBy: [dt]\n" in text
    assert "primaryKeyName" not in text  # PK_id_dt is Flink's generated name
    assert "    metadata:\n      from: offset\n      virtual: true\n" in text
    assert "comment: |-\n  orders from the shop\n  second line\n" in text
    assert text.index("connector: kafka") < text.index("format: json")  # connector first, then sorted


def test_writing_is_deterministic(root, tmp_path, rich_table):
    open_catalog(root).create_table(("default", "orders"), rich_table)
    other = tmp_path / "other"
    open_catalog(other).create_table(("default", "orders"), rich_table)
    path = Path("default/tables/orders.yaml")
    assert (root / path).read_bytes() == (other / path).read_bytes()


def test_objects_persist_across_instances(root, rich_table, view, function):
    catalog = open_catalog(root)
    catalog.create_database("sales", CatalogDatabase(comment="sales team", properties=(("owner", "ann"),)))
    catalog.create_table(("sales", "orders"), rich_table)
    catalog.create_table(("sales", "per_id"), view)
    catalog.create_function(("sales", "Shout"), function)

    reopened = open_catalog(root)
    assert reopened.list_databases() == ["default", "sales"]
    assert reopened.get_database("sales") == CatalogDatabase("sales team", (("owner", "ann"),))
    assert reopened.get_table(("sales", "orders")) == rich_table
    assert reopened.get_table(("sales", "per_id")) == view
    assert reopened.get_function(("sales", "shout")) == function
    assert sorted(p.relative_to(root).as_posix() for p in root.rglob("*") if p.is_file()) == [
        "sales/database.yaml",
        "sales/functions/shout.yaml",
        "sales/tables/orders.yaml",
        "sales/views/per_id.yaml",
    ]


def test_hand_written_table_gets_flinks_derived_attributes(root):
    write(root / "default" / "tables" / "clicks.yaml", """
        kind: table
        columns:
          - {name: user_id, type: INT}
          - {name: click_time, type: TIMESTAMP(3)}
          - {name: pt, type: TIMESTAMP_LTZ(3) NOT NULL, expression: proctime()}
        watermark: {column: click_time, expression: click_time - INTERVAL '5' SECOND}
        primaryKey: user_id
        options:
          connector: datagen
          rows-per-second: 20
          fields.user_id.min: 1
          bounded: true
        """)
    table = open_catalog(root).get_table(("default", "clicks"))
    types = {c.name: str(c.type) for c in table.schema.columns}
    assert types == {
        "user_id": "INT NOT NULL",
        "click_time": "TIMESTAMP(3) *ROWTIME*",
        "pt": "TIMESTAMP_LTZ(3) NOT NULL *PROCTIME*",
    }
    assert table.schema.primary_key.name == "PK_user_id"
    assert table.options_dict == {
        "connector": "datagen", "rows-per-second": "20", "fields.user_id.min": "1", "bounded": "true",
    }


# --- layouts -----------------------------------------------------------------------------------------
def test_flat_configmap_layout_is_read(root, rich_table):
    """A ConfigMap mounted as a directory: keys are symlinks into a hidden ..data directory."""
    data = root / "..2026_01_01_00_00_00.000000001"
    write(data / "default.clicks.table.yaml", """
        kind: table
        name: clicks
        columns:
          - name: user_id
            type: INT
        options:
          connector: datagen
        """)
    write(data / "sales.per_user.view.yaml", """
        columns: [{name: user_id, type: INT}]
        query: SELECT user_id FROM clicks
        """)
    write(data / "sales.Shout.function.yaml", "className: udfs.Shout\n")
    write(data / "sales.database.yaml", "comment: the sales team\n")
    write(data / "catalog.sql", "-- not a catalog object; ignored\n")
    (root / "..data").symlink_to(data.name)
    for key in ("default.clicks.table.yaml", "sales.per_user.view.yaml", "sales.Shout.function.yaml",
                "sales.database.yaml", "catalog.sql"):
        (root / key).symlink_to(Path("..data") / key)

    catalog = open_catalog(root, read_only=True)
    assert catalog.list_databases() == ["default", "sales"]
    assert catalog.list_tables("default") == ["clicks"]
    assert catalog.get_table(("default", "clicks")).options_dict == {"connector": "datagen"}
    assert catalog.list_views("sales") == ["per_user"]
    assert catalog.get_table(("sales", "per_user")).query == "SELECT user_id FROM clicks"
    assert catalog.get_function(("sales", "shout")).class_name == "udfs.Shout"
    assert catalog.get_database("sales").comment == "the sales team"


def test_object_names_may_contain_dots_in_the_flat_layout(root):
    write(root / "db.events.v2.table.yaml", "columns: [{name: a, type: INT}]\n")
    assert open_catalog(root).list_tables("db") == ["events.v2"]


def test_changing_a_flat_object_rewrites_its_own_file(root, small_table):
    write(root / "default.clicks.table.yaml", "columns: [{name: a, type: INT}]\noptions: {connector: datagen}\n")
    catalog = open_catalog(root)
    catalog.alter_table(("default", "clicks"), small_table({"connector": "print"}))
    assert not (root / "default" / "tables").exists()
    assert "connector: print" in (root / "default.clicks.table.yaml").read_text()
    catalog.drop_table(("default", "clicks"))
    assert not (root / "default.clicks.table.yaml").exists()


def test_an_object_defined_in_both_layouts_is_an_error(root):
    write(root / "default.clicks.table.yaml", "columns: [{name: a, type: INT}]\n")
    write(root / "default" / "views" / "clicks.yaml", "columns: [{name: a, type: INT}]\nquery: SELECT 1\n")
    with pytest.raises(CatalogError) as error:
        open_catalog(root).list_tables("default")
    assert "`default`.`clicks` is defined twice" in error.value.message
    assert "default.clicks.table.yaml" in error.value.message and "views/clicks.yaml" in error.value.message


@pytest.mark.parametrize("stray", ["orders.yaml", "default/orders.yaml"])
def test_a_yaml_file_in_no_known_place_is_reported(root, stray):
    write(root / stray, "columns: []\n")
    with pytest.raises(CatalogError) as error:
        open_catalog(root).list_databases()
    assert stray.split("/")[-1] in error.value.render()
    assert "<database>.<name>.table.yaml" in error.value.hint


def test_names_that_cannot_be_file_names_are_refused(root, small_table):
    with pytest.raises(CatalogError, match="cannot store a table named `a/b`"):
        open_catalog(root).create_table(("default", "a/b"), small_table())


# --- secrets and environment references --------------------------------------------------------------
def test_plain_secrets_are_never_written(root, small_table):
    catalog = open_catalog(root)
    table = small_table({"connector": "jdbc", "url": "jdbc:postgresql://db/shop", "Password": "hunter2"})
    with pytest.raises(CatalogError) as error:
        catalog.create_table(("default", "orders"), table)
    assert "option(s) 'Password' hold a secret in plain text" in error.value.message
    assert "'Password' = '${env:ORDERS_PASSWORD}'" in error.value.hint
    assert not list(root.rglob("*.yaml"))


def test_secret_references_are_stored_and_resolved_on_read(root, small_table):
    writer = open_catalog(root, environ={})
    options = {"connector": "jdbc", "url": "jdbc:postgresql://${env:PG_HOST}/shop", "password": "${env:PG_PASSWORD}"}
    writer.create_table(("default", "orders"), small_table(options))
    text = (root / "default" / "tables" / "orders.yaml").read_text()
    assert "password: ${env:PG_PASSWORD}\n" in text

    reader = open_catalog(root, environ={"PG_PASSWORD": "hunter2", "PG_HOST": "pg"})
    table = reader.get_table(("default", "orders"))
    assert table.options_dict["password"] == "hunter2"
    assert table.options_dict["url"] == "jdbc:postgresql://pg/shop"

    # read, change something else, write back: the references survive, the secret is not written
    reader.alter_table(("default", "orders"), table.with_options({**table.options_dict, "table-name": "orders"}))
    text = (root / "default" / "tables" / "orders.yaml").read_text()
    assert "hunter2" not in text and "password: ${env:PG_PASSWORD}\n" in text
    assert "url: jdbc:postgresql://${env:PG_HOST}/shop\n" in text


def test_a_missing_environment_variable_is_named(root):
    write(root / "default" / "tables" / "orders.yaml", """
        columns: [{name: id, type: INT}]
        options:
          connector: jdbc
          password: ${env:PG_PASSWORD}
        """)
    with pytest.raises(CatalogError) as error:
        open_catalog(root).get_table(("default", "orders"))
    assert error.value.message == "option 'password' refers to environment variable PG_PASSWORD, which is not set"
    assert error.value.location.line == 4
    assert error.value.location.source.endswith("default/tables/orders.yaml")


def test_the_process_environment_is_used_by_default(root, monkeypatch):
    write(root / "default" / "tables" / "t.yaml", "columns: [{name: id, type: INT}]\noptions: {token: '${env:T}'}\n")
    monkeypatch.setenv("T", "s3cr3t")
    assert FileCatalog(root).get_table(("default", "t")).options_dict == {"token": "s3cr3t"}


# --- read-only ---------------------------------------------------------------------------------------
def test_read_only_option_allows_reads_and_refuses_writes(root, small_table):
    open_catalog(root).create_table(("default", "orders"), small_table())
    catalog = open_catalog(root, read_only=True)
    assert catalog.read_only
    assert catalog.get_table(("default", "orders")) == small_table()
    with pytest.raises(CatalogError) as error:
        catalog.create_table(("default", "clicks"), small_table())
    assert error.value.message == (
        "cannot CREATE TABLE `files`.`default`.`clicks`: catalog `files` is read-only because it was opened with "
        "'read-only' = 'true'"
    )
    assert "TEMPORARY" in error.value.hint
    for change in (
        lambda: catalog.drop_table(("default", "orders")),
        lambda: catalog.create_database("x"),
        lambda: catalog.create_function(("default", "f"), CatalogFunction("m.F")),
    ):
        with pytest.raises(CatalogError, match="is read-only"):
            change()
    assert catalog.table_exists(("default", "orders"))


def test_an_unwritable_directory_is_detected_by_trying(root, small_table):
    """As root, chmod does not stop writes: the catalog must agree with what the filesystem really does."""
    open_catalog(root).create_table(("default", "orders"), small_table())
    root.chmod(stat.S_IRUSR | stat.S_IXUSR)
    try:
        try:
            (root / ".probe").touch()
            (root / ".probe").unlink()
            writable = True
        except OSError:
            writable = False
        catalog = open_catalog(root)
        assert catalog.read_only is (not writable)
        assert catalog.get_table(("default", "orders")) == small_table()
        if not writable:
            with pytest.raises(CatalogError, match=r"directory .* is not writable \(a mounted ConfigMap"):
                catalog.create_database("x")
    finally:
        root.chmod(stat.S_IRWXU)


def test_a_missing_directory_is_created_unless_read_only(tmp_path):
    assert open_catalog(tmp_path / "new" / "dir").list_databases() == ["default"]
    assert (tmp_path / "new" / "dir").is_dir()
    with pytest.raises(CatalogError, match=r"catalog directory .*/missing does not exist"):
        open_catalog(tmp_path / "missing", read_only=True)


# --- errors in hand-written files --------------------------------------------------------------------
def test_malformed_yaml_names_file_line_and_problem(root):
    path = write(root / "default" / "tables" / "orders.yaml", """
        kind: table
        columns:
          - name: id
            type: BIGINT
           - name: broken
        """)
    with pytest.raises(CatalogError) as error:
        open_catalog(root).get_table(("default", "orders"))
    assert error.value.location.source == str(path)
    assert error.value.location.line == 5
    assert str(error.value).startswith(f"{path}, line 5, column 4: malformed YAML: ")


def test_duplicate_keys_are_an_error(root):
    write(root / "default" / "tables" / "orders.yaml", """
        columns: [{name: id, type: INT}]
        options:
          connector: datagen
          connector: print
        """)
    with pytest.raises(CatalogError, match="duplicate key 'connector'") as error:
        open_catalog(root).get_table(("default", "orders"))
    assert error.value.location.line == 4


@pytest.mark.parametrize(
    ("text", "line", "message"),
    [
        ("columns: [{name: id, type: INT}]\nprimary_key: [id]\n", 2,
         "unknown key `primary_key` in a table; did you mean `primaryKey`?"),
        ("columns:\n  - name: id\n    type: INTEGR\n", 3, "column `id`: cannot parse type 'INTEGR'"),
        ("columns:\n  - name: total\n    expression: a * b\n", 2, "column `total` has no `type`"),
        ("columns: [{name: ts, type: TIMESTAMP(3)}]\nwatermark: {column: tss, expression: ts}\n", 2,
         "watermark column `tss` is not a column of this table; did you mean `ts`?"),
        ("kind: view\ncolumns: [{name: id, type: INT}]\n", 1, "`kind: view` in a file the layout reserves for a table"),
        ("name: order\ncolumns: [{name: id, type: INT}]\n", 1,
         "the file declares name `order` but its file name says `orders`"),
        ("columns: []\n", 1, "`columns` must be a non-empty list"),
        ("- just a list\n", 1, "expected a mapping describing a table"),
        ("columns: [{name: id, type: INT}]\noptions: {format: [json]}\n", 2, "options `format` must be a single value"),
    ],
)
def test_structural_mistakes_name_the_line(root, text, line, message):
    path = write(root / "default" / "tables" / "orders.yaml", text)
    with pytest.raises(CatalogError) as error:
        open_catalog(root).get_table(("default", "orders"))
    assert error.value.message.startswith(message), error.value.message
    assert (error.value.location.source, error.value.location.line) == (str(path), line)


def test_files_are_written_atomically_without_leftovers(root, small_table):
    catalog = open_catalog(root)
    catalog.create_table(("default", "t"), small_table(comment="one"))
    for comment in ("two", "three"):
        catalog.alter_table(("default", "t"), small_table(comment=comment))
    assert sorted(os.listdir(root / "default" / "tables")) == ["t.yaml"]
    assert catalog.get_table(("default", "t")).comment == "three"


def test_a_read_only_filesystem_is_detected_even_as_root(root, small_table, monkeypatch):
    """Root ignores permission bits but not a read-only mount (EROFS), which is what a ConfigMap volume is."""
    open_catalog(root).create_table(("default", "orders"), small_table())

    def read_only_filesystem(*args, **kwargs):
        raise OSError(errno.EROFS, "Read-only file system")

    monkeypatch.setattr(tempfile, "NamedTemporaryFile", read_only_filesystem)
    catalog = open_catalog(root)
    assert catalog.read_only
    assert catalog.get_table(("default", "orders")) == small_table()
    with pytest.raises(CatalogError) as error:
        catalog.drop_table(("default", "orders"))
    assert "is read-only because directory" in error.value.message
    assert "is not writable (a mounted ConfigMap is always read-only)" in error.value.message
