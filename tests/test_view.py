"""`document/view.py`: a remembered view is the view a fresh parse gives, and a file that can't be read is
refused the same way and never remembered."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from conftest import Cli
from report_demo import build_demo

from expertise_kit.document.domainfile import load_domain_file
from expertise_kit.document.view import read_view
from expertise_kit.errors import UserError
from expertise_kit.project import find_project
from expertise_kit.store import Store


def test_a_remembered_view_is_a_fresh_parse(repo: Path, run: Cli, tmp_path: Path) -> None:
    build_demo(repo, tmp_path, hostile=True)
    store = Store(find_project(repo))
    remember = str(tmp_path / "cache")
    for domain in store.config.domain_names:
        path = store.path_for(domain)
        fresh = read_view(path, domain, None)
        first = read_view(path, domain, remember)
        assert os.path.isfile(os.path.join(remember, "views", f"{domain}.json"))
        again = read_view(path, domain, remember)
        doc = load_domain_file(path, domain)
        for view in (fresh, first, again):
            assert view.model == doc.model and view.line_count == doc.line_count
            assert list(view.entries()) == list(doc.entries()) and view.entry_count == doc.entry_count
            assert list(view.key_lines) == [str(key) for key in doc.loaded.tree]


@pytest.mark.parametrize(
    "text",
    ["domain: api\npatterns: [unclosed\n", "domain: api\nbase: &a x\nother: *a\n", "domain: database\n"],
    ids=["bad-yaml", "alias", "wrong-domain"],
)
def test_a_file_that_cannot_be_read_is_refused_and_not_remembered(project: Path, tmp_path: Path, text: str) -> None:
    path = project / ".expertise" / "api.yaml"
    path.write_text(text)
    with pytest.raises(UserError) as parsed:
        load_domain_file(path, "api")
    remember = str(tmp_path / "cache")
    with pytest.raises(UserError) as viewed:
        read_view(path, "api", remember)
    assert viewed.value.one_line() == parsed.value.one_line()
    assert not os.path.exists(os.path.join(remember, "views", "api.json"))


def test_an_unwritable_cache_only_costs_the_parse(project: Path, tmp_path: Path) -> None:
    blocker = tmp_path / "cache"
    blocker.write_text("a file where the cache directory would be")
    path = project / ".expertise" / "api.yaml"
    view = read_view(path, "api", str(blocker))
    assert view.model == load_domain_file(path, "api").model
