"""Row kinds and changelog modes: what a source produces and what a sink accepts.

Two string forms exist on purpose. A *row kind* is written as the runtime's short string (``+I``, ``-U``,
``+U``, ``-D``), which is what the hidden ``_rowkind`` column and the ``changelog-json`` ``op`` field hold
(DESIGN §6). A *changelog mode* is written with letters (``I,UB,UA,D``), which is what plans store in a
node's ``changelogMode`` and what users write in the ``'changelog-mode'`` table option (DESIGN §3/§4).
Key-only deletes (an upsert changelog whose deletes carry just the key, e.g. Kafka tombstones) render
their delete letter as ``PD`` ("partial delete") so the string form stays lossless.

>>> str(ALL), str(UPSERT), str(INSERT_ONLY)
('I,UB,UA,D', 'I,UA,D', 'I')
>>> ChangelogMode.parse("d, i ,ua") == UPSERT
True
>>> UPSERT.is_upsert(), ALL.is_upsert(), INSERT_ONLY.contains_only_inserts()
(True, False, True)
>>> RowKind.from_short_string("-U") is RowKind.UPDATE_BEFORE
True
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum

from planengine.errors import ValidationError


class RowKind(Enum):
    """The kind of change a row represents. Declaration order is the canonical order of a mode's letters."""

    INSERT = ("+I", "I")
    UPDATE_BEFORE = ("-U", "UB")
    UPDATE_AFTER = ("+U", "UA")
    DELETE = ("-D", "D")

    @property
    def short_string(self) -> str:
        """``+I``/``-U``/``+U``/``-D``: the value of ``_rowkind`` and of changelog-json's ``op``."""
        return self.value[0]

    @property
    def letter(self) -> str:
        """``I``/``UB``/``UA``/``D``: the form used inside a changelog mode string."""
        return self.value[1]

    @property
    def is_retraction(self) -> bool:
        """Whether the row takes something away (needed by aggregates that consume changelogs)."""
        return self in (RowKind.UPDATE_BEFORE, RowKind.DELETE)

    @staticmethod
    def from_short_string(text: str) -> RowKind:
        for kind in RowKind:
            if kind.short_string == text:
                return kind
        raise ValidationError(
            f"unknown row kind {text!r}", hint="row kinds are written +I, -U, +U or -D"
        )

    @staticmethod
    def from_letter(text: str) -> RowKind:
        for kind in RowKind:
            if kind.letter == text.strip().upper():
                return kind
        raise ValidationError(f"unknown changelog letter {text!r}", hint="use I, UB, UA or D (e.g. 'I,UA,D')")

    def __str__(self) -> str:
        return self.short_string


_ORDER = {kind: i for i, kind in enumerate(RowKind)}
_KEY_ONLY_DELETE_LETTER = "PD"


@dataclass(frozen=True)
class ChangelogMode:
    """An immutable set of row kinds, plus whether deletes carry only the key."""

    kinds: frozenset[RowKind]
    key_only_deletes: bool = False

    def __post_init__(self) -> None:
        if not self.kinds:
            raise ValidationError("a changelog mode needs at least one row kind", hint="e.g. 'I' or 'I,UA,D'")
        if RowKind.UPDATE_BEFORE in self.kinds and RowKind.UPDATE_AFTER not in self.kinds:
            raise ValidationError(
                f"changelog mode {self._letters()!r} has UB without UA",
                hint="an update-before is always followed by its update-after; use 'I,UB,UA,D' or 'I,UA,D'",
            )
        if self.key_only_deletes and RowKind.DELETE not in self.kinds:
            raise ValidationError("key-only deletes need the D row kind in the changelog mode")

    @staticmethod
    def of(*kinds: RowKind, key_only_deletes: bool = False) -> ChangelogMode:
        return ChangelogMode(frozenset(kinds), key_only_deletes)

    @staticmethod
    def parse(text: str) -> ChangelogMode:
        """Read ``"I,UB,UA,D"`` (letters in any order and case, spaces ignored; ``PD`` = key-only D)."""
        letters = [part.strip().upper() for part in text.split(",") if part.strip()]
        if not letters:
            raise ValidationError(f"empty changelog mode {text!r}", hint="e.g. 'I', 'I,UA,D' or 'I,UB,UA,D'")
        if len(set(letters)) != len(letters):
            raise ValidationError(f"changelog mode {text!r} repeats a row kind", hint="list each letter once")
        key_only = _KEY_ONLY_DELETE_LETTER in letters
        if key_only and "D" in letters:
            raise ValidationError(f"changelog mode {text!r} has both D and PD", hint="use one of them")
        kinds = [RowKind.DELETE if letter == _KEY_ONLY_DELETE_LETTER else RowKind.from_letter(letter)
                 for letter in letters]
        return ChangelogMode(frozenset(kinds), key_only)

    # --- questions the planner asks ------------------------------------------------------------------
    def contains(self, kind: RowKind) -> bool:
        return kind in self.kinds

    def contains_only_inserts(self) -> bool:
        return self.kinds == {RowKind.INSERT}

    def contains_updates(self) -> bool:
        return RowKind.UPDATE_AFTER in self.kinds

    def contains_deletes(self) -> bool:
        return RowKind.DELETE in self.kinds

    def is_upsert(self) -> bool:
        """Updates without before-images: rows are identified by key, so consumers need a primary key."""
        return RowKind.UPDATE_AFTER in self.kinds and RowKind.UPDATE_BEFORE not in self.kinds

    def is_retract(self) -> bool:
        """Updates come as before/after pairs: consumers can retract without keeping state per key."""
        return RowKind.UPDATE_BEFORE in self.kinds

    def includes(self, other: ChangelogMode) -> bool:
        """Whether every kind of ``other`` is also in this mode (a sink accepting ``self`` takes ``other``)."""
        return other.kinds <= self.kinds

    def union(self, other: ChangelogMode) -> ChangelogMode:
        return ChangelogMode(self.kinds | other.kinds, self.key_only_deletes or other.key_only_deletes)

    def sorted_kinds(self) -> list[RowKind]:
        return sorted(self.kinds, key=_ORDER.__getitem__)

    def _letters(self) -> str:
        return ",".join(
            _KEY_ONLY_DELETE_LETTER if (k is RowKind.DELETE and self.key_only_deletes) else k.letter
            for k in self.sorted_kinds()
        )

    def __str__(self) -> str:
        return self._letters()

    def __repr__(self) -> str:
        return f"ChangelogMode({self})"


INSERT_ONLY = ChangelogMode.of(RowKind.INSERT)
UPSERT = ChangelogMode.of(RowKind.INSERT, RowKind.UPDATE_AFTER, RowKind.DELETE)
ALL = ChangelogMode.of(RowKind.INSERT, RowKind.UPDATE_BEFORE, RowKind.UPDATE_AFTER, RowKind.DELETE)
