"""Every number the report prints becomes text here, and nowhere else.

Values are stored as the scoring stage computes them: proportions as fractions in [0, 1],
benchmark scores on their own scale (MME's 2,800-point sum). A *scale* says how one is shown:

- ``percent``: a fraction shown as a percentage with one decimal (``0.301`` → ``30.1``);
- ``fraction``: a fraction shown as itself, three decimals (``0.301``);
- ``raw``: a value on the benchmark's own scale, one decimal (``2306.0``).

Differences are signed (``+1.0``); p-values never print as ``0`` (``< 0.001``); a missing value
is a dash.
"""

from __future__ import annotations

import math
from typing import Literal

Scale = Literal["percent", "fraction", "raw"]
DASH = "–"
P_FLOOR = 0.001
"""p-values below it print as ``< 0.001``: a resampled or exact p is never exactly 0."""


def missing(value: object) -> bool:
    """None or NaN (what pandas makes of None).

    >>> missing(None), missing(float("nan")), missing(0.0)
    (True, True, False)
    """
    return value is None or (isinstance(value, float) and math.isnan(value))


def value(x: float | None, scale: Scale = "percent") -> str:
    """A value on its scale.

    >>> value(0.30125), value(0.30125, "fraction"), value(2306.04, "raw"), value(None)
    ('30.1', '0.301', '2306.0', '–')
    """
    if missing(x):
        return DASH
    if scale == "percent":
        return f"{100 * x:.1f}"
    if scale == "fraction":
        return f"{x:.3f}"
    return f"{x:.1f}"


def interval(low: float | None, high: float | None, scale: Scale = "percent") -> str:
    """An interval ``[low, high]``.

    >>> interval(0.291, 0.311), interval(None, None)
    ('[29.1, 31.1]', '–')
    """
    if missing(low) or missing(high):
        return DASH
    return f"[{value(low, scale)}, {value(high, scale)}]"


def with_interval(
    x: float | None, low: float | None, high: float | None, scale: Scale = "percent"
) -> str:
    """A value and its interval; the value alone when it has none.

    >>> with_interval(0.301, 0.291, 0.311), with_interval(2306.0, None, None, "raw")
    ('30.1 [29.1, 31.1]', '2306.0')
    """
    if missing(x):
        return DASH
    if missing(low) or missing(high):
        return value(x, scale)
    return f"{value(x, scale)} {interval(low, high, scale)}"


def signed(x: float | None, scale: Scale = "percent") -> str:
    """A difference, always with its sign (in points for ``percent``).

    >>> signed(0.0104), signed(-0.02), signed(12.5, "raw"), signed(0.0)
    ('+1.0', '-2.0', '+12.5', '+0.0')
    """
    if missing(x):
        return DASH
    if scale == "percent":
        return f"{100 * x:+.1f}"
    if scale == "fraction":
        return f"{x:+.3f}"
    return f"{x:+.1f}"


def signed_interval(low: float | None, high: float | None, scale: Scale = "percent") -> str:
    """The interval of a difference, signed.

    >>> signed_interval(0.003, 0.018)
    '[+0.3, +1.8]'
    """
    if missing(low) or missing(high):
        return DASH
    return f"[{signed(low, scale)}, {signed(high, scale)}]"


def signed_with_interval(
    x: float | None, low: float | None, high: float | None, scale: Scale = "percent"
) -> str:
    """A difference and its interval, both signed; a dash when it has none.

    >>> signed_with_interval(0.072, 0.037, 0.108), signed_with_interval(None, None, None)
    ('+7.2 [+3.7, +10.8]', '–')
    """
    if missing(x):
        return DASH
    return f"{signed(x, scale)} {signed_interval(low, high, scale)}"


def p_value(p: float | None) -> str:
    """A p-value: three decimals, ``< 0.001`` below that (never ``0``).

    >>> p_value(0.0), p_value(0.00042), p_value(0.0041), p_value(1.0)
    ('< 0.001', '< 0.001', '0.004', '1.000')
    """
    if missing(p):
        return DASH
    if p < P_FLOOR:
        return f"< {P_FLOOR:g}"
    return f"{p:.3f}"


def p_stated(p: float | None) -> str:
    """A p-value in a sentence, as :func:`p_value` prints it.

    >>> p_stated(0.0041), p_stated(1e-9)
    ('p = 0.004', 'p < 0.001')
    """
    text = p_value(p)
    return f"p {text}" if text.startswith("<") else f"p = {text}"


def published(x: float | int | None) -> str:
    """A published number as the paper printed it: the shortest text of the stored number, so
    ``90.55`` stays ``90.55``, ``2306.0`` stays ``2306.0`` and ``1926`` stays ``1926``.

    >>> published(90.55), published(2306.0), published(1926), published(None)
    ('90.55', '2306.0', '1926', '–')
    """
    if missing(x):
        return DASH
    return repr(x) if isinstance(x, int) else repr(float(x))


def count(n: int | float | None) -> str:
    """A count.

    >>> count(8000), count(3.0), count(None)
    ('8000', '3', '–')
    """
    return DASH if missing(n) else str(int(n))


def score(x: float | None) -> str:
    """An item's continuous score (IoU, a judge's grade), two decimals.

    >>> score(0.4321)
    '0.43'
    """
    return DASH if missing(x) else f"{x:.2f}"


def share(fraction: float | None, a: int, b: int) -> str:
    """A discordant share and its two sides: ``5.7% (458 vs 375)``.

    >>> share(0.104, 458, 375)
    '10.4% (458 vs 375)'
    """
    return DASH if missing(fraction) else f"{value(fraction)}% ({a} vs {b})"


def whole(x: float) -> str:
    """A number rounded to a whole one (a bar's label in a plot).

    >>> whole(30.6)
    '31'
    """
    return f"{x:.0f}"


def level(confidence: float) -> str:
    """A confidence level as a percentage.

    >>> level(0.95), level(0.9)
    ('95%', '90%')
    """
    return f"{100 * confidence:g}%"


def yes_no(flag: bool | None) -> str:
    """A yes/no cell (a dash when it does not apply).

    >>> yes_no(True), yes_no(None)
    ('yes', '–')
    """
    return DASH if flag is None or missing(flag) else ("yes" if flag else "no")
