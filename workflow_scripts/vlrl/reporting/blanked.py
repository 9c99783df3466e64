"""Each checkpoint with the image blanked: how much of its accuracy, and of each gain, needs the
image.

A ``blank_images_of`` benchmark asks its twin's items with every image replaced by a gray one of
the same size (:func:`vlrl.stages.infer.blanked`). Paired on the same items
(:func:`vlrl.reporting.frames.paired`), a checkpoint's accuracy with the image minus its accuracy
blanked is what looking adds; a gain between two checkpoints (SFT − base, SFT+GRPO − SFT) is
measured twice, with the images and blanked: the part that remains blanked is not visual. Their
difference, the gain's *looking* part, has its own interval: the percentile bootstrap of the
per-item ``(a − b) with the image − (a − b) blanked`` over the items all four scores scored
(:func:`vlrl.scoring.stats.mean_interval`, the same seed and resamples as every comparison).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from vlrl import sharing
from vlrl.items.predictions import Scores
from vlrl.reporting import formatting as fmt
from vlrl.reporting.frames import Evaluation, comparison_pairs, paired
from vlrl.reporting.labels import label
from vlrl.scoring.stats import accuracy_summary, mean_interval


def blanked_rows(
    exp: str, evaluations: list[Evaluation], score: Any, seed: int, sft_enabled: bool
) -> list[dict[str, Any]]:
    """Per ``blank_images_of`` benchmark whose twin the experiment also evaluates: each
    checkpoint's accuracy blanked (``checkpoints``: Wilson interval, and with the image −
    blanked, paired) and each gain with the images and blanked (``gains``, paired)."""
    by_name = {ev.bench: ev for ev in evaluations}
    rows = []
    for blank in evaluations:
        seeing = by_name.get(blank.config.blank_images_of or "")
        if seeing is None:
            continue

        def pair(a: tuple[Evaluation, str], b: tuple[Evaluation, str]) -> dict[str, Any]:
            (ev_a, ck_a), (ev_b, ck_b) = a, b
            return paired(
                (sharing.scores_file(exp, ck_a, ev_a.bench), ev_a.scores[ck_a]),
                (sharing.scores_file(exp, ck_b, ev_b.bench), ev_b.scores[ck_b]),
                score,
                seed,
            )

        checkpoints = []
        for checkpoint, scores in blank.scores.items():
            summary = accuracy_summary(
                [int(i.correct) for i in scores.items if i.scored], score.confidence
            )
            looking = pair((seeing, checkpoint), (blank, checkpoint))
            checkpoints.append(
                {
                    "checkpoint": checkpoint,
                    "model": label(checkpoint, sft_enabled),
                    "blanked": summary["accuracy"],
                    "blanked_ci_low": summary["ci_low"],
                    "blanked_ci_high": summary["ci_high"],
                    "seeing": looking["accuracy_a"],
                    "image_adds": looking["diff"],
                    "image_adds_ci_low": looking["ci_low"],
                    "image_adds_ci_high": looking["ci_high"],
                    "n": looking["n"],
                }
            )
        gains = []
        for a, b in comparison_pairs(list(blank.scores)):
            with_image, blind = pair((seeing, a), (seeing, b)), pair((blank, a), (blank, b))
            looking = looking_part(
                [seeing.scores[a], seeing.scores[b], blank.scores[a], blank.scores[b]],
                score,
                seed,
            )
            gains.append(
                {
                    "comparison": f"{label(a, sft_enabled)} − {label(b, sft_enabled)}",
                    "with_image": with_image["diff"],
                    "with_image_ci_low": with_image["ci_low"],
                    "with_image_ci_high": with_image["ci_high"],
                    "blanked": blind["diff"],
                    "blanked_ci_low": blind["ci_low"],
                    "blanked_ci_high": blind["ci_high"],
                    **looking,
                }
            )
        rows.append(
            {"benchmark": seeing.bench, "blank": blank.bench, "checkpoints": checkpoints,
             "gains": gains}
        )  # fmt: skip
    return rows


def looking_part(scores: list[Scores], score: Any, seed: int) -> dict[str, Any]:
    """``looking``: the gain a − b with the image minus the same gain blanked (``scores``: a
    and b seeing, a and b blanked), on the items all four scored, with its interval
    (``looking_ci_low``/``looking_ci_high``) and ``looking_n``.

    A gain that looking explains is larger with the image; zero or less: the gain is in what
    the model answers whatever it sees.
    """
    verdicts = [{i.id: i.correct for i in s.items} for s in scores]
    ids = sorted(set.intersection(*(
        {i for i, c in v.items() if c is not None} for v in verdicts)))  # fmt: skip
    if not ids:
        return {"looking": None, "looking_ci_low": None, "looking_ci_high": None, "looking_n": 0}
    a, b, blank_a, blank_b = (np.array([v[i] for i in ids], dtype=float) for v in verdicts)
    per_item = (a - b) - (blank_a - blank_b)
    low, high = mean_interval(per_item, score.confidence, score.bootstrap_resamples, seed)
    return {"looking": float(per_item.mean()), "looking_ci_low": low, "looking_ci_high": high,
            "looking_n": len(ids)}  # fmt: skip


def blanked_table(rows: list[dict[str, Any]], confidence: float) -> pd.DataFrame:
    """Per benchmark × checkpoint: the accuracy with the image, blanked, and the difference."""
    level = fmt.level(confidence)
    table = [
        {
            "benchmark": r["benchmark"],
            "model": c["model"],
            "with the image": fmt.value(c["seeing"]),
            f"blanked ({level} CI)": fmt.with_interval(
                c["blanked"], c["blanked_ci_low"], c["blanked_ci_high"]
            ),
            f"image adds ({level} CI)": _effect(c, "image_adds"),
        }
        for r in rows
        for c in r["checkpoints"]
    ]
    return pd.DataFrame(table)


def gains_table(rows: list[dict[str, Any]], confidence: float) -> pd.DataFrame:
    """Per benchmark × comparison: the gain with the images and blanked (paired intervals)."""
    level = fmt.level(confidence)
    table = [
        {
            "benchmark": r["benchmark"],
            "comparison": g["comparison"],
            f"with the image ({level} CI)": _effect(g, "with_image"),
            f"blanked ({level} CI)": _effect(g, "blanked"),
            f"from looking ({level} CI)": _effect(g, "looking"),
        }
        for r in rows
        for g in r["gains"]
    ]
    return pd.DataFrame(table)


def _effect(row: dict[str, Any], key: str) -> str:
    """``row[key]`` signed, with its interval (``<key>_ci_low``, ``<key>_ci_high``)."""
    return fmt.signed_with_interval(row[key], row[f"{key}_ci_low"], row[f"{key}_ci_high"])


def blanked_lines(rows: list[dict[str, Any]]) -> list[str]:
    """One sentence per benchmark: each gain with the images and blanked, and how much of it
    comes from looking.

    >>> g = {"comparison": "SFT − base", "with_image": 0.39, "with_image_ci_low": 0.35,
    ...      "with_image_ci_high": 0.43, "blanked": 0.21, "blanked_ci_low": 0.18,
    ...      "blanked_ci_high": 0.23, "looking": 0.18, "looking_ci_low": 0.14,
    ...      "looking_ci_high": 0.22}
    >>> h = {"comparison": "SFT+GRPO − SFT", "with_image": 0.07, "with_image_ci_low": 0.04,
    ...      "with_image_ci_high": 0.11, "blanked": 0.12, "blanked_ci_low": 0.09,
    ...      "blanked_ci_high": 0.15, "looking": -0.05, "looking_ci_low": -0.09,
    ...      "looking_ci_high": -0.01}
    >>> print(blanked_lines([{"benchmark": "b", "gains": [g, h]}])[0])
    ... # doctest: +NORMALIZE_WHITESPACE
    With every image of b blanked, SFT − base is +21.0 points [+18.0, +23.0] (+39.0 with the
    image [+35.0, +43.0]): +18.0 of it from looking [+14.0, +22.0]; SFT+GRPO − SFT is +12.0
    points [+9.0, +15.0] (+7.0 with the image [+4.0, +11.0]): larger without the image, none of
    it from looking (-5.0 [-9.0, -1.0]).
    """
    lines = []
    for r in rows:
        parts = []
        for g in r["gains"]:
            part = (
                f"{g['comparison']} is {fmt.signed(g['blanked'])} points "
                f"{fmt.signed_interval(g['blanked_ci_low'], g['blanked_ci_high'])} "
                f"({fmt.signed(g['with_image'])} with the image "
                f"{fmt.signed_interval(g['with_image_ci_low'], g['with_image_ci_high'])})"
            )
            looking, low, high = g.get("looking"), g.get("looking_ci_low"), g.get("looking_ci_high")
            if looking is not None and low is not None and high is not None:
                interval = fmt.signed_interval(low, high)
                if low > 0:
                    part += f": {fmt.signed(looking)} of it from looking {interval}"
                elif high < 0:
                    part += (": larger without the image, none of it from looking "
                             f"({fmt.signed(looking)} {interval})")  # fmt: skip
                else:
                    part += (f": the part from looking, {fmt.signed(looking)} {interval}, "
                             "is not distinguishable from zero")  # fmt: skip
            parts.append(part)
        if parts:
            lines.append(f"With every image of {r['benchmark']} blanked, " + "; ".join(parts) + ".")
    return lines


def blanked_csv(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """blanked.csv: one row per benchmark × checkpoint, then one per benchmark × gain."""
    flat = [
        {"benchmark": r["benchmark"], "blank": r["blank"], "kind": "checkpoint", **c}
        for r in rows
        for c in r["checkpoints"]
    ]
    flat += [
        {"benchmark": r["benchmark"], "blank": r["blank"], "kind": "gain", **g}
        for r in rows
        for g in r["gains"]
    ]
    return flat
