"""Scrubbing credentials out of learned text before it is written, because git history is forever.

Each secret becomes ``[REDACTED:<kind>]`` in place. Two sorts of rule find them:

- *tokens*: keys whose shape says what they are (a provider's fixed prefix and length: ``ghp_...``,
  ``AKIA...``, ``hf_...``); the whole match goes;
- *context rules*: a secret named by what surrounds it (``DB_PASS=...``, ``mysql -p...``, ``user:pw@`` in a
  URL, ``Authorization: Bearer ...``); the context stays, the value goes.

Content that only looks random (sha256 digests, ``toolu_`` ids, UUIDs, git hashes) is left alone: no rule
guesses from entropy. The false-positive count on real transcripts is measured in the tests.

``SECRET_KINDS`` is the one table of kinds, with what each covers and its rules. They are our own
patterns rather than a detector library's: detect-secrets 1.5.0 was measured against them. Its regex
plugins catch 7 of the 40 secrets planted in ``tests/test_secrets.py``, they yield a capture group
rather than the span to replace (``ghp`` for a GitHub token), and importing them costs 140 to 180 ms
(they pull in ``requests``) where this module costs 10 to 30, most of it compiling its patterns.
"""

from __future__ import annotations

import base64
import binascii
import re
from collections.abc import Callable
from dataclasses import dataclass

__all__ = ["redact", "redact_counting", "mask_generated", "SECRET_KINDS", "SecretKind"]

# What a match becomes, or None to leave it. The text replaced runs from the match's start to its end or
# to the end of its ``value`` group, whichever is later: the assignment rule finds its value in a look ahead.
Replace = Callable[[re.Match[str]], "str | None"]
_MARKER = r"\[REDACTED:[a-z0-9-]+\]"


@dataclass(frozen=True)
class SecretKind:
    name: str
    covers: str  # for people: what this kind catches
    rules: tuple[tuple[re.Pattern[str], Replace], ...]
    # The rules run only when one of these is in the lower-cased text: a substring test costs next to
    # nothing, and most strings hold none. Empty: always run.
    needles: tuple[str, ...] = ()


def _b(prefix: str) -> str:
    """``prefix`` at the start of a word. Written as the literal and then a look back, not ``\\b`` first,
    because a pattern that opens with a literal is searched for as a string: 30x faster on long text."""
    return f"{prefix}(?<![A-Za-z0-9_]{prefix})"


# A value we won't call a secret: a number, a boolean, an empty or placeholder value, a variable reference,
# or something already redacted.
_HARMLESS_VALUE = re.compile(
    r"""^(?:["']?)(?:\d+|true|false|null|none|nil|undefined|\$\{?[A-Za-z_][A-Za-z0-9_]*\}?|\$\(.*|<[^>]*>|\*+|x+|"""
    r"""\.\.\.|os\.environ.*|process\.env.*|""" + _MARKER + r""")(?:["']?)[,;]?$""",
    re.I,
)


# A call (`hash_password(password)`) computes a value rather than holding one.
_CALL = re.compile(r"[A-Za-z_][A-Za-z0-9_.]*\(")


def _harmless(value: str) -> bool:
    return len(value.strip("\"'")) < 6 or bool(_HARMLESS_VALUE.match(value) or _CALL.match(value))


def _generated(value: str) -> bool:
    """Letters and digits mixed, as generated keys are; words (``created_at``, ``user_id``) are not."""
    bare = value.strip("\"'")
    return len(bare) >= 10 and any(c.isdigit() for c in bare) and any(c.isalpha() for c in bare)


def _end(match: re.Match[str]) -> int:
    return max(match.end(), match.end("value")) if "value" in match.re.groupindex else match.end()


def _redact_group(match: re.Match[str], kind: str) -> str:
    """The match with its ``value`` group replaced by the marker; a quoted value keeps its quotes."""
    value = match.group("value")
    quote = value[0] if value[:1] in "\"'" and value[-1:] == value[:1] and len(value) > 1 else ""
    whole = match.string[match.start() : _end(match)]
    start, end = match.start("value") - match.start(), match.end("value") - match.start()
    return whole[:start] + f"{quote}[REDACTED:{kind}]{quote}" + whole[end:]


_ONLY_MARKER = re.compile(_MARKER)


