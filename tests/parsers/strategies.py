"""Hypothesis strategies the parser tests share: names, text and JSON arguments."""

from __future__ import annotations

from typing import Literal

from hypothesis import strategies as st

__all__ = ["ARGUMENTS", "JSON", "NAMES", "NO_SURROGATES", "SCALARS", "TEXT"]

#: Unicode category "Cs" (lone surrogates) cannot be encoded as UTF-8.
NO_SURROGATES: tuple[Literal["Cs"]] = ("Cs",)
NAMES = st.from_regex(r"[A-Za-z_][A-Za-z0-9_]{0,24}", fullmatch=True)
TEXT = st.text(st.characters(codec="utf-8", exclude_categories=NO_SURROGATES), max_size=30)
SCALARS = (
    st.none()
    | st.booleans()
    | st.integers(-(2**53), 2**53)
    | st.floats(allow_nan=False, allow_infinity=False)
    | TEXT
)
JSON = st.recursive(
    SCALARS,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(TEXT, inner, max_size=4),
    max_leaves=12,
)
ARGUMENTS = st.dictionaries(
    st.from_regex(r"[a-z_][a-z0-9_]{0,12}", fullmatch=True), JSON, max_size=5
)
