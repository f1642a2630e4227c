"""Run the tutorial notebooks top to bottom and store their outputs, ready for nbval.

    python scripts/execute_notebooks.py                      # every notebook in notebooks/
    python scripts/execute_notebooks.py notebooks/03_*.ipynb # some of them

Each notebook runs in a fresh ``python3`` kernel (nbclient) with notebooks/ as its working
directory, as ``pytest --nbval`` will run it. A cell that raises fails the run unless it is
tagged ``raises-exception``. Re-run this after anything that changes what the notebooks show
(the graph widget replacing the text summary of ``%%autograd``, a changed repr), then check
with ``python -m pytest --nbval notebooks/ --nbval-current-env
--nbval-sanitize-with notebooks/sanitize.cfg -p no:randomly``.

What is stored, and what is not (notebooks/README.md says why):

- no widget state: ``metadata.widgets`` is dropped, and so is each output's
  ``application/vnd.jupyter.widget-view+json`` entry, which would point at a widget model
  that no longer exists (JupyterLab would show "Error displaying widget: model not found"
  instead of the static drawing). What stays is the widget's ``text/html`` drawing and
  ``text/plain`` summary; running the cell again brings the live widget back;
- no execution timings (``record_timing=False``); the notebook's ``language_info`` is the one
  the kernel reported, which is what JupyterLab writes when it opens the notebook, so opening a
  tutorial does not mark it modified (on the Python the tests run with; another Python version
  differs in ``language_info.version`` only);
- no memory addresses: an output containing ``0x7f...`` fails the run, since it would change
  on every execution;
- nothing else that changes from run to run or from machine to machine: the patterns of
  notebooks/sanitize.cfg (a cell's temporary file name in a warning) are applied to the stored
  outputs as nbval applies them before comparing, and tracebacks name files relative to the
  repository, and consecutive prints to one stream are one output however the kernel flushed
  them. Executing twice stores the same bytes.
"""

import argparse
import os
import re
import sys
import time
from pathlib import Path

import nbformat
from jupyter_client.kernelspec import get_kernel_spec
from nbclient import NotebookClient
from nbclient.exceptions import CellExecutionError

ROOT = Path(__file__).resolve().parent.parent
NOTEBOOKS = ROOT / "notebooks"
SANITIZE = NOTEBOOKS / "sanitize.cfg"
WIDGET_VIEW = "application/vnd.jupyter.widget-view+json"
ADDRESS = re.compile(r"\b0x[0-9a-fA-F]{6,}\b")
CELL_TIMEOUT = 600  # seconds


def execute(path):
    """Execute one notebook in place; return a list of problems (empty when all is well)."""
    nb = nbformat.read(path, as_version=4)
    client = NotebookClient(
        nb,
        kernel_name="python3",
        timeout=CELL_TIMEOUT,
        resources={"metadata": {"path": str(NOTEBOOKS)}},
        store_widget_state=False,
        record_timing=False,
    )
    try:
        client.execute()
    except CellExecutionError as error:
        return [f"a cell raised (tag it raises-exception if that is its point):\n{error}"]
    problems = clean(nb)
    nbformat.validate(nb)
    nbformat.write(nb, path)
    return problems


def sanitize_patterns():
    """The (regex, replacement) pairs of sanitize.cfg, read as nbval reads them."""
    text = SANITIZE.read_text(encoding="utf-8")
    return re.findall(r"^regex: (.*)$\n^replace: (.*)$", text, flags=re.MULTILINE)


def clean(nb):
    """Drop widget state; report outputs that would not be reproducible."""
    patterns = sanitize_patterns()
    nb.metadata.pop("widgets", None)
    # the kernelspec as JupyterLab writes it on opening (it rewrites any other display name)
    spec = get_kernel_spec("python3")
    nb.metadata["kernelspec"] = {
        "display_name": spec.display_name,
        "language": spec.language,
        "name": "python3",
    }
    problems = []
    for number, cell in enumerate(nb.cells, 1):
        if cell.cell_type != "code":
            continue
        cell.metadata.pop("execution", None)
        cell.outputs = _merge_streams(cell.get("outputs", []))
        for output in cell.outputs:
            data = output.get("data")
            if data is not None:
                data.pop(WIDGET_VIEW, None)
                output["data"] = data
            for text in _texts(output):
                found = ADDRESS.search(text)
                if found:
                    problems.append(f"cell {number}: a memory address in its output: {found[0]}")
            _rewrite_texts(output, lambda text: _stable(text, patterns))
    return problems


def _merge_streams(outputs):
    """One output for consecutive prints to the same stream, however the kernel flushed them."""
    merged = []
    for output in outputs:
        previous = merged[-1] if merged else None
        if (
            output.get("output_type") == "stream"
            and previous is not None
            and previous.get("output_type") == "stream"
            and previous.get("name") == output.get("name")
        ):
            previous["text"] += output["text"]
        else:
            merged.append(output)
    return merged


def _stable(text, patterns):
    text = text.replace(str(ROOT) + os.sep, "")
    for regex, replacement in patterns:
        text = re.sub(regex, replacement, text)
    return text


def _rewrite_texts(output, rewrite):
    if "text" in output:
        output["text"] = rewrite(output["text"])
    for key, value in output.get("data", {}).items():
        if isinstance(value, str):
            output["data"][key] = rewrite(value)
    if "traceback" in output:
        output["traceback"] = [rewrite(line) for line in output["traceback"]]


def _texts(output):
    if output.get("output_type") == "stream":
        yield output.get("text", "")
    for value in output.get("data", {}).values():
        if isinstance(value, str):
            yield value
    if output.get("output_type") == "error":
        yield output.get("evalue", "")


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("notebooks", nargs="*", type=Path, help="default: notebooks/*.ipynb")
    args = parser.parse_args(argv)
    paths = args.notebooks or sorted(NOTEBOOKS.glob("*.ipynb"))
    failed = False
    for path in paths:
        start = time.perf_counter()
        problems = execute(path)
        seconds = time.perf_counter() - start
        status = "ok" if not problems else "FAILED"
        print(f"{path.name}: {status} ({seconds:.1f} s)")
        for problem in problems:
            print(f"  {problem}")
        failed = failed or bool(problems)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
