"""`make run` end to end, as a user runs it: the Makefile target, with its own local cluster
(LOCAL= moves its state and kubeconfig to a temporary directory), the CRD, the operator and the
seed's vLLM example, whose two groups (4 pods on 8-GPU simulated nodes) come up; Ctrl-C stops
it all. Once with the output piped (one line per change), once on a pseudo-terminal (one table
redrawn in place)."""

from __future__ import annotations

import asyncio
import contextlib
import fcntl
import os
import pty
import shlex
import signal
import struct
import subprocess
import termios
from collections.abc import Awaitable, Callable
from pathlib import Path

import pytest

from lws_testbed.local import read_state
from tests.devrun_output import Replay, Screen

pytestmark = pytest.mark.skipif(
    bool(os.environ.get("LWS_TEST_KUBECONFIG")), reason="make run starts a local cluster"
)

REPO = Path(__file__).resolve().parents[2]
NAME = "vllm-llama3-405b"
PODS = {f"{NAME}-0", f"{NAME}-0-1", f"{NAME}-1", f"{NAME}-1-1"}
TIMEOUT = 180  # a cold start of the cluster on a busy 2-core machine, and the groups
NOISE = ("None", "ERROR", "Traceback", "Error", "error:")


def make_run(local: Path) -> list[str]:
    return ["make", "--no-print-directory", "run", f"LOCAL={local}"]


def environment() -> dict[str, str]:
    drop = ("KUBECONFIG", "MAKEFLAGS", "MAKELEVEL")
    return {k: v for k, v in os.environ.items() if k not in drop}


def cluster_pids(local: Path) -> list[int]:
    return [p["pid"] for p in (read_state(local / "cluster") or {}).get("procs", [])]


def leftovers(local: Path, pids: list[int]) -> list[str]:
    """Processes of this run still alive: the cluster's, or any naming its directory."""
    named = subprocess.run(["pgrep", "-af", str(local)], capture_output=True, text=True).stdout
    return [f"pid {p}" for p in pids if os.path.exists(f"/proc/{p}")] + named.splitlines()


async def stop_group(pgid: int, wait: Callable[[], Awaitable[object]]) -> None:
    """After a failure: Ctrl-C, so that the cluster is stopped too; SIGKILL if that hangs."""
    os.killpg(pgid, signal.SIGINT)
    try:
        await asyncio.wait_for(wait(), 60)
    except TimeoutError:
        os.killpg(pgid, signal.SIGKILL)
        with contextlib.suppress(ChildProcessError):  # reaped by the first wait meanwhile
            await wait()


async def test_make_run_piped_prints_one_line_per_change(tmp_path: Path) -> None:
    proc = await asyncio.create_subprocess_exec(
        *make_run(tmp_path),
        cwd=REPO,
        env=environment(),
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.STDOUT,
        start_new_session=True,  # its own process group, which Ctrl-C signals as a whole
    )
    assert proc.stdout is not None
    out: list[str] = []
    replay = Replay(NAME)

    def up() -> bool:
        return (
            replay.headline == f"{NAME}: 2/2 groups ready"
            and set(replay.pods) == PODS
            and all(state == "Ready" for state, _ in replay.pods.values())
        )

    async def until_up() -> None:
        assert proc.stdout is not None
        while line := (await proc.stdout.readline()).decode():
            out.append(line.rstrip("\n"))
            replay.feed(out[-1])
            if up():
                return
        raise AssertionError("make run ended early")

    try:
        try:
            await asyncio.wait_for(until_up(), TIMEOUT)
        except (TimeoutError, AssertionError) as e:
            why = e or f"no 2/2 groups with 4 Ready pods after {TIMEOUT}s"
            raise AssertionError(f"{why}; make run printed:\n" + "\n".join(out)) from None
        pids = cluster_pids(tmp_path)
        assert len(pids) >= 5, pids
        os.killpg(proc.pid, signal.SIGINT)  # Ctrl-C
        rest, _ = await asyncio.wait_for(proc.communicate(), 60)
    finally:
        if proc.returncode is None:
            await stop_group(proc.pid, proc.wait)
    out += rest.decode().splitlines()
    shown = "make run printed:\n" + "\n".join(out)

    assert any(line.startswith("local cluster up in") for line in out), shown
    assert any("installed" in line and "leaderworkersets" in line for line in out), shown
    assert not [line for line in out if any(word in line for word in NOISE)], shown
    # One line per change: never the same line twice, and few of them for 4 pods.
    assert len(replay.lines) == len(set(replay.lines)), shown
    assert len(replay.lines) <= 4 * 4 + 4, shown
    assert len(out) <= len(replay.lines) + 12, shown  # make's two, notes, a few log lines
    nodes = {node for _, node in replay.pods.values()}
    assert len(nodes) == 4 and all(n.startswith("gpu-node-") for n in nodes), replay.pods
    # Ctrl-C: make and the operator stop, and so does the cluster.
    assert out[-1] == "stopped", shown
    # make, interrupted, ends by SIGINT itself (as a shell expects of Ctrl-C), after devrun.
    assert proc.returncode == -signal.SIGINT, shown
    assert not leftovers(tmp_path, pids)


