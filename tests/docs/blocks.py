"""The fenced blocks of the user-facing docs as data, so tests can run the commands a reader copies.

A doc's command block drifts silently: a renamed example file, a printer column the CRD dropped, a flag the
CLI no longer has. Each block is extracted here with where it is (file and line, for the failure message), its
language, its text and the markers written right above its fence; the tests in this folder run or check every
command of every block, so a new block is covered without anyone listing it.

Markers are HTML comments on the lines right above a fence (invisible when the Markdown is rendered). They are
the only way to keep a command from running, and each says why:

* ``<!-- not run: REASON -->``: the block is checked (files exist, arguments parse) but not run.
* ``<!-- not run `PREFIX`: REASON -->``: the block's commands that start with PREFIX are checked, not run.
* ``<!-- dry run `PREFIX`: REASON -->``: those commands run as ``--dry-run=server``: the API server admits
  them, nothing is stored (for what would change objects every test of the session shares, such as the CRD).
* ``<!-- alternative to the block above -->``: the block replaces the one above it (another way to the same
  state): it runs on its own, from a clean cluster, not after the block it replaces.

Any other comment right above a fence is an error, so a misspelled marker cannot silently run or skip a block.

>>> [b] = parse_blocks("x.md", "Intro\\n<!-- not run: needs a cloud -->\\n```bash\\nkubectl get spj  # NAME\\n```\\n")
>>> b.where, b.language, b.not_run, [(c.line, c.shell, c.comment) for c in b.commands()]
('x.md:3', 'bash', 'needs a cloud', [(4, 'kubectl get spj', 'NAME')])
"""

from __future__ import annotations

import re
import shlex
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]

# The docs whose blocks are run, and the section of each (None: the whole file). docs/operator.md is mostly
# reference; its walkthrough is what a user types.
DOCS: dict[str, str | None] = {
    "README.md": None,
    "examples/k8s/README.md": None,
    "docs/operator.md": "On a real cluster: a walkthrough",
    "docs/helm.md": None,
    "docs/sql-client.md": None,
}
COMMAND_LANGUAGES = {"bash", "sh", "shell", "console"}

_FENCE = re.compile(r"^(?P<indent>\s*)```(?P<language>[\w+-]*)\s*$")
_COMMENT = re.compile(r"^\s*<!--(?P<body>.*?)-->\s*$")
_MARKER = re.compile(r"^\s*(?P<kind>not run|dry run)(?:\s+`(?P<prefix>[^`]+)`)?\s*:\s*(?P<reason>\S.*?)\s*$")
_ALTERNATIVE = "alternative to the block above"
# A repository path in code: a top-level folder users are told to apply, render or read, not a part of a
# longer path (``/etc/planengine-operator/...``, ``charts/planengine-operator/crds/`` counts as a whole).
_REPO_PATH = re.compile(r"(?<![\w./<-])(?:examples|crds|charts|docs)/[\w./-]*")


@dataclass(frozen=True)
class Marker:
    kind: str  # "not run", "dry run" or "alternative"
    prefix: str | None  # the commands it applies to (None: the whole block)
    reason: str


@dataclass(frozen=True)
class Command:
    """One command line of a block: continuation lines joined, the trailing comment apart."""

    block: Block
    line: int  # 1-based line of the command's first line in its file
    shell: str  # what a shell runs (comment removed)
    comment: str  # the trailing comment, often what the doc says the command prints

    @property
    def where(self) -> str:
        return f"{self.block.path}:{self.line}"

    def stages(self) -> list[list[str]]:
        """The argument vectors of a pipeline's stages, redirections (``< file``) removed."""
        stages: list[list[str]] = []
        for part in split_outside_quotes(self.shell, "|"):
            words = shlex.split(part)
            stages.append([w for i, w in enumerate(words) if w not in "<>" and (i == 0 or words[i - 1] not in "<>")])
        return stages

    @property
    def argv(self) -> list[str]:
        return self.stages()[0]

    @property
    def columns(self) -> list[str] | None:
        """``kubectl get spj   # NAME, DESIRED, ...``: the columns the doc says the command prints, or None."""
        if re.fullmatch(r"[A-Z][A-Z ]*(, [A-Z][A-Z ]*)+", self.comment):
            return self.comment.split(", ")
        return None

    def marker(self) -> Marker | None:
        """The marker that applies to this command: the block's, or the first whose prefix it starts with."""
        for marker in self.block.markers:
            if marker.kind == "alternative":
                continue
            if marker.prefix is None or self.shell.startswith(marker.prefix):
                return marker
        return None


