"""The one vocabulary: sections, domains, agents and transcript formats, each described in one table.

Everything that lists sections, domains, agents or formats derives from these tables: the schema, the
line cap, rendering, the render cache, the CLI's choices, the hook installers. Adding a section is one
row in ``SECTIONS``.

Plain data and nothing else (no imports at all), so every layer can use it, the pre-task hook included.
"""

from __future__ import annotations

__all__ = [
    "Section",
    "SECTIONS",
    "SECTION_ALIASES",
    "RENDER_GROUPS",
    "FILES",
    "TEXT",
    "FAILURES",
    "section",
    "section_names",
    "top_level_keys",
    "DEFAULT_LINE_CAP",
    "DEFAULT_RETENTION_DAYS",
    "DEFAULT_DOMAINS",
    "DEFAULT_KEYWORDS",
    "DEFAULT_PATHS",
    "OVERVIEWS",
    "Agent",
    "AGENTS",
    "agent",
    "agent_names",
    "FORMATS",
    "format_names",
]

# -- sections ---------------------------------------------------------------------------------------

# What an item of a section holds. A plain string item is always hand-written.
FILES = "files"  # a path: a string, or a mapping with `path`
TEXT = "text"  # a sentence: a string, or a mapping with `text`
FAILURES = "failures"  # a mapping with `issue`, `error` and `solution`
# An entry's `source` when a session produced it: parsed from its transcript, or written by its agent when
# asked to reflect (docs/reflect.md). Both count recurrences and are pruned before hand-written ones.
SESSION_SOURCES = ("learned", "agent")
# An entry's wording, whatever its kind: what the agent's rewording replaces and what is compared as words.
WORDING_FIELDS = ("text", "path", "issue", "error", "solution")


class Section:
    """One list in a domain file.

    ``prune_rank``: when a file is over its line cap, learned entries above each section's ``floor`` are
    pruned first, section by section in rank order (lowest first); then any learned entry; hand-written
    ones last. ``group``: the heading it renders under (a failure with no fix renders as a pitfall).
    """

    __slots__ = ("name", "kind", "prune_rank", "floor", "group")

    def __init__(self, name: str, kind: str, prune_rank: int, floor: int, group: str) -> None:
        self.name = name
        self.kind = kind
        self.prune_rank = prune_rank
        self.floor = floor
        self.group = group

    def __repr__(self) -> str:
        return f"Section({self.name!r}, {self.kind!r})"


# File order of a new domain file. Failures and proven patterns are pruned first, with a floor that keeps
# the most valuable of each; the hand-curated practices last.
SECTIONS: tuple[Section, ...] = (
    Section("core_files", FILES, prune_rank=2, floor=30, group="files"),
    Section("patterns", TEXT, prune_rank=4, floor=0, group="practices"),
    Section("best_practices", TEXT, prune_rank=5, floor=0, group="practices"),
    Section("learned_from_failures", FAILURES, prune_rank=0, floor=10, group="corrections"),
    Section("effective_patterns", TEXT, prune_rank=1, floor=15, group="worked"),
    Section("successful_techniques", TEXT, prune_rank=3, floor=10, group="worked"),
)

# Short names people type: `expertise add api failures ...`.
SECTION_ALIASES: dict[str, str] = {"failures": "learned_from_failures", "files": "core_files"}

# Headings, in the order they render: corrections (failures with a known fix) lead.
RENDER_GROUPS: tuple[tuple[str, str], ...] = (
    ("corrections", "Corrections: failures and what fixed them"),
    ("pitfalls", "Known pitfalls"),
    ("practices", "Patterns and practices"),
    ("worked", "What worked before"),
    ("files", "Key files"),
)


def section(name: str) -> Section:
    for candidate in SECTIONS:
        if candidate.name == name:
            return candidate
    raise KeyError(f"no section {name!r}")


def section_names() -> tuple[str, ...]:
    return tuple(s.name for s in SECTIONS)


def top_level_keys() -> tuple[str, ...]:
    """The keys of a new domain file, in order."""
    return ("domain", "overview", *section_names(), "last_validated")


# -- domains ----------------------------------------------------------------------------------------

DEFAULT_LINE_CAP = 1000
DEFAULT_RETENTION_DAYS = 30

