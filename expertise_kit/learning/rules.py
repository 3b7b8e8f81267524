"""What the user said that should outlive the session: standing rules and corrections, facts about their
setup, and errors they pasted into a prompt.

A rule is a sentence of the user's own prompt that says how work is done here, not what to do now:
"always/never/every ...", "make sure ...", "don't ...", "use X, not Y", "I'm on Ubuntu", and corrections that
name something exact ("there's no `clangd.showLog`", "the file to use is `docs/prd.md`"), with the choice they
point to ("there's no `--force`; use `--yes`", "use docs/prd.md; don't include the other files"). A one-off request
("fix this", "make sure it works") has too few words of its own to be one. Text the user pasted (code
fences, quoted logs, a template with headings or tags) holds no rules of theirs.
"""

from __future__ import annotations

import re

from expertise_kit.learning.transcripts.model import MAX_PROMPT_CHARS

__all__ = ["user_rules", "terminal_runs", "MAX_RULES_PER_SESSION", "RULE_CHARS"]

MAX_RULES_PER_SESSION = 6
RULE_CHARS = 200
_MIN_CHARS = 12
# Prompts read for rules, per session, at most: real sessions type 10,000 characters at most, while a
# transcript holding megabytes of them is made by a program and would take seconds.
_READ_CHARS = 200_000

