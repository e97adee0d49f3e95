"""A Ctrl-C while the local cluster starts a component is held until the component is
recorded, so that stopping the cluster stops it too (testbed/lws_testbed/local.py)."""

from __future__ import annotations

import os
import signal

import pytest

from lws_testbed.local import _interrupt_held


def test_a_ctrl_c_during_a_spawn_is_raised_after_it() -> None:
    steps = []
    with pytest.raises(KeyboardInterrupt), _interrupt_held():
        os.kill(os.getpid(), signal.SIGINT)
        steps.append("recorded")  # not interrupted
    assert steps == ["recorded"]
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler


def test_without_a_ctrl_c_nothing_is_raised() -> None:
    with _interrupt_held():
        pass
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler
