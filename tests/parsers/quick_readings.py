"""Checking a format's quick reading against its general path on one text."""

from __future__ import annotations

from hermes_parsers import ParseError, ParseResult, get_parser


def quick_readings(name: str, text: str) -> dict[bool, ParseResult | None]:
    """The quick reading of ``text`` by the lenient (``False``) and the strict (``True``)
    parser ``name``, each asserted to be ``None`` or the general path's answer (``None``
    where the general path raises ``ParseError``), and ``parse`` to give that answer."""
    readings: dict[bool, ParseResult | None] = {}
    for strict in (False, True):
        parser = get_parser(name, strict=strict)
        quick = readings[strict] = parser._parse_quick(text)
        try:
            general = parser._parse_markup(text)
        except ParseError:
            assert quick is None
            continue
        assert quick is None or quick == general
        assert parser.parse(text) == general
    return readings
