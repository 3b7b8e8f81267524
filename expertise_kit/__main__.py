"""``python -m expertise_kit``: the CLI. ``merge-driver`` (what git runs) is dispatched before click is
imported: the driver's quick path imports neither click nor pydantic (``gitmerge``)."""

import sys

if sys.argv[1:2] == ["merge-driver"]:
    from expertise_kit.gitmerge import main as merge_driver

    code = merge_driver(sys.argv[2:])
    if code is not None:
        sys.exit(code)

from expertise_kit.cli import main  # noqa: E402

main()
