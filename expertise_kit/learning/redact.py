"""Scrubbing credentials out of learned text before it is written, because git history is forever.

Each secret becomes ``[REDACTED:<kind>]`` in place. Two sorts of rule find them:

- *tokens*: keys whose shape says what they are (a provider's fixed prefix and length: ``ghp_...``,
  ``AKIA...``, ``hf_...``); the whole match goes;
- *context rules*: a secret named by what surrounds it (``DB_PASS=...``, ``mysql -p...``, ``user:pw@`` in a
  URL, ``Authorization: Bearer ...``, "the password is ..."); the context stays, the value goes.

Text cut short keeps what it has: a URL's password or a known token prefix at the very end of the text
(``postgres://admin:Corr``, ``ghp_A1b2C3``) is redacted though its ``@`` or its full length was cut off.

Every rule runs in time linear in the text: no pattern re-scans the rest of the text from each place it could
start (a program's name consumes its whole command; an assignment's value is read only for a secret's name).

Content that only looks random (sha256 digests, ``toolu_`` ids, UUIDs, git hashes) is left alone: no rule
guesses from entropy. The false-positive count on real transcripts is measured in the tests.

``SECRET_KINDS`` is the one table of kinds, with what each covers and its rules. They are our own
patterns rather than a detector library's: detect-secrets 1.5.0 was measured against them. Its regex
plugins catch 7 of the 40 secrets planted in ``tests/test_secrets.py``, they yield a capture group
rather than the span to replace (``ghp`` for a GitHub token), and importing them costs 140 to 180 ms
(they pull in ``requests``) where this module costs 25 to 45, most of it compiling its patterns.
"""

from __future__ import annotations

import base64
import binascii
import re
from collections.abc import Callable
from dataclasses import dataclass

__all__ = ["redact", "redact_counting", "mask_generated", "SECRET_KINDS", "SecretKind"]

# What a match becomes, or None to leave it. The text replaced runs from the match's start to its end or
# to the end of its ``value`` group, whichever is later; or a rule says where it ends: ``(new, end)``, and
# ``(None, end)`` to leave the text up to ``end`` unsearched (a harmless value already read).
Replace = Callable[[re.Match[str]], "str | tuple[str | None, int] | None"]
_MARKER = r"\[REDACTED:[a-z0-9-]+\]"
_NOT_MARKER = r"(?!\[REDACTED:)"  # before a character of a value that must stop at a marker


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


def _bd(prefix: str) -> str:
    """``_b`` for a token whose body holds ``-``: not after a ``-`` either, or ``sk-a-sk-a-...`` would be
    scanned to its end once from every ``sk-`` in it."""
    return f"{prefix}(?<![A-Za-z0-9_-]{prefix})"


def _words(*words: str, start: str = "", end: str = "") -> str:
    """Any of ``words``, case aside, as an alternation each of whose branches opens on a literal: the regex
    engine then skips to the places one of their first letters is (``(?i:...)`` around it all is 5 to 10x
    slower on long text). With ``start``, not after one of those; with ``end``, not before one."""
    return "|".join(
        f"{first}{f'(?<!{start}{first})' if start else ''}(?i:{word[1:]}){f'(?!{end})' if end else ''}"
        for word in words
        for first in dict.fromkeys((word[0].lower(), word[0].upper()))
    )


# A token cut short by the end of the text (nothing but blanks or the `...` of a cut after it).
_AT_END = r"(?=(?:\.\.\.|\u2026)?\s*\Z)"


def _generated_within(size: int) -> str:
    """A look ahead: within ``size`` characters a digit, or both cases (a branch `sk-learn-upgrade` has neither)."""
    return f"(?:(?=[A-Za-z_-]{{0,{size}}}[0-9])|(?=[a-z_-]{{0,{size}}}[A-Z])(?=[A-Z_-]{{0,{size}}}[a-z]))"


# A value we won't call a secret: a number, a boolean, an empty or placeholder value, a variable reference,
# or something already redacted.
_HARMLESS_VALUE = re.compile(
    r"""^(?:["'`]?)(?:\d+|true|false|null|none|nil|undefined|\$\{?[A-Za-z_][A-Za-z0-9_]*\}?|\$\(.*|<[^>]*>|\*+|x+|"""
    r"""\.\.\.|os\.environ.*|process\.env.*|""" + _MARKER + r"""|"""
    # Placeholders and templates: `${env.DB_PASSWORD}`, `your-api-key`, `{{ vault_pw }}`, `%DB_PASSWORD%`.
    r"""\$\{[A-Za-z_][A-Za-z0-9_.]*\}?|your[-_ ].*|\{\{.*\}\}|%[A-Za-z_][A-Za-z0-9_]*%)(?:["'`]?)[,;]?$""",
    re.I,
)


# A call (`hash_password(password)`) or an element (`request.form["password"]`) computes a value rather
# than holding one.
_CALL = re.compile(r"[A-Za-z_][A-Za-z0-9_.]*[(\[]")


