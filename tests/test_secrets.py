"""Secrets never reach the YAML, the git history or --json output; real transcripts lose nothing legitimate."""

from __future__ import annotations

import base64
import json
import re
from pathlib import Path
from typing import Any

import pytest
from builders import CWD, ClaudeSession
from conftest import TRANSCRIPTS, Cli, git
from hypothesis import given, settings
from hypothesis import strategies as st

from expertise_kit.learning import extract as extract_module
from expertise_kit.learning.redact import SECRET_KINDS, redact, redact_counting

_ENV_FILE = "DB_PASSWORD=Pq9Xw4Lk7Mz2\nSTRIPE_KEY=Zr8Xc4Vb1Nm6Qw3E\n"


class Planted:
    """A made-up secret shaped like the real thing, the text it is usually seen in, and its kind."""

    def __init__(self, kind: str, secret: str, phrase: str = "{}") -> None:
        self.kind = kind
        self.secret = secret
        self.phrase = phrase.format(secret)


# Shaped like the real thing, made up for this test.
PLANTED: dict[str, Planted] = {
    "aws": Planted("aws", "AKIAIOSFODNN7EXAMPLE"),
    "github": Planted("github", "ghp_" + "a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8"),
    "github_pat": Planted("github", "github_pat_11ABCDEFG0123456789_abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRS"),
    "gitlab": Planted("gitlab", "glpat-" + "Xk3vR9mQ2pL7wN4tY8zB"),
    "anthropic": Planted("anthropic", "sk-ant-api03-" + "Zx9" * 30),
    "openai_proj": Planted("openai", "sk-proj-" + "Qw8" * 20),
    "openai": Planted("openai", "sk-" + "Ab3De6Gh9" * 5 + "xyz"),
    "openai_dash_tail": Planted("openai", "sk-" + "Lm4Np7Qr2St5Uv8Wx1Yz" + "-" + "Ka9Jb8Hc7Gd6"),
    "slack": Planted("slack", "xoxb-1234567890-0987654321-AbCdEfGhIjKlMnOpQrStUvWx"),
    "slack_app": Planted("slack", "xapp-1-A05B7C9D1E3-6234567890123-" + "a3f9c2e8b1d7a4c6e0f2b9d8c7a1e3f5b2d4c6a8e0f1"),
    "discord": Planted(
        "discord",
        "Qm3vX8kL2pN7wR4tY9zB1cF6hJ5sD0gA-Eu3Io8Pa2Sd7Fg1Hj6Kl9Zx4Cv5Bn0MqWr2Ty7Ui3",
        "curl -X POST -d @msg.json https://discord.com/api/webhooks/1234567890123456789/{}",
    ),
    "stripe": Planted("stripe", "sk_live_" + "51HqLyjWDarjtT1zdp7dcXYZ"),
    "google": Planted("google", "AIza" + "SyA1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q"),
    "google_oauth_secret": Planted("google", "GOCSPX-" + "q8Wm3Zr7Tn1Yb5Kx9Lc2Hv6Jd4Fs"),
    "google_access_token": Planted("google", "ya29." + "a0AfB_byC7dE9fG1hI3jK5lM7nO9pQ1rS3tU5vW7xY9zA1bC3dE5fG7hI9"),
    "pypi": Planted(
        "pypi",
        "pypi-AgEIcHlwaS5vcmc" + "CJDk4ZjM1YzYxLTU2OGItNDQ1Ny1hOTk0LTc3NTRkMmI3YmQ4OQACKlszLCJmYjQ5Y2RkYi1hMzgx",
    ),
    "npm": Planted("npm", "npm_" + "Q7xW2eR9tY4uI8oP3aS6dF1gH5jK0lZ3xC7v"),
    "huggingface": Planted("huggingface", "hf_" + "QxWvTrEsYuIoPaLkJhGfDsAzXcVbNm1234"),
    "sendgrid": Planted("sendgrid", "SG." + "ngeVfQFYQlKU0ufo8x5d1A" + "." + "TwL2iGABf9DHoTf-09kqeF8tAmbihYzrnopKc-1s5cr"),
    "docker": Planted("docker", "dckr_pat_" + "2b3e8f1a9c7d6e5f4a3b2c1d0e9"),
    "digitalocean": Planted("digitalocean", "dop_v1_" + "7c4f9e2a8b1d6c3e5f0a9b8c7d6e5f4a3b2c1d0e9f8a7b6c5d4e3f2a1b0c9d8e"),
    "shopify": Planted("shopify", "shpat_" + "9f3e7c1a5b8d2e6f4a0c9b7d3e1f5a8c"),
    "jwt": Planted(
        "jwt",
        "eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJzdWIiOiIxMjM0NTY3ODkwIiwibmFtZSI6IkFkYSJ9.c2lnbmF0dXJlX2hlcmVfMTIzNDU2",
    ),
    "pem": Planted(
        "private-key",
        "b3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAEbm9uZQ",  # the key body, whichever line it lands on
        "-----BEGIN OPENSSH PRIVATE KEY-----\n{}\nAAAAC3NzaC1lZDI1NTE5AAAAIHh5\n-----END OPENSSH PRIVATE KEY-----",
    ),
    "url_password": Planted("url-password", "s3cr3t-Passw0rd", "git clone https://deploy:{}@git.example.test/shop.git"),
    "url_password_empty_user": Planted(
        "url-password", "Rz8vQp2LmN4xK7wT", "redis-cli -u redis://:{}@cache.example.test:6379/0 ping"
    ),
    "url_password_slash": Planted("url-password", "Tq7/Wz3+Kp9/Lm2x", "psql postgres://app:{}@db.example.test:5432/shop"),
    "url_token": Planted("url-token", "x9Fk2Lm8Qp4Rt7Vw1Yz3B", "git clone https://{}@git.example.test/shop.git"),
    "sentry": Planted(
        "sentry", "4f8e2c1a9b7d6e5f3a2c1b0d9e8f7a6b", "SENTRY_DSN=https://{}@o123456.ingest.sentry.io/4507"
    ),
    "mysql": Planted("cli-password", "V9xmQ2wLz7", "mysql -u root -p{} shop < dump.sql"),
    "cli_password_eq": Planted("cli-password", "Np5Cz8Wt3Kq7", "mongosh --username admin --password={} mongodb://db"),
    "cli_password_space": Planted("cli-password", "Hq4Jx8Lm2Vz6", "mongosh --username admin --password {} --quiet"),
    "curl_user": Planted("cli-password", "Gm7Px2Rv9Kt4", "curl -u admin:{} https://api.example.test/v1/items"),
    "sshpass": Planted("cli-password", "Wd3Fh8Jk2Ls6", "sshpass -p {} ssh deploy@web1.example.test"),
    "azure_account_key": Planted(
        "azure",
        "Kq8mZ3xW7pL2vN9tR4yB6cF1hJ5sD0gAEu3Io8Pa2Sd7Fg1Hj6Kl9Zx4Cv5Bn0MqWr2Ty7Ui3Op8As1De6Rf0G==",
        "DefaultEndpointsProtocol=https;AccountName=shopstore;AccountKey={};EndpointSuffix=core.windows.net",
    ),
    "azure_sas": Planted(
        "azure",
        "Kd8%2Fm3Qx9Lz2Wp7Tn4Rv1Yb6Hc5Jf0Gs8Ae3Iu2Oy%3D",
        "curl https://shopstore.blob.core.windows.net/c/x.txt?sv=2022-11-02&sp=r&se=2026-01-01&sig={}",
    ),
    "assignment": Planted("assignment", "hunter2-correct-horse", "SECRET_KEY={}"),
    "db_pass": Planted("assignment", "hunter2xyz", "DB_PASS={} python manage.py migrate"),
    "key_assignment": Planted("assignment", "Zr8Xc4Vb1Nm6Qw3E", "export STRIPE_KEY={}"),
    "prose": Planted("prose", "hunter2staging", "log in to the staging admin with password {}"),
    "bearer": Planted("bearer", "tok_live_8c1f4e2b9a7d6c5e4f3a2b1c", 'curl -H "Authorization: Bearer {}" https://ci.test'),
    "base64_env": Planted("base64-secret", base64.b64encode(_ENV_FILE.encode()).decode(), "echo {} | base64 -d > .env"),
}


