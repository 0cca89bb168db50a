"""The CLI as a user meets it first: --version, help for every argument, and errors that say what to do."""

from __future__ import annotations

import argparse
from pathlib import Path

import pytest

from planengine import cli
from planengine.version import ENGINE_VERSION, PLAN_FORMAT_VERSION

SCRIPT = """
CREATE TABLE src (k STRING) WITH ('connector' = 'datagen');
CREATE TABLE dst (k STRING) WITH ('connector' = 'blackhole');
INSERT INTO dst SELECT k FROM src;
"""


def test_version(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as done:
        cli.main(["--version"])
    assert done.value.code == 0
    out = capsys.readouterr().out
    assert out.startswith(f"planengine {ENGINE_VERSION} (plan format {PLAN_FORMAT_VERSION}, Spark 4.")


def test_help_is_a_sentence_for_users_not_a_docstring(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        cli.main(["--help"])
    out = capsys.readouterr().out
    assert "Streaming SQL that survives engine upgrades" in out
    assert "``" not in out and "DESIGN" not in out and "entry point" not in out
    assert "Exit codes: 0" in out


def _subcommands() -> dict[str, argparse.ArgumentParser]:
    parser = cli.build_parser()
    action = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    return dict(action.choices)


def test_every_command_and_argument_has_help() -> None:
    missing = []
    for name, sub in _subcommands().items():
        if not sub.description:
            missing.append(f"{name}: description")
        for action in sub._actions:
            if not isinstance(action, argparse._HelpAction) and not action.help:
                missing.append(f"{name} {'/'.join(action.option_strings) or action.dest}")
    assert missing == []


def test_compile_over_an_existing_plan_suggests_force(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    script = tmp_path / "job.sql"
    script.write_text(SCRIPT)
    plan = tmp_path / "plan.json"
    assert cli.main(["compile", str(script), "-o", str(plan)]) == 0
    first = plan.read_text()
    assert cli.main(["compile", str(script), "-o", str(plan)]) == 2
    err = capsys.readouterr().err
    assert f"plan file {plan} already exists" in err and "add --force to overwrite it" in err
    assert cli.main(["compile", str(script), "-o", str(plan), "--force"]) == 0
    assert plan.read_text() == first


def test_snapshots_list_on_a_missing_job_root_is_an_error(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    missing = tmp_path / "nope"
    assert cli.main(["snapshots", "list", "--job-root", str(missing)]) == 2
    assert f"job root {missing} does not exist" in capsys.readouterr().err
    assert not missing.exists()
    (tmp_path / "empty").mkdir()
    assert cli.main(["snapshots", "list", "--job-root", str(tmp_path / "empty")]) == 0
    assert capsys.readouterr().out == ""


@pytest.mark.parametrize("uri", ["gs://bucket/jobs", "hdfs://namenode/jobs"])
def test_a_job_root_that_is_not_a_directory_is_refused_before_anything_is_written(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, uri: str) -> None:
    """``Path("s3a://bucket/x")`` is the relative directory ``s3a:/bucket/x``: a job root meant for a bucket was once
    created under the working directory and the job ran there, unseen by anyone looking in the bucket."""
    monkeypatch.chdir(tmp_path)
    script = tmp_path / "job.sql"
    script.write_text(SCRIPT)
    assert cli.main(["run", "--script", str(script), "--job-root", uri]) == 2
    err = capsys.readouterr().err
    assert f"job root {uri!r} is on" in err and "must be a local or mounted directory" in err
    assert "--job-root" in err  # the hint says what to give instead
    assert cli.main(["snapshots", "list", "--job-root", uri]) == 2
    assert sorted(p.name for p in tmp_path.iterdir()) == ["job.sql"]


def test_an_s3a_job_root_on_an_unreachable_store_is_one_line_naming_the_endpoint(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    """``s3a://`` job roots are stores now (docs/object-store.md); one that cannot be reached fails before anything is
    written, here or in the working directory (``Path("s3a://b/x")`` once made a local ``s3a:`` directory)."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("PLANENGINE_S3_ENDPOINT", "http://127.0.0.1:9")  # discard: nothing listens
    script = tmp_path / "job.sql"
    script.write_text(SCRIPT)
    assert cli.main(["run", "--script", str(script), "--job-root", "s3a://bucket/jobs/clicks"]) == 2
    err = capsys.readouterr().err
    assert "cannot reach the object store at http://127.0.0.1:9" in err and "PLANENGINE_S3_ENDPOINT" in err
    assert "Traceback" not in err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["job.sql"]


def test_a_file_uri_job_root_is_the_directory_it_names(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "root").mkdir()
    assert cli.main(["snapshots", "list", "--job-root", (tmp_path / "root").as_uri()]) == 0
    assert capsys.readouterr().out == ""
