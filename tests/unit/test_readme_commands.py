"""The README's two commands are the ones that work: CI runs the test command verbatim, and neither needs sudo."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def _commands() -> list[str]:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    return re.findall(r"```sh\n(.+?)\n```", readme, flags=re.S)[:2]


def test_ci_runs_the_readme_test_command_verbatim() -> None:
    _install, test = _commands()
    ci_lines = (ROOT / ".ci" / "run").read_text(encoding="utf-8").splitlines()
    assert test in ci_lines


def test_the_install_command_runs_as_root_without_sudo_installed() -> None:
    install, test = _commands()
    for command in (install, test):
        assert not re.search(r"(^|&&|;)\s*sudo\b", command), f"a bare sudo fails where it is not installed: {command}"
    assert "pip install -e ." in install and install.rstrip().endswith("peakgate serve")