def _harmless(value: str) -> bool:
    return len(value.strip("\"'")) < 6 or bool(_HARMLESS_VALUE.match(value) or _CALL.match(value))


def _generated(value: str) -> bool:
    """Letters and digits mixed, as generated keys are; words (``created_at``, ``user_id``) are not."""
    bare = value.strip("\"'")
    return len(bare) >= 10 and any(c.isdigit() for c in bare) and any(c.isalpha() for c in bare)


def _end(match: re.Match[str]) -> int:
    return max(match.end(), match.end("value")) if "value" in match.re.groupindex else match.end()


def _marker(value: str, kind: str) -> str:
    """The marker for ``value``; a quoted value keeps its quotes."""
    quote = value[0] if value[:1] in "\"'`" and value[-1:] == value[:1] and len(value) > 1 else ""
    return f"{quote}[REDACTED:{kind}]{quote}"


def _redact_group(match: re.Match[str], kind: str) -> str:
    """The match with its ``value`` group replaced by the marker; a quoted value keeps its quotes."""
    whole = match.string[match.start() : _end(match)]
    start, end = match.start("value") - match.start(), match.end("value") - match.start()
    return whole[:start] + _marker(match.group("value"), kind) + whole[end:]


_ONLY_MARKER = re.compile(_MARKER)


def _value(kind: str, *, check: bool = True) -> Replace:
    """Redact the ``value`` group; with ``check``, leave a harmless one (``$TOKEN``, ``<pw>``, ``123``).

    A value some earlier kind redacted already keeps that kind (`oauth2:[REDACTED:gitlab]@`)."""

    def replace(match: re.Match[str]) -> str | None:
        value = match.group("value")
        if _ONLY_MARKER.fullmatch(value.strip("\"'`")) or (check and _harmless(value)):
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


def _name_sort(name: str) -> str:
    """What ``name`` says of its value, before the value is read: "strong" (a secret whatever it is), "pass"
    (a secret but after `PASS:`), "key" (a secret if it looks generated), or "" (none)."""
    if not name:
        return ""
    if _STRONG_NAME.search(name):
        return "strong"
    return "pass" if _PASS_NAME.fullmatch(name) else "key" if _KEY_NAME.fullmatch(name) else ""


def _may_hold_secret(sort: str, name: str, op: str) -> bool:
    return sort in ("strong", "key") or (sort == "pass" and (op != ":" or not name.lower().startswith("pass")))


def _holds_secret(sort: str, name: str, value: str, op: str = "=") -> bool:
    return _may_hold_secret(sort, name, op) and (sort != "key" or _generated(value))


def _names_a_secret(name: str, value: str) -> bool:
    return _holds_secret(_name_sort(name), name, value)


_NAME_CHARS = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_.-")


def _name_before(text: str, end: int) -> tuple[str, bool]:
    """The name an assignment operator at ``end`` assigns to (``NAME``, ``"name"``, ``name  ``, an element
    ``env["NAME"]``, a symbol ``:name``), and whether it is a key (quoted, or a symbol)."""
    stop = max(0, end - 256)  # no name is longer; a bound keeps a pathological text linear
    i = end
    while i > stop and text[i - 1].isspace():
        i -= 1
    element = i > stop and text[i - 1] == "]"  # os.environ["DB_PASSWORD"] = ...
    if element:
        i -= 1
    quote = text[i - 1] if i > stop and text[i - 1] in "\"'" else ""
    if quote:
        i -= 1
        if i > stop and text[i - 1] == "\\":  # JSON inside a JSON string: \"password\": \"...\"
            i -= 1
    start = i
    while start > stop and text[start - 1] in _NAME_CHARS:
        start -= 1
    symbol = not quote and start > stop and text[start - 1] == ":"
    if element:
        # An element of something (`env[`, `headers[`, `x][`): not a list or a Markdown link (`[token]: url`).
        j = start - 1 if (quote or symbol) and start > stop else start
        if not (j - 2 >= stop and text[j - 1] == "[" and (text[j - 2] in _NAME_CHARS or text[j - 2] in ")]")):
            return "", False
    return text[start:i], bool(quote) or symbol


# An assignment's value, read after its operator: a YAML tag (`!!str`) is skipped; a quote the text's end cut
# off still starts a value of one word (`DB_PASSWORD="hunter2sta`); a bare value stops before a marker.
_ASSIGNED_VALUE = re.compile(
    r"\s*(?:!![A-Za-z]+[ \t]+)?(?P<value>`?"
    + _MARKER
    + r"`?|\"[^\"\n]*\"|'[^'\n]*'|\"[^\"\s]*(?=\s*\Z)|'[^'\s]*(?=\s*\Z)|\\\"[^\"\n]*?\\\"|(?:"
    + _NOT_MARKER
    + r"[^\s,;\"'}\]])+)"
)


