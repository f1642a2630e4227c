"""nbgrad as a user installs it: the sdist and the wheel, built from this tree, carry the license
and the built widget, install without Node.js, and run a ``%%autograd`` cell and ``save_html``
in a clean virtual environment.

"Without Node.js" is made sure of by ``node`` and ``npm`` commands first on PATH that fail: a
build or an install that called either would fail with them.
"""

import json
import os
import subprocess
import sys
import tarfile
import venv
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
LOCK = ROOT / "requirements" / "lock.txt"

pytestmark = pytest.mark.skipif(
    not (ROOT / "nbgrad" / "static" / "widget.js").exists(),
    reason="the widget is not built (scripts/test builds it first)",
)


def _run(command, env, cwd=None):
    done = subprocess.run(command, env=env, cwd=cwd, capture_output=True, text=True)
    assert done.returncode == 0, f"{command} failed:\n{done.stdout}\n{done.stderr}"
    return done.stdout


@pytest.fixture(scope="module")
def no_node_env(tmp_path_factory):
    """The environment, with ``node`` and ``npm`` that fail whoever calls them."""
    shims = tmp_path_factory.mktemp("no-node")
    for name in ("node", "npm", "npx", "yarn"):
        shim = shims / name
        shim.write_text(
            f"#!/bin/sh\necho '{name} was called, but Node.js is not installed' >&2\nexit 127\n"
        )
        shim.chmod(0o755)
    return dict(os.environ, PATH=f"{shims}{os.pathsep}{os.environ['PATH']}")


@pytest.fixture(scope="module")
def dists(tmp_path_factory, no_node_env):
    """The sdist built from this tree, and the wheel built from that sdist without Node.js."""
    out = tmp_path_factory.mktemp("dist")
    _run([sys.executable, "-m", "build", "--sdist", "--outdir", str(out), str(ROOT)], os.environ)
    (sdist,) = out.glob("nbgrad-*.tar.gz")
    _run([sys.executable, "-m", "build", "--wheel", "--outdir", str(out), str(sdist)], no_node_env)
    (wheel,) = out.glob("nbgrad-*.whl")
    return sdist, wheel


def test_the_sdist_carries_the_license_and_the_built_widget(dists):
    sdist, _ = dists
    with tarfile.open(sdist) as archive:
        names = {name.split("/", 1)[1] for name in archive.getnames() if "/" in name}
    assert {"LICENSE", "nbgrad/static/widget.js", "nbgrad/static/widget.css"} <= names
    assert "js/src/widget.js" in names and not any("node_modules" in n for n in names)


def test_the_wheel_carries_the_license_and_the_built_widget(dists):
    _, wheel = dists
    names = set(zipfile.ZipFile(wheel).namelist())
    assert {"nbgrad/static/widget.js", "nbgrad/static/widget.css"} <= names
    assert any(n.endswith(".dist-info/licenses/LICENSE") for n in names)
    assert not any(n.startswith(("js/", "tests/", "notebooks/")) for n in names)


CELL_PROGRAM = r"""
import json, sys
from IPython.core.interactiveshell import InteractiveShell

shell = InteractiveShell.instance()
shell.run_line_magic("load_ext", "nbgrad")
result = shell.run_cell('''%%autograd --no-show
import nbgrad as torch
a = torch.tensor(2.0, requires_grad=True)
b = torch.tensor(3.0, requires_grad=True)
c = a + b
d = torch.tensor(4.0, requires_grad=True)
e = c * d
e.backward()
''')
result.raise_error()
import nbgrad
from nbgrad.widget import GraphWidget

trace = nbgrad.last_trace()
page = GraphWidget(trace).save_html(sys.argv[1]).read_text()
print(json.dumps({
    "nbgrad": nbgrad.__file__,
    "grads": [shell.user_ns[n].grad.item() for n in "abcd"],
    "nodes": sorted(n.name for n in trace.nodes),
    "page_bytes": len(page),
    "bundle_inlined": "render" in page and "no widget bundle" not in page.lower(),
}))
"""


def test_the_wheel_installs_without_node_and_records_a_cell(dists, tmp_path, no_node_env):
    sdist, wheel = dists
    env_dir = tmp_path / "venv"
    venv.create(env_dir, with_pip=True)
    python = str(env_dir / "bin" / "python")
    _run(
        [
            python,
            "-m",
            "pip",
            "install",
            "--quiet",
            "--disable-pip-version-check",
            "-c",
            str(LOCK),
            str(wheel),
            "ipython",
        ],
        no_node_env,
    )
    page = tmp_path / "graph.html"
    out = _run(
        [python, "-c", CELL_PROGRAM, str(page)], dict(no_node_env, PYTHONPATH=""), cwd=tmp_path
    )
    facts = json.loads(out.strip().splitlines()[-1])
    assert facts["nbgrad"].startswith(str(env_dir))  # the installed wheel, not this tree
    assert facts["grads"] == [4.0, 4.0, 4.0, 5.0]  # de/dc = d, de/dd = c
    assert facts["nodes"] == sorted(["AddBackward0", "MulBackward0"] + ["AccumulateGrad"] * 3)
    assert facts["bundle_inlined"] and facts["page_bytes"] > 10_000
    # and the sdist itself installs the same way (pip builds its wheel, with no Node.js)
    _run(
        [
            python,
            "-m",
            "pip",
            "install",
            "--quiet",
            "--disable-pip-version-check",
            "--force-reinstall",
            "--no-deps",
            str(sdist),
        ],
        no_node_env,
    )