@dataclass(frozen=True)
class Block:
    path: str  # relative to the repository
    line: int  # 1-based line of the opening fence
    language: str
    text: str  # dedented to the fence's indentation
    markers: tuple[Marker, ...]

    @property
    def where(self) -> str:
        return f"{self.path}:{self.line}"

    @property
    def not_run(self) -> str | None:
        """The reason the whole block is not run, or None."""
        return next((m.reason for m in self.markers if m.kind == "not run" and m.prefix is None), None)

    @property
    def alternative(self) -> bool:
        return any(m.kind == "alternative" for m in self.markers)

    def commands(self) -> list[Command]:
        if self.language not in COMMAND_LANGUAGES:
            return []
        found: list[Command] = []
        pending: list[str] = []
        start = 0
        for offset, raw in enumerate(self.text.splitlines(), start=self.line + 1):
            if not pending:
                start = offset
            shell, comment = split_comment(raw)
            if shell.rstrip().endswith("\\"):
                pending.append(shell.rstrip()[:-1].strip())
                continue
            pending.append(shell.strip())
            joined = " ".join(p for p in pending if p)
            pending = []
            if joined:
                found.append(Command(self, start, joined, comment))
        return found


def split_outside_quotes(text: str, separator: str) -> list[str]:
    parts, current, quote = [], [], ""
    for char in text:
        if quote:
            quote = "" if char == quote else quote
        elif char in "'\"":
            quote = char
        elif char == separator:
            parts.append("".join(current))
            current = []
            continue
        current.append(char)
    parts.append("".join(current))
    return parts


def split_comment(line: str) -> tuple[str, str]:
    """``cmd --x 'a # b'  # says`` -> (``cmd --x 'a # b'``, ``says``): a ``#`` starts a comment outside quotes
    after a blank, as in a shell."""
    quote = ""
    for index, char in enumerate(line):
        if quote:
            quote = "" if char == quote else quote
        elif char in "'\"":
            quote = char
        elif char == "#" and (index == 0 or line[index - 1].isspace()):
            return line[:index].rstrip(), line[index + 1:].strip()
    return line.rstrip(), ""


def section_lines(text: str, section: str | None) -> tuple[int, int]:
    """The 0-based [first, last) line range of ``section`` (a heading's title, to the next heading of its level or
    above), or of the whole text."""
    lines = text.splitlines()
    if section is None:
        return 0, len(lines)
    heading = next(i for i, line in enumerate(lines) if re.match(rf"^#+\s+{re.escape(section)}\s*$", line))
    level = len(lines[heading]) - len(lines[heading].lstrip("#"))
    last = next((i for i in range(heading + 1, len(lines)) if re.match(rf"^#{{1,{level}}}\s", lines[i])), len(lines))
    return heading, last


def parse_blocks(path: str, text: str, section: str | None = None) -> list[Block]:
    lines = text.splitlines()
    index, last = section_lines(text, section)
    blocks: list[Block] = []
    while index < last:
        opening = _FENCE.match(lines[index])
        if not opening:
            index += 1
            continue
        indent = len(opening["indent"])
        end = next(i for i in range(index + 1, len(lines)) if lines[i].strip() == "```")
        body = "\n".join(line[indent:] if not line[:indent].strip() else line.lstrip()
                          for line in lines[index + 1:end])
        blocks.append(Block(path, index + 1, opening["language"], body + "\n", _markers(path, lines, index)))
        index = end + 1
    return blocks


def _markers(path: str, lines: list[str], fence: int) -> tuple[Marker, ...]:
    found: list[Marker] = []
    above = fence - 1
    while above >= 0 and (comment := _COMMENT.match(lines[above])):
        body = comment["body"].strip()
        if body.startswith(_ALTERNATIVE):
            found.append(Marker("alternative", None, body))
        elif marker := _MARKER.match(body):
            found.append(Marker(marker["kind"], marker["prefix"], marker["reason"]))
        else:
            raise ValueError(f"{path}:{above + 1}: a comment right above a fence must be a docs-test marker "
                             f"(tests/docs/blocks.py), not {body!r}")
        above -= 1
    return tuple(reversed(found))


def doc_blocks(path: str) -> list[Block]:
    """The blocks of one covered doc (its section only, when DOCS names one)."""
    return parse_blocks(path, (REPO / path).read_text(encoding="utf-8"), DOCS[path])


def all_blocks() -> list[Block]:
    return [block for path in DOCS for block in doc_blocks(path)]


def all_commands() -> list[Command]:
    return [command for block in all_blocks() for command in block.commands()]


def repository_paths(path: str) -> list[tuple[int, str]]:
    """(line, path) of every repository path written in code, fenced or inline (``examples/k8s/x.yaml``), in the
    covered part of a doc: a reader copies these into a command. Inline spans may wrap a line."""
    text = (REPO / path).read_text(encoding="utf-8")
    first, last = section_lines(text, DOCS[path])
    lines = text.splitlines()
    found: list[tuple[int, str]] = []
    for block in doc_blocks(path):
        for offset, line in enumerate(block.text.splitlines(), start=block.line + 1):
            found += [(offset, match.rstrip("./")) for match in _REPO_PATH.findall(line)]
        for number in range(block.line - 1, block.line + len(block.text.splitlines()) + 1):
            lines[number] = ""  # prose only below
    prose = "\n".join(lines[first:last])
    for span in re.finditer(r"`([^`]+)`", prose):
        number = first + prose.count("\n", 0, span.start()) + 1
        found += [(number, match.rstrip("./")) for match in _REPO_PATH.findall(span.group(1).replace("\n", " "))]
    return sorted(found)