def _value(kind: str, *, check: bool = True) -> Replace:
    """Redact the ``value`` group; with ``check``, leave a harmless one (``$TOKEN``, ``<pw>``, ``123``).

    A value some earlier kind redacted already keeps that kind (`oauth2:[REDACTED:gitlab]@`)."""

    def replace(match: re.Match[str]) -> str | None:
        value = match.group("value")
        if _ONLY_MARKER.fullmatch(value) or (check and _harmless(value)):
            return None
        return _redact_group(match, kind)

    return replace


def _tokens(name: str, covers: str, patterns: tuple[str, ...], needles: tuple[str, ...]) -> SecretKind:
    marker = f"[REDACTED:{name}]"
    return SecretKind(name, covers, tuple((re.compile(p), lambda _m: marker) for p in patterns), needles)


def _context(name: str, covers: str, *rules: tuple[str, Replace], needles: tuple[str, ...] = ()) -> SecretKind:
    return SecretKind(name, covers, tuple((re.compile(p), replace) for p, replace in rules), needles)


_STRONG_NAME = re.compile(
    r"secret|passw(?:or)?d|passwd|pwd|token|api[_-]?key|apikey|access[_-]?key|private[_-]?key|credential"
    r"|auth[_-]?key|session[_-]?key|signing[_-]?key|encryption[_-]?key|account[_-]?key|master[_-]?key",
    re.I,
)
# `PASS` alone is a test result (`--- PASS: TestX`): it counts with `=`, or with a prefix (`db_pass:`).
_PASS_NAME = re.compile(r"(?:.*[A-Za-z0-9][_.-])?(?:pass(?:phrase)?|pw)", re.I | re.S)
# `STRIPE_KEY` holds a secret, `SORT_KEY` a column name: for these the value must look generated.
_KEY_NAME = re.compile(r".*[A-Za-z0-9][_.-](?:key|KEY|Key)|[a-z0-9]+Key", re.S)


_NAME_CHARS = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_.-")


def _name_before(text: str, end: int) -> str:
    """The name an assignment operator at ``end`` assigns to: ``NAME``, ``"name"``, ``name  ``."""
    stop = max(0, end - 256)  # no name is longer; a bound keeps a pathological text linear
    i = end
    while i > stop and text[i - 1].isspace():
        i -= 1
    if i > stop and text[i - 1] in "\"'":
        i -= 1
        if i > stop and text[i - 1] == "\\":  # JSON inside a JSON string: \"password\": \"...\"
            i -= 1
    start = i
    while start > stop and text[start - 1] in _NAME_CHARS:
        start -= 1
    return text[start:i]


def _assignment(match: re.Match[str]) -> str | None:
    value = match.group("value")
    if _harmless(value):
        return None
    name = _name_before(match.string, match.start())
    if name and (
        _STRONG_NAME.search(name)
        or (_PASS_NAME.fullmatch(name) and (match.group("op") != ":" or not name.lower().startswith("pass")))
        or (_KEY_NAME.fullmatch(name) and _generated(value))
    ):
        return _redact_group(match, "assignment")
    return None


# A shell word as a value: quoted, or up to the next blank, quote or shell operator.
_WORD = r"""(?:'[^'\n]*'|"[^"\n]*"|[^\s'"`;&|]+)"""
# The rest of one shell command up to an option: nothing that would start another command.
_SAME_COMMAND = r"\s(?:[^\n;&|]*?\s)?"
# After a URL's scheme (`https`, `redis`, `postgres+psycopg`).
_SCHEME = r"://(?<=[A-Za-z0-9]://)"

