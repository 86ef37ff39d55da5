"""`python -m ridercrm.cli`: the `ridercrm` command."""

from ridercrm.cli import main

main()
