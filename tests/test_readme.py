"""The README stays true: its two set-up commands come first, CI runs the second one, the
main job it names exists, and its Python examples run."""
from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
README = (ROOT / "README.md").read_text()


def _blocks(lang):
    return re.findall(rf"```{lang}\n(.*?)```", README, flags=re.S)


def test_opens_with_two_setup_commands():
    first = _blocks("bash")[0].strip().splitlines()
    assert len(first) == 2
    install_run, install_test = first
    assert install_run.startswith("pip install") and "ember run " in install_run
    assert install_test.startswith("pip install") and "pytest" in install_test
    # the first fenced block is the first thing after the title
    assert README.index("```bash") < README.index("\n## ")
    recipe = install_run.split("ember run ", 1)[1].split()[0]
    from ember.recipes._registry import list_recipes

    assert recipe in list_recipes(), f"the main job's recipe {recipe!r} is not registered"


def test_ci_runs_the_readme_test_command():
    install_test = _blocks("bash")[0].strip().splitlines()[1]
    ci = (ROOT / ".ci" / "run").read_text()
    assert install_test in ci.splitlines()


def test_python_examples_run():
    import sys
    import types

    for i, code in enumerate(_blocks("python")):
        # each block runs as an importable module, as a user's script would (classes it
        # defines can be pickled)
        mod = types.ModuleType(f"readme_example_{i}")
        sys.modules[mod.__name__] = mod
        try:
            exec(compile(code, "README.md", "exec"), mod.__dict__)
        finally:
            del sys.modules[mod.__name__]
