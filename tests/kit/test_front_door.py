"""The front door (issue 22): how a backend is named, where reports go, and inputs the kit reads within bounds.

Each test is one finding: a backend named by file; an unknown name said once, with the three forms; an older
release's reports beside the newest's; an alias bomb or an oversized file refused at once (one line, exit 2); an
``{int: ...}`` beyond its bounds refused, never evaluated; different backend names in different folders, a name no
file system can hold written all the same; what a killed run left behind cleaned by the next.
"""

from __future__ import annotations

import argparse
import json
import os
from pathlib import Path

import pytest
import yaml

from conformance_tests.__main__ import DELEGATES, front_parser, main
from conformance_tests.cli.exitcodes import PARTIAL, USAGE_ERROR
from conformance_tests.report.folders import default_folder, safe_name, write_files
from conformance_tests.resolution import BackendError, backend_target, resolve_backend
from conformance_tests.selecting.expectations import ExpectationsError, load_expectations
from conformance_tests.spec import SpecError, load_spec
from conformance_tests.spec.bounded_yaml import MAX_ALIASES, MAX_FILE_BYTES
from tests.helpers import ROOT
from tests.helpers.certify import certify

BOMB = "a: &a [x, x, x, x, x, x, x, x, x]\n" + "".join(
    f"{n}: &{n} [{', '.join([f'*{p}'] * 9)}]\n" for p, n in zip("abcdefgh", "bcdefghi", strict=True))


def test_a_backend_is_named_by_its_file(tmp_path):
    adapter = ROOT / "examples" / "third_party_backend" / "adapter.py"
    backend, target = resolve_backend(str(adapter.relative_to(ROOT)) if Path.cwd() == ROOT else str(adapter))
    assert backend.name == "acme-kv" and target == f"{adapter}:backend"


def test_an_unknown_backend_is_one_line_naming_the_three_forms():
    with pytest.raises(BackendError) as info:
        backend_target("myvendor.adapter:backend")
    text = str(info.value)
    assert "\n" not in text and text.count("backend 'myvendor.adapter:backend'") == 1
    assert "entry point" in text and "module on the path" in text and "path/to/adapter.py" in text


def test_through_the_isolation_child_the_error_names_the_backend_once():
    proc = certify("--backend", "myvendor.adapter:backend", isolation=("--isolation", "process"))
    lines = [ln for ln in proc.stdout.splitlines() + proc.stderr.splitlines() if "myvendor" in ln]
    assert proc.returncode == USAGE_ERROR and len(lines) == 1, proc.stdout + proc.stderr
    assert lines[0].count("backend 'myvendor.adapter:backend'") == 1, lines


def test_an_older_release_writes_its_own_folder(tmp_path):
    proc = certify("--spec-version", "8.5.0", "--clauses", "push_cache.signature.*", "-q", cwd=tmp_path)
    assert proc.returncode == PARTIAL, proc.stdout[-1500:]
    assert (tmp_path / "reports" / "reference@8.5.0.partial" / "report.json").is_file()
    assert not (tmp_path / "reports" / "reference.partial").exists()
    assert default_folder(tmp_path, "reference", partial=False, release="8.5.0").name == "reference@8.5.0"
    assert default_folder(tmp_path, "reference", partial=False).name == "reference"


def test_an_alias_bomb_is_refused_while_it_is_parsed(tmp_path):
    path = tmp_path / "bomb.yaml"
    path.write_text(BOMB, encoding="utf-8")
    with pytest.raises(SpecError, match=f"more than {MAX_ALIASES} YAML aliases"):
        load_spec(path)
    with pytest.raises(ExpectationsError, match=f"more than {MAX_ALIASES} YAML aliases"):
        load_expectations(path)
    proc = certify("--expectations", str(path), "--collect-only", "-q")
    assert proc.returncode == USAGE_ERROR and "YAML aliases" in proc.stdout + proc.stderr


def test_an_oversized_file_is_refused_before_it_is_read(tmp_path):
    path = tmp_path / "huge.yaml"
    with open(path, "wb") as f:  # sparse: the test writes no 100 MB
        f.truncate(100 << 20)
    assert path.stat().st_size > MAX_FILE_BYTES
    with pytest.raises(ExpectationsError, match="too large"):
        load_expectations(path)
    with pytest.raises(SpecError, match="too large"):
        load_spec(path)