def _runs(secret: str, size: int = 8) -> set[str]:
    return {secret[i : i + size] for i in range(len(secret) - size + 1)}


def _leaks(secret: str, text: str) -> list[str]:
    """The 8-character runs of ``secret`` still found in ``text``: none may be left."""
    return sorted(run for run in _runs(secret) if run in text)


def test_every_kind_has_a_planted_example() -> None:
    assert {planted.kind for planted in PLANTED.values()} == set(SECRET_KINDS)
    assert set(SECRET_KINDS) >= {
        "aws", "github", "gitlab", "anthropic", "openai", "slack", "stripe", "google", "pypi", "npm", "huggingface",
        "sendgrid", "azure", "docker", "digitalocean", "shopify", "sentry", "jwt", "private-key", "url-password",
        "url-token", "cli-password", "assignment", "bearer", "base64-secret",
    }  # fmt: skip
    assert all(kind.covers for kind in SECRET_KINDS.values())


def test_the_docs_list_every_kind() -> None:
    docs = (Path(__file__).resolve().parent.parent / "docs" / "learning.md").read_text(encoding="utf-8")
    assert [kind for kind in SECRET_KINDS if f"| `{kind}` |" not in docs] == []


@pytest.mark.parametrize("name", sorted(PLANTED))
def test_each_kind_is_redacted_in_place(name: str) -> None:
    planted = PLANTED[name]
    scrubbed, counts = redact_counting(planted.phrase)
    assert _leaks(planted.secret, scrubbed) == []
    assert counts == {planted.kind: 1}
    assert f"[REDACTED:{planted.kind}]" in scrubbed
    assert redact(scrubbed) == scrubbed  # idempotent


