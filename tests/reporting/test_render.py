"""vlrl.reporting.render: the templates render data frames as Markdown and escaped HTML."""

from __future__ import annotations

import jinja2
import pandas as pd
import pytest

from vlrl.reporting.render import environment, render

FRAME = pd.DataFrame(
    [{"model": "a|b", "value": "<script>x</script>"}, {"model": "c", "value": "1"}]
)


def test_markdown_tables_escape_pipes_and_end_without_a_blank_line():
    template = environment().from_string('{% import "_tables.md.j2" as md %}{{ md.table(f) }}!')
    assert template.render(f=FRAME) == (
        "| model | value |\n|---|---|\n| a\\|b | <script>x</script> |\n| c | 1 |!"
    )


def test_html_tables_escape_what_they_insert():
    template = environment().get_template("_tables.html.j2")
    html = template.module.table(FRAME)
    assert "&lt;script&gt;x&lt;/script&gt;" in html and "<script>" not in html
    assert "<th>model</th>" in html and "<td>a|b</td>" in html


def test_an_undefined_name_is_an_error_not_an_empty_string():
    with pytest.raises(jinja2.UndefinedError):
        render("comparisons.md.j2", title="t")


def test_the_comparisons_page_renders():
    text = render(
        "comparisons.md.j2",
        title="T",
        level="95%",
        resamples=2000,
        seed=0,
        comparisons=pd.DataFrame([{"comparison": "SFT − base", "McNemar p": "< 0.001"}]),
    )
    assert text.startswith("# T — paired comparisons\n")
    assert "(2000 resamples, seed 0)" in text
    assert text.endswith("| comparison | McNemar p |\n|---|---|\n| SFT − base | < 0.001 |\n")


def test_yaml_keeps_the_order_lists_as_blocks_and_folds_past_100_columns():
    from vlrl.reporting.render import as_yaml

    tree = {"seed": 0, "benchmarks": ["b", "a"], "score": {"z": 1, "a": 2}}
    assert as_yaml(tree) == "seed: 0\nbenchmarks:\n- b\n- a\nscore:\n  z: 1\n  a: 2\n"
    # "note: " and 87 letters, then words: the line breaks where it passes 100 columns
    line = "note: " + "a" * 87 + " b c d e"
    assert as_yaml({"note": "a" * 87 + " b c d e f"}) == line + "\n  f\n"


def test_a_markdown_cell_is_one_line_with_its_spacing_kept():
    from vlrl.reporting.render import markdown_cell

    assert markdown_cell("a  b\nc|d\n") == "a  b c\\|d "
    assert markdown_cell(0.5) == "0.5"