# Every secret's name above holds one of these: the assignment rule starts from them, reads the rest of the
# name and the operator forwards, the whole name backwards, and the value only for a secret's name. The rest
# is bounded, or a name of 100,000 `key`s would be read to its end from each.
_NAME_HINT = (
    "(?:"
    + _words("secret", "pass", "pw", "token", "key", "credential")
    # From the name's end to its operator: `"name": `, `env["NAME"] = `, `\\"name\\": `, `name  := `, `"name" => `.
    + r""")[A-Za-z0-9_.-]{0,128}(?=(?:\\?["'])?\]?\s*(?P<op>:=|=>|=|:))"""
)
# A type, not a value: `db_password: str = "..."`, `apiKey: string`, `password: Option<String>`.
_TYPE = re.compile(r"(?:Optional\[|Option<|&)?(?:str|string|String|SecretStr|SecretString|bytes|Secret)[>]?\??")
_TYPED_VALUE = re.compile(r"\]?[ \t]*=(?!=)")


def _assignment(match: re.Match[str]) -> tuple[str | None, int]:
    """Judged from the name before the value is read: a regex that opens on the name is tried at every
    position, 5x slower on long text, and one that looked ahead at the value from every operator scanned
    `a=a=a=...` to its end once from each `=`. What was read is not searched again."""
    text, op, op_end = match.string, match.group("op"), match.end("op")
    name, key = _name_before(text, match.start("op"))
    sort = _name_sort(name)
    # `"password" => "..."`, `:password => ...`; `password => ...` is a function.
    if not _may_hold_secret(sort, name, op) or (op == "=>" and not key):
        return None, op_end
    found = _ASSIGNED_VALUE.match(text, op_end)
    if found is None:
        return None, op_end
    value = found.group("value")
    if op == ":" and _TYPE.fullmatch(value):
        typed = _TYPED_VALUE.match(text, found.end())
        if typed is None:
            return None, found.end()
        found = _ASSIGNED_VALUE.match(text, typed.end())
        if found is None:
            return None, typed.end()
        value, op = found.group("value"), "="
    # A harmless value is skipped whole, `$(...)` and all: searching it again made `pw=$(pw=$(...` quadratic.
    if _harmless(value) or not _holds_secret(sort, name, value, op):  # a marker is harmless
        return None, found.end()
    return text[match.start() : found.start("value")] + _marker(value, "assignment"), found.end()


# A getter's default, or a setter's value: `os.getenv("DB_PASSWORD", "...")`, `ENV.fetch("SECRET") { "..." }`,
# `env('DB_PASSWORD', default='...')`, PHP's `define('DB_PASSWORD', '...')`, `os.Setenv("API_TOKEN", "...")`.
_QUOTED = r"""(?:"[^"\n]*"|'[^'\n]*'|`[^`\n]*`)"""
_GETTERS = frozenset(
    {
        "getenv", "get", "fetch", "env", "setdefault", "getproperty", "getordefault", "define", "setenv", "putenv",
        "setitem", "set", "put", "append",
    }
)  # fmt: skip
_IDENTIFIER_CHARS = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_")


def _default_value(value: str) -> bool:
    """A default that may be a secret: not a marker, a placeholder or a message (`or "not configured"`)."""
    return not (_ONLY_MARKER.fullmatch(value.strip("\"'`")) or _harmless(value) or any(c.isspace() for c in value))


def _named_default(match: re.Match[str]) -> str | None:
    """Found from the call's `(`, a literal the regex engine searches for fast; the function is judged here."""
    value = match.group("value")
    if not _default_value(value):
        return None
    text, i = match.string, match.start()
    while i > 0 and match.start() - i < 32 and text[i - 1] in _IDENTIFIER_CHARS:
        i -= 1
    if text[i : match.start()].lower() not in _GETTERS:
        return None
    return _redact_group(match, "assignment") if _names_a_secret(match.group("name"), value) else None


def _fallback(match: re.Match[str]) -> str | None:
    """`process.env.DB_PASSWORD || "..."`, `ENV["SECRET"] || "..."`, `getenv('DB_PASS') ?: '...'`, `or "..."`."""
    value = match.group("value")
    if not _default_value(value):
        return None
    text, i = match.string, match.start()
    while i > 0 and match.start() - i < 64 and text[i - 1].isspace():
        i -= 1
    if i > 0 and text[i - 1] == ")":  # a getter's call: getenv("NAME") || "..."
        i -= 1
    name = _name_before(text, i)[0]
    return _redact_group(match, "assignment") if _names_a_secret(name, value) else None


def _element(match: re.Match[str]) -> str | None:
    """`<password>...</password>` (Maven's settings.xml), `<add key="ApiKey" value="..."/>`, a plist's
    `<key>API_TOKEN</key><string>...</string>`."""
    value = match.group("value")
    if _ONLY_MARKER.fullmatch(value.strip("\"'")) or _harmless(value):
        return None
    return _redact_group(match, "assignment") if _names_a_secret(match.group("name"), value) else None