# A rule's marker, at the start of a sentence (after "please", "and", "also" ...).
_LEAD = r"(?:(?:please|and|also|but|so|oh|ok|okay|note|remember|important)[,:]?\s+)*"
_START = re.compile(
    _LEAD + r"(?:always|never|every\s+time|whenever|make\s+sure|ensure|remember\s+to|do\s*n[o']t|dont|do\s+not|"
    r"avoid|stop\s+\w+ing|prefer|only\s+use|from\s+now\s+on|going\s+forward|keep\s+(?:the|all|every)|"
    r"no\s+more|you\s+(?:must|should(?:n't| not)?|need\s+to)\s+(?:always|never|not))\b",
    re.I,
)
# Markers anywhere in a sentence.
_ANYWHERE = re.compile(
    r"\b(?:always|never)\b|\bmust(?:\s+not)?\s+\w+|"
    r"\bevery\s+(?:feature|change|commit|new|file|function|endpoint|test|pr|release|page|command|module|component|"
    r"migration|model|screen|string)s?\b|"
    r"\buse\s+\S+(?:\s+\S+){0,4}?,?\s+(?:not|instead\s+of|rather\s+than)\s+\S|"
    r"\binstead\s+of\s+\S+(?:\s+\S+){0,3}?,?\s+use\b|\bshould(?:n't|\s+not)?\s+(?:be|go|use|have|run|live|stay|"
    r"come|include|show|appear|call|return|print|read|write|match|never|always|only)\b|"
    r"\b(?:is|are|goes|go|belongs?|lives?|means?|be)\s+\S+(?:\s+\S+){0,4}?,\s+not\s+\S+(?:\s+\S+){0,3}[.!]?$|^correction\b|"
    r"\bno\s+need\s+(?:to|for)\b|\bthere'?s\s+no\s+need\b",
    re.I,
)
# The user telling how their machine or project is set up.
_SETUP = re.compile(
    r"^(?:i'?m|i\s+am|we'?re|we\s+are)\s+(?:on|using|running|working\s+on)\s+\S|"
    r"^(?:my|our)\s+(?:machine|os|laptop|shell|server|box|environment|setup|default\s+branch)\s+(?:is|runs|has)\b|"
    r"^(?:the\s+)?default\s+branch\s+is\b|^we\s+(?:use|deploy\s+(?:to|with)|host\s+on)\s+\S",
    re.I,
)
# Other languages' markers: Chinese, Spanish, Portuguese, German, French.
_OTHER = re.compile(
    r"不要|别再|必须|务必|始终|总是|每次|一定要|记得|禁止|请勿|不能|不允许|统一使用|不应该|应该|没有必要|不需要|不必|"
    r"\bil\s+faut\b|\bil\s+faudrait\b|\bne\s+doi[tv]\b|\bdoi(?:t|vent)\s+(?:être|toujours|jamais)\b|\bet\s+non\s+(?:à|a|au|aux|pas|par|de|des|du|le|la|les|un|une)\b|"
    r"\bn'inclu[st]\s+pas\b|\b(?:utilise[sz]?|usa|verwende|nutze)\s+\S+(?:\s+\S+){0,4}?\s+(?:au\s+lieu\s+d[eu]|"
    r"en\s+(?:lugar|vez)\s+de|(?:an)?statt)\b|用\s*\S+\s*而不是|\bhay\s+que\b|\bno\s+debe\b|\bdebe\s+\w+|\bmuss\b|\bdarf\s+nicht\b|"
    r"^(?:siempre|nunca|no\s+uses|no\s+hagas|asegúrate|cada\s+vez|recuerda|sempre|nunca|não\s+use|"
    r"immer|niemals|nie\s+|stelle\s+sicher|verwende\s+nie|toujours|jamais|ne\s+jamais|assure-toi)\b",
    re.I,
)
# A request for work now, unless it says it stands: "always", "never", "every".
_TASK = re.compile(
    _LEAD + r"(?:add|create|implement|fix|update|write|remove|delete|rename|refactor|build|change|move|make\s+(?!sure)"
    r"|remember\s+to\s+update|give|show|tell|explain|run|check|look|can\s+you|could\s+you|would\s+you)\b",
    re.I,
)
_STANDING = re.compile(r"\b(?:always|never|every|each\s+time|whenever|from\s+now\s+on)\b", re.I)
_CJK = re.compile(r"[\u3040-\u30ff\u3400-\u9fff\uac00-\ud7af]")
_SENTENCE = re.compile(r"(?<=[.!;。！；])\s+|(?<=[。！；])|(?<!\s)\s+-\s+(?=[A-Z])")  # a run of spaces is tried once
_WORD = re.compile(r"[^\W\d_][\w'-]*", re.UNICODE)
# Words that carry no content of their own in a rule: markers, pronouns, fillers.
_FILLER = frozenset(
    {
        "always", "never", "every", "time", "make", "sure", "ensure", "remember", "don't", "dont", "do", "not",
        "please", "and", "also", "but", "so", "the", "a", "an", "it", "this", "that", "these", "those", "to", "you",
        "we", "i", "is", "are", "be", "works", "work", "working", "fix", "fixed", "good", "ok", "okay", "just",
        "should", "must", "need", "needs", "all", "of", "for", "in", "on", "with", "again", "now", "them", "they",
        "my", "your", "our", "done", "right", "correct", "correctly", "properly", "thing", "things", "everything",
        "stuff", "here", "there", "like", "before", "after", "can", "will", "would", "no", "yes", "if",
    }
)  # fmt: skip
_PASTED = re.compile(r"^\s*(?:>|\$ |#!|\s{4}|\t|at\s+\S+\(|File \"|Traceback|[│┃|⎿●✓✗]\s)")
_TEMPLATE = re.compile(r"^\s*#{1,6}\s|<[a-zA-Z_][\w-]{0,40}(?:\s[^>\n]{0,200})?>|\{\{|\*\*[^*\n]{1,80}\*\*:", re.M)
# Talk about the conversation, not a rule: "I'm not saying you should ...", "I think we should ...".
_CHAT = re.compile(
    r"\b(?:i|you|we)\s+(?:should|shouldn't)\b|\bi'?m\s+not\s+saying\b|[吗呢]\s*$|"
    # an opinion or a guess is no rule: "I think we need both", "je pense qu'il faut"
    r"\bi\s+(?:think|guess|believe|suppose)\b|\b(?:maybe|perhaps|probably)\b|\bje\s+(?:pense|crois)\b|"
    r"\bpeut-[êe]tre\b|\bcreo\s+que\b|\bquizás?\b|我觉得|可能|"
    # a one-off: "never mind that", "don't worry about the tests for now"
    r"\bnever\s+mind\b|\bdon'?t\s+worry\b|\bfor\s+now\b|\bthis\s+time\b|\bright\s+now\b|\bfor\s+this\s+(?:task|one|pr)\b",
    re.I,
)
# Something exact: a `code` span, a "quoted" name, a dotted, slashed or snake/kebab identifier, a --flag.
_EXACT_TEXT = (
    r"`[^`\n]+`|[\"“«][^\"”»\n]{2,40}[\"”»]|(?<![\w'-])[A-Za-z_][\w-]*[./_][\w./-]*\w|(?<![\w-])--?[a-zA-Z][\w-]+|"
    r"\b[a-z]+[A-Z]\w*"
)
_EXACT = re.compile(_EXACT_TEXT)
# A correction of a fact, or the name to use, naming something exact at once: "there's no `clangd.showLog`",
# "the file to use is docs/prd.md", "au lieu de "Terra", il s'agit de "TRA"". Bug reports say "instead of"
# and "does not exist" too ("it returns 500 instead of 404"), so those alone are no marker.
_SOON = (  # at once: after an article and one word at most; camelCase is case-sensitive
    r"\s+(?:(?:the|a|an|le|la|les|el|los|der|die|das)\s+)?(?:[^\W\d_][\w'-]*\s+)??(?-i:" + _EXACT_TEXT + ")"
)
_CORRECTION = re.compile(
    r"(?:^|[,;:)]\s*)(?:(?:no|nope|actually|first|second|also|and|but)[,!]?\s+){0,3}"
    r"(?:there(?:'s|\s+is|\s+are)\s+(?:no|only)|il\s+n'y\s+a\s+(?:pas\s+d[e']|que)|no\s+(?:hay|existe)|"
    r"es\s+gibt\s+(?:kein\w*|nur))" + _SOON + "|"
    r"\b(?:to\s+use\s+(?:is|are)|à\s+utiliser\s+(?:est|sont)|a\s+usar\s+es|zu\s+verwenden\s+ist)" + _SOON + "|"
    r"\binstead\s+of\b[^.;?]{1,80}?,\s*it(?:'s|\s+is)\b|\bau\s+lieu\s+d[eu]\b[^.;?]{1,80}?\b(?:il\s+s'agit|c'est)\b|"
    r"没有\s*(?-i:" + _EXACT_TEXT + ")",
    re.I,
)
_FOR_NOW = re.compile(r"\byet\b|\bpas\s+encore\b|\btodavía\b|\bnoch\s+nicht\b|还没|尚未", re.I)
# A correction that asks for work is a request: "there's no `README.md`, please create one".
_ASKS = re.compile(
    r"\b(?:please|pls|can\s+you|could\s+you|let'?s|create|add|fix|make|write|help|merci\s+de|peux-tu|puedes|"
    r"kannst\s+du|bitte)\b|帮我|请",
    re.I,
)
# What a rule that points back may point to: a choice of what to use ("use docs/prd.md", "utilise ...").
_CHOICE = re.compile(_LEAD + r"(?:use|only\s+use|utilise[sz]?|usa|verwende|nutze|load|read|keep|用|使用|只用)\b", re.I)
# A rule that points back ("don't include the other files"): it says what it means with the sentence before.
_BACK = re.compile(
    r"\b(?<!each\s)others?\b(?!\s+(?:hand|than)\b)|\bthe\s+rest\b|\bautres\b|\botros\b|\banderen?\b|其他|其它", re.I
)
_LOG_LINE = re.compile(r"^\s*(?:\[?\d{2,4}[-/:]\d{2}|\w+Error\b|error[:\[]|warning[:\[]|fatal:|npm ERR)", re.I)


