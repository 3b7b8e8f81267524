"""Entry ids, error signatures, domain names and the config defaults."""

from __future__ import annotations

from pathlib import Path

import pytest

from expertise_kit.config import Config, load_config
from expertise_kit.document.entries import FailureEntry, item_id
from expertise_kit.document.ids import error_signature, normalise_path, normalise_text
from expertise_kit.document.names import normalise_section, validate_domain_name
from expertise_kit.errors import UserError
from expertise_kit.vocab import DEFAULT_DOMAINS, DEFAULT_KEYWORDS


def test_ids_ignore_case_spacing_and_trailing_punctuation() -> None:
    assert item_id("patterns", "Use UUIDs.") == item_id("best_practices", "  use   uuids ")
    assert item_id("patterns", "Use UUIDs") != item_id("patterns", "Use ULIDs")


def test_a_path_and_a_sentence_never_share_an_id() -> None:
    assert item_id("core_files", "src/db.py") != item_id("patterns", "src/db.py")
    assert item_id("core_files", "./src//db.py") == item_id("core_files", "src/db.py")


def test_failures_match_on_their_error_signature() -> None:
    one = FailureEntry(issue="run tests", error="FileNotFoundError: /tmp/a1b2/x.py at 2026-11-01T10:00:00Z")
    two = FailureEntry(issue="other words", error="FileNotFoundError: /home/u/y.py at 2026-11-20T08:30:12Z")
    assert item_id("learned_from_failures", one) == item_id("learned_from_failures", two)
    three = FailureEntry(issue="run tests", error="PermissionError: /tmp/x.py")
    assert item_id("learned_from_failures", one) != item_id("learned_from_failures", three)


@pytest.mark.parametrize(
    ("error", "signature"),
    [
        ("exit code 127 after 3.5s", "exit code <n> after <duration>"),
        ("commit 4f9a2c1d not found", "commit <hex> not found"),
        ("request 123e4567-e89b-12d3-a456-426614174000 failed", "request <uuid> failed"),
        ("at 0xDEADBEEF", "at <hex>"),
        ("C:\\Users\\me\\app.py: bad", "<path>: bad"),
        ("./src/app.ts(12,5): error TS2304", "<path>(<n>,<n>): error ts<n>"),
        ("10:42:01 Timeout", "<time> timeout"),
    ],
)
def test_error_signature_shapes(error: str, signature: str) -> None:
    assert error_signature(error) == signature


def test_normalisers() -> None:
    assert normalise_text("Ｕｓｅ  UTF-8!") == "use utf-8"
    assert normalise_path("./a/../b/c/") == "b/c/"
    assert normalise_path("") == ""


def test_domain_names() -> None:
    assert validate_domain_name("payments_v2") == "payments_v2"
    for bad in ("", "../x", "CON", "aux", "com7", "has space", "x/y", "-x", "1x", "ÿ"):
        with pytest.raises(UserError):
            validate_domain_name(bad)


def test_section_aliases() -> None:
    assert normalise_section("Best-Practices") == "best_practices"
    assert normalise_section("failures") == "learned_from_failures"
    with pytest.raises(UserError):
        normalise_section("overview")


def test_every_setting_has_a_default(tmp_path: Path) -> None:
    config = load_config(tmp_path)  # no config.yaml at all
    assert config == Config.default()
    assert config.line_cap == 1000
    assert config.failure_retention_days == 30
    assert config.domain_names == DEFAULT_DOMAINS
    assert set(DEFAULT_KEYWORDS["database"]) <= set(config.domains["database"].keywords)


def test_config_extends_or_replaces_rules_and_adds_domains(tmp_path: Path) -> None:
    (tmp_path / "config.yaml").write_text(
        "line_cap: 500\n"
        "domains:\n"
        "  testing:\n    keywords: [hypothesis]\n"
        "  security:\n    extend: false\n    keywords: [vault]\n    paths: [secrets/]\n"
        "  payments:\n    keywords: [invoice]\n"
    )
    config = load_config(tmp_path)
    assert config.line_cap == 500
    assert "hypothesis" in config.domains["testing"].keywords and "pytest" in config.domains["testing"].keywords
    assert config.domains["security"].keywords == ("vault",)
    assert config.domains["security"].paths == ("secrets/",)
    assert config.domain_names[-1] == "payments"


def test_empty_domains_key_means_defaults(tmp_path: Path) -> None:
    (tmp_path / "config.yaml").write_text("domains:\n")
    assert load_config(tmp_path).domain_names == DEFAULT_DOMAINS