# A shell word as a value: quoted, or up to the next blank, quote or shell operator; a marker is a word of its own.
_WORD = r"""(?:'[^'\n]*'|"[^"\n]*"|""" + _MARKER + "|(?:" + _NOT_MARKER + r"""[^\s'"`;&|])+)"""
# The rest of one shell command: up to a newline or an operator that starts another, quotes and line
# continuations included. A program's rule consumes it whole, so no later place in it is searched again.
_REST = r"""(?P<rest>(?:[^\n;&|'"\\]+|\\[\s\S]|'[^'\n]*'?|"[^"\n]*"?)*)"""
# Programs whose `login` takes the password after -p (`docker login -u bob -p PW`), and the word some put between.
_LOGINS = (
    *((program, "") for program in ("docker", "podman", "buildah", "skopeo", "nerdctl", "oras", "oc", "cf")),
    *(("ibmcloud", ""), ("crane", r"(?:[ \t]+auth)?"), ("helm", r"(?:[ \t]+registry)?"), ("az", r"(?:[ \t]+acr)?")),
)
_LOGIN = "(?:" + "|".join(f"{program}(?<![\\w.-]{program}){sub}" for program, sub in _LOGINS) + r")[ \t]+login\b"
# After a URL's scheme (`https`, `redis`, `postgres+psycopg`).
_SCHEME = r"://(?<=[A-Za-z0-9]://)"


def _in_command(flag: str) -> Replace:
    """Each ``value`` of ``flag`` in the rest of the command a program starts (the match's ``rest``)."""
    found = re.compile(flag)

    def replace(match: re.Match[str]) -> str | None:
        text, done = match.string, match.start()
        pieces: list[str] = []
        for flag in found.finditer(text, match.start("rest"), match.end()):
            value = flag.group("value")
            if _ONLY_MARKER.fullmatch(value.strip("\"'")) or _harmless(value):
                continue
            pieces += (text[done : flag.start("value")], _marker(value, "cli-password"))
            done = flag.end("value")
        return "".join([*pieces, text[done : match.end()]]) if pieces else None

    return replace


def _short(letter: str, between: str, *, dash: bool = False) -> str:
    """A password flag ``-LETTER``, then ``between``, then the value (one starting with ``-`` when ``dash``)."""
    return f"-{letter}(?<=\\s-{letter}){between}(?P<value>{'' if dash else '(?!-)'}{_WORD})"


# One argument of a command: words and quotes run together, a marker in it included (`pw"x"`, `[REDACTED:x]>y`).
_ARGUMENT = re.compile(r"""(?:'[^'\n]*'|"[^"\n]*"|[^\s'"`;&|])+""")


def _htpasswd_secret(words: list[re.Match[str]]) -> re.Match[str] | None:
    """The password among one htpasswd's arguments: `-b FILE USER PASSWORD`, `-nb USER PASSWORD`."""
    flags, costs = "", False
    positional: list[re.Match[str]] = []
    for word in words:
        arg = word.group(0)
        if not positional and arg.startswith("-") and len(arg) > 1:
            flags += arg[1:]
            costs = arg[-1] in "Cr"  # -C COST, -r ROUNDS take a number
        elif costs and not positional and arg.isdigit():
            costs = False
        else:
            positional.append(word)
    at = 1 if "n" in flags else 2
    if "b" not in flags or len(positional) <= at:
        return None
    secret = positional[at]
    harmless = _ONLY_MARKER.fullmatch(secret.group(0).strip("\"'")) or _harmless(secret.group(0))
    return None if harmless else secret


def _htpasswd(match: re.Match[str]) -> str | None:
    """-b takes the password as an argument. An `htpasswd` again in the rest of the command starts its own
    arguments: a rule that read them as the first one's would find another password once the first `htpasswd`
    was redacted (`-storepass htpasswd ...`), and redacting twice must change nothing."""
    text = match.string
    commands: list[list[re.Match[str]]] = [[]]
    for word in _ARGUMENT.finditer(text, match.start("rest"), match.end()):
        if word.group(0).rsplit("/", 1)[-1] == "htpasswd":
            commands.append([])
        else:
            commands[-1].append(word)
    secrets = [secret for words in commands if (secret := _htpasswd_secret(words)) is not None]
    if not secrets:
        return None
    pieces: list[str] = []
    done = match.start()
    for secret in secrets:
        pieces += (text[done : secret.start()], _marker(secret.group(0), "cli-password"))
        done = secret.end()
    return "".join([*pieces, text[done : match.end()]])


