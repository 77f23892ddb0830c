"""Prompt templates: strict rendering, fingerprints that follow the source, ids in the cache key."""

from __future__ import annotations

import hashlib

import pytest

from superb.llm import ChatRequest, cache_key
from superb.llm import prompts
from superb.llm.prompts import Template, load_template


def test_inline_template_renders_and_is_identified_by_its_source():
    src = "Query: {{ query }}\nProduct: {{ product }}"
    t = Template.from_string("demo", src)
    assert t.render(query="mug", product="blue mug") == "Query: mug\nProduct: blue mug"
    assert t.fingerprint == hashlib.sha256(src.encode()).hexdigest()[:10]
    assert t.id == f"demo@{t.fingerprint}"
    assert t.variables == {"query", "product"}


def test_a_missing_variable_raises_naming_it():
    t = Template.from_string("demo", "Query: {{ query }} {{ product }}")
    with pytest.raises(ValueError, match="product"):
        t.render(query="mug")


def test_an_edit_changes_the_fingerprint_and_so_the_cache_key():
    a = Template.from_string("demo", "Is {{ product }} relevant to {{ query }}?")
    b = Template.from_string("demo", "Is {{ product }} relevant to {{ query }}? Answer yes or no.")
    assert a.fingerprint != b.fingerprint
    text = "Is x relevant to y?"
    assert cache_key("m", ChatRequest.chat(None, text, template=a.id)) != \
        cache_key("m", ChatRequest.chat(None, text, template=b.id))


def test_load_template_reads_the_package_folder(tmp_path, monkeypatch):
    (tmp_path / "hello.j2").write_text("Hello {{ name }}", encoding="utf-8")
    monkeypatch.setattr(prompts, "PROMPT_DIR", tmp_path)
    t = load_template("hello")
    assert t.render(name="shop") == "Hello shop" and t.id.startswith("hello@") and t.path == tmp_path / "hello.j2"
    (tmp_path / "hello.j2").write_text("Hi {{ name }}", encoding="utf-8")
    assert load_template("hello").fingerprint != t.fingerprint  # re-read: an edited file gets a new id


def test_unknown_or_unsafe_names_list_what_exists(tmp_path, monkeypatch):
    (tmp_path / "hello.j2").write_text("x", encoding="utf-8")
    monkeypatch.setattr(prompts, "PROMPT_DIR", tmp_path)
    with pytest.raises(FileNotFoundError, match="available: hello"):
        load_template("absent")
    with pytest.raises(ValueError, match="plain file stem"):
        load_template("../secrets")


def test_every_shipped_template_loads():
    names = prompts.available()
    for name in names:
        t = load_template(name)
        assert t.variables, f"{name} uses no variables"
