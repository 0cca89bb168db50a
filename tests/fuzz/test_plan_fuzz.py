"""Mutated plans through ``planengine check --json`` and ``planengine explain --plan``, in process.

Each input must end in one of the documented exit codes with a message (never an exception outside
``planengine.errors``), within a per-input time bound; ``check --json`` must answer JSON on stdout whatever the
verdict. Fixed seeds, bounded budget: the campaign (``benchmarks/fuzz/plan_campaign.py``) runs the same
generator on thousands of inputs.
"""

from __future__ import annotations

import json
import random
import signal
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from planengine.cli import main as cli_main
from planengine.plan.serde import dumps
from tests.fuzz.plan_mutants import chain_plan, mutated_plan, reseal, seed_plans

SEED = 20261128
INPUTS = 100
# A bound on one command, not a benchmark: far above the slowest input (an 8 000-node plan, ~1 s) so a loaded
# machine does not fail it, far below "never finishes".
PER_INPUT_SECONDS = 10.0
CHECK_EXITS = {0, 2, 3, 4}


class Hang(Exception):
    pass


@pytest.fixture(autouse=True, scope="module")
def _imports_done(tmp_path_factory: pytest.TempPathFactory) -> None:
    """``check`` imports the Spark runtime and its translators on first use (seconds on a loaded machine): that
    is not the input's time, so untimed checks of a few golden plans go first."""
    path = tmp_path_factory.mktemp("warm") / "plan.json"
    for plan in seed_plans()[:3]:
        path.write_text(dumps(plan))
        cli_main(["check", "--plan", str(path), "--json"])


@contextmanager
def time_bound(seconds: float) -> Iterator[None]:
    """Interrupt the body after ``seconds`` (SIGALRM: the tests run in the main thread)."""
    def expire(signum: int, frame: object) -> None:
        raise Hang(f"no answer within {seconds:g}s")

    previous = signal.signal(signal.SIGALRM, expire)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


def run_cli(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str, float]:
    began = time.perf_counter()
    with time_bound(PER_INPUT_SECONDS):
        code = cli_main(argv)
    out, err = capsys.readouterr()
    return code, out, err, time.perf_counter() - began


