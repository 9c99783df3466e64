"""A stand-in for the GPU-only servers a stage starts (`vllm serve`, `trl vllm-serve`): it records
its arguments, ``CUDA_VISIBLE_DEVICES``, its process group and ``HF_HUB_OFFLINE`` to
``$FAKE_RECORD`` and answers ``GET /health`` as vLLM does, so that the real start / wait / stop
code of vlrl.serving.servers and vlrl.serving.trl_vllm runs against it. ``$FAKE_FAIL`` makes it
exit at start
with an out-of-memory line, as a server that cannot load does."""

from __future__ import annotations

import sys
from pathlib import Path

SCRIPT = """#!{python}
import json, os, sys
from http.server import BaseHTTPRequestHandler, HTTPServer
argv = sys.argv[1:]
if os.environ.get("FAKE_FAIL"):
    print("fake server: CUDA out of memory", flush=True)
    sys.exit(3)
port = int(argv[argv.index("--port") + 1])
record = {{"argv": argv, "cuda": os.environ.get("CUDA_VISIBLE_DEVICES"), "pgid": os.getpgrp(),
          "offline": os.environ.get("HF_HUB_OFFLINE")}}
with open(os.environ["FAKE_RECORD"], "w") as fh:
    json.dump(record, fh)
class Health(BaseHTTPRequestHandler):
    def do_GET(self):
        self.send_response(200 if self.path == "/health" else 404)
        self.end_headers()
    def log_message(self, *args):
        pass
HTTPServer(("127.0.0.1", port), Health).serve_forever()
"""


def write_fake_server(path: Path) -> Path:
    """The fake server as an executable at ``path`` (named ``vllm`` or ``trl``)."""
    path.write_text(SCRIPT.format(python=sys.executable))
    path.chmod(0o755)
    return path
