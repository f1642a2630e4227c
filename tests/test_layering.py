"""The layers of nbgrad (docs/design.md) use each other through public names only: no module
imports a private name (``_x``) from another of nbgrad's packages."""

import ast
import pathlib

import nbgrad

ROOT = pathlib.Path(nbgrad.__file__).parent


def package_of(module):
    """``nbgrad.ops`` for ``nbgrad.ops.functions.shapes``; ``nbgrad`` for top-level modules."""
    parts = module.split(".")
    return ".".join(parts[:2]) if len(parts) > 2 else "nbgrad"


def private_imports_across_packages():
    found = []
    for path in sorted(ROOT.rglob("*.py")):
        module = ".".join(path.relative_to(ROOT.parent).with_suffix("").parts)
        if module.endswith(".__init__"):
            module = module[: -len(".__init__")] + ".__init__"
        for node in ast.walk(ast.parse(path.read_text())):
            if not (isinstance(node, ast.ImportFrom) and node.module):
                continue
            if not node.module.startswith("nbgrad"):
                continue
            for alias in node.names:
                name = alias.name
                private = name.startswith("_") and not name.startswith("__")
                if private and package_of(node.module + ".x") != package_of(module):
                    found.append(f"{module}: from {node.module} import {name}")
    return found


def test_no_private_name_crosses_a_package_boundary():
    assert private_imports_across_packages() == []
