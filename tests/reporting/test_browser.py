"""The report's index.html in a real browser: Chromium, driven by Playwright, opens a page the
report stage wrote (base, SFT and SFT+GRPO on synthetic predictions scored by the real score
stage, with a sample gallery, the GRPO reward and curves): it renders (title, tables, sections),
every image loads, nothing is fetched from outside the page, and the console stays clean.

The browser is the system's (Debian's ``chromium``, which ``.ci/browser-up`` installs; CI runs it
before ``make test``): Playwright downloads none. Where none is found the tests skip and say why
(pytest prints the reason: -ra).
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest
from chromium import BROWSER, NO_BROWSER
from PIL import Image

from vlrl.config import load_experiment
from vlrl.core import paths
from vlrl.stages import report, score
from vlrl.workflow import resolve, stage_deps

REPO = Path(__file__).resolve().parents[2]
EXP = "tiny_shapes"
GALLERY = 4


pytestmark = pytest.mark.skipif(BROWSER is None, reason=NO_BROWSER)


def open_in_browser(page_file: Path) -> dict[str, Any]:
    """What Chromium shows of ``page_file``: its title, headings, tables, images (src scheme,
    loaded, natural width), the console's errors, the page's uncaught errors and every request
    for something outside the page itself (file or data URIs)."""
    from playwright.sync_api import sync_playwright

    seen: dict[str, list[str]] = {"console_errors": [], "page_errors": [], "outside": []}
    with sync_playwright() as driver:
        browser = driver.chromium.launch(executable_path=BROWSER)
        try:
            page = browser.new_page()
            page.on(
                "console",
                lambda m: m.type == "error" and seen["console_errors"].append(m.text),
            )
            page.on("pageerror", lambda err: seen["page_errors"].append(str(err)))
            page.on(
                "request",
                lambda r: r.url.startswith(("file:", "data:")) or seen["outside"].append(r.url),
            )
            page.goto(page_file.resolve().as_uri(), wait_until="load")
            shown = page.evaluate(
                """() => ({
                    title: document.title,
                    headings: [...document.querySelectorAll('h1, h2')]
                        .map(h => h.id || h.textContent),
                    tables: [...document.querySelectorAll('table')]
                        .filter(t => t.offsetHeight > 0).length,
                    images: [...document.images].map(i => ({
                        alt: i.alt, scheme: i.src.split(':')[0],
                        loaded: i.complete && i.naturalWidth > 0, width: i.naturalWidth,
                    })),
                })"""
            )
        finally:
            browser.close()
    return {**shown, **seen}


def write_predictions(
    checkpoint: str, chance: float, n: int = 30, bench: str = "shapes_test"
) -> None:
    """``n`` answers to numerical items, right on a fixed share (``chance``) of them."""
    rows = [
        {
            "id": f"shapes-{i:03d}",
            "task": "count",
            "problem_type": "numerical",
            "problem": f"How many shapes are there? ({i})",
            "answer": "3",
            "options": [],
            "boxes": [],
            "images": [f"images/test/{i}.png"],
            "prompt": f"How many shapes are there? ({i})",
            "response": f"<answer>{3 if (i * 7) % n < chance * n else 2}</answer>",
            "model": f"results/{EXP}/{checkpoint}",
            "checkpoint": checkpoint,
        }
        for i in range(n)
    ]
    path = paths.predictions_file(EXP, checkpoint, bench)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))


def write_curves(steps: int = 12) -> None:
    """A dvclive folder as the grpo stage leaves it: trainer arguments and a few curves."""
    live = paths.grpo_curves_dir(EXP).parent.parent
    (live / "params.yaml").parent.mkdir(parents=True, exist_ok=True)
    (live / "params.yaml").write_text("logging_strategy: steps\nlogging_steps: 5\n")
    for name in ("reward", "kl", "rewards/common.accuracy/mean", "completions/mean_length"):
        path = paths.grpo_curves_dir(EXP) / f"{name}.tsv"
        path.parent.mkdir(parents=True, exist_ok=True)
        rows = "".join(f"{s}\t{(s % 5) / 10 + s / 100}\n" for s in range(steps))
        path.write_text(f"step\t{path.stem}\n{rows}")


@pytest.fixture
def index_html(project: Path) -> Path:
    """The report stage's index.html of a scratch project, with every section filled."""
    shutil.copytree(REPO / "envs", project / "envs")  # the provenance reads the pins
    cfg = load_experiment(EXP, [f"report.gallery.n={GALLERY}"])
    resolve.ensure("base_model", cfg.base_model)  # the provenance reads it
    images = paths.data_dir(EXP) / "images" / "test"
    images.mkdir(parents=True)
    for i in range(30):
        Image.new("RGB", (56, 56), (8 * i, 100, 200)).save(images / f"{i}.png")
    for checkpoint, chance in zip(cfg.checkpoints, (0.2, 0.5, 0.7), strict=True):
        write_predictions(checkpoint, chance)
        score.run(EXP, cfg, checkpoint, "shapes_test")
        write_predictions(checkpoint, chance / 2, bench="shapes_test_blank")
        score.run(EXP, cfg, checkpoint, "shapes_test_blank")
    write_curves()
    root = stage_deps.source_root().parent
    report.run(EXP, cfg, stage_deps.code_files("report", root), root)
    return paths.report_dir(EXP) / "index.html"


def test_the_report_renders_with_every_image_and_a_clean_console(index_html: Path):
    shown = open_in_browser(index_html)
    assert shown["title"] == EXP
    assert {"curves", "gallery"} <= set(shown["headings"]), shown["headings"]
    assert shown["tables"] >= 3, "summary, per-benchmark results, comparisons"
    alts = [i["alt"] for i in shown["images"]]
    assert alts[:2] == ["GRPO training reward", "accuracy per task and checkpoint"], alts
    assert alts[-1] == "GRPO training curves"
    assert sum(a.startswith("image of item") for a in alts) == GALLERY == len(alts) - 3, alts
    assert all(i["loaded"] and i["scheme"] == "data" for i in shown["images"]), shown["images"]
    assert shown["console_errors"] == [] and shown["page_errors"] == []
    assert shown["outside"] == [], "the page is self-contained"


def test_a_broken_image_a_script_error_and_an_outside_fetch_are_seen(tmp_path: Path):
    page = tmp_path / "broken.html"
    page.write_text(
        "<!doctype html><html><head><title>t</title></head><body><h1>t</h1>"
        '<img alt="bad" src="data:image/png;base64,AAAA">'
        '<img alt="gone" src="missing.png">'
        "<script>undefined_function()</script>"
        '<img alt="far" src="http://127.0.0.1:9/x.png"></body></html>'
    )
    shown = open_in_browser(page)
    assert [i["loaded"] for i in shown["images"]] == [False, False, False]
    assert shown["page_errors"] and "undefined_function" in shown["page_errors"][0]
    assert any("ERR_FILE_NOT_FOUND" in e for e in shown["console_errors"]), shown
    assert shown["outside"] == ["http://127.0.0.1:9/x.png"]