COLUMNS, ROWS = 120, 40


def _child(local: Path) -> None:
    """In the forked child: the pseudo-terminal's size, then exec make run."""
    fcntl.ioctl(0, termios.TIOCSWINSZ, struct.pack("HHHH", ROWS, COLUMNS, 0, 0))
    os.chdir(REPO)
    argv = make_run(local)
    os.execvpe(argv[0], argv, environment())


async def test_make_run_on_a_terminal_redraws_one_table_in_place(tmp_path: Path) -> None:
    """On a pseudo-terminal (its controlling terminal, as in a shell): the screen ends with one
    table of the 4 Ready pods, which appears once in all that was printed, scrollback
    included; Ctrl-C typed on the terminal stops everything."""
    pid, master = pty.fork()
    if pid == 0:  # pragma: no cover - the child execs make
        try:
            _child(tmp_path)
        finally:
            os._exit(127)
    screen = Screen(COLUMNS, ROWS)
    raw: list[bytes] = []
    loop = asyncio.get_running_loop()
    updated = asyncio.Event()

    def read() -> None:
        try:
            data = os.read(master, 65536)
        except OSError:  # EIO: the terminal's other side is closed
            data = b""
        if not data:
            loop.remove_reader(master)
            raw.append(b"")
        else:
            raw.append(data)
            screen.feed(data.decode(errors="replace"))
        updated.set()

    async def until(cond: Callable[[], bool], what: str, timeout: float) -> None:
        async def run() -> None:
            while not cond():
                if raw and raw[-1] == b"":
                    raise AssertionError(f"make run ended before {what}")
                updated.clear()
                await updated.wait()

        try:
            await asyncio.wait_for(run(), timeout)
        except (TimeoutError, AssertionError) as e:
            raise AssertionError(
                f"{e or 'timed out'} waiting for {what}; screen:\n"
                + "\n".join(screen.scrollback() + screen.visible())
            ) from None

    def table_up() -> bool:
        rows = [line.split() for line in screen.visible() if line.startswith(f"  {NAME}-")]
        return (
            f"{NAME}: 2/2 groups ready" in screen.visible()
            and {r[0] for r in rows if r[-1] == "Ready"} == PODS
            and screen.visible()[-1].startswith("4/4 pods Ready")  # the whole table is drawn
        )

    loop.add_reader(master, read)
    reaped = False
    try:
        await until(table_up, "2/2 groups ready with 4 Ready pods", TIMEOUT)
        pids = cluster_pids(tmp_path)
        everything = screen.scrollback() + screen.visible()
        text = "\n".join(everything)
        assert everything.count(f"{NAME}: 2/2 groups ready") == 1, text
        assert sum(line.startswith(f"  {NAME}-0-1 ") for line in everything) == 1, text
        assert not [line for line in everything if any(word in line for word in NOISE)], text
        assert len(everything) < 30, text  # notes, a few log lines, one table
        table = screen.visible()[-7:]
        assert table[0] == f"{NAME}: 2/2 groups ready", text
        assert table[1].split() == ["POD", "GROUP", "WORKER", "NODE", "STATE"], text
        nodes = {row.split()[3] for row in table[2:6]}
        assert len(nodes) == 4 and all(n.startswith("gpu-node-") for n in nodes), text
        assert table[6].startswith("4/4 pods Ready; Ctrl-C stops"), text

        os.write(master, b"\x03")  # Ctrl-C, typed: SIGINT to the terminal's foreground group
        await until(lambda: bool(raw) and raw[-1] == b"", "make run to exit", 60)
        _, status = await asyncio.to_thread(os.waitpid, pid, 0)
        reaped = True
    finally:
        loop.remove_reader(master)
        if not reaped:  # the child leads its own session and process group
            await stop_group(pid, lambda: asyncio.to_thread(os.waitpid, pid, 0))
        os.close(master)
    final = "\n".join(screen.scrollback() + screen.visible())
    # The last table stays on the screen, with what Ctrl-C printed below it.
    assert screen.visible()[-1] == "stopped", final
    assert table[0] in screen.visible()[:-1], final
    assert os.waitstatus_to_exitcode(status) == -signal.SIGINT, final
    assert not leftovers(tmp_path, pids)


