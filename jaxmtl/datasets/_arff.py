"""A small reader for dense ARFF files (the Weka / Mulan text format)."""

from __future__ import annotations

import re
from typing import NamedTuple

import numpy as np

from ..errors import DTypeError, ParameterError, ShapeError

__all__ = ["ArffData", "parse_arff"]

_NUMERIC_TYPES = ("numeric", "real", "integer")


class ArffData(NamedTuple):
    """The content of an ARFF file.

    Attributes:
        relation: the name given by ``@relation``.
        names: the attribute names, in file order (quotes removed).
        data: ``(n, m)`` float64 array, one column per attribute; nominal attributes are coded
            as the 0-based index of the value in the declared ``{...}`` list; missing values
            (``?``) are NaN.
        nominal: ``{name: tuple of declared values}`` for every nominal attribute.
    """

    relation: str
    names: list[str]
    data: np.ndarray
    nominal: dict[str, tuple[str, ...]]


def _unquote(token: str) -> str:
    token = token.strip()
    if len(token) >= 2 and token[0] == token[-1] and token[0] in "'\"":
        return token[1:-1]
    return token


def _split_values(line: str) -> list[str]:
    """Split a comma-separated line, respecting single and double quotes."""
    out, cur, quote = [], [], None
    for ch in line:
        if quote is not None:
            cur.append(ch)
            if ch == quote:
                quote = None
        elif ch in "'\"":
            quote = ch
            cur.append(ch)
        elif ch == ",":
            out.append("".join(cur))
            cur = []
        else:
            cur.append(ch)
    out.append("".join(cur))
    return [_unquote(tok) for tok in out]


_ATTR_RE = re.compile(
    r"""^@attribute\s+('(?:[^']*)'|"(?:[^"]*)"|\S+)\s+(.+?)\s*$""", re.IGNORECASE
)


def parse_arff(text: str) -> ArffData:
    """Parse the text of a dense ARFF file.

    Supported: ``%`` comment lines; ``@relation``, ``@attribute`` and ``@data`` in any
    letter case; attribute names quoted with ``'`` or ``"``; numeric attributes
    (``numeric``, ``real``, ``integer``) and nominal attributes ``{a, b, c}``, which are coded
    as integers ``0, 1, 2`` in declaration order; ``?`` for a missing value (returned as NaN).
    Not supported (a :class:`~jaxmtl.errors.JaxmtlError` is raised): sparse rows ``{i v, ...}``,
    ``string``, ``date`` and ``relational`` attributes.

    Args:
        text: the whole file as a string.

    Returns:
        :class:`ArffData` ``(relation, names, data, nominal)`` with ``data`` of shape
        ``(n_rows, n_attributes)`` and dtype float64.

    Example:
        >>> d = parse_arff("@relation r\\n@attribute a numeric\\n@attribute c {x,y}\\n@data\\n1.5,y\\n")
        >>> d.data.tolist(), d.nominal
        ([[1.5, 1.0]], {'c': ('x', 'y')})
    """
    relation = ""
    names: list[str] = []
    kinds: list[tuple[str, ...] | None] = []  # None = numeric, tuple = nominal values
    rows: list[list[float]] = []
    in_data = False
    for lineno, raw in enumerate(text.splitlines(), start=1):
        line = raw.strip()
        if not line or line.startswith("%"):
            continue
        if not in_data:
            low = line.lower()
            if low.startswith("@relation"):
                relation = _unquote(line[len("@relation"):].strip())
            elif low.startswith("@attribute"):
                m = _ATTR_RE.match(line)
                if m is None:
                    raise ParameterError(f"ARFF line {lineno}: cannot parse attribute {line!r}")
                name, typ = _unquote(m.group(1)), m.group(2).strip()
                if typ.startswith("{"):
                    if not typ.endswith("}"):
                        raise ParameterError(f"ARFF line {lineno}: unterminated nominal {typ!r}")
                    kinds.append(tuple(_split_values(typ[1:-1])))
                elif typ.lower() in _NUMERIC_TYPES:
                    kinds.append(None)
                else:
                    raise DTypeError(
                        f"ARFF line {lineno}: attribute {name!r} has type {typ!r}; only numeric "
                        "and nominal attributes are supported"
                    )
                names.append(name)
            elif low.startswith("@data"):
                if not names:
                    raise ParameterError("ARFF text has @data but no @attribute declarations")
                in_data = True
            else:
                raise ParameterError(f"ARFF line {lineno}: unexpected header line {line!r}")
            continue
        if line.startswith("{"):
            raise ParameterError(f"ARFF line {lineno}: sparse ARFF rows are not supported")
        values = _split_values(line)
        if len(values) != len(names):
            raise ShapeError(
                f"ARFF line {lineno}: {len(values)} values for {len(names)} attributes"
            )
        row = []
        for value, kind, name in zip(values, kinds, names):
            if value == "?":
                row.append(np.nan)
            elif kind is None:
                try:
                    row.append(float(value))
                except ValueError:
                    raise DTypeError(
                        f"ARFF line {lineno}: {value!r} is not a number (attribute {name!r})"
                    ) from None
            else:
                try:
                    row.append(float(kind.index(value)))
                except ValueError:
                    raise ParameterError(
                        f"ARFF line {lineno}: {value!r} is not a declared value of nominal "
                        f"attribute {name!r} {kind}"
                    ) from None
        rows.append(row)
    if not in_data:
        raise ParameterError("ARFF text has no @data section")
    data = np.asarray(rows, dtype=np.float64).reshape(len(rows), len(names))
    nominal = {n: k for n, k in zip(names, kinds) if k is not None}
    return ArffData(relation, names, data, nominal)
