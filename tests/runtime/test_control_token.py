"""The driver's control token contract: ``--control-token-file`` / ``PLANENGINE_CONTROL_TOKEN_FILE``."""

from pathlib import Path

import pytest

from planengine.cli import main as cli_main
from planengine.errors import UserError
from planengine.runtime.engine.control_token import TOKEN_FILE_ENV, control_token


def test_no_token_file_means_no_token(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(TOKEN_FILE_ENV, raising=False)
    assert control_token() is None


def test_the_environment_names_the_file_and_the_flag_wins(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    env_file, flag_file = tmp_path / "env", tmp_path / "flag"
    env_file.write_text("token-from-the-environment-0001\n")
    flag_file.write_text("token-from-the-flag-000000000001")
    monkeypatch.setenv(TOKEN_FILE_ENV, str(env_file))
    assert control_token() == "token-from-the-environment-0001"
    assert control_token(str(flag_file)) == "token-from-the-flag-000000000001"


@pytest.mark.parametrize("content,fragment", [(None, "cannot read the control token file"),
                                              ("short", "at least 16 characters"),
                                              ("has a space in the middle of it", "without whitespace")])
def test_unusable_token_files_are_user_errors(content: str | None, fragment: str, tmp_path: Path) -> None:
    path = tmp_path / "token"
    if content is not None:
        path.write_text(content)
    with pytest.raises(UserError, match=fragment):
        control_token(str(path))


def test_run_refuses_an_unreadable_token_file_before_starting(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                             capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setenv(TOKEN_FILE_ENV, "")  # run sets it from the flag; monkeypatch removes it afterwards
    code = cli_main(["run", "--plan", str(tmp_path / "plan.json"), "--job-root", str(tmp_path / "job"),
                     "--control-token-file", str(tmp_path / "missing")])
    assert code == 2 and "cannot read the control token file" in capsys.readouterr().err
    assert not (tmp_path / "job").exists()
