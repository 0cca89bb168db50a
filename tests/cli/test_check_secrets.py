"""Secrets in plans: references are kept and resolved where the job runs; check catches what restore would not."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from planengine import cli
from planengine.catalog.objects import CatalogTable, ObjectIdentifier
from planengine.connectors.factories import FactoryContext
from planengine.errors import OptionError
from planengine.ir.schema import Column, ResolvedSchema
from planengine.ir.types import INT

SCRIPT = """
CREATE TABLE src (k STRING) WITH ('connector' = 'datagen');
CREATE TABLE views (k STRING, n BIGINT, PRIMARY KEY (k) NOT ENFORCED)
  WITH ('connector' = 'jdbc', 'url' = 'jdbc:postgresql://db/shop', 'table-name' = 'views',
        'username' = 'shop', 'password' = '{password}');
INSERT INTO views SELECT k, COUNT(*) FROM src GROUP BY k;
"""


def compile_with(tmp_path: Path, password: str) -> Path:
    script = tmp_path / "job.sql"
    script.write_text(SCRIPT.replace("{password}", password))
    plan = tmp_path / "plan.json"
    assert cli.main(["compile", str(script), "-o", str(plan), "--force"]) == 0
    return plan


def check(plan: Path, capsys: pytest.CaptureFixture[str], *extra: str) -> tuple[int, dict]:
    code = cli.main(["check", "--plan", str(plan), "--json", *extra])
    return code, json.loads(capsys.readouterr().out)


def test_a_reference_is_stored_and_an_unset_variable_is_a_warning(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    plan = compile_with(tmp_path, "${env:PG_PASSWORD}")
    assert '"password":"${env:PG_PASSWORD}"' in plan.read_text()
    monkeypatch.delenv("PG_PASSWORD", raising=False)
    code, report = check(plan, capsys)
    assert code == 0 and report["status"] == "compatible"
    [warning] = report["reasons"]
    assert warning["message"].endswith("option 'password' reads the environment variable PG_PASSWORD, which is not "
                                       "set here")
    monkeypatch.setenv("PG_PASSWORD", "s3cret")
    assert check(plan, capsys) == (0, {**report, "reasons": []})


def test_a_masked_secret_without_a_catalog_is_incompatible(tmp_path: Path,
                                                           capsys: pytest.CaptureFixture[str]) -> None:
    plan = compile_with(tmp_path, "hunter2")
    assert "hunter2" not in plan.read_text() and '"password":"******"' in plan.read_text()
    code, report = check(plan, capsys)
    assert code == 4 and report["status"] == "incompatible"
    assert "secret option(s) password are masked in the plan and the catalog does not provide them" in \
        report["reasons"][0]["message"]
    catalog = tmp_path / "catalog.sql"
    catalog.write_text(SCRIPT.replace("{password}", "hunter2").split("INSERT")[0])
    code, report = check(plan, capsys, "--catalog", str(catalog))
    assert (code, report["status"]) == (0, "compatible")


def test_connectors_read_references_from_the_environment_at_run_time(monkeypatch: pytest.MonkeyPatch) -> None:
    table = CatalogTable(ResolvedSchema((Column("a", INT),)),
                         (("password", "${env:DB_PASS}"), ("url", "jdbc:postgresql://${env:DB_HOST}/x")))
    identifier = ObjectIdentifier("c", "d", "t")
    monkeypatch.setenv("DB_HOST", "db.internal")
    monkeypatch.delenv("DB_PASS", raising=False)
    planning = FactoryContext(identifier, table)
    assert planning.options == {"password": "${env:DB_PASS}", "url": "jdbc:postgresql://db.internal/x"}
    running = FactoryContext(identifier, table, require_environment=True)
    with pytest.raises(OptionError, match="option 'password' reads the environment variable DB_PASS, which is not set"):
        _ = running.options
    monkeypatch.setenv("DB_PASS", "s3cret")
    assert running.options["password"] == "s3cret"
