"""Run a script in the SFT environment (.venv-sft: LLaMA-Factory), to check vlrl against
LLaMA-Factory's own code."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

from vlrl.stages.sft import llamafactory_cli


def run_in_sft_env(code: str, request: Any) -> Any:
    """``code`` run by .venv-sft's Python with ``request`` as JSON on stdin; the JSON of its
    last output line."""
    python = Path(llamafactory_cli()).with_name("python")
    done = subprocess.run(
        [str(python), "-c", code],
        input=json.dumps(request),
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.strip().splitlines()[-1])
