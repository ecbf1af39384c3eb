"""``python -m setanon_sql``: the ``setanon`` command, for environments without its script."""

from setanon_sql.cli import main

main()