# Programs that take a password in their arguments, and how to find it in the rest of their command. mysql
# and friends take it glued to -p: `-p NAME` prompts, and names a database.
_PROGRAMS: tuple[tuple[str, Replace], ...] = (
    (_b("mysql") + "[a-z]*", _in_command(_short("p", ""))),
    (_b("mariadb") + "(?:-[a-z]+)?", _in_command(_short("p", ""))),
    (
        _b("curl"),
        _in_command(r"-(?<=\s-)(?:u|-user)(?:=|[ \t]*)['\"]?[^\s:'\"\[]*:(?P<value>(?:(?!\[REDACTED:)[^\s'\"])+)"),
    ),
    (_b("sshpass"), _in_command(_short("p", "[ \t]*", dash=True))),
    (_LOGIN, _in_command(_short("p", "(?:=|[ \t]*)"))),
    (_b("redis-cli"), _in_command(_short("a", "[ \t]+"))),
    (_b("htpasswd"), _htpasswd),
    (_b("sqlcmd"), _in_command(_short("P", "[ \t]*"))),
    (_b("mongo") + "[a-z]*", _in_command(_short("p", "(?:=|[ \t]+)"))),
)


# --- secrets stated in prose: "log in with password hunter2staging", "the API key is 3f9a8b..." ----------

_PROSE_WORDS = (
    "api[ _-]?key", "access[ _-]?key", "secret[ _-]?key", "token", "secret", "password", "passphrase", "passwd",
    "passcode", "passwort", "kennwort", "mot de passe", "contrase(?:ñ|n)a", "senha",
)  # fmt: skip
_PROSE = (
    r"(?P<word>" + _words(*_PROSE_WORDS, start=r"[\w-]", end=r"[\w-]") + r"|密码|口令)\**"
    # "the password for the staging admin is ...": a few words, then what says a value follows.
    r"(?:(?:[ \t]+(?i:for|of|on|to|in|für|pour|para|de)(?:[ \t]+[^\s:=]{1,40}){1,4}?)?"
    r"(?P<sep>[ \t]*[:=：]|[ \t]+(?i:is|was|of|est|es|é|ist|lautet)(?![\w-])|[ \t]*是)[ \t]*|[ \t]+)"
    r"(?P<value>\"[^\"\n]{1,200}\"|'[^'\n]{1,200}'|`[^`\n]{1,200}`|“[^”\n]{1,200}”"
    r"|[A-Za-z0-9!#$%&*+\-./:=?@\\^_|~]{1,200})"
)
# Words in a value that describe rather than hold a secret: `base64-encoded`, `sha256`, `v2`, `24h`, `4o`.
_TECH_PART = re.compile(
    r"[^\W\d_]*|\d+[a-z]{0,3}|(?:sha|md|base|utf|aes|rsa|ed|x|pbkdf|argon|oauth|http|tls|ssl|ipv|v|hs|rs|es|ps|py"
    r"|python|node|gpt|win|s|ec|k|i|l|h|p|e|crc)\d+[a-z0-9]{0,3}",
    re.I,
)
_PARTS = re.compile(r"[-_./:]+")
_EMAIL = re.compile(r"[\w.+-]+@[\w-]+(?:\.[\w-]+)+")
# Quoted words that say what a password is like rather than what it is.
_NOT_A_PASSWORD = frozenset(
    {
        "wrong", "incorrect", "invalid", "expired", "empty", "missing", "required", "optional", "correct", "hidden",
        "redacted", "changed", "unset", "blank", "unknown", "secret", "password", "passphrase", "default", "masked",
        "encrypted", "hashed", "visible", "valid", "weak", "strong", "reset", "revoked", "disabled", "enabled",
        "same", "different", "new", "old",
    }
)  # fmt: skip


def _camel_humps(value: str) -> int:
    return sum(1 for i in range(1, len(value)) if value[i - 1].islower() and value[i].isupper())


def _credential(value: str, *, quoted: bool, explicit: bool, password: bool) -> bool:
    """Whether ``value``, said after "password", "token", "API key" in prose, looks like the secret itself
    rather than a word about it ("the password is wrong", "the token expired", "the key from the env")."""
    if len(value) < 6:
        return False
    if value.isdigit():  # "the password is 12345678"; a number is harmless elsewhere
        return explicit and password
    if value.isalpha():  # the usual case, first: a word ("wrong", "expired") or a name run together
        return (
            (len(value) >= 16 and value.islower())  # longer than English words run
            or (len(value) >= 12 and _camel_humps(value) >= 2)  # CorrectHorseBatteryStaple
            or (quoted and explicit and password and value.lower() not in _NOT_A_PASSWORD)
        ) and not _harmless(value)  # `xxxxxxxxxxxxxxxx`, 'undefined'
    if _harmless(value) or "://" in value or value[0] in "/~.\\" or _EMAIL.fullmatch(value):
        return False
    if any(c.isspace() for c in value):  # only quoted: "the passphrase is 'correct horse battery staple'"
        return explicit and password and len(value) >= 8 and value[0].isalnum() and value[-1].isalnum()
    letters, digits = any(c.isalpha() for c in value), any(c.isdigit() for c in value)
    if not letters:
        return False
    parts = [part for part in _PARTS.split(value) if part]
    if digits:
        return not all(_TECH_PART.fullmatch(part) for part in parts)
    if any(c in "!#$%^&*~@" for c in value[1:]):  # "P@ss!word"
        return True
    # Words joined: a passphrase of three or more ("correct-horse-battery-staple"), not "case-sensitive".
    return explicit and password and (len(parts) >= 3 or quoted)