def test_the_context_of_a_secret_stays() -> None:
    assert redact(PLANTED["url_password_empty_user"].phrase) == (
        "redis-cli -u redis://:[REDACTED:url-password]@cache.example.test:6379/0 ping"
    )
    assert redact(PLANTED["mysql"].phrase) == "mysql -u root -p[REDACTED:cli-password] shop < dump.sql"
    assert redact('"password": "hunter2xyz"') == '"password": "[REDACTED:assignment]"'
    assert redact(PLANTED["openai_dash_tail"].phrase + " tail") == "[REDACTED:openai] tail"
    # A kind found first keeps its name inside a URL.
    gitlab = PLANTED["gitlab"].secret
    assert redact(f"origin https://oauth2:{gitlab}@gitlab.example.test/x.git") == (
        "origin https://oauth2:[REDACTED:gitlab]@gitlab.example.test/x.git"
    )


@pytest.mark.parametrize(
    ("text", "secret"),
    [
        ('log: {\\"db_password\\": \\"hunter2xyz\\"}', "hunter2xyz"),  # JSON inside a JSON string
        ("redis-cli -u redis://:Rz8v@Qp2LmN4x@cache.example.test:6379", "Rz8v@Qp2LmN4x"),  # `@` in the password
        ("DB_PW=Lk7Mz2Pq9X ./migrate", "Lk7Mz2Pq9X"),
        ("SMTP_PASSPHRASE='correct horse battery'", "correct horse battery"),
        ('curl --user "admin:Gm7Px2Rv9Kt4" https://api.example.test', "Gm7Px2Rv9Kt4"),
        ("mysqldump -uroot -p'V9x mQ2wLz7' shop", "V9x mQ2wLz7"),
        ("wget --http-password=Np5Cz8Wt3Kq7 https://files.example.test/a.tgz", "Np5Cz8Wt3Kq7"),
        ("sshpass -pWd3Fh8Jk2Ls6 scp a web1:", "Wd3Fh8Jk2Ls6"),
        ("PASSWORD=abc\\defghi1", "abc\\defghi1"),
        ("= SECRET_KEY=hunter2-correct-horse", "hunter2-correct-horse"),  # an operator before the name
        ("options: DB_PASS=hunter2xyz", "hunter2xyz"),
    ],
)
def test_harder_shapes_are_redacted(text: str, secret: str) -> None:
    scrubbed = redact(text)
    assert _leaks(secret, scrubbed) == [] and secret[:6] not in scrubbed, scrubbed
    assert redact(scrubbed) == scrubbed


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
    # What the new rules must not take for secrets.
    "--- PASS: TestParseConfig (0.00s)",
    "PASS: tests/test_cart.py",
    "SORT_KEY=created_at",
    "primary_key: order_id",
    "mysql -u root -p shop",  # -p then a space prompts for the password and names the database
    "mysql -u root -p",
    "curl -u admin https://api.example.test",  # no password given: curl asks for it
    "git push -u origin main",
    "docker login --password-stdin -u ada registry.example.test",
    "gh auth login --with-token < token.txt",
    "export API_KEY=$API_KEY && deploy --token $DEPLOY_TOKEN --password=<password>",
    "http://localhost:8080/api/users/@me",
    "postgres://localhost:5432/shop",
    "https://ada@git.example.test/shop.git",
    "ssh://git@github.com:22/org/repo.git",
    "git checkout sk-feature-branch-for-pricing",
    "pip install scikit-learn && python -c 'import sklearn'",
    "hf_hub_download(repo_id='org/model', filename='config.json')",
    "npm_config_cache=/tmp/npm-cache npm ci",
    "echo " + base64.b64encode(b"hello, this is only a greeting\n").decode() + " | base64 -d",
    "/home/dev/shop/node_modules/.bin/ThisIsALongComponentName/abcdefghijklmnop",
    # Elements, defaults and XML that hold no literal secret.
    "config['token_file'] = path",
    "headers['Content-Type'] = 'application/json'",
    "[token]: https://docs.example.test/tokens",  # a Markdown link, not an element
    "password = request.form['password']",
    "token = os.environ.get('TOKEN', '')",
    'password = os.getenv("DB_PASSWORD", "<password>")',
    "const apiKey = process.env.API_KEY || '';",
    'os.environ.get("GITHUB_TOKEN", "not set")',  # a message, not a default secret
    "pw=${env.DB_PASSWORD}",
    "password: `[REDACTED:assignment]`",
    "password: String,",  # a type
    "password => password.trim()",  # a function, not a hash key
    "db_password: str = os.environ['DB_PASSWORD']",
    "api_key: Optional[str] = None",
    "<password>${env.DB_PASSWORD}</password>",
    '<password>{{ vault_db_password }}</password>',
    '<input type="password" name="password" value="">',
    'raise AuthError("token: " + token)',
    # Commands with no password in them.
    "docker login -u ada registry.example.test",
    "docker login -p $DOCKER_PASSWORD registry.example.test",
    "mkdir -p /tmp/x && ssh -p 2222 deploy@web1.example.test",
    "redis-cli -h cache -a $REDIS_PASSWORD ping",
    "htpasswd -c .htpasswd bob",
    "htpasswd -b .htpasswd bob $HTPASSWORD",
    "openssl rsa -in key.pem -passin env:KEY_PASS",
    "sudo passwd deploy2024",
    # URLs and token prefixes that end a text without being cut secrets.
    "see http://localhost:3000",
    "postgres://localhost:5432",
    "https://discord.com/channels/123456789/987654321",
    "git checkout sk-learn-upgrade",
    "hf_hub_download",
    "npm_config_cache",
    "ASIAPACIFIC",
]