DEFAULT_DOMAINS: tuple[str, ...] = ("database", "api", "frontend", "testing", "security", "deployment", "general")

# The classifier matches these whole words (camelCase, snake_case and plurals split and folded).
# fmt: off
DEFAULT_KEYWORDS: dict[str, tuple[str, ...]] = {
    "database": (
        "database", "db", "schema", "migration", "sql", "postgres", "postgresql", "mysql", "sqlite", "mongodb",
        "table", "column", "index", "query", "transaction", "orm", "alembic", "prisma", "drizzle", "redis",
    ),
    "api": (
        "api", "endpoint", "route", "rest", "graphql", "http", "request", "response", "json", "websocket",
        "grpc", "openapi", "webhook", "server", "router", "middleware", "handler", "trpc",
    ),
    "frontend": (
        "ui", "component", "react", "vue", "angular", "svelte", "frontend", "css", "html", "style", "button",
        "form", "page", "layout", "tailwind", "modal", "dialog", "dropdown", "tooltip", "dark", "theme",
    ),
    "testing": (
        "test", "spec", "assert", "mock", "fixture", "pytest", "jest", "playwright", "coverage", "vitest",
        "unittest", "flaky", "e2e", "snapshot",
    ),
    "security": (
        "auth", "authentication", "authorization", "security", "permission", "token", "encrypt", "password",
        "jwt", "oauth", "csrf", "xss", "secret", "vulnerability", "cve", "sso", "saml", "mfa", "totp", "2fa",
        "rbac", "acl", "csp", "hsts", "cors", "clickjacking", "sanitize", "sanitization", "sanitizer", "injection",
        "pollution", "ssrf", "redos", "vulnerable", "exploit", "advisory", "dependabot", "unauthorized", "forbidden",
        "privilege", "credential", "login", "logout", "signin", "httponly", "samesite", "nonce", "bcrypt", "argon2",
        "passkey", "webauthn", "otp", "tls", "ssl", "oidc", "openid", "harden", "hardening", "insecure", "owasp",
        "captcha", "impersonation", "audit", "authorize", "consent", "issuer", "revoke", "pkce",
    ),
    "deployment": (
        "deploy", "docker", "kubernetes", "ci", "cd", "build", "release", "container", "pipeline",
        "environment", "helm", "terraform", "workflow", "github", "action", "publish", "dockerfile",
    ),
    "general": ("docs", "documentation", "readme", "typo", "changelog", "license", "comment", "wording"),
}

# Path rules: a trailing "/" matches a directory segment, a leading "*" a file-name suffix, anything
# else a whole file name or path segment.
# Common layouts: Phoenix (`lib/*_web/live`, `*.heex`, `priv/repo/migrations`), Rails (`app/models`,
# `db/migrate`, `app/views`), Django (`models.py`, `views.py`, `templates/`), Next.js and Nuxt (`pages/`,
# `components/`, `*.tsx`), Go (`cmd/`, `internal/`) and Rust (`src/bin`) entry points, config and infra.
DEFAULT_PATHS: dict[str, tuple[str, ...]] = {
    "database": (
        "migrations/", "migrate/", "db/", "*.sql", "models/", "schema.prisma", "*.prisma", "alembic/", "models.py",
        "repo/", "drizzle/", "seeds/",
    ),
    "api": (
        "api/", "routes/", "endpoints/", "controllers/", "handlers/", "openapi.yaml", "*.proto", "routes.rb",
        "urls.py", "serializers.py", "views.py", "router.ex", "resolvers/", "graphql/",
    ),
    "frontend": (
        "components/", "pages/", "views/", "styles/", "ui/", "frontend/", "*.tsx", "*.jsx", "*.vue", "*.svelte",
        "*.css", "*.scss", "*.html", "*.astro", "live/", "*.heex", "*.leex", "*.erb", "templates/", "layouts/",
        "composables/",
    ),
    "testing": (
        "tests/", "test/", "__tests__/", "spec/", "e2e/", "*_test.go", "*_test.py", "*.spec.ts", "*.test.ts",
        "*.spec.js", "*.test.js", "*.test.tsx", "*.spec.tsx", "conftest.py",
    ),
    "security": ("auth/", "security/", "permissions/", "*.pem", "crypto/", "policies/", "guards/", "rbac/", "acl/"),
    "deployment": (
        ".github/workflows/", ".github/actions/", "Dockerfile", "docker-compose.yml", "docker-compose.yaml",
        "compose.yaml", "compose.yml", "k8s/", "helm/", "deploy/", "docker/", "*.tf", "*.tfvars", "terraform/",
        "infra/", "infrastructure/", "ansible/", ".gitlab-ci.yml", "Jenkinsfile", "config/", "fly.toml", "Procfile",
        "vercel.json", "netlify.toml", "render.yaml", "*.dockerfile", ".dockerignore", "Makefile",
    ),
    # Entry points (Go `cmd/`, `internal/`, Rust `src/bin`) belong to no one domain. A manifest, lock file or
    # linter setting needs no rule: with no path signal a file goes to general.
    "general": ("docs/", "*.md", "*.mdx", "*.rst", "LICENSE", "cmd/", "internal/", "src/bin/"),
}
# fmt: on

