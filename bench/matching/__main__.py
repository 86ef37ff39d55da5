"""`python -m bench.matching`: see run.py."""

from bench.matching.run import main

raise SystemExit(main())