# Prose about a secret, not a secret: user prompts say these, and they become rules.
PROSE_ABOUT_SECRETS = [
    "the password is wrong",
    "the token expired",
    "use the API key from the env",
    "the password is incorrect, try again",
    "the API key is base64-encoded",
    "the password is sha256-hashed before it is stored",
    "the password is case-sensitive",
    "the token is short-lived",
    "the token is valid for 3600 seconds",
    "max token of 4096",
    "passwords need at least 12 characters",
    "the password is 8 characters long",
    "the secret is stored in Vault",
    "the secret key is rotated daily",
    "the API key is YOUR_API_KEY",
    "the password is <password>",
    "the password is ********",
    "the password is $DB_PASSWORD",
    "the API key is in .env",
    "the token is read from /run/secrets/token",
    "the secret is sent to ops@example.test",
    "the token is GITHUB_TOKEN",
    "the API key of gpt-4o",
    "the token is v2-beta",
    "the password for the admin account is stored in 1Password",
    "reset the password, then refresh the token",
    "kubectl get secret db2-creds -o yaml",
    "if password is None:",
    "token = get_token(user_id=42)",
    "das Passwort ist falsch",
    "le mot de passe est incorrect",
    "密码错误",
]


@pytest.mark.parametrize("text", LEGIT)
def test_legitimate_strings_survive(text: str) -> None:
    assert redact(text) == text


@pytest.mark.parametrize("text", PROSE_ABOUT_SECRETS)
def test_prose_about_a_secret_survives(text: str) -> None:
    assert redact(text) == text


