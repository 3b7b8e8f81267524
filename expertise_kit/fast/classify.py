"""Which domain a task, a file or a learning belongs to.

Words are matched whole (``ui`` never fires inside ``build``): text is split on camelCase, snake_case,
kebab-case and punctuation, lowercased, and plurals are folded. Paths are read segment by segment and
by extension, and a path signal weighs more than a word. Weak signals fall back to ``general``.
This module is import-light on purpose: the pre-task hook uses it.
"""

from __future__ import annotations

TYPE_CHECKING = False  # the hook's path: no typing or dataclasses imports
if TYPE_CHECKING:
    from collections.abc import Mapping, Sequence
    from typing import Any

__all__ = ["Classification", "classify", "tokens", "path_matches", "Rules", "rules_from"]

PATH_WEIGHT = 3.0
PATH_WORD_WEIGHT = 1.0  # a keyword inside a path segment: a hint, weaker than a path rule
WORD_WEIGHT = 1.0
MIN_SCORE = 1.0  # below this the signal is too weak: general
SECONDARY_RATIO = 0.5  # a domain within half of the winner's score is a close secondary


class Rules:
    __slots__ = ("keywords", "paths", "stems")

    def __init__(self, keywords: tuple[str, ...], paths: tuple[str, ...], stems: Any = None) -> None:
        self.keywords = keywords
        self.paths = paths
        # Once, not on every classification; the cache stores them, so the hook does not stem at all.
        self.stems = frozenset(stems) if stems is not None else keyword_stems(keywords)


def keyword_stems(keywords: Any) -> frozenset[str]:
    return frozenset(_stem(k.lower()) for k in keywords)


def rules_from(domains: Mapping[str, Any]) -> dict[str, Rules]:
    """Rules from config domains: objects with ``keywords``/``paths`` or, in the cache, dicts of them (with
    the keywords' stems, when the cache holds them)."""
    rules = {}
    for name, spec in domains.items():
        if isinstance(spec, dict):
            keywords, paths = spec.get("keywords") or (), spec.get("paths") or ()
            stems = spec.get("stems") if isinstance(spec.get("stems"), list) else None
        else:
            keywords, paths, stems = spec.keywords, spec.paths, None
        rules[name] = Rules(tuple(keywords), tuple(paths), stems)
    return rules


class Classification:
    __slots__ = ("domain", "scores", "secondary")

    def __init__(self, domain: str, scores: dict[str, float] | None = None, secondary: list[str] | None = None) -> None:
        self.domain = domain
        self.scores = scores or {}
        self.secondary = secondary or []

    def as_json(self) -> dict[str, object]:
        return {"domain": self.domain, "scores": self.scores, "secondary": self.secondary}


def _stem(word: str) -> str:
    if len(word) > 4 and word.endswith("ies"):
        return word[:-3] + "y"
    if len(word) > 4 and word.endswith(("ses", "xes", "zes", "ches", "shes")):
        return word[:-2]
    if len(word) > 3 and word.endswith("s") and not word.endswith(("ss", "us", "is")):
        return word[:-1]
    return word


def _split_run(run: str) -> list[str]:
    """``getUserAPIToken2`` -> get, User, API, Token, 2: case changes and digits are boundaries."""
    parts: list[str] = []
    start = 0
    for k in range(1, len(run)):
        before, here = run[k - 1], run[k]
        after = run[k + 1] if k + 1 < len(run) else ""
        if (
            before.isdigit() != here.isdigit()
            or (before.islower() and here.isupper())
            or (before.isupper() and here.isupper() and after.islower())
        ):
            parts.append(run[start:k])
            start = k
    parts.append(run[start:])
    return parts


