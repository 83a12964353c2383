"""Print the floors of sessions_app as pyproject.toml's layers contracts declare them.

ARCHITECTURE.md opens with this picture (tests/test_architecture.py checks it is the
current one): `python -m ops.floors` prints it again after a contract changes.
"""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = "sessions_app"


def _contracts(pyproject: Path) -> dict[str, list[list[str]]]:
    config = tomllib.loads(pyproject.read_text())["tool"]["importlinter"]
    return {
        container: [re.split(r"\s*[|:]\s*", layer.strip()) for layer in contract["layers"]]
        for contract in config["contracts"]
        if contract["type"] == "layers"
        for container in contract["containers"]
    }


def diagram(pyproject: Path = ROOT / "pyproject.toml") -> str:
    """Return the floors top to bottom, each floor's own layers beside it: a name imports
    only from the lines below its own (`·` separates names on one line)."""
    contracts = _contracts(pyproject)
    floors = contracts[PACKAGE]
    width = max(len(name) for layer in floors for name in layer if f"{PACKAGE}.{name}" in contracts)
    lines = [f"{PACKAGE}/"]
    for layer in floors:
        inner = [contracts.get(f"{PACKAGE}.{name}") for name in layer]
        if len(layer) == 1 and inner[0]:
            label = f"{layer[0]}/".ljust(width + 3)
            for i, names in enumerate(inner[0]):
                lines.append(f"  {label if i == 0 else ' ' * len(label)}{' · '.join(names)}")
        else:
            lines.append(f"  {' · '.join(layer)}")
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    print(diagram(), end="")
