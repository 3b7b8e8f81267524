"""Built-in domain rules. Plain data with no imports, so the pre-task hook can use it cheaply."""

from __future__ import annotations

__all__ = ["DEFAULT_LINE_CAP", "DEFAULT_RETENTION_DAYS", "DEFAULT_KEYWORDS", "DEFAULT_PATHS", "OVERVIEWS"]

DEFAULT_LINE_CAP = 1000
DEFAULT_RETENTION_DAYS = 30

# Start from the spec's keyword lists (section 5.2); the classifier matches whole words, not substrings.
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
    ),
    "deployment": (
        "deploy", "docker", "kubernetes", "ci", "cd", "build", "release", "container", "pipeline",
        "environment", "helm", "terraform", "workflow", "github", "action", "publish", "dockerfile",
    ),
    "general": ("docs", "documentation", "readme", "typo", "changelog", "license", "comment", "wording"),
}

# Path rules: a trailing "/" matches a directory segment, a leading "*" a file-name suffix, anything
# else a whole file name or path segment.
DEFAULT_PATHS: dict[str, tuple[str, ...]] = {
    "database": ("migrations/", "migrate/", "db/", "*.sql", "models/", "schema.prisma", "alembic/"),
    "api": ("api/", "routes/", "endpoints/", "controllers/", "handlers/", "openapi.yaml", "*.proto"),
    "frontend": (
        "components/", "pages/", "views/", "styles/", "ui/", "frontend/", "*.tsx", "*.jsx", "*.vue", "*.svelte",
        "*.css", "*.scss", "*.html", "*.astro",
    ),
    "testing": (
        "tests/", "test/", "__tests__/", "spec/", "e2e/", "*_test.go", "*_test.py", "*.spec.ts", "*.test.ts",
        "*.spec.js", "*.test.js", "*.test.tsx", "*.spec.tsx", "conftest.py",
    ),
    "security": ("auth/", "security/", "permissions/", "*.pem", "crypto/"),
    "deployment": (
        ".github/workflows/", ".github/actions/", "Dockerfile", "docker-compose.yml", "compose.yaml", "k8s/",
        "helm/", "deploy/", "docker/", "*.tf", ".gitlab-ci.yml", "Makefile", "Jenkinsfile",
    ),
    "general": ("docs/", "*.md", "*.mdx", "*.rst", "LICENSE"),
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