def test_mutated_plans_end_in_documented_exit_codes(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    rng = random.Random(SEED)
    seeds = seed_plans()
    path = tmp_path / "plan.json"
    slowest = (0.0, "", "")
    for index in range(INPUTS):
        text, what = mutated_plan(rng, seeds)
        path.write_text(text, encoding="utf-8", errors="surrogateescape")
        where = f"input {index} (seed {SEED}): {what}"
        code, out, err, took = run_cli(["check", "--plan", str(path), "--json"], capsys)
        assert code in CHECK_EXITS, f"{where}: check exited {code}: {err[-500:]}"
        answer = json.loads(out)
        assert answer["exitCode"] == code, where
        if code == 2:
            assert answer["status"] == "malformed" and answer["error"], where
        code, out, err, took2 = run_cli(["explain", "--plan", str(path)], capsys)
        assert code in (0, 2), f"{where}: explain exited {code}: {err[-500:]}"
        assert (code == 0) == bool(out.strip()), where
        slowest = max(slowest, (took, "check", what), (took2, "explain", what))
    assert slowest[0] < PER_INPUT_SECONDS, slowest


# Broken plans the trial judged compatible or hung on: each is malformed (exit 2) and the message names where.
BROKEN = {
    "empty nodes": (lambda p: p.update(nodes=[]), "nodes: is empty"),
    "edge to a missing node": (lambda p: p["edges"].append({"source": 1, "target": 999}),
                               "edges[2].target: names node 999"),
    "self-loop": (lambda p: p["edges"].append({"source": 2, "target": 2}), "cycle through nodes 2"),
    "cycle": (lambda p: p["edges"].append({"source": 3, "target": 1}), "cycle through nodes 1, 2, 3"),
    "engine version -0.1": (lambda p: p.update(engineVersion="-0.1"), "engineVersion: '-0.1' is not a version"),
    "max parallelism -1": (lambda p: p["config"].update({"pipeline.max-parallelism": "-1"}),
                           "config['pipeline.max-parallelism']: must be a whole number from 1 to 32768"),
    "duplicate node id": (lambda p: p["nodes"].append(dict(p["nodes"][0])), "nodes[3].id: node id 1 is used twice"),
    "nodes out of order": (lambda p: p["nodes"].reverse(), "nodes must be in topological order"),
    "node type not a string": (lambda p: p["nodes"][1].update(type=7), "nodes[1].type: must be a string"),
}


@pytest.mark.parametrize("case", list(BROKEN))
@pytest.mark.parametrize("resealed", [True, False])
def test_broken_plans_are_malformed_with_the_json_path(case: str, resealed: bool, tmp_path: Path,
                                                       capsys: pytest.CaptureFixture[str]) -> None:
    plan = chain_plan(3)
    edit, fragment = BROKEN[case]
    edit(plan)
    if resealed:
        reseal(plan)
    path = tmp_path / "plan.json"
    path.write_text(dumps(plan))
    code, out, err, _ = run_cli(["check", "--plan", str(path), "--json"], capsys)
    assert code == 2 and fragment in json.loads(out)["error"], out
    code, out, err, _ = run_cli(["explain", "--plan", str(path)], capsys)
    assert code == 2 and fragment in err and "Traceback" not in err


@pytest.mark.parametrize("plan_id", ["delete", "", None])
def test_a_plan_without_its_plan_id_is_not_compatible(plan_id: object, tmp_path: Path,
                                                      capsys: pytest.CaptureFixture[str]) -> None:
    """The docs say a hand edit is detected; deleting or blanking the planId must not hide one."""
    plan = seed_plans()[0]
    plan["nodes"][0]["description"] = "edited"
    if plan_id == "delete":
        del plan["planId"]
    else:
        plan["planId"] = plan_id
    path = tmp_path / "plan.json"
    path.write_text(dumps(plan))
    code, out, _, _ = run_cli(["check", "--plan", str(path), "--json"], capsys)
    assert code == 2 and json.loads(out)["error"].startswith("planId: ")


def test_a_deep_plan_is_validated_and_explained_in_linear_time(tmp_path: Path,
                                                               capsys: pytest.CaptureFixture[str]) -> None:
    from planengine.plan.validate import validate_plan

    plan = chain_plan(8_000)
    began = time.perf_counter()
    validate_plan(plan)
    assert time.perf_counter() - began < 1.0
    path = tmp_path / "plan.json"
    path.write_text(dumps(plan))
    code, out, _, took = run_cli(["explain", "--plan", str(path)], capsys)
    assert code == 0 and "#1 Calc(1)" in out and took < PER_INPUT_SECONDS
    assert len(out) < 2_000_000  # bounded indentation, not megabytes of blanks
    plan["edges"].append({"source": 8_000, "target": 1})
    path.write_text(dumps(plan))
    code, _, err, took = run_cli(["explain", "--plan", str(path)], capsys)
    assert code == 2 and "cycle" in err and took < PER_INPUT_SECONDS


def test_a_node_field_of_the_wrong_shape_is_reported_not_raised(tmp_path: Path,
                                                                 capsys: pytest.CaptureFixture[str]) -> None:
    """Found by the campaign (input 41): a table identifier that is a list escaped restore as AttributeError."""
    plan = next(p for p in seed_plans() if any("table" in n for n in p["nodes"]))
    node = next(n for n in plan["nodes"] if "table" in n)
    node["table"]["identifier"] = [1, 2]
    path = tmp_path / "plan.json"
    path.write_text(dumps(reseal(plan)))
    code, out, _, _ = run_cli(["check", "--plan", str(path), "--json"], capsys)
    reasons = json.loads(out)["reasons"]
    assert code == 4 and f"node {node['id']}" in reasons[0]["message"] and "malformed field" in reasons[0]["message"]


def test_json_nested_too_deeply_is_a_user_error(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "plan.json"
    path.write_text("[" * 200_000)
    code, out, _, _ = run_cli(["check", "--plan", str(path), "--json"], capsys)
    assert code == 2 and "nested too deeply" in json.loads(out)["error"]
