"""``python -m lws_operator``: the ``lws-operator`` command."""

from lws_operator.cli import main

raise SystemExit(main())
