"""Runs a program from ``programs/`` as written (``import ember as torch``) or, for
comparison, with its import lines pointed at PyTorch: the two runs differ only there."""
from __future__ import annotations

import re
import types
from pathlib import Path

PROGRAMS = Path(__file__).parent / "programs"
_IMPORT = re.compile(r"^(\s*)(import|from)\s+ember\b(\.\w+)*")


def source(name, lib="ember"):
    text = (PROGRAMS / f"{name}.py").read_text()
    if lib == "ember":
        return text
    out = []
    for line in text.splitlines():
        m = _IMPORT.match(line)
        if m:
            line = line.replace("ember.vision", "torchvision").replace("ember.data",
                                                                        "torch.utils.data")
            line = re.sub(r"\bember\b", "torch", line)
        out.append(line)
    return "\n".join(out) + "\n"


def load(name, lib="ember"):
    """The program as a module (its ``main`` not yet run)."""
    mod = types.ModuleType(f"compat_{name}_{lib}")
    mod.__file__ = str(PROGRAMS / f"{name}.py")
    exec(compile(source(name, lib), mod.__file__, "exec"), mod.__dict__)
    return mod


def import_lines(name):
    return [ln for ln in (PROGRAMS / f"{name}.py").read_text().splitlines() if _IMPORT.match(ln)]