@pytest.mark.parametrize(
    ("text", "secret", "kind"),
    [
        # An element's name, as in os.environ["DB_PASSWORD"] = ...
        ('os.environ["DB_PASSWORD"] = "hunter2staging"', "hunter2staging", "assignment"),
        ("ENV['SECRET_KEY_BASE'] = \"a8f3c9d2e1b7f6a5c4d3e2f1\"", "a8f3c9d2e1b7f6a5c4d3e2f1", "assignment"),
        ("process.env['API_TOKEN'] = \"tok9Xq2Lm7Vz4Kp\"", "tok9Xq2Lm7Vz4Kp", "assignment"),
        ('headers["X-Api-Key"] = "9f8e7d6c5b4a3f2e1d0c"', "9f8e7d6c5b4a3f2e1d0c", "assignment"),
        ("config[:password] = 'hunter2staging'", "hunter2staging", "assignment"),
        # A getter's default, a setter's value.
        ('password = os.getenv("DB_PASSWORD", "hunter2staging")', "hunter2staging", "assignment"),
        ('key = os.environ.get("API_KEY", "sk-live-abcdefghijklmnop")', "abcdefghijklmnop", "assignment"),
        ('const pw = process.env.DB_PASSWORD || "hunter2staging"', "hunter2staging", "assignment"),
        ("const pw = process.env['DB_PASSWORD'] ?? 'hunter2staging'", "hunter2staging", "assignment"),
        ('secret = ENV.fetch("SECRET", "a8f3c9d2e1b7f6a5")', "a8f3c9d2e1b7f6a5", "assignment"),
        ('ENV.fetch("SECRET_KEY_BASE") { "a8f3c9d2e1b7f6a5" }', "a8f3c9d2e1b7f6a5", "assignment"),
        ("env('DB_PASSWORD', default='hunter2staging')", "hunter2staging", "assignment"),
        ("getenv('DB_PASS') ?: 'hunter2staging'", "hunter2staging", "assignment"),
        ('os.environ.get("DB_PASSWORD") or "hunter2staging"', "hunter2staging", "assignment"),
        ("define('DB_PASSWORD', 'hunter2staging');", "hunter2staging", "assignment"),
        ('os.Setenv("API_TOKEN", "tok9Xq2Lm7Vz4Kp")', "tok9Xq2Lm7Vz4Kp", "assignment"),
        # Ruby and PHP hashes, XML, YAML tags, typed names, a quote cut off by the end of the text.
        ('"password" => "hunter2staging"', "hunter2staging", "assignment"),
        (":password => 'hunter2staging'", "hunter2staging", "assignment"),
        ("<password>hunter2staging</password>", "hunter2staging", "assignment"),
        ("<server><id>nexus</id><username>bob</username><password>hunter2staging</password></server>", "hunter2staging", "assignment"),
        ("<Password>\n  hunter2staging\n</Password>", "hunter2staging", "assignment"),
        ('<add key="ApiKey" value="a8f3c9d2e1b7f6a5c4d3" />', "a8f3c9d2e1b7f6a5c4d3", "assignment"),
        ("<key>API_TOKEN</key>\n<string>tok9Xq2Lm7Vz4Kp</string>", "tok9Xq2Lm7Vz4Kp", "assignment"),
        ("password: !!str hunter2staging", "hunter2staging", "assignment"),
        ('db_password: str = "hunter2staging"', "hunter2staging", "assignment"),
        ('apiKey: string = "a8f3c9d2e1b7f6a5c4"', "a8f3c9d2e1b7f6a5c4", "assignment"),
        ('DB_PASSWORD="hunter2staging', "hunter2staging", "assignment"),
        # Command lines.
        ("docker login -u bob -p hunter2staging registry.example.test", "hunter2staging", "cli-password"),
        ("/usr/bin/podman login -u bob -phunter2staging quay.io", "hunter2staging", "cli-password"),
        ("helm registry login ghcr.io -u bob -p hunter2staging", "hunter2staging", "cli-password"),
        ("az login -u bob -p hunter2staging", "hunter2staging", "cli-password"),
        ("oc login https://api.example.test:6443 -u admin -p hunter2staging", "hunter2staging", "cli-password"),
        ("redis-cli -h cache -a hunter2staging --no-auth-warning ping", "hunter2staging", "cli-password"),
        ("htpasswd -b .htpasswd bob hunter2staging", "hunter2staging", "cli-password"),
        ("htpasswd -B -C 10 -b /etc/nginx/.htpasswd bob hunter2staging", "hunter2staging", "cli-password"),
        ("htpasswd -nbB bob hunter2staging > .htpasswd", "hunter2staging", "cli-password"),
        ("sshpass -p hunter2staging ssh deploy@web1.example.test", "hunter2staging", "cli-password"),
        ("mysqladmin -u root -phunter2staging status", "hunter2staging", "cli-password"),
        ("mysqladmin --password hunter2staging status", "hunter2staging", "cli-password"),
        ("mysql -u root \\\n  -phunter2staging shop", "hunter2staging", "cli-password"),  # a continued line
        ("sqlcmd -S db -U sa -P 'Hunter2!staging' -Q 'select 1'", "Hunter2!staging", "cli-password"),
        ("mongosh -u admin -p hunter2staging --authenticationDatabase admin", "hunter2staging", "cli-password"),
        ("keytool -genkey -keystore ks.jks -storepass hunter2staging", "hunter2staging", "cli-password"),
        ("openssl pkcs12 -export -passout pass:hunter2staging -out a.p12", "hunter2staging", "cli-password"),
        # Discord webhooks.
        ("https://discordapp.com/api/webhooks/123456789012345678/AbCdEfGhIjKlMnOpQrStUvWxYz0123456789", "AbCdEfGhIjKlMnOpQrSt", "discord"),
        ("https://discord.com/api/v10/webhooks/123456789012345678/AbCdEfGhIjKlMnOpQrStUvWxYz", "AbCdEfGhIjKlMnOpQrSt", "discord"),
        # Prose: what a user types into a prompt.
        ("log in to the staging admin with password hunter2staging", "hunter2staging", "prose"),
        ("use the API key 3f9a8b7c6d5e4f3a2b1c0d9e8f7a6b5c for every request", "3f9a8b7c6d5e4f3a2b1c0d9e8f7a6b5c", "prose"),
        ("the token is abc123def456ghi789", "abc123def456ghi789", "prose"),
        ("the password for the staging admin is hunter2staging.", "hunter2staging", "prose"),
        ("The passphrase: Tr0ub4dor&3", "Tr0ub4dor&3", "prose"),
        ("**Password**: Tr0ub4dor&3", "Tr0ub4dor&3", "prose"),
        ('the password is "correct horse battery staple"', "correct horse battery staple", "prose"),
        ("the passphrase is correct-horse-battery-staple", "correct-horse-battery-staple", "prose"),
        ("the password is CorrectHorseBatteryStaple", "CorrectHorseBatteryStaple", "prose"),
        ("the password is 12345678", "12345678", "prose"),
        ("the API key is 123e4567-e89b-12d3-a456-426614174000", "426614174000", "prose"),
        ("das Passwort ist hunter2staging", "hunter2staging", "prose"),
        ("密码是hunter2staging，请记住", "hunter2staging", "prose"),
        # Cut off by the end of the text: a URL's password before its `@`, a token before its full length.
        ("psql postgres://admin:CorrectHorseBatteryStaple9", "CorrectHorseBatteryStaple9", "url-password"),
        ("redis-cli -u redis://:Rz8vQp2LmN4x", "Rz8vQp2LmN4x", "url-password"),
        ("git clone https://deploy:Tq7/Wz3+Kp9  ", "Tq7/Wz3+Kp9", "url-password"),
        ("export GH_TOKEN=ghp_A1b2C3d4E5f", "A1b2C3d4E5f", "github"),
        ("the token ghp_A1b2C3d4E5f", "A1b2C3d4E5f", "github"),
        ("pat github_pat_11ABCDEFG012...", "11ABCDEFG012", "github"),
        ("key sk-proj-Qw8Qw8Qw", "Qw8Qw8Qw", "openai"),
        ("key sk-ant-api03-Zx9Zx9", "api03-Zx9Zx9", "anthropic"),
        ("slack xoxb-1234567", "1234567", "slack"),
        ("id AKIAIOSFODNN7", "IOSFODNN7", "aws"),
        ("glpat-Xk3vR9mQ2pL7", "Xk3vR9mQ2pL7", "gitlab"),
    ],
)
def test_more_shapes_are_redacted(text: str, secret: str, kind: str) -> None:
    scrubbed, counts = redact_counting(text)
    assert _leaks(secret, scrubbed) == [] and secret[:6] not in scrubbed, scrubbed
    assert counts == {kind: 1}, (counts, scrubbed)
    assert redact(scrubbed) == scrubbed


