"""sympy's ANTLR LaTeX parser, run in an environment of its own.

``sympy.parsing.latex.parse_latex`` needs antlr4-python3-runtime 4.11; omegaconf (under dvc and
hydra-core) holds vlrl's environment to 4.9.*. ``make setup`` therefore builds ``.venv-latex``
(``envs/latex.txt``: the same sympy, with antlr4 4.11), and :class:`SideLatexParser` parses
there: one long-lived process reads a LaTeX string per line and answers with the parsed
expression pickled (the same sympy version on both sides; loaded with evaluation off, so the
tree is exactly the parsed one, unevaluated parts included) or with the exception it raised,
which is raised again here under its own class (``LaTeXParsingError``), so a judge's ``except``
treats it as it would in process.
"""

from __future__ import annotations

import base64
import importlib
import json
import os
import pickle
import subprocess
from pathlib import Path
from typing import Any

from vlrl.core import paths

PYTHON_ENV = "VLRL_LATEX_PYTHON"
"""Where the side environment's Python is, if not ``<project>/.venv-latex/bin/python``."""

SERVER = r"""
import base64, json, pickle, sys
from sympy.parsing.latex import parse_latex
for line in sys.stdin:
    try:
        out = {"pickle": base64.b64encode(pickle.dumps(parse_latex(json.loads(line)))).decode()}
    except Exception as exc:
        kind = type(exc)
        out = {"module": kind.__module__, "error": kind.__qualname__, "message": str(exc)}
    sys.stdout.write(json.dumps(out) + "\n")
    sys.stdout.flush()
"""


def side_python() -> Path:
    """The side environment's Python: ``$VLRL_LATEX_PYTHON``, else ``.venv-latex/bin/python`` of
    the project."""
    return Path(os.environ.get(PYTHON_ENV) or paths.root() / ".venv-latex" / "bin" / "python")


def _raised(answer: dict[str, Any]) -> Exception:
    """The exception the side process reported, as its own class where that imports here."""
    try:
        kind = getattr(importlib.import_module(answer["module"]), answer["error"])
    except (ImportError, AttributeError):
        kind = None
    if isinstance(kind, type) and issubclass(kind, Exception):
        try:
            return kind(answer["message"])
        except Exception:  # a class that takes other arguments
            pass
    return RuntimeError(f"{answer['module']}.{answer['error']}: {answer['message']}")


class SideLatexParser:
    """``parse_latex`` of the side environment, called like sympy's (one LaTeX string in, a sympy
    expression out). The process starts on the first call and is started again after a call
    that did not finish (a judge's timeout interrupts it mid-answer)."""

    def __init__(self, python: Path | None = None) -> None:
        self.python = python or side_python()
        self._process: subprocess.Popen | None = None

    def _started(self) -> subprocess.Popen:
        if self._process is None or self._process.poll() is not None:
            if not self.python.is_file():
                raise RuntimeError(
                    f"sympy's LaTeX parser runs in {self.python}, which does not exist: "
                    "`make setup` builds .venv-latex (envs/latex.txt)"
                )
            self._process = subprocess.Popen(
                [str(self.python), "-c", SERVER],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                text=True,
                bufsize=1,
            )
        return self._process

    def __call__(self, latex: str) -> Any:
        process = self._started()
        finished = False
        try:
            assert process.stdin is not None and process.stdout is not None
            process.stdin.write(json.dumps(latex) + "\n")
            process.stdin.flush()
            line = process.stdout.readline()
            finished = True
        finally:
            if not finished:  # interrupted: its answer would be read by the next call
                self.close()
        if not line:
            self.close()
            raise RuntimeError(f"the LaTeX parser in {self.python} stopped (parsing {latex!r})")
        answer = json.loads(line)
        if "pickle" in answer:
            from sympy import evaluate

            # unpickling calls the constructors again: unevaluated, the tree is the parsed one
            # (evaluating would turn parse_latex's unevaluated \\frac{2}{4} into 1/2)
            with evaluate(False):
                return pickle.loads(base64.b64decode(answer["pickle"]))
        raise _raised(answer)

    def close(self) -> None:
        """Stop the side process (a later call starts another)."""
        if self._process is not None:
            self._process.kill()
            self._process.wait()
            self._process = None

    def __del__(self) -> None:
        self.close()
