"""Run the operator from a source directory instead of the installed package:
``python -m lws_testbed.source_operator <dir> run ...`` imports ``<dir>/lws_operator``. The test
bed uses it when ``LWS_OPERATOR_SOURCE`` names such a directory, so that the same tests and
benchmarks run against another tree's operator (``git archive <commit> lws_operator | tar -x -C
<dir>``): a regression test shown to fail before its fix, one tree measured against another.

The editable install's import hook sits in ``sys.meta_path`` and is consulted before
``sys.path``, so putting ``<dir>`` first on ``PYTHONPATH`` alone would still import this checkout's
package; the hook is removed for this process."""

from __future__ import annotations

import os
import runpy
import sys

SOURCE_ENV = "LWS_OPERATOR_SOURCE"


def _editable(finder: object) -> bool:
    return "editable" in type(finder).__module__.lower() or "editable" in repr(finder).lower()


def main() -> None:
    if len(sys.argv) < 2 or not os.path.isdir(os.path.join(sys.argv[1], "lws_operator")):
        sys.exit("usage: python -m lws_testbed.source_operator <dir holding lws_operator/> ARGS")
    source = os.path.abspath(sys.argv.pop(1))
    sys.meta_path[:] = [f for f in sys.meta_path if not _editable(f)]
    sys.path.insert(0, source)
    import lws_operator

    # Which code runs is the point: say it where the operator's log begins.
    print(f"lws_operator from {os.path.dirname(lws_operator.__file__ or '')}", flush=True)
    runpy.run_module("lws_operator", run_name="__main__", alter_sys=True)


if __name__ == "__main__":
    main()