def test_the_context_of_new_shapes_stays() -> None:
    assert redact('os.environ["DB_PASSWORD"] = "hunter2staging"') == 'os.environ["DB_PASSWORD"] = "[REDACTED:assignment]"'
    assert redact("docker login -u bob -p hunter2staging registry.example.test") == (
        "docker login -u bob -p [REDACTED:cli-password] registry.example.test"
    )
    assert redact("htpasswd -b .htpasswd bob hunter2staging") == "htpasswd -b .htpasswd bob [REDACTED:cli-password]"
    assert redact("the password for the staging admin is hunter2staging.") == (
        "the password for the staging admin is [REDACTED:prose]."
    )
    assert redact("use the API key `3f9a8b7c6d5e4f3a2b1c` here") == "use the API key `[REDACTED:prose]` here"
    assert redact("psql postgres://admin:CorrectHorse9") == "psql postgres://admin:[REDACTED:url-password]"
    assert redact("https://discord.com/api/webhooks/1234/AbCdEf0123456789") == "[REDACTED:discord]"


def test_a_cut_url_password_is_only_at_the_end_of_the_text() -> None:
    # A port is no password, and with more text after it the URL was not cut there.
    assert redact("postgres://admin:5432") == "postgres://admin:5432"
    assert redact("postgres://db.example.test:5432/shop") == "postgres://db.example.test:5432/shop"
    assert redact("see postgres://admin:secret for the form") == "see postgres://admin:secret for the form"


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


# Separators a provider's token can sit between; a secret named by its context (a URL, a flag, NAME=) is
# set off by blanks, commas and quotes, as it is in commands and logs.
_ANY = st.sampled_from([" ", "\n", "=", ": ", "'", '"', "(", ",", "\t"])
_BLANK = st.sampled_from([" ", "\n", "\t", ", ", "; "])


@settings(max_examples=400, deadline=None)
@given(st.text(max_size=80), st.sampled_from(sorted(PLANTED)), st.data(), st.text(max_size=40))
def test_a_secret_anywhere_in_text_is_redacted(before: str, name: str, data: st.DataObject, after: str) -> None:
    planted = PLANTED[name]
    standalone = planted.phrase == planted.secret
    separator = data.draw(_ANY if standalone else _BLANK)
    text = f"{before}{separator}{planted.phrase}{separator}{after}"
    scrubbed = redact(text)
    assert _leaks(planted.secret, scrubbed) == []
    assert redact(scrubbed) == scrubbed


# Tokens whose prefix is known, and how many characters after it make a cut-off tail worth redacting.
_CUT_TOKENS = {
    "github": ("ghp_", 4), "github_pat": ("github_pat_", 4), "gitlab": ("glpat-", 4), "openai_proj": ("sk-proj-", 4),
    "anthropic": ("sk-ant-", 4), "aws": ("AKIA", 4), "slack": ("xoxb-", 1), "stripe": ("sk_live_", 4),
    "google": ("AIza", 4), "docker": ("dckr_pat_", 4),
}  # fmt: skip


