"""Every byte a notebook's kernel sends the grader passes through a relay that counts it, before ZeroMQ reads it.

The grader talks to a kernel over ZeroMQ sockets, and ZeroMQ takes in a whole message, every
part of it, before the grader's code sees a byte: a kernel that sends one message of a
thousand 16 MB parts, or floods a channel the grader is not reading, would fill the grader's
memory whatever the grader then did with the message. So the grader's sockets never connect
to the kernel: each connects to a Unix socket of a :class:`Relay` (a folder outside the
sandbox), which opens its own connection to the kernel's socket and copies the bytes both
ways, holding at most :data:`BUFFER` bytes in each direction. What the kernel sends is
counted on a :class:`Meter` as it is read from the kernel; once a meter passes its limit
the relay calls its ``over`` function (which stops the notebook) and forwards nothing more.

A meter weighs some bytes more than one: a JSON list or object costs the grader's parser
far more memory than its two characters (and a notebook node made of it more still), so a
message of empty lists weighs what it will cost, not what it measures. :data:`OUTPUT`
weighs ``[`` and ``{``; :data:`DATA`, for the judge's replies, also each ``,`` (a number
parsed from a list costs some 30 bytes), since its honest replies carry their numbers as
base64 bytes, which hold none of these characters. Only characters outside JSON strings are
weighed: printed text costs its bytes, whatever it prints. Each connection has its own
:class:`Scanner`, which follows ZeroMQ's framing (ZMTP 3) so that every message part is
scanned from its first byte, whichever way the kernel splits its bytes into parts or the
relay reads them in chunks; each part also weighs :data:`PART` (a part the grader holds costs
a ZeroMQ message and a Python object). A connection that does not speak ZMTP 3 is weighed
without regard to strings (every ``[`` and ``{``).

Example
-------
>>> meter = Meter(limit=250, over=lambda: print("over"))
>>> meter.add(b"x" * 40)
True
>>> meter.add(b'"{}"')  # printed braces: 4 bytes of a string
True
>>> meter.add(b"{}")  # 2 bytes, one of them an object: 2 + 255
over
False
"""

from __future__ import annotations

import contextlib
import re
import selectors
import shutil
import socket
import threading
from collections.abc import Callable, Iterable
from pathlib import Path

from grading.private_api import with_urls

__all__ = ["BUFFER", "DATA", "OUTPUT", "PART", "Meter", "Relay", "Scanner", "relayed_client"]

OUTPUT = {b"[": 256, b"{": 256}  # a parsed JSON list or object, and the notebook node nbclient makes of it
DATA = {b"[": 64, b"{": 64, b",": 32}  # a parsed list or object; a number parsed from a list
BUFFER = 1 << 20  # bytes held for a side that is not reading
CHUNK = 1 << 16
PART = 128  # a message part: a zmq_msg_t and the bytes object the grader makes of it

_CLOSED = re.compile(rb'"[^"\\]*(?:\\.[^"\\]*)*"', re.DOTALL)  # a whole JSON string
_REST = re.compile(rb'[^"\\]*(?:\\.[^"\\]*)*', re.DOTALL)  # the rest of a string begun earlier, up to its quote
_GREETING = 64  # a ZMTP 3 greeting: signature (10), version (2), mechanism (20), as-server (1), filler (31)


def _weigh(text: bytes, weights: dict[bytes, int]) -> int:
    return sum((weight - 1) * text.count(byte) for byte, weight in weights.items())


