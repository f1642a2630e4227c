"""Write docs/derivatives-yaml-entries.txt from a PyTorch derivatives.yaml (run by hand, rarely).

    python scripts/extract_derivatives_entries.py [path/to/derivatives.yaml] [commit]

Without arguments it reads the derivatives.yaml that ships inside the installed PyTorch
(``torchgen/packaged/autograd/derivatives.yaml``) and names the commit PyTorch was built from
(``torch.version.git_version``). The file it writes keeps, for each entry, only its ``name:``
signature and whether the entry makes a backward node, and for which dispatch keys: none of
PyTorch's formulas. ``scripts/derivatives_coverage.py`` reads it.

An entry makes a node for a dispatch key when at least one of its inputs has a backward formula
there (not ``non_differentiable``; a key naming an output, like ``result``, is a forward-mode
formula): the rule of torchgen's ``load_derivatives``.
"""

import pathlib
import re
import sys

import yaml

OUT = pathlib.Path(__file__).resolve().parent.parent / "docs" / "derivatives-yaml-entries.txt"


def input_names(signature):
    """``mul.Tensor(Tensor self, Tensor other) -> Tensor`` -> ["self", "other"]."""
    arguments = signature[signature.index("(") + 1 : signature.rindex(") ->")]
    names = []
    for argument in arguments.split(","):
        argument = argument.split("=")[0].strip()
        if argument and argument != "*":
            names.append(argument.split()[-1])
    return names


def keys_with_nodes(entry):
    """The dispatch keys for which this entry makes a backward node, Default first."""
    entry = dict(entry)
    signature = entry.pop("name")
    entry.pop("output_differentiability", None)
    per_key = entry.pop("dispatch", None) or {"Default": entry}
    inputs = input_names(signature)
    keys = []
    for key, formulas in per_key.items():
        for raw_names, formula in formulas.items():
            names = [name.strip() for name in raw_names.split(",")]
            backward = names[0] in inputs  # an output's name: a forward-mode formula
            if backward and str(formula).strip().lower() != "non_differentiable":
                keys.append(key)
                break
    return keys


def main():
    if len(sys.argv) > 1:
        path, commit = pathlib.Path(sys.argv[1]), sys.argv[2]
        source = f"pytorch/pytorch tools/autograd/derivatives.yaml at commit {commit}"
    else:
        import torch
        import torchgen

        path = pathlib.Path(torchgen.__file__).parent / "packaged/autograd/derivatives.yaml"
        commit = torch.version.git_version
        source = (
            f"tools/autograd/derivatives.yaml of PyTorch {torch.__version__}, commit {commit}"
            " (as packaged in torchgen/packaged/autograd/)"
        )
    entries = yaml.safe_load(path.read_text())
    lines = [
        f"# {source}",
        f"# commit: {commit}",
        "# One line per entry, in file order: its `name:` signature; then `| no node` when",
        "# no input has a backward formula (PyTorch makes no grad_fn node for it), or",
        "# `| nodes: KEY ...` when it has formulas for more dispatch keys than Default.",
        "# PyTorch's formulas are not copied.",
        "# Regenerate with: python scripts/extract_derivatives_entries.py",
    ]
    for entry in entries:
        keys = keys_with_nodes(entry)
        line = entry["name"]
        if not keys:
            line += " | no node"
        elif keys != ["Default"]:
            line += " | nodes: " + " ".join(keys)
        assert re.fullmatch(r"[^|]+( \| [^|]+)?", line), line
        lines.append(line)
    OUT.write_text("\n".join(lines) + "\n")
    print(f"{len(entries)} entries -> {OUT}")


if __name__ == "__main__":
    main()
