"""The two install paths (pip with pyproject.toml, conda with environment.yml) ask for the same things."""

import re
import tomllib
from pathlib import Path

import yaml

# The repository root (tests/ is one level down). Not imported from conftest: notebooks/ has
# a conftest.py too, and pytest puts both folders on sys.path.
REPO = Path(__file__).resolve().parents[1]


def _name(req: str) -> str:
    return re.split(r"[<>=!~\[ ;]", req.strip(), maxsplit=1)[0].lower().replace("_", "-")


def test_environment_yml_matches_pyproject():
    project = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]
    env = yaml.safe_load((REPO / "environment.yml").read_text())
    conda = {}
    pip_lines = []
    for dep in env["dependencies"]:
        if isinstance(dep, dict):
            pip_lines += dep["pip"]
        else:
            conda[_name(dep)] = dep
    runtime = {_name(r): r for r in project["dependencies"]}
    assert set(runtime) <= set(conda), f"missing from environment.yml: {set(runtime) - set(conda)}"
    for name, req in runtime.items():
        spec = req[len(name):].strip()
        assert conda[name].endswith(spec), f"{name}: pyproject says {req!r}, environment.yml says {conda[name]!r}"
    assert conda["python"] == "python=3.11"
    assert any(".[dev,replay]" in line for line in pip_lines)
    assert set(project["optional-dependencies"]) >= {"dev", "replay"}


def test_console_script_points_at_cli_main():
    scripts = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["scripts"]
    assert scripts["dflash-postmortem"] == "dflash_postmortem.cli:main"
    from dflash_postmortem.cli import main

    assert callable(main)


def test_ci_runs_the_readme_test_command():
    readme = (REPO / "README.md").read_text()
    assert "make test" in readme and "make report" in readme
    assert "make test" in (REPO / ".ci" / "run").read_text()
