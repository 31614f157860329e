"""A signal raises KeyboardInterrupt at whatever instruction the main thread is at; on Python 3.11 that frame may
have no line number, and pytest's display of the interrupt (its terminal reporter's ``getrepr``) then raised
TypeError: the run ended as an internal error (exit 4) and, the kit's hook never reached, its report did not say it
was interrupted (seen in a family run stopped by SIGTERM).  The kit's hook records the interrupt first and unlinks
such frames before the display."""

from __future__ import annotations

import sys
import types

import pytest

from conformance_tests.running.finish import _without_unnumbered_frames

#: an instruction offset past any code: its frame has no line number (tb_lineno None), as a signal can leave
NO_LINE = 10 ** 6


def _interrupt_with_an_unnumbered_frame() -> pytest.ExceptionInfo[BaseException]:
    frame = sys._getframe()
    tail = types.TracebackType(None, frame, 0, frame.f_lineno)
    bad = types.TracebackType(tail, frame, NO_LINE, -1)
    head = types.TracebackType(bad, frame, 0, frame.f_lineno)
    assert bad.tb_lineno is None
    return pytest.ExceptionInfo.from_exc_info((KeyboardInterrupt, KeyboardInterrupt("SIGTERM received"), head))


def test_pytest_cannot_show_an_interrupt_whose_frame_has_no_line_number():
    """What the kit guards against (if pytest learns to show it, the guard is harmless and this test says so)."""
    with pytest.raises(TypeError):
        _interrupt_with_an_unnumbered_frame().getrepr(funcargs=True)


def test_unnumbered_frames_are_unlinked_and_the_interrupt_is_shown():
    excinfo = _interrupt_with_an_unnumbered_frame()
    _without_unnumbered_frames(excinfo.tb)
    linenos = []
    tb: types.TracebackType | None = excinfo.tb
    while tb is not None:
        linenos.append(tb.tb_lineno)
        tb = tb.tb_next
    assert len(linenos) == 2 and None not in linenos
    assert "KeyboardInterrupt" in str(excinfo.getrepr(funcargs=True))


@pytest.mark.filterwarnings("ignore::pytest.PytestUnraisableExceptionWarning")  # the dropped interrupt, as printed
def test_a_sigterm_whose_interrupt_a_finalizer_dropped_ends_the_run_at_the_next_test():
    """Python may run the handler inside a finalizer (hypothesis calls gc.collect before each example), where the
    KeyboardInterrupt it raises is printed and dropped, and the handler has already ignored any further signal: the
    run went on to its end with no word of the signal (a family run's CI test, stopped 50 ms after a test). The kit
    raises it again as the next test starts."""
    import os
    import signal
    from types import SimpleNamespace

    from conformance_tests.running.finish import Finish, restore_signals, terminate_as_interrupt

    class Finalized:
        def __del__(self) -> None:
            os.kill(os.getpid(), signal.SIGTERM)  # the handler runs here, inside the finalizer

    previous = terminate_as_interrupt()
    try:
        Finalized()  # dropped at once: its finalizer runs, and the interrupt raised in it is printed and dropped
        finish = Finish(SimpleNamespace(), previous)  # type: ignore[arg-type]
        with pytest.raises(KeyboardInterrupt, match="SIGTERM received"):
            finish.pytest_runtest_setup(None)  # type: ignore[arg-type]
    finally:
        restore_signals(previous)
    Finish(SimpleNamespace(), {}).pytest_runtest_setup(None)  # type: ignore[arg-type]  # a new run starts clean