OVERVIEWS: dict[str, str] = {
    "database": "Schema, migrations, queries and data access.",
    "api": "Endpoints, request and response handling, and API contracts.",
    "frontend": "UI components, pages, styling and client-side behaviour.",
    "testing": "Tests, fixtures, mocks and how to run them.",
    "security": "Authentication, authorization, secrets and hardening.",
    "deployment": "Builds, CI, containers, releases and environments.",
    "general": "Project-wide conventions that fit no narrower domain.",
}


# -- agents -----------------------------------------------------------------------------------------


class Agent:
    """One agent's hook protocol, as its CLI really speaks it (each fact checked against the real client by
    the tests under ``tests/e2e`` and written up in ``docs/agents/``).

    - ``settings``: the project file our hooks go in; ``style``: "nested" is event -> [{hooks: [{type,
      command, timeout}]}] (Claude Code, Codex, Gemini CLI), "flat" is event -> [{command}] (Cursor).
    - ``start_event``, ``prompt_event``, ``end_events``: where the pre-task and post-session hooks run.
    - ``output``: how the pre-task hook hands back context: "hookSpecificOutput" (additionalContext inside
      it) or "additional_context".
    - ``timeout_unit``: "s", or "ms" for Gemini CLI; ``timeout_caps``: seconds the agent allows an event's
      hook at most, whatever the setting says (Claude Code's SessionEnd: 60).
    - ``end_per_turn``: the end event fires after every turn, not once at the session's end, so one
      session's transcript is learned again as it grows.
    - ``cwd_fields``: payload fields naming the project, in order (Cursor sends ``workspace_roots``).
    - ``quiet_stdout``: what the hook prints when it has nothing to say, if empty stdout is not enough
      (Gemini CLI shows a hook's stderr as a message to the user when stdout is empty).
    - ``version_args``: how to ask the agent's CLI for its version (the first word is the program).
    - ``trust_step``: what the user has to do once before the agent runs project hooks, if anything.
    - ``learning``: None when the agent hands the post hook a transcript we read; else why it can't learn.
    - ``jsonc``: the agent reads its settings as JSON with comments (Gemini CLI), so ours may hold them.
    - ``positional_trust``: the agent keys its trust in a hook by the hook's position (Codex), so removing
      ours must not move a user's hook: an emptied group stays as ``{"hooks": []}``.
    - ``reflect_event``: the end-of-turn event whose hook can send the agent back with a reason
      (``{"decision": "block", "reason": ...}``), for ``--reflect`` (docs/reflect.md); None where the agent
      has none we could check, and ``reflect_note`` says why.
    """

    __slots__ = (
        "name", "settings", "style", "start_event", "prompt_event", "end_events", "output", "timeout_unit",
        "timeout_caps", "end_per_turn", "cwd_fields", "quiet_stdout", "version_args", "trust_step", "learning",
        "positional_trust", "jsonc", "reflect_event", "reflect_note",
    )  # fmt: skip

    def __init__(
        self,
        name: str,
        settings: str,
        style: str,
        start_event: str,
        prompt_event: str | None,
        end_events: tuple[str, ...],
        output: str,
        *,
        timeout_unit: str = "s",
        timeout_caps: dict[str, int] | None = None,
        end_per_turn: bool = False,
        cwd_fields: tuple[str, ...] = ("cwd",),
        quiet_stdout: str = "",
        version_args: tuple[str, ...] = (),
        trust_step: str | None = None,
        learning: str | None = None,
        positional_trust: bool = False,
        jsonc: bool = False,
        reflect_event: str | None = None,
        reflect_note: str = "",
    ) -> None:
        self.name = name
        self.settings = settings
        self.style = style
        self.start_event = start_event
        self.prompt_event = prompt_event
        self.end_events = end_events
        self.output = output
        self.timeout_unit = timeout_unit
        self.timeout_caps = timeout_caps or {}
        self.end_per_turn = end_per_turn
        self.cwd_fields = cwd_fields
        self.quiet_stdout = quiet_stdout
        self.version_args = version_args
        self.trust_step = trust_step
        self.learning = learning
        self.positional_trust = positional_trust
        self.jsonc = jsonc
        self.reflect_event = reflect_event
        self.reflect_note = reflect_note


