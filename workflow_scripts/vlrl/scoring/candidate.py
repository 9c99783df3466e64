"""What a scoring protocol's matcher is given and what it returns.

A :class:`Candidate` is one response with everything about its item that a scorer may use (the
benchmark's constants included), so a matcher is a plain function ``Candidate -> Verdict``
and protocols (:mod:`vlrl.scoring.protocols`) are tables of such functions.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import NamedTuple


@dataclass(frozen=True)
class Candidate:
    """One response to score, with its item and the benchmark's scoring constants.

    ``answer`` is the reference as the record holds it (an option letter for multiple choice);
    ``accepted`` the other accepted answers (MMMU's list golds, the other letters of a repeated
    MathVista choice text); ``precision`` the decimals of a float answer (MathVista);
    ``family`` the benchmark family whose scorer a toolkit protocol applies (``mathvista``:
    VLMEvalKit scores MathVista with its own rule);
    ``box_frames`` ``([input w, h], [image w, h])`` when the model answers in the model-input
    frame (grounding).
    """

    response: str
    answer: str
    problem_type: str
    options: tuple[str, ...] = ()
    accepted: tuple[str, ...] = ()
    boxes: tuple[tuple[float, ...], ...] = ()
    precision: int | None = None
    item_id: str = ""
    family: str | None = None
    iou_threshold: float = 0.5
    relaxed_tolerance: float | None = None
    box_frames: tuple[tuple[float, ...], tuple[float, ...]] | None = None

    @property
    def golds(self) -> tuple[str, ...]:
        """Every accepted answer: ``answer`` first, then ``accepted``.

        >>> Candidate("x", "24/7", "free_form", accepted=("3.429",)).golds
        ('24/7', '3.429')
        """
        return (self.answer, *(a for a in self.accepted if a != self.answer))


class Verdict(NamedTuple):
    """``extracted``: the answer the rule read (None: none); ``score`` in [0, 1]; ``correct``
    0 or 1."""

    extracted: str | None
    score: float
    correct: int


def verdict(extracted: str | None, correct: bool) -> Verdict:
    """A 0/1 verdict whose score is its correctness.

    >>> verdict("B", True)
    Verdict(extracted='B', score=1.0, correct=1)
    """
    return Verdict(extracted, float(bool(correct)), int(bool(correct)))