_TABLE: tuple[SecretKind, ...] = (
    _tokens(
        "private-key",
        "PEM private keys (RSA, EC, DSA, OpenSSH, PGP, PKCS#8) and PuTTY key files",
        (
            r"(?s:-----BEGIN (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?-----.*?"
            r"(?:-----END (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?-----|\Z))",
            r"(?s:PuTTY-User-Key-File-\d+:.*?(?:Private-MAC: [0-9a-fA-F]+|\Z))",
        ),
        ("private key", "putty-user-key-file"),
    ),
    _tokens(
        "jwt",
        "JSON Web Tokens (`eyJ...`)",
        (_b("eyJ") + r"[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}",),
        ("eyj",),
    ),
    _tokens("anthropic", "Anthropic `sk-ant-` keys", (_b("sk-ant-") + r"[A-Za-z0-9_-]{20,}",), ("sk-ant-",)),
    _tokens(
        "openai",
        "OpenAI `sk-`, `sk-proj-`, `sk-svcacct-`, `sk-admin-` keys, dashes included",
        # A digit somewhere: generated keys always have one, `sk-some-branch-name` has none.
        (_b("sk-") + r"(?=[A-Za-z_-]*[0-9])[A-Za-z0-9_-]{20,}",),
        ("sk-",),
    ),
    _tokens(
        "github",
        "GitHub `ghp_`, `gho_`, `ghu_`, `ghs_`, `ghr_` and `github_pat_` tokens",
        (_b("github_pat_") + r"[A-Za-z0-9_]{22,}", _b("gh[pousr]_") + r"[A-Za-z0-9]{36,}\b"),
        ("github_pat_", "ghp_", "gho_", "ghu_", "ghs_", "ghr_"),
    ),
    _tokens(
        "gitlab",
        "GitLab `glpat-` and the other `gl*-` tokens, runner registration tokens",
        (
            _b("gl") + r"(?:pat|dt|ft|soat|rt|cbt|imt|ptt|agent|oas)-[A-Za-z0-9_-]{20,}",
            _b("GR1348941") + r"[A-Za-z0-9_-]{20,}",
        ),
        ("gl", "gr1348941"),
    ),
    _tokens(
        "aws",
        "AWS access key ids (`AKIA...`, `ASIA...`)",
        (_b("A") + r"(?:KIA|SIA|BIA|CCA|GPA|IDA|ROA|IPA|NPA|NVA|PKA|3T[A-Z0-9])[A-Z0-9]{16}\b",),
        ("akia", "asia", "abia", "acca", "agpa", "aida", "aroa", "aipa", "anpa", "anva", "apka", "a3t"),
    ),
    _tokens(
        "slack",
        "Slack `xox*-` tokens, `xapp-` app tokens and webhook URLs",
        (
            _b("xox") + r"[abposrce]-[A-Za-z0-9-]{10,}",
            _b("xapp-") + r"[A-Za-z0-9-]{20,}",
            r"https://hooks\.slack\.com/services/[A-Za-z0-9/_-]+",
        ),
        ("xox", "xapp-", "hooks.slack.com"),
    ),
    _tokens(
        "stripe",
        "Stripe `sk_`/`rk_`/`pk_` live and test keys, `whsec_` webhook secrets",
        (_b("[srp]k_") + r"(?:live|test)_[A-Za-z0-9]{16,}", _b("whsec_") + r"[A-Za-z0-9]{24,}"),
        ("_live_", "_test_", "whsec_"),
    ),
    _tokens(
        "google",
        "Google `AIza` API keys, `GOCSPX-` OAuth client secrets, `ya29.` access tokens",
        (
            _b("AIza") + r"[0-9A-Za-z_-]{35}",
            _b("GOCSPX-") + r"[A-Za-z0-9_-]{20,}",
            _b(r"ya29\.") + r"[A-Za-z0-9_-]{20,}",
        ),
        ("aiza", "gocspx-", "ya29."),
    ),
    _tokens(
        "pypi",
        "PyPI and TestPyPI upload tokens (`pypi-AgE...`)",
        (_b("pypi-AgE") + r"[A-Za-z0-9_-]{50,}",),
        ("pypi-age",),
    ),
    _tokens("npm", "npm `npm_` access tokens", (_b("npm_") + r"[A-Za-z0-9]{36}\b",), ("npm_",)),
    _tokens("huggingface", "Hugging Face `hf_` tokens", (_b("hf_") + r"[A-Za-z0-9]{30,}\b",), ("hf_",)),
    _tokens(
        "sendgrid", "SendGrid `SG.xxx.yyy` keys", (_b(r"SG\.") + r"[A-Za-z0-9_-]{16,}\.[A-Za-z0-9_-]{16,}",), ("sg.",)
    ),
    _tokens(
        "docker",
        "Docker Hub `dckr_pat_` and `dckr_oat_` tokens",
        (_b("dckr_") + r"(?:pat|oat)_[A-Za-z0-9_-]{20,}",),
        ("dckr_",),
    ),
    _tokens(
        "digitalocean",
        "DigitalOcean `dop_v1_`, `doo_v1_`, `dor_v1_` tokens",
        (_b("do[opr]_v1_") + r"[a-f0-9]{64}\b",),
        ("_v1_",),
    ),
    _tokens(
        "shopify",
        "Shopify `shpat_`, `shpss_`, `shpca_`, `shppa_` tokens",
        (_b("shp") + r"(?:at|ss|ca|pa)_[a-fA-F0-9]{32}\b",),
        ("shp",),
    ),
    _context(
        "azure",
        "Azure `AccountKey=`, `SharedAccessKey=`, `SharedAccessSignature=` and SAS `sig=` values",
        (r"(?:AccountKey|SharedAccessKey|SharedAccessSignature)=(?P<value>[^;\s\"'&]+)", _value("azure")),
        (r"sig=(?<=[?&]sig=)(?P<value>[A-Za-z0-9%+/=]{16,})", _value("azure", check=False)),
        needles=("accountkey=", "sharedaccess", "sig="),
    ),
    _context(
        "sentry",
        "the key of a Sentry DSN (`https://<key>@o123.ingest.sentry.io/...`)",
        (_SCHEME + r"(?P<value>[0-9a-fA-F]{32}(?::[0-9a-fA-F]{32})?)@", _value("sentry", check=False)),
        needles=("://",),
    ),
    _context(
        "url-password",
        "passwords in URLs (`scheme://user:pw@host`, `redis://:pw@host`), `/` in the password included",
        # The user may be empty (redis); a password may hold `/`, but digits then `/` are a port; it may
        # hold `@` when another `@` follows before any `/`.
        (
            _SCHEME + r"[^\s/:@\"'<>\[\]]*:(?P<value>(?!\d+(?:[/?#]|$))(?:[^\s@\"'<>]|@(?=[^\s/\"'<>]*@))+)@",
            _value("url-password", check=False),
        ),
        needles=("://",),
    ),
    _context(
        "url-token",
        "a token as a URL's user (`https://<token>@git.example.com/...`)",
        (_SCHEME + r"(?P<value>(?=[A-Za-z_-]*[0-9])[A-Za-z0-9_-]{20,})@", _value("url-token", check=False)),
        needles=("://",),
    ),
    _context(
        "cli-password",
        "passwords on command lines: `--password X`, `--password=X` (and `--token`, `--api-key`, ...),"
        " `mysql -pX`, `curl -u user:pw`, `sshpass -p PW`",
        (
            r"--(?<![\w-]--)(?:[a-z0-9]+-)*(?:password|passwd|pass|token|secret|api-key|apikey|access-key"
            r"|secret-key|auth-token|client-secret)(?:=|[ \t]+)(?P<value>(?!-)" + _WORD + ")",
            _value("cli-password"),
        ),
        # mysql and friends take the password glued to -p; `-p NAME` prompts, and names a database.
        (_b("mysql") + r"[a-z]*" + _SAME_COMMAND + r"-p(?P<value>(?!-)" + _WORD + ")", _value("cli-password")),
        (_b("mariadb") + r"(?:-[a-z]+)?" + _SAME_COMMAND + r"-p(?P<value>(?!-)" + _WORD + ")", _value("cli-password")),
        (
            _b("curl") + _SAME_COMMAND + r"(?:-u|--user)(?:=|[ \t]*)['\"]?[^\s:'\"]*:(?P<value>[^\s'\"]+)",
            _value("cli-password"),
        ),
        (_b("sshpass") + _SAME_COMMAND + r"-p[ \t]*(?P<value>" + _WORD + ")", _value("cli-password")),
        needles=("pass", "token", "secret", "key", "mysql", "mariadb", "curl"),
    ),
    _context(
        "assignment",
        "`NAME=value` and `name: value` for secret names (`*_PASSWORD`, `*_TOKEN`, `*_SECRET`, `DB_PASS=`),"
        " and `*_KEY=` when the value looks generated",
        (
            # Found from the operator, the name then read backwards and judged in Python: a regex that
            # opens on the name is tried at every position, 5x slower on long text, and one that searched
            # each name for each secret word was 30x slower. The value is looked ahead at, so the search
            # goes on right after the operator: `= SECRET=x` still finds `SECRET=x`.
            r"(?P<op>:=|=|:)(?=\s*(?P<value>" + _MARKER + r"|\"[^\"\n]*\"|'[^'\n]*'|\\\"[^\"\n]*?\\\"|[^\s,;\"'}\]]+))",
            _assignment,
        ),
        needles=("secret", "pass", "pw", "token", "key", "credential"),
    ),
    _context(
        "bearer",
        "`Authorization: Bearer`/`Basic`/`token` values",
        *(
            (
                f"(?i){word}(?<![a-z0-9_]{word})" + r"\s+(?P<value>(?=[A-Za-z0-9._~+/=-]*\d)[A-Za-z0-9._~+/=-]{16,})",
                _value("bearer", check=False),
            )
            for word in ("bearer", "token", "basic")
        ),
        needles=("bearer", "token", "basic"),
    ),
)