class Scanner:
    """What one connection's bytes from the kernel weigh, read in chunks of any size (see the module's text).

    Example
    -------
    >>> scanner = Scanner(OUTPUT)
    >>> greeting = b"\\xff" + bytes(8) + b"\\x7f\\x03\\x01NULL" + bytes(16) + b"\\x00" + bytes(31)
    >>> part = b'{"text": "[[1, 2]]"}'
    >>> frame = bytes([0, len(part)]) + part
    >>> scanner.feed(greeting) + scanner.feed(frame[:12]) + scanner.feed(frame[12:]) - len(greeting + frame)
    383
    """

    def __init__(self, weights: dict[bytes, int]) -> None:
        self.weights = weights
        self.greeting = b""  # what has come of the greeting, until it is whole
        self.zmtp: bool | None = None  # None until the greeting is read; False: weigh every byte
        self.header = b""  # a part's header read so far
        self.left = 0  # bytes of the current part still to come
        self.in_string = False
        self.escape = False  # the last byte read was a backslash in a string

    def feed(self, data: bytes) -> int:
        """The weight of ``data``, the next bytes of this connection."""
        cost = len(data)
        if self.zmtp is None:
            take = _GREETING - len(self.greeting)
            self.greeting += data[:take]
            data = data[take:]
            if len(self.greeting) < _GREETING:
                return cost
            g = self.greeting
            self.zmtp = g[0] == 0xFF and g[9] & 1 == 1 and g[10] >= 3
        if not self.zmtp:
            return cost + _weigh(data, self.weights)
        pos, end = 0, len(data)
        while pos < end:
            if self.left:
                take = min(self.left, end - pos)
                cost += self._body(data[pos : pos + take])
                self.left -= take
                pos += take
                continue
            if not self.header:
                if data[pos] & ~7:  # not a ZMTP 3 frame (flags: more, long, command): weigh the rest as it comes
                    self.zmtp = False
                    return cost + _weigh(data[pos:], self.weights)
                self.header = data[pos : pos + 1]
                pos += 1
                continue
            need = 9 if self.header[0] & 2 else 2  # flags, then the size in 8 bytes (long) or one
            take = min(need - len(self.header), end - pos)
            self.header += data[pos : pos + take]
            pos += take
            if len(self.header) < need:
                continue
            self.left = int.from_bytes(self.header[1:], "big")
            self.header = b""
            self.in_string = self.escape = False
            cost += PART
        return cost

    def _body(self, data: bytes) -> int:
        """The weight (beyond one a byte) of the next bytes of a message part, a JSON text in honest parts."""
        start = 0
        if self.in_string:
            if self.escape:
                start, self.escape = 1, False
            start = _REST.match(data, start).end()  # type: ignore[union-attr]  # (it matches the empty text)
            if start == len(data):
                return 0
            if data[start] == 0x5C:  # a backslash ending the chunk: it escapes the next chunk's first byte
                self.escape = True
                return 0
            self.in_string = False
            start += 1
        rest = _CLOSED.sub(b"", data[start:])
        quote = rest.find(b'"')
        if quote >= 0:  # a string that goes on in the next chunk
            self.in_string = True
            self.escape = _odd_tail(data)
            rest = rest[:quote]
        return _weigh(rest, self.weights)


class Meter:
    """What a notebook's kernel has sent on some connections, weighed, against ``limit`` (0: no limit).

    ``over()`` is called once, on the thread that counts, when the total first goes past the limit.
    Safe to use from several threads.
    """

    def __init__(self, limit: int, over: Callable[[], None], weights: dict[bytes, int] | None = None) -> None:
        self.limit, self.over = limit, over
        self.weights = OUTPUT if weights is None else weights
        self.count = 0
        self.tripped = False
        self._lock = threading.Lock()

    def charge(self, cost: int) -> bool:
        """Count ``cost`` units; False once the limit has been passed (``over`` is called the first time)."""
        with self._lock:
            self.count += cost
            trip = bool(self.limit) and self.count > self.limit and not self.tripped
            if trip:
                self.tripped = True
        if trip:
            with contextlib.suppress(Exception):  # stopping the notebook must not stop the counting
                self.over()
        return not self.tripped

    def add(self, data: bytes) -> bool:
        """Count one JSON text sent by the kernel: its length, and for each weighed byte outside its strings its
        weight less one (a connection's bytes are weighed by its own :meth:`scanner`)."""
        rest = _CLOSED.sub(b"", data)
        quote = rest.find(b'"')
        return self.charge(len(data) + _weigh(rest if quote < 0 else rest[:quote], self.weights))

    def scanner(self) -> Scanner:
        """A scanner for one connection's bytes, with this meter's weights."""
        return Scanner(self.weights)