AGENTS: tuple[Agent, ...] = (
    Agent("claude-code", ".claude/settings.json", "nested", "SessionStart", "UserPromptSubmit", ("SessionEnd",),
          "hookSpecificOutput", timeout_caps={"SessionEnd": 60}, version_args=("claude", "--version"),
          reflect_event="Stop",
          trust_step="start `claude` in the project once and accept the folder trust prompt (`claude -p` "
                     "does not ask)"),
    Agent("codex", ".codex/hooks.json", "nested", "SessionStart", "UserPromptSubmit", ("Stop",),
          "hookSpecificOutput", end_per_turn=True, version_args=("codex", "--version"), positional_trust=True,
          reflect_event="Stop",
          trust_step="run `codex` in the project once, trust the folder, and trust the hooks when it asks "
                     "(\"Hooks need review\", or /hooks): `codex exec` skips untrusted hooks without a word"),
    Agent("gemini", ".gemini/settings.json", "nested", "SessionStart", "BeforeAgent", ("SessionEnd",),
          "hookSpecificOutput", timeout_unit="ms", quiet_stdout="{}", version_args=("gemini", "--version"), jsonc=True,
          reflect_event="AfterAgent",
          trust_step="start `gemini` in the project once and trust the folder (or set "
                     "GEMINI_CLI_TRUST_WORKSPACE=true): an untrusted folder's project hooks never run"),
    Agent("cursor", ".cursor/hooks.json", "flat", "sessionStart", None, ("stop",), "additional_context",
          end_per_turn=True, cwd_fields=("cwd", "workspace_roots"), version_args=("cursor-agent", "--version"),
          learning="Cursor's transcript records no tool results, so its failures and fixes can't be learned: "
                   "only the task and the files it edited are (its CLI hands hooks no transcript_path, so the "
                   "transcript is found by conversation id under ~/.cursor/projects; `stop` does not fire "
                   "under `cursor-agent -p`)",
          reflect_note="Cursor's `stop` hook can't be checked here: its CLI is not published on npm and `stop` "
                       "does not fire under `cursor-agent -p`, so --reflect is not offered for Cursor"),
)  # fmt: skip


def agent(name: str) -> Agent:
    found = {candidate.name: candidate for candidate in AGENTS}.get(name)
    if found is None:
        raise KeyError(f"no agent {name!r}")
    return found


def agent_names() -> tuple[str, ...]:
    return tuple(a.name for a in AGENTS)


# -- transcript formats -----------------------------------------------------------------------------

# (name, module, reader function): `expertise learn --format NAME`; "auto" detects among them.
FORMATS: tuple[tuple[str, str, str], ...] = (
    ("claude-code", "expertise_kit.learning.transcripts.claude", "read_claude"),
    ("codex", "expertise_kit.learning.transcripts.codex", "read_codex"),
    ("gemini", "expertise_kit.learning.transcripts.gemini", "read_gemini"),
    ("generic", "expertise_kit.learning.transcripts.generic", "read_generic"),
    # One history file holds every session, so this reader returns a list of them.
    ("aider", "expertise_kit.learning.transcripts.aider", "read_aider"),
    ("cursor", "expertise_kit.learning.transcripts.cursor", "read_cursor"),
)


def format_names() -> tuple[str, ...]:
    return tuple(name for name, _, _ in FORMATS)