_PROSE_PASSWORD_WORDS = frozenset(
    {
        "password", "passphrase", "passwd", "passcode", "passwort", "kennwort", "mot de passe", "contraseña",
        "contrasena", "senha", "密码", "口令",
    }
)  # fmt: skip


def _prose(match: re.Match[str]) -> tuple[str | None, int]:
    word = match.group("word").lower()
    password = word in _PROSE_PASSWORD_WORDS
    explicit = match.group("sep") is not None
    after_word = match.end("word")
    # Without "is" or ":", only a password or a key is followed by its value: "token refresh", "secret db-creds",
    # and `passwd USER` is a command.
    if not explicit and not ((password and word != "passwd") or word.endswith("key")):
        return None, after_word
    value, start = match.group("value"), match.start("value")
    quoted = value[0] in "\"'“" and len(value) > 1
    inner = value[1:-1] if quoted or value[0] == "`" else value.rstrip(".,:;!?|")
    if not _credential(inner, quoted=quoted, explicit=explicit, password=password):
        return None, after_word
    if quoted or value[0] == "`":
        new = value[0] + "[REDACTED:prose]" + value[-1]
    else:
        new = "[REDACTED:prose]" + value[len(inner) :]
    return match.string[match.start() : start] + new, match.end()


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
        (_bd("eyJ") + r"[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}",),
        ("eyj",),
    ),
    _tokens(
        "anthropic",
        "Anthropic `sk-ant-` keys",
        (_bd("sk-ant-") + r"[A-Za-z0-9_-]{20,}", _bd("sk-ant-") + r"[A-Za-z0-9_-]{4,19}" + _AT_END),
        ("sk-ant-",),
    ),
    _tokens(
        "openai",
        "OpenAI `sk-`, `sk-proj-`, `sk-svcacct-`, `sk-admin-` keys, dashes included",
        (
            # A digit somewhere: generated keys always have one, `sk-some-branch-name` has none.
            _bd("sk-") + r"(?=[A-Za-z_-]*[0-9])[A-Za-z0-9_-]{20,}",
            _bd("sk-")
            + r"(?:(?:proj|svcacct|admin)-[A-Za-z0-9_-]{4,40}|"
            + _generated_within(18)
            + r"[A-Za-z0-9_-]{6,19})"
            + _AT_END,
        ),
        ("sk-",),
    ),
    _tokens(
        "github",
        "GitHub `ghp_`, `gho_`, `ghu_`, `ghs_`, `ghr_` and `github_pat_` tokens",
        (
            _b("github_pat_") + r"[A-Za-z0-9_]{22,}",
            _b("gh[pousr]_") + r"[A-Za-z0-9]{36,}\b",
            _b("github_pat_") + r"[A-Za-z0-9_]{4,21}" + _AT_END,
            _b("gh[pousr]_") + r"[A-Za-z0-9]{4,35}" + _AT_END,
        ),
        ("github_pat_", "ghp_", "gho_", "ghu_", "ghs_", "ghr_"),
    ),
    _tokens(
        "gitlab",
        "GitLab `glpat-` and the other `gl*-` tokens, runner registration tokens",
        (
            _bd("gl") + r"(?:pat|dt|ft|soat|rt|cbt|imt|ptt|agent|oas)-[A-Za-z0-9_-]{20,}",
            _bd("GR1348941") + r"[A-Za-z0-9_-]{20,}",
            _bd("gl") + r"(?:pat|dt|ft|soat|rt|cbt|imt|ptt|agent|oas)-[A-Za-z0-9_-]{4,19}" + _AT_END,
        ),
        ("gl", "gr1348941"),
    ),
    _tokens(
        "aws",
        "AWS access key ids (`AKIA...`, `ASIA...`)",
        (
            _b("A") + r"(?:KIA|SIA|BIA|CCA|GPA|IDA|ROA|IPA|NPA|NVA|PKA|3T[A-Z0-9])[A-Z0-9]{16}\b",
            _b("AKIA") + r"[A-Z0-9]{4,15}" + _AT_END,
            _b("ASIA") + r"(?=[A-Z]{0,14}[0-9])[A-Z0-9]{4,15}" + _AT_END,
        ),
        ("akia", "asia", "abia", "acca", "agpa", "aida", "aroa", "aipa", "anpa", "anva", "apka", "a3t"),
    ),
    _tokens(
        "slack",
        "Slack `xox*-` tokens, `xapp-` app tokens and webhook URLs",
        (
            _bd("xox") + r"[abposrce]-[A-Za-z0-9-]{10,}",
            _bd("xapp-") + r"[A-Za-z0-9-]{20,}",
            r"https://hooks\.slack\.com/services/[A-Za-z0-9/_-]+",
            _bd("xox") + r"[abposrce]-[A-Za-z0-9-]{1,9}" + _AT_END,
            _bd("xapp-") + r"[A-Za-z0-9-]{4,19}" + _AT_END,
        ),
        ("xox", "xapp-", "hooks.slack.com"),
    ),
    _tokens(
        "discord",
        "Discord webhook URLs (`https://discord.com/api/webhooks/<id>/<token>`, discordapp.com too)",
        (r"https?://(?:(?:ptb|canary)\.)?discord(?:app)?\.com/api/(?:v\d+/)?webhooks/\d+/[A-Za-z0-9_-]+",),
        ("discord",),
    ),
    _tokens(
        "stripe",
        "Stripe `sk_`/`rk_`/`pk_` live and test keys, `whsec_` webhook secrets",
        (
            _b("[srp]k_") + r"(?:live|test)_[A-Za-z0-9]{16,}",
            _b("whsec_") + r"[A-Za-z0-9]{24,}",
            _b("[sr]k_") + r"(?:live|test)_[A-Za-z0-9]{4,15}" + _AT_END,
        ),
        ("_live_", "_test_", "whsec_"),
    ),
    _tokens(
        "google",
        "Google `AIza` API keys, `GOCSPX-` OAuth client secrets, `ya29.` access tokens",
        (
            _b("AIza") + r"[0-9A-Za-z_-]{35}",
            _b("GOCSPX-") + r"[A-Za-z0-9_-]{20,}",
            _b(r"ya29\.") + r"[A-Za-z0-9_-]{20,}",
            _b("AIza") + r"[0-9A-Za-z_-]{4,34}" + _AT_END,
        ),
        ("aiza", "gocspx-", "ya29."),
    ),
    _tokens(
        "pypi",
        "PyPI and TestPyPI upload tokens (`pypi-AgE...`)",
        (_b("pypi-AgE") + r"[A-Za-z0-9_-]{50,}", _b("pypi-AgE") + r"[A-Za-z0-9_-]{4,49}" + _AT_END),
        ("pypi-age",),
    ),
    _tokens(
        "npm",
        "npm `npm_` access tokens",
        (_b("npm_") + r"[A-Za-z0-9]{36}\b", _b("npm_") + _generated_within(34) + r"[A-Za-z0-9]{6,35}" + _AT_END),
        ("npm_",),
    ),
    _tokens(
        "huggingface",
        "Hugging Face `hf_` tokens",
        (_b("hf_") + r"[A-Za-z0-9]{30,}\b", _b("hf_") + _generated_within(28) + r"[A-Za-z0-9]{6,29}" + _AT_END),
        ("hf_",),
    ),
    _tokens(
        "sendgrid",
        "SendGrid `SG.xxx.yyy` keys",
        (_bd(r"SG\.") + r"[A-Za-z0-9_-]{16,}\.[A-Za-z0-9_-]{16,}",),
        ("sg.",),
    ),
    _tokens(
        "docker",
        "Docker Hub `dckr_pat_` and `dckr_oat_` tokens",
        (_b("dckr_") + r"(?:pat|oat)_[A-Za-z0-9_-]{20,}", _b("dckr_") + r"(?:pat|oat)_[A-Za-z0-9_-]{4,19}" + _AT_END),
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
        "passwords in URLs (`scheme://user:pw@host`, `redis://:pw@host`), `/` in the password included,"
        " and `scheme://user:pw` cut off at the end of the text",
        # The user may be empty (redis); a password may hold `/` and `:`, but digits then `/` are a port, and
        # `://` starts another URL; it may hold `@` when another `@` follows before any `/`. It holds no marker:
        # what another rule redacted is no part of it, and a second pass must find what the first found.
        (
            _SCHEME
            + r"[^\s/:@\"'<>\[\]]*:(?P<value>(?!\d+(?:[/?#]|$))(?!//)(?:"
            + _NOT_MARKER
            + r"[^\s@\"'<>:]|:(?!//)|@(?=[^\s/\"'<>@]*@))+)@",
            _value("url-password", check=False),
        ),
        # Cut off before its `@`: `postgres://admin:CorrectHorse` at the very end of the text.
        (
            _SCHEME
            + r"[^\s/:@\"'<>\[\]]*:(?P<value>(?!\d+(?:[/?#]|\s*\Z))(?!//)(?:"
            + _NOT_MARKER
            + r"[^\s@\"'<>:]|:(?!//))+)(?=\s*\Z)",
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
        " `mysql -pX`, `curl -u user:pw`, `sshpass -p PW`, `docker login -p PW` (podman, helm, az, oc, cf ...),"
        " `redis-cli -a PW`, `htpasswd -b FILE USER PW`, `sqlcmd -P PW`, `mongosh -p PW`, `keytool -storepass PW`,"
        " `openssl -passin pass:PW`",
        (
            r"--(?<![\w-]--)(?:[a-z0-9]+-)*(?:password|passwd|pass|token|secret|api-key|apikey|access-key"
            r"|secret-key|auth-token|client-secret)(?:=|[ \t]+)(?P<value>(?!-)" + _WORD + ")",
            _value("cli-password"),
        ),
        # A program's rule takes the rest of its command and redacts the flags' values in it.
        *((program + _REST, replace) for program, replace in _PROGRAMS),
        (
            r"-(?<![\w-]-)(?:src|dest)?(?:store|key)pass[ \t]+(?P<value>(?!-)" + _WORD + ")",
            _value("cli-password"),
        ),
        (
            r"-(?<![\w-]-)pass(?:in|out)?[ \t]+['\"]?pass:(?P<value>(?!-)(?:(?!\[REDACTED:)[^\s'\"])+)",
            _value("cli-password"),
        ),
        needles=("pass", "token", "secret", "key", "mysql", "mariadb", "curl", "login", "redis-cli", "htpasswd")
        + ("sqlcmd", "mongo"),
    ),
    _context(
        "assignment",
        "`NAME=value` and `name: value` for secret names (`*_PASSWORD`, `*_TOKEN`, `*_SECRET`, `DB_PASS=`),"
        ' and `*_KEY=` when the value looks generated; also `env["NAME"] = value`, `"name" => value`,'
        " `name: !!str value`, `name: str = value`, a getter's default (`os.getenv(NAME, ...)`,"
        " `process.env.NAME || ...`) and XML (`<password>...</password>`, `key=NAME value=...`, plist keys)",
        (_NAME_HINT, _assignment),
        (
            r"\(\s*(?P<q>[\"'])(?P<name>[A-Za-z0-9_.:-]{1,100})(?P=q)"
            r"(?:\s*,\s*(?:default\s*=\s*)?|\s*\)\s*\{\s*)(?P<value>" + _QUOTED + ")",
            _named_default,
        ),
        (r"(?:\|\||\?\?|\?:|or(?<![\w-]or)(?![\w-]))=?[ \t]*(?P<value>" + _QUOTED + ")", _fallback),
        (
            r"<(?P<name>[A-Za-z_][\w.:-]{0,100})(?:\s[^<>]{0,500})?>\s*(?P<value>[^<\s](?:[^<]{0,1000}[^<\s])?)\s*"
            r"</(?P=name)\s*>",
            _element,
        ),
        (
            "(?:" + _words("key", "name") + r")\s*=\s*(?P<q>[\"'])(?P<name>[\w.:-]{1,100})(?P=q)\s+(?i:value)\s*=\s*"
            r"(?P<value>\"[^\"\n]*\"|'[^'\n]*')",
            _element,
        ),
        (r"<key>\s*(?P<name>[\w.:-]{1,100})\s*</key>\s*<string>(?P<value>[^<]{1,1000})</string>", _element),
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
    _context(
        "prose",
        'secrets stated in prose, as user prompts state them: "log in with password hunter2staging",'
        ' "the API key is 3f9a...", "the token: ..." (English, French, German, Spanish, Portuguese, Chinese);'
        ' not words about one ("the password is wrong", "the token expired", "the API key from the env")',
        (_PROSE, _prose),
        needles=("pass", "token", "secret", "key", "kennwort", "contrase", "senha", "密码", "口令"),
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
    done = at = 0
    # Searched on from where the last match or replaced value ended, never inside it: a value replaced or
    # read is not scanned again, which keeps every rule linear.
    while (match := pattern.search(text, at)) is not None:
        result = replace(match)
        new, end = result if isinstance(result, tuple) else (result, _end(match))
        if new is None:
            at = max(match.end(), end if isinstance(result, tuple) else 0, match.start() + 1)
            continue
        pieces += (text[done : match.start()], new)
        done = at = max(end, match.start() + 1)
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


# A text with this many secrets or fewer that a scan changed is scanned again (see redact_counting).
_RESCAN_UP_TO = 16


def redact_counting(text: str) -> tuple[str, dict[str, int]]:
    """The scrubbed text and how many of each kind were replaced.

    A text a scan changed is scanned again, up to three times in all: a marker can join what a rule reads in
    ways the first scan could not see (an XML value that held a command's `||`, so that the command goes on
    to a `-p`), and redacting twice must change nothing. A text with no secret, nearly every text, is scanned
    once; so is one with more than ``_RESCAN_UP_TO``, which keeps a text of thousands within one scan's time."""
    counts: dict[str, int] = {}
    for _ in range(3):
        scrubbed = _base64_secrets(_scan(text, counts), counts)
        done = scrubbed == text or scrubbed.count("[REDACTED:") > _RESCAN_UP_TO
        text = scrubbed
        if done:
            break
    return text, counts


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