def test_an_int_expression_beyond_its_bounds_is_a_spec_error(tmp_path):
    raw = yaml.safe_load((ROOT / "spec" / "push_cache.yaml").read_text(encoding="utf-8"))
    raw["clauses"][0]["cases"] = [{"name": "huge", "args": {"size": {"int": "9**9**9**9"}}}]
    path = tmp_path / "spec.yaml"
    path.write_text(yaml.safe_dump(raw, allow_unicode=True, sort_keys=False), encoding="utf-8")
    with pytest.raises(SpecError) as info:
        load_spec(path)
    assert info.value.where == "$.clauses[0].cases[0].args.size" and "out of range" in info.value.what
    proc = certify("--spec", str(path), "--collect-only", "-q")
    assert proc.returncode == USAGE_ERROR and "9**9**9**9" in proc.stdout + proc.stderr


def test_different_backend_names_get_different_folders():
    names = ["后端", "前端", "a/b", "a_b", "..", "", "x.partial", "bad\udc80name", "é", "e"]
    folders = [safe_name(n) for n in names]
    assert len(set(folders)) == len(folders), folders
    assert all(f and not f.startswith(".") and "/" not in f and f.isascii() for f in folders)


@pytest.mark.parametrize("attr", ["surrogate", "han_a"])
def test_a_backend_name_no_file_can_hold_still_gets_its_report(tmp_path, attr):
    proc = certify("--backend", f"bad_names_backend:{attr}", "--clauses", "push_cache.signature.returns_none",
                   "-q", cwd=tmp_path)
    assert proc.returncode == PARTIAL, proc.stdout[-1500:] + proc.stderr[-500:]
    (found,) = list((tmp_path / "reports").glob("*.partial/report.json"))
    assert json.loads(found.read_text(encoding="utf-8"))["backend"]["name"] in ("bad\\udc80name", "后端")


def test_the_next_write_cleans_what_a_killed_run_left(tmp_path):
    folder = tmp_path / "reports" / "reference"
    write_files({"report.json": "{}"}, folder)
    stale_set = folder.with_name(f".{folder.name}.new-999999-deadbeef")
    stale_set.mkdir()
    (stale_set / "report.json").write_text("{}")
    old_set = folder.with_name(f".{folder.name}.old-999999-deadbeef")
    old_set.mkdir()
    half = folder / ".report.json.tmp999999-abc"
    half.write_text("{")
    write_files({"report.json": "{}"}, folder)
    assert not stale_set.exists() and not old_set.exists() and not half.exists()
    assert sorted(os.listdir(folder)) == ["report.json"]


# ------------------------------------------------------------------------------ a bad option, every subcommand


def _delegate_parsers() -> dict[str, argparse.ArgumentParser]:
    from conformance_tests.cli import clauses
    from conformance_tests.report import cli as report_cli
    from conformance_tests.report import site

    parsers = {"clauses": clauses.build_parser(), "report": report_cli._parser(None), "site": site._parser(None)}
    assert set(parsers) == set(DELEGATES), f"a subcommand this test does not walk: {sorted(set(DELEGATES) ^ set(parsers))}"
    return parsers


def _valid_prefixes(parser: argparse.ArgumentParser, path: list[str]) -> list[list[str]]:
    """Each of ``parser``'s (sub)commands with its required arguments filled in, so only the bad option is wrong."""
    subs = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    if subs:
        return [p for name, child in subs[0].choices.items() for p in _valid_prefixes(child, [*path, name])]
    filled = list(path)
    for action in parser._actions:
        if not action.option_strings:
            filled += ["x.json"] if action.nargs != "*" else []
        elif action.required:
            filled += [action.option_strings[0], "x"]
    return [filled]


def _bad_option_argvs() -> list[tuple[list[str], bool]]:
    """(argv, whether its one line must name --bogus): every (sub)command with all it requires and the bad option
    (the line names it), and every command with the bad option alone (the line may name what is missing first)."""
    front = [a for a in front_parser()._actions if isinstance(a, argparse._SubParsersAction)][0]
    parsers = _delegate_parsers()
    complete = [([*p, "--bogus"], True) for name in front.choices if name in parsers
                for p in _valid_prefixes(parsers[name], [name])]
    return complete + [([name, "--bogus"], name not in parsers) for name in front.choices]


@pytest.mark.parametrize(("argv", "names_it"), _bad_option_argvs(), ids=lambda v: " ".join(v) if isinstance(v, list) else str(v))
def test_a_bad_option_of_every_subcommand_is_one_line_and_exit_2(argv, names_it, capsys):
    if argv[0] == "certify":  # pytest's option parser: run as a user runs it
        proc = certify(*argv[1:], "--no-reports")
        code, out, err = proc.returncode, proc.stdout, proc.stderr
    else:
        code = main(argv)
        out, err = capsys.readouterr()
    lines = [ln for ln in (out + err).splitlines() if ln.strip()]
    assert code == USAGE_ERROR and len(lines) == 1, f"push-cache-kit {' '.join(argv)} -> exit {code}: {lines}"
    if names_it:
        assert "--bogus" in lines[0], f"push-cache-kit {' '.join(argv)}: {lines[0]}"