# A shell's prompt, then the command typed at it: `$ make`, `❯ ./setup.sh`, `me@box:~/app$ npm test`,
# `me@mac app % pytest`, `(venv) % pytest`, `PS C:\app> npm test`. A bare `$`, `❯` or `➜` needs a command
# after it that starts as one does (lower case, a path, or `NAME=`): `$ 5 a month` and `➜ Always …` are prose.
_SHELL_PROMPT = re.compile(
    r"^(\s*)(?:\([\w.-]+\)\s*[$%#❯➜]|(?:\([\w.-]+\)\s*)?(?:[\w.-]+@[\w.-]+(?::[^\s$#%]*[$#%]|\s[^\s$#%]+\s%)|"
    r"PS [A-Za-z]:\\[^>]*>)|[$❯➜](?=\s+(?:[a-z./~_]|[A-Z_][A-Z0-9_]*=)))\s+(\S.*)$"
)


def _ends_terminal(line: str, indent: str) -> bool:
    """A code fence, or a line indented less than the prompt, ends what a terminal printed."""
    return line.lstrip().startswith("```") or not line.startswith(indent) and bool(line.strip())


def terminal_runs(prompt: str) -> list[tuple[str, str]]:
    """The commands a prompt shows typed at a shell's prompt, each with what the terminal printed after it
    (up to the next prompt, a fence or a line indented less; blank lines too, as a program prints them): a
    terminal the user pasted. After a blank line, a rule ends it: the user's own words, as ``user_rules``
    reads them, so no line is both."""
    runs: list[tuple[str, list[str]]] = []
    indent: str | None = None
    blank = False
    for line in prompt.splitlines():
        typed = _SHELL_PROMPT.match(line)
        if typed:
            indent = typed[1]
            runs.append((typed[2].strip(), []))
        elif indent is not None and not _ends_terminal(line, indent) and not (blank and _said_by_user(line)):
            runs[-1][1].append(line)
        else:
            indent = None
        blank = not line.strip()
    return [(command, "\n".join(printed)) for command, printed in runs]


def _said_by_user(line: str) -> bool:
    """A line after a blank one in a pasted terminal that states a rule: typed by the user after the paste."""
    return any(_is_rule(sentence) for sentence in _line_sentences(line))


def _line_sentences(line: str) -> list[str]:
    """The sentences of one typed line, a list's bullet left out."""
    text = line.strip().lstrip("-*•").strip()
    return [part.strip() for part in _SENTENCE.split(text) if part and part.strip()] if text else []


