"""The report's text, rendered from the Jinja templates in ``templates/`` (Markdown and HTML).

The templates receive data frames of formatted cells (:mod:`vlrl.reporting.tables`) and plain
records; any number they print themselves goes through a filter of
:mod:`vlrl.reporting.formatting`. ``FILES`` declares the templates to
:mod:`vlrl.workflow.stage_deps`, so an edited template reruns the report.
"""

from __future__ import annotations

import base64
import functools
from pathlib import Path
from typing import Any

import jinja2
import yaml

from vlrl.reporting import formatting as fmt

#: Files this module reads at run time: code of every stage that imports it (stage_deps).
FILES = ("templates/*.j2",)
TEMPLATES = Path(__file__).parent / "templates"


def markdown_cell(text: Any) -> str:
    """A table cell's text made safe for a Markdown table: one line, pipes escaped.

    >>> markdown_cell("a|b\\nc")
    'a\\\\|b c'
    """
    return " ".join(str(text).split("\n")).replace("|", "\\|")


def data_uri(png: bytes) -> str:
    """PNG bytes as a ``data:`` URI, so the page holds its images.

    >>> data_uri(b"x")
    'data:image/png;base64,eA=='
    """
    return "data:image/png;base64," + base64.b64encode(png).decode()


def as_yaml(tree: Any) -> str:
    """Plain values as YAML, in their order.

    >>> print(as_yaml({"seed": 0, "score.confidence": 0.95}), end="")
    seed: 0
    score.confidence: 0.95
    """
    return yaml.safe_dump(tree, sort_keys=False, default_flow_style=False, width=100)


@functools.cache
def environment() -> jinja2.Environment:
    """The templates' environment: HTML templates escape what they insert, Markdown ones do
    not; an undefined name is an error, not an empty string."""
    env = jinja2.Environment(
        loader=jinja2.FileSystemLoader(TEMPLATES),
        autoescape=lambda name: bool(name and name.endswith(".html.j2")),
        undefined=jinja2.StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
        keep_trailing_newline=True,
    )
    env.filters.update(
        md=markdown_cell,
        data_uri=data_uri,
        yaml=as_yaml,
        value=fmt.value,
        count=fmt.count,
        level=fmt.level,
        p_value=fmt.p_value,
    )
    return env


def render(template: str, **context: Any) -> str:
    """Render ``templates/<template>`` with ``context``."""
    return environment().get_template(template).render(**context)
