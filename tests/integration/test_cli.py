"""`peakgate` as a user runs it: subprocesses on the real engines."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

PEAKGATE = [sys.executable, "-m", "peakgate.cli"]


def run(*args: str, stdin: bytes = b"") -> subprocess.CompletedProcess[bytes]:
    return subprocess.run([*PEAKGATE, *args], input=stdin, capture_output=True, timeout=120, check=False)


@pytest.mark.parametrize("command", [(), ("serve",), ("models",), ("models", "list"), ("models", "build"),
                                     ("translate",), ("tm",), ("tm", "import"), ("tm", "export")])
def test_every_command_has_help(command: tuple[str, ...]) -> None:
    out = run(*command, "--help")
    assert out.returncode == 0
    assert b"usage: peakgate" in out.stdout


def test_models_list_has_apertium_and_both_student_precisions() -> None:
    out = run("models", "list")
    assert out.returncode == 0
    rows = [line.split("\t") for line in out.stdout.decode().splitlines()]
    assert all(len(row) == 5 for row in rows)
    by_name = {row[0]: row[1:] for row in rows}
    assert by_name["apertium-en-es"] == ["apertium", "en-es", "-", "-"]
    assert by_name["student-en-es-int8"][:3] == ["ctranslate2", "en-es", "int8"]
    assert by_name["student-en-es-fp32"][:3] == ["ctranslate2", "en-es", "float32"]
    assert by_name["student-en-es-int8"][3].endswith("models/student-en-es-int8")


def test_translate_keeps_one_line_per_input_line_in_order() -> None:
    lines = [f"Copy {n} files to the folder" for n in range(60)]  # more than one 50-segment chunk
    lines[7] = ""
    stdin = ("\n".join(lines) + "\n").encode()
    out = run("translate", "--model", "student-en-es-int8", "-s", "en", "-t", "es", stdin=stdin)
    assert out.returncode == 0, out.stderr
    got = out.stdout.decode().split("\n")
    assert got[-1] == "" and len(got) == 61
    assert got[7] == ""
    assert all("carpeta" in line for i, line in enumerate(got[:60]) if i != 7)


def test_translate_by_tier_matches_the_apertium_cli() -> None:
    out = run("translate", "--tier", "tiny", "-s", "en", "-t", "es", stdin=b"Please close the door.\n")
    cli = subprocess.run(["apertium", "-u", "eng-spa"], input=b"Please close the door.", capture_output=True,
                         check=True, timeout=30)
    assert out.stdout.decode().strip() == cli.stdout.decode().strip()


@pytest.mark.parametrize(
    ("args", "stdin", "message"),
    [(("--model", "nope", "-t", "es"), b"x\n", b"unknown model 'nope'"),
     (("-s", "en", "-t", "de"), b"x\n", b"en->de"),
     (("-t", "es"), b"ok\n\xff\xfe\n", b"line 2 is not valid UTF-8")],
)
def test_bad_input_exits_2_with_a_clear_message(args: tuple[str, ...], stdin: bytes, message: bytes) -> None:
    out = run("translate", *args, stdin=stdin)
    assert out.returncode == 2
    assert message in out.stderr


def test_tm_import_of_a_broken_file_exits_2_and_says_why(tmp_path: Path) -> None:
    config = tmp_path / "config.json"
    config.write_text(json.dumps({"data_dir": str(tmp_path / "data")}))
    broken = tmp_path / "broken.tmx"
    broken.write_text('<?xml version="1.0"?><tmx version="1.4"><body><tu><tuv xml:lang="en"><seg>Hi')
    out = run("tm", "import", str(broken), "--config", str(config))
    assert out.returncode == 2
    assert b"broken.tmx" in out.stderr and b"peakgate: error:" in out.stderr
    missing = run("tm", "import", str(tmp_path / "nope.tmx"), "--config", str(config))
    assert missing.returncode == 2 and b"nope.tmx" in missing.stderr
