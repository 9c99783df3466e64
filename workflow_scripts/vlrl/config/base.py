"""What every config section shares: the section base class, the problem types that name the
dotted key, and the value types several sections use."""

from __future__ import annotations

from collections import Counter
from typing import Annotated, Any

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, TypeAdapter, ValidationError
from pydantic.networks import AnyHttpUrl

from vlrl.core.errors import ConfigError

Probability = Annotated[float, Field(ge=0, le=1)]
"""A probability or a fraction, in [0, 1]."""
TopP = Annotated[float, Field(gt=0, le=1)]
"""Nucleus sampling mass, in (0, 1]: 1 keeps every token, 0 would keep none (vLLM refuses it)."""
COMMIT_SHA = r"^[0-9a-f]{40}$"
"""A full lower-case commit id, the only hub revision that cannot move."""


class KeyProblems(ValueError):
    """Raised by a validator: what is wrong, at dotted keys relative to the model it validates
    (the loader prefixes the section's own key), so that every error names its key."""

    def __init__(self, *problems: tuple[str, str]) -> None:
        self.problems = problems
        super().__init__("; ".join(f"{key}: {why}" for key, why in problems))


class ConfigProblems(ConfigError):
    """Every problem found in config files, one ``<file>: <dotted key>: <what is wrong>`` line
    each (``problems``)."""

    def __init__(self, problems: list[str]) -> None:
        self.problems = list(problems)
        super().__init__("\n".join(self.problems))


class Section(BaseModel):
    """Base for every config section: unknown keys are errors; assignments are validated."""

    model_config = ConfigDict(extra="forbid", validate_assignment=True, frozen=False)


def order_problems(section: Any, low: str, high: str) -> list[tuple[str, str]]:
    """``[(low, why)]`` when the section's ``low`` bound exceeds its ``high`` one, else ``[]``;
    an unset bound (None) bounds nothing.

    >>> from types import SimpleNamespace as S
    >>> order_problems(S(epsilon=0.2, epsilon_high=0.1), "epsilon", "epsilon_high")
    [('epsilon', '0.2 is above epsilon_high (0.1)')]
    >>> order_problems(S(epsilon=0.2, epsilon_high=None), "epsilon", "epsilon_high")
    []
    """
    lo, hi = getattr(section, low), getattr(section, high)
    if lo is None or hi is None or lo <= hi:
        return []
    return [(low, f"{lo} is above {high} ({hi})")]


def _http_url(value: str) -> str:
    """The URL as written, when it is an http(s) URL with a host; the text is kept (not
    normalised), so the resolved params show what the file says."""
    try:
        TypeAdapter(AnyHttpUrl).validate_python(value)
    except ValidationError:
        raise ValueError(
            f"{value!r} is not an http(s) URL with a host (e.g. http://127.0.0.1:8000/v1)"
        ) from None
    return value


HttpUrlText = Annotated[str, AfterValidator(_http_url)]
"""An http(s) URL, kept as the text written."""


def _no_repeats(items: list[Any]) -> list[Any]:
    repeated = sorted(str(x) for x, n in Counter(items).items() if n > 1)
    if repeated:
        raise ValueError(f"lists {repeated} more than once")
    return items


UniqueList = AfterValidator(_no_repeats)
"""Annotates a list whose items must differ (a name listed twice is a slip, not a request)."""
