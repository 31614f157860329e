"""A method an adapter forwards through ``__getattr__`` (a bound method of another object) keeps its signature
across isolation, as in process: it is called by name on its owner, one request a call, and taken for no other
object of the owner's class (conformance_tests/isolation/child.py ``_attribute``, remote.py ``Remote``)."""

from __future__ import annotations

import inspect
import json
import sys
from typing import Any

import pytest

from conformance_tests.cli.exitcodes import PARTIAL
from conformance_tests.isolation import IsolatedBackend
from tests.helpers.certify import FAKES, certify


@pytest.fixture
def fakes_importable(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.syspath_prepend(str(FAKES))
    monkeypatch.setenv("PYTHONPATH", str(FAKES) + ":" + ":".join(sys.path))


def test_a_forwarded_method_has_its_own_signature_and_is_one_request_by_name(
        fakes_importable: None, monkeypatch: pytest.MonkeyPatch) -> None:
    from forwarding_backend import Adds, Negates

    iso = IsolatedBackend("forwarding_backend:backend")
    try:
        requests: list[tuple[str, str | None]] = []
        real = iso.executor.request

        def counted(remote: Any, op: str, name: str | None, *rest: Any) -> Any:
            requests.append((op, name))
            return real(remote, op, name, *rest)

        monkeypatch.setattr(iso.executor, "request", counted)
        adds, negates = iso.root.adds, iso.root.negates
        assert adds._type == negates._type  # one class, forwarding the same name to different methods
        assert inspect.signature(adds.op) == inspect.signature(Adds().op)
        assert inspect.signature(negates.op) == inspect.signature(Negates().op)  # not the first object's
        op = adds.op
        requests.clear()
        assert op(1, y=5) == 6
        assert requests == [("call", "op")]  # by name on its owner: no handle for the bound method
        # held for no object: when the owner forwards elsewhere, the next lookup sees it
        adds.forward_to(negates)
        assert inspect.signature(adds.op) == inspect.signature(Negates().op) and adds.op(3, scale=2) == -6
        # the class's own method is still looked up once per class; the forwarded one never cached
        assert (adds._type, "forward_to") in iso.executor.methods
        assert not any(name == "op" for _cls, name in iso.executor.methods)
    finally:
        iso.close()


def test_forwarded_pulls_pass_their_signature_clauses_under_isolation(tmp_path) -> None:
    """The fake's cache manager forwards every operation: before, isolation showed each as ``(*args, **kwargs)``
    and ``signature.parameters`` failed."""
    proc = certify("--backend", "forwarding_backend:backend", "--isolation", "process", "--operation", "pull_cache",
                   "--operation", "pull_blocks", "--clauses", "*.signature.*", "--report-dir", str(tmp_path))
    assert proc.returncode == PARTIAL, proc.stdout[-3000:]  # a subset of the clauses, every one passing
    for operation in ("pull_cache", "pull_blocks"):
        report = json.loads((tmp_path / operation / "report.json").read_text(encoding="utf-8"))
        failed = [t["id"] for t in report["tests"] if t["outcome"] != "passed"]
        assert len(report["tests"]) > 10 and not failed, (operation, failed)
        assert report["run"]["backend_processes"] == 1
