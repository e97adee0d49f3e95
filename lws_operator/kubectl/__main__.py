"""``python -m lws_operator.kubectl``: the ``kubectl-lws`` command."""

from lws_operator.kubectl.cli import main

raise SystemExit(main())
