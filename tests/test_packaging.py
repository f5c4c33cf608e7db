"""The two install paths (pip with pyproject.toml, conda with environment.yml) ask for the same things."""

import json
import re
import tomllib
from pathlib import Path

import yaml

# The repository root (tests/ is one level down). Not imported from conftest: notebooks/ has
# a conftest.py too, and pytest puts both folders on sys.path.
REPO = Path(__file__).resolve().parents[1]


# conda-forge's names for the packages PyPI names otherwise
CONDA_NAMES = {"python-hyperscan": "hyperscan"}


def _name(req: str) -> str:
    name = re.split(r"[<>=!~\[ ;]", req.strip(), maxsplit=1)[0].lower().replace("_", "-")
    return CONDA_NAMES.get(name, name)


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
        spec = re.sub(r"^[\w.-]+", "", req).strip()
        assert conda[name].endswith(spec), f"{name}: pyproject says {req!r}, environment.yml says {conda[name]!r}"
    assert conda["python"] == "python=3.11"
    # the conda environment is the developer's: the project with every extra pyproject names
    extras = [set(m.group(1).split(",")) for line in pip_lines if (m := re.search(r"-e \.\[([^\]]*)\]", line))]
    assert extras == [set(project["optional-dependencies"])]
    assert {"dev", "replay", "lab", "cluster"} <= set(project["optional-dependencies"])


def test_console_script_points_at_cli_main():
    scripts = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["scripts"]
    assert scripts["dflash-postmortem"] == "dflash_postmortem.cli:main"
    from dflash_postmortem.cli import main

    assert callable(main)


def test_ci_runs_the_readme_test_command():
    readme = (REPO / "README.md").read_text()
    assert "make test" in readme and "make report" in readme
    assert "make test" in (REPO / ".ci" / "run").read_text()


def test_every_package_is_listed_for_the_wheel():
    listed = set(tomllib.loads((REPO / "pyproject.toml").read_text())["tool"]["setuptools"]["packages"])
    found = {".".join(p.parent.relative_to(REPO).parts) for p in (REPO / "dflash_postmortem").rglob("__init__.py")}
    assert found | {"dflash_postmortem.notebooks"} == listed


def test_the_wheel_writes_a_report_away_from_the_checkout(tmp_path, bundled_dir):
    """Built, installed into a fresh venv (its dependencies borrowed from this one), and run from
    another folder: the notebooks come from the wheel, the kernel is the venv's own Python."""
    import os
    import shutil
    import subprocess
    import sys
    import sysconfig

    wheels = tmp_path / "wheels"
    subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q", "-w",
                    str(wheels), str(REPO)], check=True, capture_output=True)
    (wheel,) = wheels.glob("dflash_postmortem-*.whl")
    venv = tmp_path / "venv"
    # no pip of its own (ensurepip costs seconds of CPU): this venv's pip installs into it
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    py = venv / "bin" / "python"
    site = subprocess.run([str(py), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                          check=True, capture_output=True, text=True).stdout.strip()
    # The dependencies are this venv's (a .pth adds its folder: the checkout's own editable
    # install there is a .pth too, which a .pth-added folder does not run).
    (Path(site) / "borrowed.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    subprocess.run([sys.executable, "-m", "pip", "--python", str(py), "install", "-q", "--no-deps", "--no-index", str(wheel)],
                   check=True)
    work = tmp_path / "elsewhere"
    shutil.copytree(bundled_dir, work / "incident")
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "DFLASH_NOTEBOOKS")}
    # The borrowed dependencies' data files (nbconvert's templates) lie in this venv's prefix.
    env["JUPYTER_PATH"] = str(Path(sys.prefix) / "share" / "jupyter")
    where = subprocess.run([str(py), "-c", "import dflash_postmortem, dflash_postmortem.report.build as r; "
                            "print(dflash_postmortem.__file__); print(r.notebook_dir())"],
                           check=True, capture_output=True, text=True, cwd=work, env=env).stdout.split()
    assert all(p.startswith(site) for p in where), where
    r = subprocess.run([str(venv / "bin" / "dflash-postmortem"), "report", "incident", "-o", "out", "--no-progress"],
                       capture_output=True, text=True, cwd=work, env=env, timeout=600)
    assert r.returncode == 0, r.stderr[-2000:]
    assert "Traceback" not in r.stderr and "Kernel is running over TCP" not in r.stderr
    index = (work / "out" / "index.html").read_text()
    assert "class='failed'" not in index and len(list((work / "out").glob("0*.html"))) == 5
    # plotly.js from the wheel's vendor folder where plotly.py writes figures for its version
    from plotly.offline import get_plotlyjs_version

    from dflash_postmortem.vendor import PLOTLY_JS_VERSION
    cartesian = "plotly.js (cartesian - minified)" in (work / "out" / "plotly.min.js").read_text(encoding="utf-8")[:200]
    assert cartesian == (get_plotlyjs_version() == PLOTLY_JS_VERSION)
    # The kernel the notebooks name comes with the wheel, running the venv's own Python.
    spec = subprocess.run([str(py), "-c", "from jupyter_client.kernelspec import KernelSpecManager as M; "
                           "s = M().get_kernel_spec('dflash-postmortem'); print(s.resource_dir)"],
                          check=True, capture_output=True, text=True, cwd=work,
                          env={k: v for k, v in env.items() if k != "JUPYTER_PATH"}).stdout.strip()
    assert spec == str(venv / "share" / "jupyter" / "kernels" / "dflash-postmortem")
    names = {json.loads(nb.read_text())["metadata"]["kernelspec"]["name"] for nb in (REPO / "notebooks").glob("0*.ipynb")}
    assert names == {"dflash-postmortem"}
