"""``stream-exec-window-table-function``: TUMBLE/HOP/CUMULATE TVF rows (stateless, see operators)."""

from __future__ import annotations

from typing import Any

from planengine.runtime.dataflow.stream import Stream
from planengine.runtime.engine.translators import translator
from planengine.runtime.operators.window_table_function import window_table_function


@translator("stream-exec-window-table-function", 1)
def translate_window_table_function(node: Any, inputs: list[Stream], ctx: Any) -> Stream:
    out = window_table_function(inputs[0], node.window, node.field_types)
    return out.with_df(out.df, fields=tuple(node.field_names))