@settings(max_examples=300, deadline=None)
@given(
    st.text(max_size=60),
    st.sampled_from(sorted(_CUT_TOKENS)),
    st.data(),
    st.sampled_from(["", " ", "\n", "..."]),
)
def test_a_token_cut_off_by_the_end_of_the_text_is_redacted(
    before: str, name: str, data: st.DataObject, tail: str
) -> None:
    secret = PLANTED[name].secret
    prefix, least = _CUT_TOKENS[name]
    assert secret.startswith(prefix)
    cut = secret[: data.draw(st.integers(len(prefix) + least, len(secret) - 1))]
    scrubbed = redact(f"{before}{data.draw(_ANY)}{cut}{tail}")
    assert re.search(r"\[REDACTED:[a-z0-9-]+\](?:\.\.\.)?\s*$", scrubbed), scrubbed
    assert redact(scrubbed) == scrubbed


@settings(max_examples=200, deadline=None)
@given(st.text(max_size=60), st.sampled_from(["postgres", "redis", "https", "mongodb+srv"]), st.integers(1, 24))
def test_a_url_cut_off_inside_its_password_is_redacted(before: str, scheme: str, length: int) -> None:
    password = "CorrectHorse/Battery:Staple9"[:length]
    scrubbed = redact(f"{before} {scheme}://admin:{password}")
    assert scrubbed.endswith(f"{scheme}://admin:[REDACTED:url-password]"), scrubbed


# Prose of plain words: whatever it says about passwords and tokens, it holds none. (`password: word` is no
# prose but an assignment, a secret's name given a value.)
_PROSE_WORD = st.one_of(
    st.sampled_from(["the", "password", "passphrase", "token", "secret", "API", "key", "is", "was", "of", "for"]),
    st.from_regex(r"[a-z]{1,15}", fullmatch=True),
)


@settings(max_examples=300, deadline=None)
@given(st.lists(_PROSE_WORD, max_size=30), st.sampled_from([" ", " ", "\n", ", "]))
def test_prose_of_plain_words_is_never_redacted(words: list[str], separator: str) -> None:
    text = separator.join(words)
    assert redact(text) == text


# Pieces of the syntax the rules read: names, operators, quotes, brackets, commands, URLs, tokens, markers.
_SECRET_SYNTAX = st.sampled_from(
    [
        "password", "DB_PASSWORD", "token", "api_key", "API key", "passphrase", "secret", " is ", "is", ":", "=",
        "=>", " ", " ", "\n", '"', "'", "`", "[", "]", "(", ")", "{", "}", "<password>", "</password>", "<key>",
        "hunter2staging", "Tr0ub4dor&3", "ghp_A1b2C3d4E5f", "sk-proj-Qw8", "AKIAIOSFOD", "://", "postgres", "admin",
        "@", "-p", "-a", "mysql", "docker login", "redis-cli", "htpasswd -b", "||", "or", "os.getenv(", ",", "${",
        "$(", "!!str", "[REDACTED:assignment]", "the", "for", "xxx", "<", ">", "...", ";", "&&", "\\",
    ]
)  # fmt: skip


@settings(max_examples=500, deadline=None)
@given(st.lists(_SECRET_SYNTAX, max_size=24))
def test_redaction_of_secret_syntax_is_idempotent(pieces: list[str]) -> None:
    once = redact("".join(pieces))
    assert redact(once) == once


@settings(max_examples=300, deadline=None)
@given(st.text(max_size=200))
def test_redaction_is_idempotent(text: str) -> None:
    once = redact(text)
    assert redact(once) == once


# --- end to end: nothing of any secret reaches the YAML, the history or --json ---------------------------


def _learned_everywhere(project: Path, run: Cli, transcript: Path) -> str:
    """Everything `learn` leaves behind: --json output, every file under .expertise/, and all history."""
    result = run("learn", str(transcript), "--json")
    assert result.exit_code == 0, result.output
    stored = "".join(
        p.read_bytes().decode("utf-8", "replace") for p in sorted((project / ".expertise").rglob("*")) if p.is_file()
    )
    return "\n".join([result.stdout, stored, git(project, "log", "-p", "--all")])


