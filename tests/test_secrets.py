"""Secrets never reach the YAML or the git history; real transcripts lose nothing legitimate."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
from builders import CWD, ClaudeSession
from conftest import TRANSCRIPTS, Cli, git

from expertise_kit.learning.redact import SECRET_KINDS, redact, redact_counting

# Shaped like the real thing, made up for this test.
SECRETS: dict[str, str] = {
    "aws": "AKIAIOSFODNN7EXAMPLE",
    "github": "ghp_" + "a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8",
    "github_pat": "github_pat_11ABCDEFG0123456789_abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRS",
    "anthropic": "sk-ant-api03-" + "Zx9" * 30,
    "openai_proj": "sk-proj-" + "Qw8" * 20,
    "openai": "sk-" + "Ab3De6Gh9" * 5 + "xyz",
    "slack": "xoxb-1234567890-0987654321-AbCdEfGhIjKlMnOpQrStUvWx",
    "stripe": "sk_live_" + "51HqLyjWDarjtT1zdp7dcXYZ",
    "google": "AIza" + "SyA1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q",
    "jwt": "eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJzdWIiOiIxMjM0NTY3ODkwIiwibmFtZSI6IkFkYSJ9.c2lnbmF0dXJlX2hlcmVfMTIzNDU2",
    "pem": "-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAEbm9uZQ\nAAAAC3NzaC1lZDI1NTE5AAAAIHh5\n-----END OPENSSH PRIVATE KEY-----",
    "url_password": "s3cr3t-Passw0rd",
    "bearer": "tok_live_8c1f4e2b9a7d6c5e4f3a2b1c",
    "assignment": "hunter2-correct-horse",
}
NEEDLES = {
    "pem": "b3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAEbm9uZQ",  # the key body, whichever line it lands on
}


def _needle(kind: str) -> str:
    return NEEDLES.get(kind, SECRETS[kind])


def _leaky_session() -> ClaudeSession:
    s = ClaudeSession("5ec2e7a1-0000-4000-8000-000000000042")
    s.prompt(f"Deploy with DEPLOY_TOKEN={SECRETS['assignment']} and fix the failing upload")
    # Secrets in a command.
    s.bash(
        f'curl -H "Authorization: Bearer {SECRETS["bearer"]}" https://deploy:{SECRETS["url_password"]}@ci.example.test/v1'
        f" && export STRIPE_KEY={SECRETS['stripe']}",
        f"curl: (22) The requested URL returned error: 403 for key {SECRETS['aws']}",
        exit_code=22,
    )
    # Secrets in a tool's error output.
    s.bash(
        "python upload.py",
        "Traceback (most recent call last):\n"
        f"ValueError: bad credentials github={SECRETS['github']} pat={SECRETS['github_pat']} "
        f"anthropic={SECRETS['anthropic']} openai={SECRETS['openai']} proj={SECRETS['openai_proj']} "
        f"slack={SECRETS['slack']} google={SECRETS['google']} jwt={SECRETS['jwt']}\n{SECRETS['pem']}",
        exit_code=1,
    )
    # Secrets in file contents the agent wrote, echoed back by a failing write.
    content = f"API_KEY={SECRETS['openai_proj']}\nPRIVATE={SECRETS['pem']}\n"
    s.tool(
        "Write",
        {"file_path": f"{CWD}/.env", "content": content},
        f"Error: EACCES: permission denied, open '.env' with content {content}",
        error=True,
    )
    s.tool("Read", {"file_path": f"{CWD}/upload.py"}, f"TOKEN = '{SECRETS['github']}'")
    s.tool("Edit", {"file_path": f"{CWD}/upload.py", "old_string": "a", "new_string": "b"}, "ok")
    s.bash(f"export DB_PASSWORD={SECRETS['assignment']} && python upload.py", "uploaded")
    s.bash("pytest -q", "3 passed")
    s.say("Done.")
    return s


def test_planted_secrets_reach_neither_yaml_nor_history(project: Path, run: Cli, tmp_path: Path) -> None:
    result = run("learn", str(_leaky_session().write(tmp_path / "leaky.jsonl")), "--json")
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    assert sum(len(d["added"]) for d in data["domains"].values()) >= 4
    stored = "".join(p.read_text() for p in (project / ".expertise").glob("*.yaml"))
    history = git(project, "log", "-p", "--all")
    for kind in SECRETS:
        needle = _needle(kind)
        assert needle not in stored, kind
        assert needle not in history, kind
        assert needle not in result.stdout, kind
    assert "[REDACTED:" in stored


@pytest.mark.parametrize("kind", sorted(SECRETS))
def test_each_kind_is_redacted(kind: str) -> None:
    text = (
        f"before {SECRETS[kind]} after"
        if kind not in ("url_password", "bearer", "assignment")
        else {
            "url_password": f"git clone https://ada:{SECRETS[kind]}@git.example.test/x.git",
            "bearer": f"Authorization: Bearer {SECRETS[kind]}",
            "assignment": f"SECRET_KEY={SECRETS[kind]}",
        }[kind]
    )
    scrubbed, counts = redact_counting(text)
    assert _needle(kind) not in scrubbed
    assert sum(counts.values()) >= 1
    assert re.search(r"\[REDACTED:[a-z-]+\]", scrubbed)


LEGIT = [
    "sha256:9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08",
    "toolu_01NG5xcSvVWynFdbWxaW2SPc",
    "123e4567-e89b-12d3-a456-426614174000",
    "commit 4f9a2c1d3e5b6a7c8d9e0f1a2b3c4d5e6f7a8b9c",
    "max_tokens: 4096",
    "token = os.environ['TOKEN']",
    "password_hash = hash_password(password)",
    "SECRET_KEY=${SECRET_KEY}",
    "Bearer token expired",
    "https://example.test/path?q=1",
    "msg_01TqDZoU6FcpxB4u2AmpgWfZ",
    "input_tokens: 3, output_tokens: 12",
]


@pytest.mark.parametrize("text", LEGIT)
def test_legitimate_strings_survive(text: str) -> None:
    assert redact(text) == text


def _strings(value: Any) -> list[str]:
    if isinstance(value, str):
        return [value]
    if isinstance(value, dict):
        return [s for v in value.values() for s in _strings(v)]
    if isinstance(value, list):
        return [s for v in value for s in _strings(v)]
    return []


@pytest.mark.skipif(not TRANSCRIPTS.is_dir(), reason=f"real transcripts not found at {TRANSCRIPTS} (../shared)")
def test_nothing_legitimate_is_redacted_in_the_real_transcripts() -> None:
    strings = [
        s
        for path in sorted(TRANSCRIPTS.glob("*/*/*.jsonl"))
        for line in path.read_text(encoding="utf-8").splitlines()
        if line.strip()
        for s in _strings(json.loads(line))
    ]
    assert len(strings) > 10_000
    ids = re.compile(
        r"toolu_[A-Za-z0-9]+|[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}|\b[0-9a-f]{40,64}\b"
    )
    redactions: dict[str, int] = {}
    survivors = 0
    for text in strings:
        scrubbed, counts = redact_counting(text)
        for kind, count in counts.items():
            redactions[kind] = redactions.get(kind, 0) + count
        for token in ids.findall(text):
            assert token in scrubbed
            survivors += 1
    assert redactions == {}  # zero false positives across every string in every real transcript
    assert survivors > 500


def test_every_kind_is_covered() -> None:
    assert set(SECRET_KINDS) >= {
        "aws", "github", "anthropic", "openai", "slack", "stripe", "google", "jwt", "private-key",
        "url-password", "bearer", "assignment",
    }  # fmt: skip


from hypothesis import given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

_SEPARATORS = st.sampled_from([" ", "\n", "=", ": ", "'", '"', "(", ",", "\t"])


@settings(max_examples=300, deadline=None)
@given(
    st.text(max_size=80),
    st.sampled_from(sorted(set(SECRETS) - {"url_password", "bearer", "assignment"})),
    _SEPARATORS,
    st.text(max_size=40),
)
def test_a_secret_anywhere_in_text_is_redacted(before: str, kind: str, separator: str, after: str) -> None:
    text = f"{before}{separator}{SECRETS[kind]}{separator}{after}"
    assert _needle(kind) not in redact(text)


@settings(max_examples=300, deadline=None)
@given(st.text(max_size=200))
def test_redaction_is_idempotent(text: str) -> None:
    once = redact(text)
    assert redact(once) == once
