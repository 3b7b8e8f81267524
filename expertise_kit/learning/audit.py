"""What a learned store holds, counted the way a reviewer would: noise, empty errors, fixes that name an
action, paths filed twice, near-duplicates.

One definition of each figure, shared by the tests and the benchmarks, so they never disagree.
"""

from __future__ import annotations

from typing import Any

from expertise_kit.document.entries import FailureEntry, FileEntry, item_id, item_text
from expertise_kit.document.ids import error_signature, normalise_path
from expertise_kit.learning.quality import harness_noise, says_nothing, solution_names_action
from expertise_kit.store import Store

__all__ = ["store_audit"]


def _share(part: int, whole: int) -> float:
    return round(part / whole, 3) if whole else 0.0


def store_audit(store: Store) -> dict[str, Any]:
    """Figures for every domain file of ``store``, learned and hand-written entries alike.

    - ``harness_noise``: failures that are the agent's tool protocol, not the project;
    - ``says_nothing``: failures whose error names no more than an exit code;
    - ``with_action``: the share of failures whose solution says what changed;
    - ``paths_in_two_domains`` / ``entries_in_two_domains``: one lesson, two homes;
    - ``near_duplicates``: entries whose masked text matches an earlier entry's, as a share of all.
    """
    entries = 0
    failures: list[FailureEntry] = []
    homes: dict[str, set[str]] = {}  # path -> domains
    ids: dict[str, set[str]] = {}
    shapes: dict[str, int] = {}
    for domain in store.config.domains:
        if not store.path_for(domain).exists():
            continue
        doc = store.load(domain)
        for section_name, _, item in doc.entries():
            entries += 1
            ids.setdefault(item_id(section_name, item), set()).add(domain)
            if isinstance(item, FailureEntry):
                failures.append(item)
                shape = "failure\0" + error_signature(item.error or item.issue)
            elif isinstance(item, FileEntry) or section_name == "core_files":
                path = normalise_path(item_text(item))
                homes.setdefault(path, set()).add(domain)
                shape = "file\0" + path
            else:
                shape = "text\0" + error_signature(item_text(item))
            shapes[shape] = shapes.get(shape, 0) + 1
    noise = [f for f in failures if harness_noise(f"{f.error}\n{f.issue}")]
    empty = [f for f in failures if says_nothing(f.error)]
    acted = [f for f in failures if solution_names_action(f.solution or "")]
    duplicates = sum(count - 1 for count in shapes.values())
    return {
        "entries": entries,
        "failures": len(failures),
        "harness_noise": len(noise),
        "says_nothing": len(empty),
        "with_action": _share(len(acted), len(failures)),
        "paths_in_two_domains": sum(1 for domains in homes.values() if len(domains) > 1),
        "entries_in_two_domains": sum(1 for domains in ids.values() if len(domains) > 1),
        "near_duplicates": _share(duplicates, entries),
    }