def _leaky_session() -> ClaudeSession:
    """Every planted secret in a command, in a tool's output and in a written file."""
    s = ClaudeSession("5ec2e7a1-0000-4000-8000-000000000042")
    s.prompt(f"Deploy with DEPLOY_TOKEN={PLANTED['assignment'].secret} and fix the failing upload")
    for index, (name, planted) in enumerate(sorted(PLANTED.items())):
        word = "".join(c for c in name if c.isalpha())  # a different error per kind: no two share a signature
        s.bash(
            planted.phrase.replace("\n", " ") + f" && ./upload-{index}",
            f"Traceback (most recent call last):\nRuntimeError: {word} upload refused for {planted.phrase}",
            exit_code=1,
        )
    content = "".join(f"{name.upper()}={p.phrase}\n" for name, p in sorted(PLANTED.items()))
    s.tool(
        "Write",
        {"file_path": f"{CWD}/.env", "content": content},
        f"Error: EACCES: permission denied, open '.env' with content {content}",
        error=True,
    )
    s.tool("Read", {"file_path": f"{CWD}/upload.py"}, f"TOKEN = '{PLANTED['github'].secret}'")
    s.tool("Edit", {"file_path": f"{CWD}/upload.py", "old_string": "a", "new_string": "b"}, "ok")
    s.bash(f"export DB_PASSWORD={PLANTED['db_pass'].secret} && python upload.py", "uploaded")
    s.bash(f"STRIPE_KEY={PLANTED['key_assignment'].secret} pytest -q", "3 passed")
    s.say("Done.")
    return s


def test_planted_secrets_reach_neither_yaml_nor_history_nor_json(project: Path, run: Cli, tmp_path: Path) -> None:
    everything = _learned_everywhere(project, run, _leaky_session().write(tmp_path / "leaky.jsonl"))
    for name, planted in PLANTED.items():
        assert _leaks(planted.secret, everything) == [], name
    for kind in SECRET_KINDS:
        assert f"[REDACTED:{kind}]" in everything, kind


def test_without_redaction_every_planted_secret_would_leak(
    project: Path, run: Cli, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The control for the test above: the session really carries every secret into what is stored."""
    monkeypatch.setattr(extract_module, "redact", lambda text: text)
    everything = _learned_everywhere(project, run, _leaky_session().write(tmp_path / "leaky.jsonl"))
    assert [name for name, planted in PLANTED.items() if not _leaks(planted.secret, everything)] == []


def _straddling_session() -> ClaudeSession:
    """Secrets placed across every cut: the task (100), a command (80), an error (200) and a check (60)."""
    s = ClaudeSession("5ec2e7a1-0000-4000-8000-000000000043")
    hf = PLANTED["huggingface"].secret
    s.prompt("Please fix the clone step of the nightly deploy job; it has been failing since Monday. Use " + hf)
    s.bash(
        f"cd vendor/payments && git clone --depth 1 https://{PLANTED['github'].secret}@github.com/example/payments.git",
        "fatal: could not read Username for 'https://github.com': terminal prompts disabled",
        exit_code=128,
    )
    s.bash(
        "python deploy.py",
        "RuntimeError: the deploy service refused the request because the credentials sent with it were not"
        " accepted by the upstream gateway; the request carried the key "
        + PLANTED["sendgrid"].secret
        + " which expired",
        exit_code=1,
    )
    s.tool("Edit", {"file_path": f"{CWD}/deploy.py", "old_string": "a", "new_string": "b"}, "ok")
    s.bash(f"pytest -q tests/test_deploy.py -k upload --upload-with {PLANTED['pypi'].secret}", "3 passed")
    s.say("Fixed.")
    return s


def test_a_secret_straddling_a_cut_leaves_nothing_behind(project: Path, run: Cli, tmp_path: Path) -> None:
    session = _straddling_session()
    command = next(r for r in session.records if "git clone" in json.dumps(r))["message"]["content"][0]["input"]
    start = command["command"].index("ghp_")
    assert 40 < start < 80 < start + len(PLANTED["github"].secret)  # the token straddles the command's cut
    everything = _learned_everywhere(project, run, session.write(tmp_path / "straddle.jsonl"))
    for name in ("github", "huggingface", "sendgrid", "pypi"):
        assert _leaks(PLANTED[name].secret, everything) == [], name
    assert "[REDACTED:github]" in everything  # redacted whole before the cut, not merely cut short


def test_a_hand_written_entry_is_scrubbed_too(project: Path, run: Cli) -> None:
    token = "ghp_" + "a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8"
    result = run("add", "deployment", "learned_from_failures", "Deploy with the release token",
                 "--error", f"401 with {token}", "--solution", "export GITHUB_TOKEN=" + token)  # fmt: skip
    assert result.exit_code == 0, result.output
    assert "scrubbed 2 secret(s)" in result.stderr
    assert token not in (project / ".expertise" / "deployment.yaml").read_text()
    assert token not in git(project, "log", "-p")


def test_a_url_password_with_many_at_signs_is_redacted_in_one_pass() -> None:
    """`@` is no character of a password's look ahead: from every `@` it ran to the text's end (51 s for
    100,000 of them). Here the result, not the time: a password holds every `@` but the last, as before."""
    assert redact("a://b:c" + "@" * 2000) == "a://b:[REDACTED:url-password]@"
    assert redact("https://u:p@ss@host/x") == "https://u:[REDACTED:url-password]@host/x"
