"""Reading what `make run` prints, for its tests: a small terminal emulator for the terminal
mode (the table redrawn in place) and a replay of the change lines of the other mode."""

from __future__ import annotations

import re
from dataclasses import dataclass, field

_CONTROL = re.compile(r"\x1b\[(\d*)([A-Za-z])|\r|\n|\x1b|[^\x1b\r\n]+")


class Screen:
    """Enough of a VT100 for what devview writes: text with auto-wrap, CR, LF, cursor up
    (ESC[nA), erase below (ESC[J) and erase line (ESC[K), scrolling into a scrollback. Any
    other escape sequence is an error: devview must not write what this does not check."""

    def __init__(self, columns: int = 80, rows: int = 24) -> None:
        self.columns = columns
        self.rows = rows
        self.buffer: list[str] = [""]  # scrollback, then the screen
        self.row = 0
        self.col = 0
        self.top = 0  # first line of the buffer on screen

    def feed(self, text: str) -> None:
        for m in _CONTROL.finditer(text):
            token = m.group(0)
            if token == "\r":
                self.col = 0
            elif token == "\n":  # as a tty delivers it (ONLCR, the default): CR LF
                self._down()
                self.col = 0
            elif m.group(2):
                n = int(m.group(1) or 1)
                self._escape(m.group(2), n, token)
            elif token == "\x1b":
                raise ValueError("an escape sequence this screen does not know")
            else:
                for ch in token:
                    self._put(ch)

    def _escape(self, op: str, n: int, token: str) -> None:
        line = self.buffer[self.row]
        if op == "A":
            self.row = max(self.top, self.row - n)
        elif op == "J":
            self.buffer[self.row] = line[: self.col]
            del self.buffer[self.row + 1 :]
        elif op == "K":
            self.buffer[self.row] = line[: self.col]
        else:
            raise ValueError(f"unexpected escape sequence {token!r}")

    def _down(self) -> None:
        self.row += 1
        if self.row == len(self.buffer):
            self.buffer.append("")
        self.top = max(self.top, self.row - self.rows + 1)

    def _put(self, ch: str) -> None:
        if self.col >= self.columns:  # auto-wrap
            self._down()
            self.col = 0
        line = self.buffer[self.row].ljust(self.col)
        self.buffer[self.row] = line[: self.col] + ch + line[self.col + 1 :]
        self.col += 1

    def visible(self) -> list[str]:
        """The screen's lines, without the empty ones at the bottom."""
        lines = self.buffer[self.top : self.top + self.rows]
        while lines and not lines[-1]:
            lines.pop()
        return lines

    def scrollback(self) -> list[str]:
        return self.buffer[: self.top]


_POD = re.compile(r"^pod (\S+) (\w+)(?: on (\S+))?$")
_GROUP = re.compile(r"^group (\d+)[ :] ?(.*)$")


@dataclass
class Replay:
    """The state the change lines of one LWS describe: its last headline, and each pod's
    state and node."""

    name: str
    headline: str = ""
    pods: dict[str, tuple[str, str]] = field(default_factory=dict)
    lines: list[str] = field(default_factory=list)
    groups: dict[str, str] = field(default_factory=dict)  # with Kueue: what each group is at

    def feed(self, line: str) -> bool:
        """Take ``line`` if it is a change line of this LWS; False if it is another line."""
        if not line.startswith(f"{self.name}: "):
            return False
        self.lines.append(line)
        self.headline, *changes = line.split("; ")
        for change in changes:
            if m := _GROUP.match(change):  # with Kueue
                self.groups[m.group(1)] = m.group(2)
                continue
            if change.startswith("pod ") and change.endswith(" deleted"):
                self.pods.pop(change.removeprefix("pod ").removesuffix(" deleted"), None)
                continue
            m = _POD.match(change)
            assert m, f"not a pod change: {change!r} in {line!r}"
            self.pods[m.group(1)] = (m.group(2), m.group(3) or "")
        return True
