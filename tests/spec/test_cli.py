"""conformance_tests.cli.clauses: the clause listing."""

from __future__ import annotations

import io
import json
import pathlib
import re
import subprocess
import sys
from collections.abc import Callable
from typing import Any

import pytest

from conformance_tests.cli.clauses import main

WriteSpec = Callable[..., pathlib.Path]


def run(*argv: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    code = main(list(argv), stdout=out, stderr=err)
    return code, out.getvalue(), err.getvalue()


@pytest.fixture
def spec_path(write_spec: WriteSpec, mini_spec: dict[str, Any]) -> str:
    return str(write_spec(mini_spec))


def test_table_lists_every_clause(spec_path: str) -> None:
    code, out, err = run("--spec", spec_path)
    assert code == 0 and err == ""
    lines = out.splitlines()
    assert lines[0].split() == ["ID", "LEVEL", "FAMILY", "SINCE", "UNTIL", "EXPECT"]
    assert set(lines[1]) <= {"-", " "}
    rows = {line.split()[0]: line for line in lines[2:-1]}
    assert len(rows) == 5
    assert rows["push_cache.param.tensor_num_per_layer.zero"].split()[1:5] == [
        "should", "param", "8.3.RC1.alpha003", "-"]
    assert rows["push_cache.param.tensor_num_per_layer.zero"].endswith("raises LLMException(LLM_PARAM_INVALID)")
    assert rows["push_cache.param.src_batch_index.type"].endswith("raises TypeError or ValueError")
    assert rows["push_cache.data.layers.all"].endswith("success (exact)")
    assert rows["push_cache.timeout.delay"].endswith("any of: raises LLMException(LLM_TIMEOUT) | success (exact)")
    assert lines[-1] == "5 clause(s) (must: 2, should: 2, may: 1)"


def test_filters(spec_path: str) -> None:
    _, out, _ = run("--spec", spec_path, "--level", "must")
    assert "2 clause(s) (must: 2, should: 0, may: 0)" in out
    _, out, _ = run("--spec", spec_path, "--level", "must", "--level", "may")
    assert "3 clause(s)" in out
    _, out, _ = run("--spec", spec_path, "--family", "param")
    assert "3 clause(s)" in out and "push_cache.data.layers.all" not in out
    _, out, _ = run("--spec", spec_path, "--family", "param", "--level", "should")
    assert "2 clause(s)" in out
    _, out, _ = run("--spec", spec_path, "--family", "safety")
    assert "0 clause(s)" in out


def test_release_filter(spec_path: str) -> None:
    _, out, _ = run("--spec", spec_path, "--release", "8.2.RC1.alpha002")
    assert "push_cache.param.tensor_num_per_layer.zero" not in out
    assert "push_cache.data.layers.all" in out
    _, out, _ = run("--spec", spec_path, "--release", "9.0.0")
    assert "push_cache.param.tensor_num_per_layer.zero" in out
    assert "push_cache.data.layers.all" not in out


def test_json_format(spec_path: str) -> None:
    code, out, _ = run("--spec", spec_path, "--format", "json", "--level", "should")
    assert code == 0
    doc = json.loads(out)
    assert doc["spec"]["version"] == "9.0.0" and len(doc["spec"]["sha256"]) == 64
    assert [c["id"] for c in doc["clauses"]] == [
        "push_cache.param.src_batch_index.type_vendor", "push_cache.param.tensor_num_per_layer.zero"]
    first = doc["clauses"][0]
    assert first["refines"] == "push_cache.param.src_batch_index.type"
    assert first["outcome"] == "raises TypeError"
    assert first["cases"] == ["float", "list"]


def test_markdown_format(spec_path: str) -> None:
    code, out, _ = run("--spec", spec_path, "--format", "markdown", "--family", "timeout")
    assert code == 0
    lines = out.splitlines()
    assert lines[0] == "| ID | LEVEL | FAMILY | SINCE | UNTIL | EXPECT |"
    assert lines[1] == "|---|---|---|---|---|---|"
    assert lines[2] == ("| `push_cache.timeout.delay` | may | timeout | - | - | "
                        "any of: raises LLMException(LLM_TIMEOUT) \\| success (exact) |")


def test_bad_spec_is_one_line_on_stderr_and_exit_2(write_spec: WriteSpec, mini_spec: dict[str, Any]) -> None:
    mini_spec["clauses"][2]["level"] = "mustt"
    code, out, err = run("--spec", str(write_spec(mini_spec)))
    assert code == 2 and out == ""
    assert err.count("\n") == 1
    assert "$.clauses[2].level: expected one of must, should, may; got 'mustt'" in err


def test_unknown_release_exit_2(spec_path: str) -> None:
    code, _, err = run("--spec", spec_path, "--release", "7.0.0")
    assert code == 2 and "unknown release '7.0.0'" in err and err.count("\n") == 1


def test_bad_arguments_exit_2(spec_path: str, capsys: pytest.CaptureFixture[str]) -> None:
    code, _, _ = run("--spec", spec_path, "--level", "required")
    assert code == 2
    assert "invalid choice" in capsys.readouterr().err


def test_module_entry_point(spec_path: str) -> None:
    proc = subprocess.run([sys.executable, "-m", "conformance_tests.cli.clauses", "--spec", spec_path, "--level", "may"],
                          capture_output=True, text=True, timeout=60, check=False)
    assert proc.returncode == 0, proc.stderr
    assert "push_cache.timeout.delay" in proc.stdout


# ---- the family: push_cache from its spec, each sibling from its spec file or the clause inventory -----------------

def _inventory_raw() -> dict[str, Any]:
    import yaml

    from conformance_tests.spec.inventory import default_inventory_path

    return dict(yaml.safe_load(default_inventory_path().read_text(encoding="utf-8")))


def _own_spec(operation: str) -> bool:
    from conformance_tests.spec import default_spec_path

    return default_spec_path().with_name(f"{operation}.yaml").is_file()


def test_family_lists_every_operation_with_its_rules() -> None:
    from conformance_tests.spec.inventory import load_inventory

    code, out, err = run("--format", "json")
    assert code == 0 and err == ""
    doc = json.loads(out)
    raw = _inventory_raw()
    names = [x["operation"] for x in doc["operations"]]
    assert names == ["push_cache", *raw["operations"]], names
    for listing in doc["operations"]:
        ids = [c["id"] for c in doc["clauses"] if c["operation"] == listing["operation"]]
        assert len(ids) == listing["clauses"]
        if listing["origin"] == "inventory":  # every documented rule, in the inventory's order
            assert ids == [r.id for r in load_inventory().of(listing["operation"])]
        else:
            assert all(i.startswith(listing["operation"] + ".") for i in ids) and ids
    assert all(_own_spec(x["operation"]) == (x["origin"] == "spec") for x in doc["operations"][1:])


def test_operation_selects_and_sentences_show_the_documentation(tmp_path: pathlib.Path,
                                                                monkeypatch: pytest.MonkeyPatch) -> None:
    from conformance_tests.cli import clauses
    from conformance_tests.spec import default_spec_path, load_spec
    from conformance_tests.spec.inventory import load_inventory

    # a sibling without a spec file beside push_cache's is listed from the inventory: every sibling has one in the
    # package now, so push_cache's spec is read from a folder of its own (the inventory still reads each named
    # clause from the spec file beside it)
    alone = tmp_path / "push_cache.yaml"
    alone.write_bytes(default_spec_path().read_bytes())
    monkeypatch.setattr(clauses, "load_spec", lambda path=None, **kw: load_spec(alone if path is None else path, **kw))
    op = "pull_blocks"
    rules = load_inventory().of(op)
    rule = next(r for r in rules if r.sentence)
    assert rule.sentence is not None
    code, out, _ = run("--operation", op, "--sentences")
    assert code == 0
    lines = out.splitlines()
    assert lines[0].startswith(f"{op}: ") and not any(line.startswith("push_cache.") for line in lines)
    row = next(i for i, line in enumerate(lines) if line.split()[:1] == [rule.id])
    assert lines[row].endswith(rule.describe_expect()) and rule.level.value in lines[row].split()
    assert lines[row + 1] == "    zh: " + " ".join(rule.sentence.split())
    assert lines[-1].startswith(f"{len(rules)} clause(s) in 1 ")
    _, out, _ = run("--operation", "push_cache", "--sentences", "--family", "signature", "--release", "9.0.0")
    lines = out.splitlines()
    row = next(i for i, line in enumerate(lines) if line.startswith("push_cache.signature.parameters "))
    assert lines[row + 1].startswith("    zh: push_cache(self, dst_cache_key: CacheKeyByIdAndIndex")
    assert lines[row + 2].startswith("    en: push_cache(self, dst_cache_key: CacheKeyByIdAndIndex")


def test_pull_blocks_is_listed_from_its_spec_file_with_its_quotes() -> None:
    from conformance_tests.spec import load_spec, operation_spec_path

    spec = load_spec(operation_spec_path("pull_blocks"))
    code, out, err = run("--operation", "pull_blocks", "--sentences", "--format", "json")
    assert code == 0 and err == ""
    doc = json.loads(out)
    assert [(x["operation"], x["origin"]) for x in doc["operations"]] == [("pull_blocks", "spec")]
    assert [c["id"] for c in doc["clauses"]] == [c.id for c in spec.clauses]
    _, out, _ = run("--operation", "pull_blocks", "--sentences")
    lines = out.splitlines()
    row = next(i for i, line in enumerate(lines) if line.startswith("pull_blocks.param.src_blocks.other_keys "))
    assert lines[row + 1] == "    zh: src_cache_key不是BlocksCacheKey时，不填。"
    assert lines[-1].startswith(f"{len(spec.clauses)} clause(s) in 1 ")


def test_family_filter_leaves_out_rules_without_a_family() -> None:
    _, out, _ = run("--family", "param", "--format", "json")
    rows = json.loads(out)["clauses"]
    assert rows and {r.get("family") for r in rows} == {"param"}, sorted({str(r.get("family")) for r in rows})


def test_spec_of_another_operation_is_a_usage_error(spec_path: str) -> None:
    code, out, err = run("--spec", spec_path, "--operation", "pull_cache")
    assert code == 2 and out == "" and err.count("\n") == 1
    assert "is the spec of push_cache, not of pull_cache" in err


def test_a_broken_inventory_is_one_line(tmp_path: pathlib.Path) -> None:
    from conformance_tests.spec import SpecError
    from conformance_tests.spec.inventory import default_inventory_path, load_inventory

    text = default_inventory_path().read_text(encoding="utf-8").replace("level: must", "level: mustt", 1)
    broken = tmp_path / "family_inventory.yaml"
    broken.write_text(text, encoding="utf-8")
    with pytest.raises(SpecError) as info:
        load_inventory(broken)
    assert re.search(r"\$\.entries\[\d+\]\.level", str(info.value)) and "mustt" in str(info.value)
    assert "\n" not in str(info.value)
