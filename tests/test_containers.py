"""Containers: envs/vlrl.def installs exactly the locked files, into the environments and with
the commands `make setup` / `make setup-gpu` use; and the rules run in the image that
``config["container"]`` names (``--config container=...``), in none by default. apptainer is not
installed here and a Snakemake dry run with ``--software-deployment-method apptainer`` needs it,
so the rules' container is read through Snakemake's API (the workflow loaded, in a subprocess)."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
DEF = ROOT / "envs" / "vlrl.def"


def section(name: str) -> str:
    """The body of ``%<name>`` of the definition file."""
    match = re.search(rf"^%{name}\n(.*?)(?=^%|\Z)", DEF.read_text(), re.S | re.M)
    assert match, f"vlrl.def has no %{name}"
    return match.group(1)


def installs(text: str, venvs: dict[str, str]) -> set[tuple[str, str]]:
    """(environment, requirements file) of every ``install ... -r <file>`` command in ``text``,
    the environment named by ``--python <env>/bin/python`` or by the pip that runs
    (``<env>/bin/pip``); ``venvs`` maps Make variables (``$(MAIN)``) to directories."""
    for var, path in venvs.items():
        text = text.replace(f"$({var})", path)
    found = set()
    for line in text.splitlines():
        requirement = re.search(r"install .*-r (\S+)", line)
        if not requirement:
            continue
        env = re.search(r"--python (\S+)/bin/python", line) or re.search(r"(\S+)/bin/pip ", line)
        assert env, line
        found.add((env.group(1), requirement.group(1)))
    return found


def makefile_installs() -> set[tuple[str, str]]:
    text = (ROOT / "Makefile").read_text()
    variables = dict(re.findall(r"^(\w+) := (\S+)$", text, re.M))
    recipes = re.findall(r"^\$\(STAMPS\)/\w+:.*\n((?:\t.*\n)+)", text, re.M)
    return installs("".join(recipes), variables)


def test_the_image_installs_exactly_the_locks_as_make_setup_does():
    image = installs(section("post"), {})
    assert image == makefile_installs()
    assert {file for _, file in image} == {
        "envs/bootstrap.txt",
        "envs/main.txt",
        "envs/sft.txt",
        "envs/latex.txt",
        "envs/gpu.txt",
    }
    for _, file in image:  # locks, every one an exact pin list
        lines = (ROOT / file).read_text().splitlines()
        assert all("==" in line for line in lines if line and not line.startswith("#")), file


def test_the_image_copies_the_locks_and_builds_the_gpu_set_only_when_asked():
    assert re.search(r"^\s*envs /opt/vlrl/envs$", section("files"), re.M)
    arguments = dict(
        line.strip().split("=", 1) for line in section("arguments").splitlines() if "=" in line
    )
    assert arguments["GPU"] == "0"
    post = section("post")
    gpu_block = post[post.index('if [ "{{ GPU }}" = 1 ]') :]
    assert "envs/gpu.txt" in gpu_block.split("fi")[0]
    assert "envs/gpu.txt" not in post[: post.index('if [ "{{ GPU }}" = 1 ]')]


def test_an_offline_build_installs_from_the_wheelhouse_only():
    post = section("post")
    assert 'PIP_FROM="--no-index --find-links envs/wheelhouse"' in post
    assert 'UV_FROM="--offline --no-index --find-links envs/wheelhouse"' in post
    for line in post.splitlines():
        if re.search(r"(pip|uv pip) install", line):
            assert "$PIP_FROM" in line or "$UV_FROM" in line, line


RULE_CONTAINERS = """
import json, sys
from pathlib import Path
from snakemake.api import SnakemakeApi
from snakemake.settings.types import (
    ConfigSettings, DeploymentMethod, DeploymentSettings, OutputSettings, ResourceSettings,
)
config = json.loads(sys.argv[1])
with SnakemakeApi(OutputSettings(quiet={"all"})) as api:
    workflow = api.workflow(
        resource_settings=ResourceSettings(cores=1),
        config_settings=ConfigSettings(config=config),
        deployment_settings=DeploymentSettings(
            deployment_method=frozenset({DeploymentMethod.APPTAINER})
        ),
        snakefile=Path("Snakefile"),
        workdir=Path("."),
    )
    rules = workflow._workflow.rules
    print(json.dumps({rule.name: rule.container_img or None for rule in rules}))
"""


def rule_containers(config: dict) -> dict[str, str | None]:
    out = subprocess.run(
        [sys.executable, "-c", RULE_CONTAINERS, json.dumps(config)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert out.returncode == 0, out.stderr[-3000:]
    return json.loads(out.stdout.strip().splitlines()[-1])


@pytest.fixture(scope="module")
def containers() -> tuple[dict, dict]:
    return rule_containers({}), rule_containers({"container": "images/vlrl.sif"})


def test_every_job_rule_runs_in_the_configured_image(containers):
    _, with_image = containers
    jobs = {name: img for name, img in with_image.items() if name != "all"}
    assert {"data", "download", "base_model", "sft", "grpo", "merge", "infer", "score"} <= set(jobs)
    assert set(jobs.values()) == {"images/vlrl.sif"}


def test_no_rule_has_a_container_by_default(containers):
    default, _ = containers
    assert set(default.values()) == {None}


@pytest.mark.network
def test_vlrl_itself_builds_offline_from_a_wheelhouse_of_the_locks(tmp_path: Path) -> None:
    """The image installs vlrl with ``uv pip install --offline --no-index --find-links
    envs/wheelhouse --no-deps -e .``, which builds it with pyproject.toml's build backend
    (setuptools>=68): no lock of an environment has it, so envs/build.txt pins it and the
    README's wheelhouse command downloads it. Done here with a wheelhouse of envs/build.txt alone
    (no other package is needed for a --no-deps build), then without it."""
    wheelhouse = tmp_path / "wheelhouse"
    download = [sys.executable, "-m", "pip", "download", "--quiet", "--no-deps"]
    subprocess.run(
        [*download, "-r", str(ROOT / "envs/build.txt"), "-d", str(wheelhouse)], check=True
    )
    readme = (ROOT / "README.md").read_text()
    assert "-r envs/build.txt" in readme.split("pip download", 1)[1].split("`", 1)[0]
    uv = ROOT / ".venv" / "bin" / "uv"

    def install(find_links: Path) -> subprocess.CompletedProcess:
        venv = tmp_path / f"venv-{find_links.name}"
        subprocess.run(
            [str(uv), "venv", "--quiet", "--python", sys.executable, str(venv)], check=True
        )
        offline = ["--offline", "--no-index", "--find-links", str(find_links)]
        cache = ["--cache-dir", str(tmp_path / f"cache-{find_links.name}")]
        return subprocess.run(
            [
                str(uv),
                "pip",
                "install",
                *offline,
                *cache,
                "--python",
                str(venv / "bin/python"),
                "--no-deps",
                "-e",
                str(ROOT),
            ],
            capture_output=True,
            text=True,
        )

    built = install(wheelhouse)
    assert built.returncode == 0, built.stderr
    (tmp_path / "empty").mkdir()
    refused = install(tmp_path / "empty")
    assert refused.returncode != 0 and "setuptools" in refused.stderr, refused.stderr