_BASE64_KIND = SecretKind("base64-secret", "base64 text that decodes to any of the above (an encoded `.env`)", ())
SECRET_KINDS: dict[str, SecretKind] = {kind.name: kind for kind in (*_TABLE, _BASE64_KIND)}

# One flat list, tested in one comprehension: a generator per kind cost more than the tests themselves.
_NEEDLES = tuple((needle, kind.name) for kind in _TABLE for needle in kind.needles)

# Runs of base64 letters, padding included; a run with `_` or `-` in it is an identifier, not base64.
_BASE64_RUN = re.compile(r"[A-Za-z0-9+/_-]{16,}={0,2}")
_ASCII_FIRST = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdef")
_CONTROL_BYTES = frozenset(range(0x20)) - {0x09, 0x0A, 0x0D} | {0x7F}


def _decoded(blob: str) -> str | None:
    """The text a base64 blob encodes, or None when it is no text (a hash, an image, a plain word)."""
    body = blob.rstrip("=")
    if len(body) % 4 == 1:
        return None
    # Binary data shows control bytes at once: look at the head before decoding a large blob whole.
    head = body[:400]
    try:
        if not _CONTROL_BYTES.isdisjoint(base64.b64decode(head + "=" * (-len(head) % 4))):
            return None
        raw = base64.b64decode(body + "=" * (-len(body) % 4))
    except (binascii.Error, ValueError):
        return None
    return raw.decode("utf-8", "replace") if _CONTROL_BYTES.isdisjoint(raw) else None