class _Link:
    """One connection of the grader, relayed to the kernel: two sockets and what each has yet to receive."""

    def __init__(self, grader: socket.socket, kernel: socket.socket, meter: Meter) -> None:
        self.grader, self.kernel, self.meter = grader, kernel, meter
        self.scanner = meter.scanner()
        self.to_grader = bytearray()
        self.to_kernel = bytearray()
        self.events: dict[socket.socket, int] = {}  # what the selector watches each socket for


class Relay:
    """Unix sockets in ``folder`` that stand for a kernel's sockets (``{kernel}-{port}``), one set per meter.

    A grader's client connects to ``{prefix(name)}-{port}`` instead of the kernel's own
    ``{kernel}-{port}``; what the kernel sends on such a connection is counted on
    ``meters[name]``. One thread serves every connection; :meth:`close` ends it, closes
    every socket and removes ``folder``.
    """

    def __init__(self, folder: Path, kernel: str, meters: dict[str, Meter]) -> None:
        folder.mkdir(mode=0o700)
        self.folder, self.kernel, self.meters = folder, kernel, meters
        self._selector = selectors.DefaultSelector()
        self._wake_read, self._wake_write = socket.socketpair()
        self._wake_read.setblocking(False)
        self._selector.register(self._wake_read, selectors.EVENT_READ, None)
        self._lock = threading.Lock()
        self._new: list[tuple[socket.socket, str, int]] = []
        self._listening: dict[str, socket.socket] = {}
        self._links: list[_Link] = []
        self._closed = False
        self._thread: threading.Thread | None = None

    def prefix(self, name: str) -> str:
        """The path that stands for the kernel's ``ip`` (``ipc`` transport) on connections counted on ``name``."""
        return str(self.folder / name)

    def listen(self, ports: Iterable[int]) -> None:
        """Listen for the grader's connections to each of the kernel's ports (again for a new kernel: idempotent)."""
        with self._lock:
            if self._closed:
                return
            for name in self.meters:
                for port in ports:
                    path = f"{self.prefix(name)}-{port}"
                    if path in self._listening:
                        continue
                    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
                    sock.bind(path)
                    sock.listen(16)
                    sock.setblocking(False)
                    self._listening[path] = sock
                    self._new.append((sock, name, port))
            if self._thread is None:
                self._thread = threading.Thread(target=self._serve, name="relay", daemon=True)
                self._thread.start()
        self._wake()

    def _wake(self) -> None:
        with contextlib.suppress(OSError):
            self._wake_write.send(b"x")

    def close(self) -> None:
        """Stop relaying, close every socket and remove the folder."""
        with self._lock:
            self._closed = True
        self._wake()
        if self._thread is not None and self._thread is not threading.current_thread():
            self._thread.join(10)
        with self._lock:
            for link in self._links:
                link.grader.close()
                link.kernel.close()
            self._links = []
            for sock in self._listening.values():
                sock.close()
            self._listening = {}
        self._selector.close()
        self._wake_read.close()
        self._wake_write.close()
        shutil.rmtree(self.folder, ignore_errors=True)

    # ----- the relay's thread

    def _serve(self) -> None:
        while True:
            with self._lock:
                if self._closed:
                    return
                new, self._new = self._new, []
            for sock, name, port in new:
                with contextlib.suppress(ValueError, KeyError, OSError):  # closed meanwhile
                    self._selector.register(sock, selectors.EVENT_READ, (name, port))
            for key, events in self._selector.select(0.5):
                try:
                    if key.data is None:
                        with contextlib.suppress(OSError):
                            self._wake_read.recv(4096)
                    elif isinstance(key.data, tuple):
                        self._accept(key.fileobj, *key.data)  # type: ignore[arg-type]
                    else:
                        self._move(key.data, key.fileobj, events)  # type: ignore[arg-type]
                except Exception:  # noqa: BLE001 - a connection that breaks the relay is dropped; the others go on
                    if isinstance(key.data, _Link):
                        self._drop(key.data)

    def _accept(self, listening: socket.socket, name: str, port: int) -> None:
        try:
            grader, _ = listening.accept()
        except OSError:
            return
        meter = self.meters[name]
        kernel = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        kernel.setblocking(False)  # a kernel that does not accept (its backlog full) never blocks the relay
        try:
            if meter.tripped:
                raise OSError("over the limit")
            kernel.connect(f"{self.kernel}-{port}")
        except OSError:
            grader.close()
            kernel.close()
            return
        grader.setblocking(False)
        link = _Link(grader, kernel, meter)
        with self._lock:
            self._links.append(link)
        self._selector.register(grader, selectors.EVENT_READ, link)
        self._selector.register(kernel, selectors.EVENT_READ, link)
        link.events = {grader: selectors.EVENT_READ, kernel: selectors.EVENT_READ}

    def _drop(self, link: _Link) -> None:
        for sock in (link.grader, link.kernel):
            with contextlib.suppress(KeyError, ValueError, OSError):
                self._selector.unregister(sock)
            sock.close()
        with self._lock, contextlib.suppress(ValueError):
            self._links.remove(link)

    def _move(self, link: _Link, sock: socket.socket, events: int) -> None:
        """Read what ``sock`` has (up to the buffer of the other side), write what it is owed, count the kernel's."""
        from_kernel = sock is link.kernel
        inbox = link.to_grader if from_kernel else link.to_kernel
        outbox = link.to_kernel if from_kernel else link.to_grader
        other = link.grader if from_kernel else link.kernel
        try:
            if events & selectors.EVENT_READ and len(inbox) < BUFFER:
                data = sock.recv(CHUNK)
                if not data:
                    self._drop(link)
                    return
                if from_kernel and not link.meter.charge(link.scanner.feed(data)):
                    for each in [x for x in self._links if x.meter is link.meter]:
                        self._drop(each)
                    return
                inbox += data
                self._send(other, inbox)
            if events & selectors.EVENT_WRITE and outbox:
                self._send(sock, outbox)
        except OSError:
            self._drop(link)
            return
        self._update(link)

    @staticmethod
    def _send(sock: socket.socket, box: bytearray) -> None:
        with contextlib.suppress(BlockingIOError):
            sent = sock.send(box)
            del box[:sent]

    def _update(self, link: _Link) -> None:
        """Watch each socket of a link for what it can do now: read while the other side's box has room, write
        while its own box holds something (the selector is only told of a change)."""
        sides = ((link.kernel, link.to_grader, link.to_kernel), (link.grader, link.to_kernel, link.to_grader))
        for sock, inbox, outbox in sides:
            events = (selectors.EVENT_READ if len(inbox) < BUFFER else 0) | (selectors.EVENT_WRITE if outbox else 0)
            if link.events.get(sock) == events:
                continue
            try:
                if not events:
                    self._selector.unregister(sock)
                elif link.events.get(sock):
                    self._selector.modify(sock, events, link)
                else:
                    self._selector.register(sock, events, link)
            except (KeyError, ValueError, OSError):
                self._drop(link)
                return
            link.events[sock] = events


def relayed_client(base: type, prefix: str) -> type:
    """A subclass of a kernel client (or manager) class whose sockets connect to a :class:`Relay`'s ``prefix``."""
    if getattr(base, "grading_prefix", None) == prefix:
        return base
    return with_urls(base, prefix)


def _odd_tail(data: bytes) -> bool:
    """Whether ``data`` ends in an odd run of backslashes (in a string: the last one escapes what comes next)."""
    return (len(data) - len(data.rstrip(b"\\"))) % 2 == 1
