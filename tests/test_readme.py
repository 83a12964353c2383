"""The README's commands work on this checkout: every `make` target exists, every
management command exists and its documented arguments parse, every path it names is
in the repository and every URL a route, the create-site line runs verbatim as `make run`
leaves things, and its figures are the measured ones (bench/RESULTS.md; the tracker's
size is checked by tests/tracker/build.test.mjs)."""

from __future__ import annotations

import os
import re
import shlex
import sqlite3
import subprocess
from pathlib import Path

import pytest
from django.core.management import get_commands, load_command_class
from django.urls import Resolver404, resolve

ROOT = Path(__file__).resolve().parent.parent
README = ROOT / "README.md"
# Made by `make run` / `make install` / Maven, not kept in the repository.
RUNTIME_PATHS = (".state/", ".venv/", "~/", "node_modules/")
MANAGE = re.compile(r"\bmake (?:-s )?manage ARGS=('[^']*'|\"[^\"]*\")")


def _text() -> str:
    return README.read_text()


def _spans(text: str) -> list[str]:
    """Return the inline code spans, a span broken over lines joined with a space."""
    outside_blocks = re.sub(r"```.*?```", "", text, flags=re.S)
    return [" ".join(s.split()) for s in re.findall(r"`([^`]+)`", outside_blocks)]


def commands(text: str) -> list[str]:
    """Return the shell commands: each line of a ```sh block, and each inline span that
    is a command (it starts with `make `, `npm `, `.ci/` or `.venv/`)."""
    found = []
    for block in re.findall(r"```sh\n(.*?)```", text, flags=re.S):
        for line in block.splitlines():
            line = re.sub(r"\s+#.*$", "", line).strip()
            if line and not line.startswith("#"):
                found.append(line)
    starts = ("make ", "npm ", ".ci/", ".venv/")
    found += [s for s in _spans(text) if s.startswith(starts)]
    return found


def make_targets() -> set[str]:
    makefile = (ROOT / "Makefile").read_text()
    return set(re.findall(r"^([A-Za-z][\w-]*):(?!=)", makefile, flags=re.M))


def targets_named(command: str) -> list[str]:
    """Return the targets of each `make` in a command (options and VAR=value skipped)."""
    names = []
    for match in re.finditer(r"\bmake((?: [^\s|)]+)*)", command):
        words = match.group(1).split()
        for word in words:
            if word.startswith("ARGS="):
                break  # the rest is the quoted ARGS value
            if not word.startswith("-") and "=" not in word:
                names.append(word)
    return names


def manage_argvs(text: str) -> list[list[str]]:
    """Return the argv of every `make manage ARGS=…` the README gives, `$KEY` filled in."""
    argvs = []
    for command in commands(text):
        for quoted in MANAGE.findall(command):
            value = shlex.split(quoted)[0].replace("$KEY", "cs_example")
            if value != "…":  # the form itself, in prose
                argvs.append(shlex.split(value))
    return argvs


def test_the_command_extraction_sees_the_readmes_commands() -> None:
    found = commands(_text())
    assert "make run" in found and "make test" in found
    assert any(c.startswith("KEY=$(make -s manage ARGS='create_site") for c in found)
    assert ["create_api_token", "USER", "--name", "N", "--expires-days", "90"] in manage_argvs(
        _text()
    )
    assert targets_named("KEY=$(make -s manage ARGS='create_site x' | tail -n 1)") == ["manage"]
    assert targets_named("make bench BENCH_ARGS=--ingest-only") == ["bench"]


def test_every_make_target_the_readme_names_exists() -> None:
    named = {t for c in commands(_text()) for t in targets_named(c)}
    assert {"run", "test", "manage", "lint", "bench"} <= named  # the extraction saw them
    assert named - make_targets() == set()


