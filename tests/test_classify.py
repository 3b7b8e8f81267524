"""The classifier: whole words, paths by segment and extension, weights, config, batch mode."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from conftest import Cli

from expertise_kit.config import Config
from expertise_kit.fast.classify import Rules, classify, path_matches, tokens

RULES = {n: Rules(r.keywords, r.paths) for n, r in Config.default().domains.items()}


def _domain(text: str, *files: str) -> str:
    return classify(text, list(files), RULES).domain


@pytest.mark.parametrize(
    ("text", "not_domain"),
    [
        ("fix the build of the docs site", "frontend"),  # `ui` is not in `build`
        ("record the decision in the ADR", "deployment"),  # `ci` is not in `decision`
        ("bump to the latest version", "testing"),  # `test` is not in `latest`
        ("update the author field", "security"),  # `auth` is not in `author`
    ],
)
def test_substrings_never_fire(text: str, not_domain: str) -> None:
    assert _domain(text) != not_domain


def test_tokens_split_case_styles_and_fold_plurals() -> None:
    assert tokens("getUserAPIToken") == ["get", "user", "api", "token"]
    assert tokens("user_tests and end-to-end queries") == ["user", "test", "and", "end", "to", "end", "query"]
    assert tokens("Migrations, indexes; classes") == ["migration", "index", "class"]


@pytest.mark.parametrize(
    ("path", "rule", "expected"),
    [
        ("db/migrations/0001_init.py", "migrations/", True),
        ("src/migrations.py", "migrations/", False),
        ("schema/users.sql", "*.sql", True),
        (".github/workflows/ci.yml", ".github/workflows/", True),
        ("Dockerfile", "Dockerfile", True),
        ("deploy/Dockerfile", "Dockerfile", True),
        ("web/Button.tsx", "*.tsx", True),
        ("pkg/store_test.go", "*_test.go", True),
        ("src/app.spec.ts", "*.spec.ts", True),
        ("tests/unit/test_x.py", "tests/", True),
        ("src/auth/login.py", "auth/", True),
        ("src/author.py", "auth/", False),
    ],
)
def test_path_rules(path: str, rule: str, expected: bool) -> None:
    assert path_matches(path, rule) is expected


@pytest.mark.parametrize(
    ("text", "files", "domain"),
    [
        ("Add a users table with an index", [], "database"),
        ("", ["db/migrations/0002_orders.sql"], "database"),
        ("Add the /orders endpoint", ["api/routes/orders.py"], "api"),
        ("Make the button blue", ["web/components/Button.tsx"], "frontend"),
        ("Fix flaky test", ["pkg/store_test.go"], "testing"),
        ("Rotate the JWT signing secret", [], "security"),
        ("Speed up the release pipeline", [".github/workflows/release.yml"], "deployment"),
        ("Tidy up the README wording", ["README.md"], "general"),
    ],
)
def test_common_tasks(text: str, files: list[str], domain: str) -> None:
    assert _domain(text, *files) == domain


def test_a_strong_path_outranks_a_weak_word() -> None:
    result = classify("fix the test for the query", ["db/migrations/0003.sql"], RULES)
    assert result.domain == "database"
    assert "testing" in result.scores


def test_close_domains_come_back_as_secondary() -> None:
    result = classify("add an orders table and its endpoint", ["db/migrations/0004.sql", "api/routes/orders.py"], RULES)
    assert {result.domain, *result.secondary} == {"api", "database"}


def test_tests_that_come_with_code_weigh_less() -> None:
    result = classify("handle empty carts", ["shop/components/Cart.tsx", "shop/components/Cart.test.tsx"], RULES)
    assert result.domain == "frontend"
    assert classify("handle empty carts", ["shop/components/Cart.test.tsx"], RULES).domain == "testing"


def test_weak_signal_falls_back_to_general() -> None:
    assert classify("", [], RULES).domain == "general"
    assert classify("make it nicer", ["notes.txt"], RULES).domain == "general"


def test_config_keywords_and_user_domains(project: Path, run: Cli) -> None:
    (project / ".expertise" / "config.yaml").write_text(
        "domains:\n  payments:\n    keywords: [invoice, refund]\n    paths: [billing/]\n"
    )
    assert run("classify", "Refund a partial invoice").stdout.strip() == "payments"
    assert run("classify", "x", "--file", "billing/ledger.py").stdout.strip() == "payments"
    data = json.loads(run("classify", "Refund an invoice", "--json").stdout)
    assert data["domain"] == "payments" and data["scores"]["payments"] == 2.0


def test_batch_mode(project: Path, run: Cli) -> None:
    lines = [
        {"description": "Add index to orders table", "files": []},
        {"description": "Fix CI", "files": [".github/workflows/ci.yml"]},
        "not a json object",
        {"description": "Style the navbar", "files": ["web/Nav.vue"]},
    ]
    stdin = "\n".join(json.dumps(x) if isinstance(x, dict) else x for x in lines) + "\n"
    result = run("classify", "--batch", input=stdin)
    assert result.exit_code == 0
    assert result.stdout.splitlines() == ["database", "deployment", "general", "frontend"]
    assert "stdin:3: not a JSON object" in result.stderr


def test_classify_works_outside_a_project(tmp_path: Path) -> None:
    assert Cli(tmp_path)("classify", "add a migration").stdout.strip() == "database"


@pytest.mark.parametrize(
    "text",
    [
        "Add RBAC checks to the admin screens",
        "Set x-frame-options and a CSP header",
        "Sanitize user HTML to stop XSS",
        "Guard merge() against prototype pollution",
        "Bump lodash for the security advisory",
        "Support OIDC login with PKCE",
    ],
)
def test_security_tasks_are_recognised(text: str) -> None:
    assert _domain(text) == "security"


@pytest.mark.parametrize(
    ("path", "domain"),
    [
        ("lib/shop_web/live/cart_live.ex", "frontend"),
        ("lib/shop_web/components/core.heex", "frontend"),
        ("priv/repo/migrations/20240101_add_orders.exs", "database"),
        ("app/views/orders/index.html.erb", "frontend"),
        ("shop/models.py", "database"),
        ("shop/urls.py", "api"),
        ("terraform/main.tf", "deployment"),
        ("config/runtime.exs", "deployment"),
        ("cmd/server/main.go", "general"),
    ],
)
def test_common_layouts_route_by_path(path: str, domain: str) -> None:
    assert _domain("", path) == domain


def test_bland_file_names_and_release_notes_carry_no_domain() -> None:
    assert _domain("", "packages/oauth-proxy/src/index.ts") != "database"  # `index` is a file name here
    assert _domain("resolve the issuer", ".changeset/issuer.md", "packages/x/src/jwt.ts") == "security"