def tokens(text: str) -> list[str]:
    """``getUserAPIToken`` -> get, user, api, token; ``user_tests`` -> user, test.

    A hand-written scanner, not a regex: the hook runs this on every prompt, and importing ``re``
    costs ~4 ms.
    """
    words: list[str] = []
    run: list[str] = []
    ideographs: list[str] = []  # Chinese, Japanese and Korean have no spaces: their words are read as bigrams
    for ch in text + " ":
        if ch.isascii() and ch.isalnum():
            if ideographs:  # `用pytest测试`: no bigram across the ASCII word
                words.extend(_bigrams(ideographs))
                ideographs = []
            run.append(ch)
            continue
        if run:
            words.extend(_stem(part.lower()) for part in _split_run("".join(run)))
            run = []
        if "\u3040" <= ch <= "\u9fff" or "\uac00" <= ch <= "\ud7af":
            ideographs.append(ch)
        elif ideographs:
            words.extend(_bigrams(ideographs))
            ideographs = []
    return words


def _bigrams(chars: list[str]) -> list[str]:
    if len(chars) == 1:
        return chars
    return [chars[i] + chars[i + 1] for i in range(len(chars) - 1)]


def path_matches(path: str, rule: str) -> bool:
    """``migrations/`` is a directory segment, ``*.sql`` a suffix, anything else a file name or segment."""
    return _matches(_split_path(path), rule)


def _split_path(path: str) -> tuple[str, list[str]]:
    normalised = path.replace("\\", "/").strip("/")
    return normalised, normalised.split("/")


def _matches(split: tuple[str, list[str]], rule: str) -> bool:
    normalised, parts = split
    if rule.endswith("/"):
        wanted = rule.strip("/")
        if "/" in wanted:
            return f"/{wanted}/" in f"/{normalised}/"
        return wanted in parts[:-1]
    if rule.startswith("*"):
        return parts[-1].endswith(rule[1:])
    return parts[-1] == rule or rule in parts


# File names found in every project: `index.ts` says nothing about database indexes.
_BLAND_PATH_WORDS = frozenset(("index", "main", "mod", "init", "app", "src", "lib", "util", "helper", "type"))
# Release-note folders hold prose about a change (`.changeset/x.md`): their names hint, their suffix doesn't.
_NOTES_DIRS = (".changeset/", ".changes/", "changelog.d/", "newsfragments/")


def classify(
    text: str,
    files: Sequence[str],
    rules: Mapping[str, Rules],
    *,
    fallback: str = "general",
) -> Classification:
    words = tokens(text)
    path_words = {path: set(tokens(path.rsplit(".", 1)[0])) - _BLAND_PATH_WORDS for path in files}
    notes = {path for path in files if path.replace("\\", "/").removeprefix("./").startswith(_NOTES_DIRS)}
    # A change that comes with its tests belongs to the code it changes: its test files weigh less.
    split = {path: _split_path(path) for path in files}  # once a path, not once a rule
    test_rules = rules["testing"].paths if "testing" in rules else ()
    test_files = {p for p in files if any(_matches(split[p], r) for r in test_rules)}
    with_code = bool(test_files) and len(test_files) < len(files)
    scores: dict[str, float] = {}
    for domain, rule in rules.items():
        keywords = rule.stems
        score = WORD_WEIGHT * sum(1 for word in words if word in keywords)
        for path in files:
            if path not in notes and any(_matches(split[path], r) for r in rule.paths):
                # A test file is about testing first: its other path matches are only hints.
                weak = (with_code and domain == "testing") or (path in test_files and domain != "testing")
                score += PATH_WORD_WEIGHT if weak else PATH_WEIGHT
            elif keywords & path_words[path]:
                score += PATH_WORD_WEIGHT  # `packages/db-postgres/...` says database without a rule for it
        if score:
            scores[domain] = score
    if not scores:
        return Classification(fallback, {})
    best = max(sorted(scores), key=lambda d: scores[d])
    if scores[best] < MIN_SCORE:
        return Classification(fallback, scores)
    secondary = [
        d for d in sorted(scores, key=lambda d: -scores[d]) if d != best and scores[d] >= scores[best] * SECONDARY_RATIO
    ]
    return Classification(best, scores, secondary)