def _sentences(prompt: str) -> list[str]:
    """The sentences the user typed: code fences, quoted and pasted lines, and a pasted terminal's commands
    with what they printed, left out."""
    kept: list[str] = []
    fenced = False
    terminal: str | None = None  # the indentation of the shell's prompt, in a pasted terminal
    for line in prompt.splitlines():
        typed = _SHELL_PROMPT.match(line)
        if typed:
            terminal = typed[1]
        elif terminal is not None and (_ends_terminal(line, terminal) or not line.strip()):
            terminal = None  # what the user typed after a paste starts after a blank line
        if line.lstrip().startswith("```"):
            fenced = not fenced
            continue
        if fenced or terminal is not None or _PASTED.match(line) or _LOG_LINE.match(line):
            continue
        kept.extend(_line_sentences(line))
    return kept


def _content_words(sentence: str) -> int:
    if _CJK.search(sentence):
        return len(_CJK.findall(sentence)) // 2
    return sum(1 for w in _WORD.findall(sentence.lower()) if w not in _FILLER and len(w) > 1)


def _corrects(sentence: str) -> bool:
    """A correction naming something exact, and not of how things stand for now ("there's no `x` yet")."""
    if not _CORRECTION.search(sentence) or not _EXACT.search(sentence):
        return False
    words = _EXACT.sub(" ", sentence)  # what it names is not what it says: "there's no `make test`"
    return not _FOR_NOW.search(words) and not _ASKS.search(words)


def _is_rule(sentence: str) -> bool:
    if "?" in sentence or "？" in sentence:
        return False  # a question asks; it sets no rule
    if len(sentence) > 250 or len(sentence) < (6 if _CJK.search(sentence) else _MIN_CHARS) or _CHAT.search(sentence):
        return False
    marked = bool(_START.match(sentence) or _ANYWHERE.search(sentence) or _SETUP.match(sentence))
    marked = marked or bool(_OTHER.search(sentence)) or _corrects(sentence)
    if _TASK.match(sentence) and not _STANDING.search(sentence):
        return False  # "Add a button that should appear for admins": a request, however it is worded
    return marked and _content_words(sentence) >= 3


def _context(sentence: str) -> bool:
    """Whether a rule that points back may take ``sentence`` with it: it names something exact and is no
    rule, question, request or chat of its own ("use docs/prd.md", before "don't include the other files")."""
    if not _CHOICE.match(sentence) or not _EXACT.search(sentence) or "?" in sentence or _CHAT.search(sentence):
        return False
    return not _is_rule(sentence)


def _lower_first(sentence: str) -> str:
    """``Don't ...`` as it reads after a semicolon; ``NEVER``, ``GitHub`` and ``I`` as they are."""
    if re.match(r"(?!I\b|I['’])[A-Z]['’]?[a-z]", sentence):
        return sentence[:1].lower() + sentence[1:]
    return sentence


def _tidy(sentence: str) -> str:
    text = " ".join(sentence.split())
    text = re.sub(r"^(?:(?:please|and|also|but|so|oh|ok|okay)[,:]?\s+)+", "", text, flags=re.I)
    text = text.rstrip(" ,;:")
    return text[:1].upper() + text[1:]


def user_rules(prompts: list[str]) -> list[str]:
    """The standing rules and setup facts in the user's prompts, in order, each once."""
    found: dict[str, str] = {}
    read = 0
    for prompt in prompts:
        lines = prompt.count("\n") + 1
        if lines > 15 or len(prompt) >= MAX_PROMPT_CHARS:
            continue  # a pasted document (cut where it reached the cap): its imperatives are not the user's own
        read += len(prompt)
        if read > _READ_CHARS:
            break
        if _TEMPLATE.search(prompt):
            continue  # a template, the same
        before = ""
        sentences = _sentences(prompt)
        for number, sentence in enumerate(sentences):
            after = sentences[number + 1] if number + 1 < len(sentences) else ""
            # A long preamble, then the correction: the correction's clause is kept, if it fits in a rule.
            correction = _CORRECTION.search(sentence, len(sentence) - 260) if len(sentence) > 250 else None
            if correction:
                clause = max(sentence.rfind(mark, 0, correction.start() + 1) for mark in ",;:)") + 1
                start = clause if len(sentence) - clause <= 250 else correction.start()  # else still too long
                sentence = sentence[start:].lstrip(" ,;:)")
            if _is_rule(sentence):
                if before and _BACK.search(sentence) and _context(before):
                    sentence = f"{before.rstrip(' .;:')}; {_lower_first(sentence)}"
                elif _corrects(sentence) and len(after) <= 100 and _context(after):  # "there's no X; use Y"
                    sentence = f"{sentence.rstrip(' .;:')}; {_lower_first(after)}"
                text = _tidy(sentence)
                found.setdefault(text.lower(), text)
            before = sentence if len(sentence) <= 100 else ""  # the rule keeps most of its RULE_CHARS
            if len(found) >= MAX_RULES_PER_SESSION:
                return list(found.values())
    return list(found.values())
