"""The ``kubectl lws`` plugin (the ``kubectl-lws`` command).

``cli`` is the command line; ``lws`` holds the LeaderWorkerSet commands, ``ds`` the
DisaggregatedSet commands, and ``common`` what both use. ``lws`` and ``ds`` never import each
other (the import-linter contracts in pyproject.toml say so).
"""
