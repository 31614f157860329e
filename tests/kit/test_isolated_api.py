"""node.api across the pipe (conformance_tests.isolation.api): a description the kit cannot take whole is taken
name by name; what it rejects, and a name it was never given, say so when read, with what the backend's process
sent, never as a bare TypeError or "'KitApi' object has no attribute"."""

from __future__ import annotations

import pytest

import reference_impl.backend as ref
from conformance_tests.isolation.api import KitApis, describe
from datawire import Names


def description(**changes):
    made, _enums = describe(ref.API)
    made["classes"] = {name: (lambda *a, **k: None) for name in made["classes"]}  # handles stand-ins: callables
    for key, value in changes.items():
        made[key] = value
    return made


def build(desc):
    return KitApis().build(desc, Names())


def rejection(api, name: str) -> str:
    with pytest.raises(AttributeError) as info:
        getattr(api, name)
    text = str(info.value)
    assert "\n" not in text and "'KitApi' object" not in text, text
    return text


def test_a_whole_description_builds_every_name():
    api = build(description())
    assert api.Placement.HOST.name == "HOST" and api.DataType.DT_BF16.name == "DT_BF16" and callable(api.CacheDesc)
    assert issubclass(api.LLMException, Exception)


def test_an_enum_member_whose_value_is_a_list_rejects_that_enum_only():
    desc = description()
    desc["enums"]["DataType"][1][0] = ["DT_FLOAT", [1, 2]]
    api = build(desc)  # no TypeError: unhashable type: 'list'
    said = rejection(api, "DataType")
    assert said.startswith("node.api.DataType was rejected") and "member DT_FLOAT is a list" in said, said
    assert "[1, 2]" in said, said
    assert api.Placement.DEVICE.name == "DEVICE"  # the rest of node.api is built


@pytest.mark.parametrize(("members", "said"), [
    ([["HOST", 0], ["HOST", 1]], "cannot have these members"),
    ([["HOST", {"a": 1}]], "is a dict, not plain data"),
    ([["_hidden", 0]], "not [name, value] pairs"),
    ("HOST", "not [name, value] pairs"),
])
def test_an_enum_the_kit_cannot_make_is_rejected_with_what_was_sent(members, said):
    desc = description()
    desc["enums"]["Placement"] = [True, members] if not isinstance(members, str) else members
    text = rejection(build(desc), "Placement")
    assert said in text and "it sent 'Placement'" in text, text


def test_classes_that_are_not_handles_or_not_the_apis_are_rejected():
    desc = description()
    desc["classes"]["CacheDesc"] = 5
    desc["classes"]["Evil"] = print
    desc["classes"]["DataType"] = print  # an enum name described as a class
    api = build(desc)
    assert "a class that is not a handle to one; it sent 'CacheDesc': 5" in rejection(api, "CacheDesc")
    assert "not one of the API's classes" in rejection(api, "Evil")
    assert "not one of the API's classes" not in str(api.DataType)  # the enum's own entry still made it


def test_a_name_the_backends_process_could_not_read_says_why():
    class Broken:
        def __getattr__(self, name):
            if name == "CacheDesc":
                raise RuntimeError("not in this build")
            return getattr(ref.API, name)

    desc, _enums = describe(Broken())
    assert desc["left_out"] == {"CacheDesc": "reading it raised RuntimeError: not in this build"}
    api = build(desc)
    assert "reading it raised RuntimeError: not in this build" in rejection(api, "CacheDesc")
    assert rejection(api, "NoSuchThing") == "node.api has no NoSuchThing: the backend's process did not describe it"


def test_what_is_not_a_description_is_one_line_naming_what_was_sent():
    for sent in ([1, 2], {"enums": [], "classes": {}}, {"enums": {}, "classes": {}, "left_out": 3}):
        with pytest.raises(ValueError, match="not {enums, exception, classes}") as info:
            build(sent)
        assert repr(sent)[:20] in str(info.value) and "\n" not in str(info.value)


def test_bad_exception_bases_reject_llmexception():
    api = build(description(exception=[1]))
    assert "its bases are not a list of names; it sent [1]" in rejection(api, "LLMException")
