"""The ``report`` stage: the evaluation report of one experiment, and ``metrics.json``.

Inputs: ``results/<exp>/scores/<checkpoint>/<bench>.json`` of every checkpoint the experiment
evaluates (``cfg.checkpoints``, in the order base, sft, grpo) on every benchmark, read as
:class:`vlrl.items.predictions.Scores`; for the sample gallery, the predictions files beside them
and the benchmarks' images; the GRPO training curves when the experiment evaluates a GRPO model;
the published tables it links (``report.published``, ``config/reference/``); and, for the
provenance, the base model's and the benchmarks' datasets' config files (the library versions
shown are the installed ones and the pins of ``envs/sft.txt``: the commit's, like every stage's
environment). A missing scores file of a checkpoint it evaluates is an error naming the file.

Outputs, in ``reports/<exp>/`` (written to a temporary directory, renamed into place), rendered
from the Jinja templates of :mod:`vlrl.reporting.render` and the data frames of
:mod:`vlrl.reporting`:

- ``results.md`` / ``results.csv``: first the story (:func:`vlrl.reporting.tables.lead_lines`:
  per benchmark, what RL added over SFT and SFT over base, the paired comparisons' numbers;
  then ``reward_curve.png``), then the paper's layout (one row per model, each benchmark's
  headline metric), then per benchmark one row per checkpoint: the headline metric first,
  accuracy and the benchmark's other metrics with their intervals, n scored, unscored, each task,
  and which judge scored it; then each combined number (``report.combined``,
  :mod:`vlrl.reporting.combined`: benchmarks as one accuracy over all their items, also a column
  of the paper's layout and a row of ``results.csv``, its ``combines`` naming its benchmarks);
  published numbers beside the reproduced ones; how each file was scored; the provenance;
- ``comparisons.md`` / ``comparisons.csv``: paired differences on the items both checkpoints
  scored, between consecutive checkpoints (SFT − base, SFT+GRPO − SFT) and, with three,
  last − first: mean difference, percentile-bootstrap interval, McNemar's exact p and the
  discordant share;
- ``published.csv``: the linked published numbers beside the reproduced ones (no rows when the
  experiment links none);
- ``blind.csv`` / ``blanked.csv``: what a model that cannot see scores
  (:mod:`vlrl.reporting.blind`: the answer prior against each model) and each model with the
  images blanked (:mod:`vlrl.reporting.blanked`, for a ``blank_images_of`` benchmark beside its
  twin: what looking adds, and each gain with and without the image); ``parent.csv``: a
  child against the experiment it extends;
- ``accuracy.png``: grouped bars per task and overall, error bars = the intervals;
- ``grpo_curves.png`` (when the experiment evaluates GRPO): the dvclive training curves;
- ``reward_curve.png`` (when those curves have the total reward): the reward GRPO optimised,
  raw and smoothed, per step;
- ``index.html``: all of it on one self-contained page, with a sample gallery of each
  benchmark's items and every checkpoint's answer;

and ``results/<exp>/metrics.json`` for ``dvc exp show``:
``{bench: {checkpoint: {"accuracy", "ci_low", "ci_high", <task>: accuracy, <metric>: value}}}``,
a combined number under its name.

Every number is recomputed from the scores files' items (so the report cannot disagree with
them), with ``score.confidence``, ``score.bootstrap_resamples`` and the experiment's seed.
Unscored items (no judge verdict) are left out of every number and counted.
"""

from __future__ import annotations

import logging
from pathlib import Path

import pandas as pd

from vlrl.config import ExperimentConfig, load_experiment
from vlrl.config.reads import declared_reads
from vlrl.core import paths
from vlrl.core.files import atomic_dir, write_json
from vlrl.reporting import (
    blanked,
    blind,
    combined,
    curves,
    experiments,
    frames,
    gallery,
    plots,
    provenance,
    tables,
    versus,
)
from vlrl.reporting import formatting as fmt
from vlrl.reporting.labels import COLORS, TRUTH, label
from vlrl.reporting.render import render

log = logging.getLogger(__name__)