async def test_make_run_with_kueue_waits_for_quota_then_starts_the_second_group(
    tmp_path: Path,
) -> None:
    """`make run KUEUE=1`, piped: the ClusterQueue admits one group of two; the other waits,
    gated, and the output says why; the command it prints raises the quota and lets it start."""
    proc = await asyncio.create_subprocess_exec(
        *make_run(tmp_path),
        "KUEUE=1",
        cwd=REPO,
        env=environment(),
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.STDOUT,
        start_new_session=True,
    )
    assert proc.stdout is not None
    out: list[str] = []
    replay = Replay(NAME)

    async def until(done: Callable[[], bool], what: str) -> None:
        assert proc.stdout is not None
        try:
            async with asyncio.timeout(TIMEOUT):
                while not done():
                    line = (await proc.stdout.readline()).decode()
                    if not line:
                        raise AssertionError(f"make run ended before {what}")
                    out.append(line.rstrip("\n"))
                    replay.feed(out[-1])
        except (TimeoutError, AssertionError) as e:
            raise AssertionError(
                f"{e or 'timed out'} waiting for {what}; make run printed:\n" + "\n".join(out)
            ) from None

    def group_pods(group: str) -> dict[str, tuple[str, str]]:
        prefix = f"{NAME}-{group}"
        return {n: s for n, s in replay.pods.items() if n == prefix or n.startswith(prefix + "-")}

    def waiting() -> str | None:
        """The group Kueue holds back (which one it admits first is Kueue's choice)."""
        held = [g for g, what in replay.groups.items() if what.startswith("waits for quota: ")]
        return held[0] if len(held) == 1 else None

    def one_waits() -> bool:
        group = waiting()
        return (
            group is not None
            and replay.headline == f"{NAME}: 1/2 groups ready"
            and "insufficient unused quota for nvidia.com/gpu" in replay.groups[group]
            and len(group_pods(group)) == 2
            and all(state == "Gated" for state, _ in group_pods(group).values())
        )

    def both_up() -> bool:
        return (
            replay.headline == f"{NAME}: 2/2 groups ready"
            and set(replay.pods) == PODS
            and all(state == "Ready" for state, _ in replay.pods.values())
        )

    try:
        await until(one_waits, "one group ready, the other waiting for quota, gated")
        held = waiting()
        command = next(
            out[i + 1].strip() for i, line in enumerate(out) if line.endswith("raise the quota:")
        )
        raised = await asyncio.to_thread(
            subprocess.run, shlex.split(command), capture_output=True, text=True, timeout=60
        )
        assert raised.returncode == 0, (command, raised.stderr)
        await until(both_up, "2/2 groups ready once the quota was raised")
        assert held is not None and replay.groups[held] == "admitted by Kueue", replay.groups
        pids = cluster_pids(tmp_path)
        os.killpg(proc.pid, signal.SIGINT)  # Ctrl-C
        rest, _ = await asyncio.wait_for(proc.communicate(), 60)
    finally:
        if proc.returncode is None:
            await stop_group(proc.pid, proc.wait)
    out += rest.decode().splitlines()
    shown = "make run printed:\n" + "\n".join(out)
    assert any("Kueue ready in" in line for line in out), shown
    assert not [line for line in out if any(word in line for word in NOISE)], shown
    assert out[-1] == "stopped", shown
    assert not leftovers(tmp_path, pids)