def _apply(pattern: re.Pattern[str], replace: Replace, text: str, kind: str, counts: dict[str, int]) -> str:
    pieces: list[str] = []
    done = 0
    for match in pattern.finditer(text):
        if match.start() < done:
            continue  # inside a value just replaced
        new = replace(match)
        if new is None:
            continue
        pieces += (text[done : match.start()], new)
        done = _end(match)
        counts[kind] = counts.get(kind, 0) + 1
    return "".join([*pieces, text[done:]]) if pieces else text


def _scan(text: str, counts: dict[str, int]) -> str:
    lowered = text.lower()
    present = {name for needle, name in _NEEDLES if needle in lowered}
    for kind in _TABLE:
        if kind.needles and kind.name not in present:
            continue
        for pattern, replace in kind.rules:
            text = _apply(pattern, replace, text, kind.name, counts)
    return text


def _base64_secrets(text: str, counts: dict[str, int]) -> str:
    def replace(match: re.Match[str]) -> str:
        run = match.group(0)
        # Text starts with an ASCII byte (or a byte-order mark), and base64 of one starts with A-Z or a-f:
        # this turns away paths and most words before decoding anything.
        if "_" in run or "-" in run or not (run[0] in _ASCII_FIRST or run.startswith("77u/")):
            return run
        decoded = _decoded(run)
        if decoded is None or _scan(decoded, {}) == decoded:
            return run
        counts["base64-secret"] = counts.get("base64-secret", 0) + 1
        return "[REDACTED:base64-secret]"

    return _BASE64_RUN.sub(replace, text)


def redact_counting(text: str) -> tuple[str, dict[str, int]]:
    """The scrubbed text and how many of each kind were replaced."""
    counts: dict[str, int] = {}
    text = _scan(text, counts)
    return _base64_secrets(text, counts), counts


def redact(text: str) -> str:
    return redact_counting(text)[0]


_KEY_LIKE = re.compile(r"[\w+/=-]{12,}")


def mask_generated(text: str) -> str:
    """``text`` with every run of 12 or more key-like characters that mixes digits and both cases masked:
    for text cut from its context, where a secret's label or BEGIN line may be gone (a key split over two
    string literals, a key's body under a YAML label). Words and identifiers have no such mix."""

    def mask(run: re.Match[str]) -> str:
        word = run.group(0)
        mixed = any(c.isdigit() for c in word) and any(c.isupper() for c in word) and any(c.islower() for c in word)
        return "[REDACTED:token]" if mixed else word

    return _KEY_LIKE.sub(mask, text)