def run(exp: str, cfg: ExperimentConfig, code_files: list[str], code_root: Path) -> None:
    """Write the experiment's report (see the module docstring). ``code_files`` (relative to
    ``code_root``) are this stage's code, which its provenance lists and fingerprints: the
    ``vlrl report`` command passes what :func:`vlrl.workflow.stage_deps.code_files` derives."""
    sft = cfg.sft.enabled
    evaluations = frames.load(exp, list(cfg.benchmarks), list(cfg.checkpoints))
    combines = {name: c.benchmarks for name, c in cfg.report.combined.items()}
    results = frames.results_rows(evaluations, cfg.score.confidence, sft)
    results += combined.combined_rows(results, combines, cfg.score.confidence)
    comparisons = frames.comparison_rows(exp, evaluations, cfg.score, cfg.seed, sft)
    published = versus.versus_rows(
        list(cfg.report.published), results, evaluations, sft, cfg.score.confidence
    )
    parent = against_parent(exp, cfg)
    prior = blind.blind_rows(exp, evaluations, cfg.score, cfg.seed, sft)
    blank = blanked.blanked_rows(exp, evaluations, cfg.score, cfg.seed, sft)
    blanked_benchmarks = {r["blank"] for r in blank}
    level = fmt.level(cfg.score.confidence)
    trained = curves.read_curves(curves.curves_dir(exp)) if "grpo" in cfg.checkpoints else {}
    reward = trained.get(curves.REWARD)
    settings = cfg.report.gallery
    samples = [
        {"name": ev.bench, "entries": gallery.build(exp, ev, settings, cfg.seed, sft)}
        for ev in evaluations
        if settings.n and ev.config.blank_images_of is None  # its twin shows the same items
    ]
    context = {
        "title": cfg.report.title or exp,
        "description": cfg.description,
        "level": level,
        # a blank-image benchmark's gains are told beside its twin's (blanked_lines)
        "lead": tables.lead_lines(
            [r for r in comparisons if r["benchmark"] not in blanked_benchmarks],
            sft,
            cfg.score.confidence,
        ),
        "reward_png": None if reward is None else curves.plot_reward(reward),
        "reward_axis": None if reward is None else reward.columns[0],
        "seed": cfg.seed,
        "resamples": cfg.score.bootstrap_resamples,
        "summary": tables.summary_table(
            results,
            published,
            evaluations,
            versus.summary_columns(evaluations, published, combines),
        ),
        "benchmarks": [
            {
                "name": ev.bench,
                "headline": ev.config.headline,
                "table": tables.results_table(results, ev),
            }
            for ev in evaluations
        ],
        "combined": [
            {"name": name, "parts": names, "table": combined.combined_table(results, name)}
            for name, names in combines.items()
        ],
        "comparisons": tables.comparisons_table(comparisons, cfg.score.confidence),
        "blind_lines": blind.blind_lines(prior, cfg.score.confidence),
        "blind_table": blind.blind_table(prior, cfg.score.confidence),
        "blanked_lines": blanked.blanked_lines(blank),
        "blanked_table": blanked.blanked_table(blank, cfg.score.confidence),
        "gains_table": blanked.gains_table(blank, cfg.score.confidence),
        "parent": cfg.extends if parent else None,
        "parent_lines": [r["sentence"] for r in parent],
        "parent_table": experiments.parent_table(parent, cfg.score.confidence),
        "has_published": bool(cfg.report.published),
        "versus": tables.versus_table(published, cfg.score.confidence),
        "not_evaluated": tables.not_evaluated_table(published),
        "judged": any(ev.judged(c) for ev in evaluations for c in ev.scores),
        "prov": provenance.collect(
            exp, cfg, declared_reads("report"), evaluations, code_files, code_root
        ),
        "accuracy_png": plots.accuracy_png(
            [r for r in results if not combined.parts(r)], cfg.score.confidence
        ),
        "curves_png": curves.plot_curves(trained) if trained else None,
        "curves_dir": curves.curves_dir(exp).as_posix(),
        "curve_names": list(trained),
        "gallery": samples,
        "gallery_boxes": any(i.problem_type == "grounding" for g in samples for i in g["entries"]),
        "gallery_undecodable": any(
            "\ufffd" in a.reasoning + a.answer
            for g in samples
            for i in g["entries"]
            for a in i.answers
        ),
        "gallery_n": settings.n,
        "reasoning_chars": settings.reasoning_chars,
        "truth_color": TRUTH,
        "box_colors": [(label(c, sft), COLORS[c]) for c in cfg.checkpoints],
    }

    with atomic_dir(paths.report_dir(exp)) as tmp:
        (tmp / "results.md").write_text(render("results.md.j2", **context))
        pd.DataFrame(results).to_csv(tmp / "results.csv", index=False)
        (tmp / "comparisons.md").write_text(render("comparisons.md.j2", **context))
        pd.DataFrame(comparisons).to_csv(tmp / "comparisons.csv", index=False)
        pd.DataFrame(published, columns=versus.COLUMNS).to_csv(tmp / "published.csv", index=False)
        if prior:
            pd.DataFrame(blind_csv(prior)).to_csv(tmp / "blind.csv", index=False)
        if blank:
            pd.DataFrame(blanked.blanked_csv(blank)).to_csv(tmp / "blanked.csv", index=False)
        if parent:
            pd.DataFrame(parent, columns=experiments.COLUMNS).to_csv(
                tmp / "parent.csv", index=False
            )
        (tmp / "accuracy.png").write_bytes(context["accuracy_png"])
        if context["curves_png"]:
            (tmp / "grpo_curves.png").write_bytes(context["curves_png"])
        if context["reward_png"]:
            (tmp / "reward_curve.png").write_bytes(context["reward_png"])
        (tmp / "index.html").write_text(render("index.html.j2", **context))
    write_json(paths.metrics_file(exp), frames.metrics_tree(results))
    for r in results:
        log.info(
            "report: %s %s: accuracy %s (n=%d, %d unscored)",
            r["benchmark"],
            r["model"],
            fmt.with_interval(r["accuracy"], r["ci_low"], r["ci_high"]),
            r["n"],
            r["unscored"],
        )
    for r in parent:
        log.info("report: %s", r["sentence"])
    for line in [*blind.blind_lines(prior, cfg.score.confidence), *blanked.blanked_lines(blank)]:
        log.info("report: %s", line)
    for r in comparisons:
        log.info(
            "report: %s %s: %s pts %s, McNemar p %s",
            r["benchmark"],
            r["comparison"],
            fmt.signed(r["diff"]),
            fmt.signed_interval(r["ci_low"], r["ci_high"]),
            fmt.p_value(r["p_mcnemar"]),
        )
    log.info("report: wrote %s and %s", paths.report_dir(exp), paths.metrics_file(exp))