def test_every_management_command_exists_and_its_documented_arguments_parse() -> None:
    available = get_commands()
    argvs = manage_argvs(_text())
    assert {argv[0] for argv in argvs} >= {"create_site", "generate_clicks", "grant_site_access"}
    for argv in argvs:
        name, *args = argv
        assert name in available, name
        parser = load_command_class(available[name], name).create_parser("manage.py", name)
        parser.parse_args(args)  # a CommandError for an unknown or missing argument
    mentioned = {m for s in _spans(_text()) for m in re.findall(r"manage\.py (\w+)", s)}
    assert mentioned - set(available) == set()


def test_an_argument_the_command_does_not_take_is_caught() -> None:
    parser = load_command_class("sessions_app", "create_site").create_parser("manage.py", "x")
    with pytest.raises(Exception, match="unrecognized arguments"):
        parser.parse_args(["Shop", "--colour", "red"])


def test_every_path_the_readme_names_exists() -> None:
    text = _text()
    named = set(re.findall(r"\]\(([^)#\s]+)", text))  # link targets
    top = {p.name for p in ROOT.iterdir()}
    named |= {
        s
        for s in _spans(text)
        if " " not in s
        and not s.startswith(("/", "http"))
        # a file name, a folder, or under a top-level entry; not `text/plain` or `org/1`
        and (re.search(r"\.[a-z]+$|/$", s) or s.split("/")[0] in top)
    }
    named = {n for n in named if not n.startswith(("http", *RUNTIME_PATHS))}
    assert {"ARCHITECTURE.md", "ops/cassandra/pom.xml", ".ci/run"} <= named
    assert sorted(n for n in named if not (ROOT / n).exists()) == []


def routes(text: str) -> list[str]:
    """Return the URL paths the README names, placeholders filled, `{a,b}` expanded."""
    filled = []
    for span in {s for s in _spans(text) if s.startswith("/")}:
        path = span.split("?")[0].replace("<key>", "u1")
        path = re.sub(r"<(id|session)>", "3f1c2b8e-0c7d-4b7a-9f1e-2d5c6a7b8c9d", path)
        alternatives = re.search(r"\{([^}]*)\}", path)
        if alternatives is None:
            filled.append(path)
            continue
        for word in alternatives.group(1).split(","):
            filled.append(path[: alternatives.start()] + word + path[alternatives.end() :])
    return sorted(filled)


def test_every_route_the_readme_names_resolves() -> None:
    named = routes(_text())
    assert "/healthz" in named and "/v1/alias" in named
    unresolved = []
    for path in named:
        try:
            resolve(path)
        except Resolver404:
            unresolved.append(path)
    # A prefix such as `/api/` is a route only through the paths under it.
    assert [p for p in unresolved if not any(n.startswith(p) and n != p for n in named)] == []


def test_the_performance_figures_are_in_the_bench_results() -> None:
    text = _text()
    section = text[text.index("## Performance") :]
    results = (ROOT / "bench/RESULTS.md").read_text()
    figures = set(re.findall(r"\d+(?:[.,]\d+)+|\d{2,}", section))
    assert {"0.73", "169", "74", "77", "3.2"} <= figures
    assert sorted(f for f in figures if f not in results) == []


def test_the_create_site_line_runs_verbatim_after_make_run(tmp_path) -> None:
    """Without DJANGO_SETTINGS_MODULE or a secret key, as in a fresh clone's shell: only the
    state folder is elsewhere (`make run` migrates it first)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("DJANGO_")}
    env.pop("DATABASE_URL", None)
    env["CLICKSTREAM_STATE_DIR"] = str(tmp_path)
    line = next(c for c in commands(_text()) if "create_site" in c)
    script = f"""set -eo pipefail
make -s manage ARGS='migrate --noinput -v 0'
{line}
echo "$KEY"
"""
    done = subprocess.run(
        ["bash", "-c", script], cwd=ROOT, env=env, capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0, done.stderr[-3000:]
    key = done.stdout.strip().splitlines()[-1]
    assert re.fullmatch(r"cs_[\w-]+", key), done.stdout
    with sqlite3.connect(tmp_path / "clickstream.sqlite3") as db:
        rows = db.execute("SELECT name FROM sessions_app_site WHERE key = ?", (key,)).fetchall()
    assert rows == [("My shop",)]
