"""``planengine job-root read|write``: what the operator's tool pods run on a job root that has no file to ``cat``.

The same command over a directory and over the local S3 server (``s3_store``, no Spark): the operator reads the
``--json`` answer out of a container log, so a missing key must be an answer (``exists: false``, exit 0) and a
store that fails an error (exit 2), never an empty file.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from planengine import cli
from tests.fixtures.object_store import S3Store

PLAN = {"planId": "a" * 64, "nodes": []}


@pytest.fixture(params=["directory", "bucket"])
def root(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    if request.param == "directory":
        return str(tmp_path / "root")
    s3: S3Store = request.getfixturevalue("s3_store")
    return s3.uri(s3.prefix("job-root-cmd"))


def json_answer(capsys: pytest.CaptureFixture[str]) -> dict:
    out = capsys.readouterr().out
    assert len(out.splitlines()) == 1, out  # one line, found in a log that holds warnings too
    return json.loads(out)


def test_a_written_file_reads_back_and_a_missing_one_is_an_answer(root: str, tmp_path: Path,
                                                                  capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["job-root", "read", "runs/r1/plan.json", "--job-root", root, "--json"]) == 0
    assert json_answer(capsys) == {"key": "runs/r1/plan.json", "exists": False}
    source = tmp_path / "content"
    for plan in (PLAN, {**PLAN, "planId": "b" * 64}):  # created, then replaced whole
        source.write_text(json.dumps(plan, indent=2) + "\n")
        assert cli.main(["job-root", "write", "runs/r1/plan.json", "--job-root", root, "--from", str(source)]) == 0
        assert json_answer(capsys) == {"key": "runs/r1/plan.json", "written": True}
        assert cli.main(["job-root", "read", "runs/r1/plan.json", "--job-root", root, "--json"]) == 0
        answer = json_answer(capsys)
        assert answer["exists"] and json.loads(answer["text"]) == plan
    assert cli.main(["job-root", "read", "runs/r1/plan.json", "--job-root", root]) == 0
    assert capsys.readouterr().out == source.read_text()  # without --json: the bytes as they are


def test_a_key_outside_the_root_or_a_missing_file_without_json_is_a_user_error(
        root: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["job-root", "read", "../other/plan.json", "--job-root", root, "--json"]) == 2
    assert "inside the root" in capsys.readouterr().err
    assert cli.main(["job-root", "read", "plan.json", "--job-root", root]) == 2
    assert "has no plan.json" in capsys.readouterr().err


def test_a_missing_bucket_is_an_error_not_a_missing_file(s3_store: S3Store,
                                                         capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["job-root", "read", "plan.json", "--job-root", "s3a://no-such-bucket-42/a", "--json"]) == 2
    captured = capsys.readouterr()
    assert captured.out == "" and "no-such-bucket-42" in captured.err