def against_parent(exp: str, cfg: ExperimentConfig) -> list[dict]:
    """Did the child's change help? Each benchmark and checkpoint the experiment and the one it
    ``extends:`` both evaluate, paired on the same items
    (:func:`vlrl.reporting.experiments.compare_rows`); none for an experiment with no parent or
    none in common with it."""
    if not cfg.extends:
        return []
    parent_cfg = load_experiment(cfg.extends)
    shared_data = experiments.same_data(exp, cfg.extends)
    if not experiments.common(cfg, parent_cfg, shared_data):  # other benchmarks, or other items
        return []
    return experiments.compare_rows(exp, cfg.extends, cfg, parent_cfg, cfg.score, cfg.seed)


def blind_csv(rows: list[dict]) -> list[dict]:
    """blind.csv: one row per benchmark × model, the answer prior's numbers beside the paired
    difference model − prior; then one per benchmark × gain between checkpoints, paired on the
    items the prior answers wrong."""
    flat = []
    for r in rows:
        prior = {f"prior_{k}": r[k] for k in ("n", "accuracy", "ci_low", "ci_high")}
        basis = {"by_question": r["by_question"], "by_type": r["by_type"]}
        for c in r["comparisons"]:
            flat.append({"benchmark": r["benchmark"], "kind": "model − prior", **prior, **basis,
                         **c})  # fmt: skip
        for g in r["where_prior_fails"]:
            flat.append({"benchmark": r["benchmark"], "kind": "gain where the prior is wrong",
                         **prior, **basis, **g})  # fmt: skip
    return flat
