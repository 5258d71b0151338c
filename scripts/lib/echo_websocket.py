"""A non-blocking client WebSocket to the gateway's /v1/echo on 127.0.0.1, driven
by a selector: TCP connect (optionally from a given source address), optional TLS,
upgrade, masked frames out, pings answered, close handshake. Its owner (`client`)
holds the selector and gets on_open, on_message, on_pong, on_done and on_failed.

Shared by scripts/measure-connection-churn and scripts/measure-idle-memory.
Python 3 standard library only.
"""

import base64
import errno
import hashlib
import os
import selectors
import socket
import ssl
import struct

WS_GUID = b"258EAFA5-E914-47DA-95CA-C5AB0DC85B11"
IP_BIND_ADDRESS_NO_PORT = getattr(socket, "IP_BIND_ADDRESS_NO_PORT", 24)

OP_TEXT, OP_BINARY, OP_CLOSE, OP_PING, OP_PONG = 0x1, 0x2, 0x8, 0x9, 0xA


# --------------------------------------------------------------------------- frames


def mask_bytes(payload, key):
    if not payload:
        return b""
    n = len(payload)
    k = (key * (n // 4 + 1))[:n]
    return (int.from_bytes(payload, "little") ^ int.from_bytes(k, "little")).to_bytes(n, "little")


def client_frame(opcode, payload=b""):
    """One masked, final frame (client to server)."""
    key = os.urandom(4)
    n = len(payload)
    if n < 126:
        header = struct.pack("!BB", 0x80 | opcode, 0x80 | n)
    elif n < 65536:
        header = struct.pack("!BBH", 0x80 | opcode, 0x80 | 126, n)
    else:
        header = struct.pack("!BBQ", 0x80 | opcode, 0x80 | 127, n)
    return header + key + mask_bytes(payload, key)


def parse_frame(buf):
    """Returns (fin, opcode, payload, consumed) or None if incomplete. Server frames are unmasked."""
    if len(buf) < 2:
        return None
    b0, b1 = buf[0], buf[1]
    n = b1 & 0x7F
    pos = 2
    if n == 126:
        if len(buf) < 4:
            return None
        n = struct.unpack_from("!H", buf, 2)[0]
        pos = 4
    elif n == 127:
        if len(buf) < 10:
            return None
        n = struct.unpack_from("!Q", buf, 2)[0]
        pos = 10
    key = None
    if b1 & 0x80:
        if len(buf) < pos + 4:
            return None
        key = bytes(buf[pos:pos + 4])
        pos += 4
    if len(buf) < pos + n:
        return None
    payload = bytes(buf[pos:pos + n])
    if key:
        payload = mask_bytes(payload, key)
    return bool(b0 & 0x80), b0 & 0x0F, payload, pos + n


# --------------------------------------------------------------------------- connection


class Conn:
    """One client WebSocket driven by a selector (non-blocking)."""

    CONNECTING, TLS_HANDSHAKE, UPGRADING, OPEN, CLOSING, AWAIT_EOF, DONE, FAILED = range(8)

    def __init__(self, client, index, port, tls_context, source):
        self.client = client
        self.index = index
        self.port = port
        self.tls_context = tls_context
        self.source = source
        self.sock = None
        self.fd = -1
        self.events = 0
        self.state = Conn.CONNECTING
        self.out = b""
        self.inbuf = bytearray()
        self.key = None
        self.error = None
        self.close_code = None
        self.sent_close = False
        self.got_close = False
        self.pongs = []
        self.messages = []
        self.ssl_want_write = False
        self.opened = False
        self.ping_payload = None

    # -- selector bookkeeping

    def _want(self, events):
        if events == self.events or self.fd < 0:
            return
        sel = self.client.selector
        if self.events == 0:
            sel.register(self.fd, events, self)
        elif events == 0:
            sel.unregister(self.fd)
        else:
            sel.modify(self.fd, events, self)
        self.events = events

    def _update_interest(self):
        if self.state in (Conn.DONE, Conn.FAILED):
            return
        ev = selectors.EVENT_READ
        if self.out or self.ssl_want_write:
            ev |= selectors.EVENT_WRITE
        self._want(ev)

    def _release(self):
        if self.fd >= 0:
            self._want(0)
            self.fd = -1
        if self.sock is not None:
            try:
                self.sock.close()
            except OSError:
                pass
            self.sock = None

    def fail(self, reason):
        if self.state in (Conn.DONE, Conn.FAILED):
            return
        self.error = reason
        self.state = Conn.FAILED
        self._release()
        self.client.on_failed(self)

    def _finish(self):
        self.state = Conn.DONE
        self._release()
        self.client.on_done(self)

    # -- start

    def start(self):
        try:
            s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        except OSError as e:
            self.error = f"socket: {e}"
            self.state = Conn.FAILED
            self.client.on_failed(self)
            return
        self.sock = s
        self.fd = s.fileno()
        s.setblocking(False)
        s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        try:
            if self.source:
                s.setsockopt(socket.IPPROTO_IP, IP_BIND_ADDRESS_NO_PORT, 1)
                s.bind((self.source, 0))
            rc = s.connect_ex(("127.0.0.1", self.port))
        except OSError as e:
            self.fail(f"connect: {e}")
            return
        if rc not in (0, errno.EINPROGRESS):
            self.fail(f"connect: {os.strerror(rc)}")
            return
        self._want(selectors.EVENT_WRITE)

    # -- events

    def handle(self, mask):
        if self.state == Conn.CONNECTING:
            err = self.sock.getsockopt(socket.SOL_SOCKET, socket.SO_ERROR)
            if err:
                self.fail(f"connect: {os.strerror(err)}")
                return
            if self.tls_context is not None:
                self._want(0)
                raw = self.sock
                self.sock = self.tls_context.wrap_socket(raw, do_handshake_on_connect=False, server_hostname=None)
                self.fd = self.sock.fileno()
                self.state = Conn.TLS_HANDSHAKE
                self._handshake()
            else:
                self._send_upgrade()
            return
        if self.state == Conn.TLS_HANDSHAKE:
            self._handshake()
            return
        if mask & selectors.EVENT_WRITE:
            self.ssl_want_write = False
            self._flush()
        if self.state in (Conn.DONE, Conn.FAILED):
            return
        if mask & selectors.EVENT_READ:
            self._read()
        if self.state not in (Conn.DONE, Conn.FAILED):
            self._update_interest()

    def _handshake(self):
        try:
            self.sock.do_handshake()
        except ssl.SSLWantReadError:
            self._want(selectors.EVENT_READ)
            return
        except ssl.SSLWantWriteError:
            self._want(selectors.EVENT_WRITE)
            return
        except (ssl.SSLError, OSError) as e:
            self.fail(f"tls handshake: {e}")
            return
        self._send_upgrade()

    def _send_upgrade(self):
        self.state = Conn.UPGRADING
        self.key = base64.b64encode(os.urandom(16))
        request = (
            b"GET /v1/echo HTTP/1.1\r\n"
            b"Host: 127.0.0.1:" + str(self.port).encode() + b"\r\n"
            b"Upgrade: websocket\r\n"
            b"Connection: Upgrade\r\n"
            b"Sec-WebSocket-Key: " + self.key + b"\r\n"
            b"Sec-WebSocket-Version: 13\r\n\r\n"
        )
        self.send(request)

    def send(self, data):
        self.out += data
        self._flush()
        if self.state not in (Conn.DONE, Conn.FAILED):
            self._update_interest()

    def _flush(self):
        while self.out:
            try:
                n = self.sock.send(self.out)
            except (BlockingIOError, ssl.SSLWantWriteError):
                return
            except ssl.SSLWantReadError:
                return
            except (ssl.SSLError, OSError) as e:
                self.fail(f"send: {e}")
                return
            self.out = self.out[n:]

    def _read(self):
        eof = False
        while True:
            try:
                data = self.sock.recv(65536)
            except (BlockingIOError, ssl.SSLWantReadError):
                break
            except ssl.SSLWantWriteError:
                self.ssl_want_write = True
                break
            except ssl.SSLZeroReturnError:
                eof = True
                break
            except ssl.SSLEOFError:
                eof = True
                break
            except (ssl.SSLError, OSError) as e:
                self.fail(f"recv: {e}")
                return
            if not data:
                eof = True
                break
            self.inbuf += data
        self._process()
        if self.state in (Conn.DONE, Conn.FAILED):
            return
        if eof:
            if self.got_close:
                self._finish()
            else:
                self.fail(f"unexpected EOF in state {self.state}")

    def _process(self):
        if self.state == Conn.UPGRADING:
            end = self.inbuf.find(b"\r\n\r\n")
            if end < 0:
                return
            head = bytes(self.inbuf[:end]).decode("latin-1")
            del self.inbuf[:end + 4]
            lines = head.split("\r\n")
            if not lines[0].startswith("HTTP/1.1 101"):
                self.fail(f"upgrade refused: {lines[0]!r}")
                return
            headers = {}
            for line in lines[1:]:
                k, _, v = line.partition(":")
                headers[k.strip().lower()] = v.strip()
            expected = base64.b64encode(hashlib.sha1(self.key + WS_GUID).digest()).decode()
            if headers.get("sec-websocket-accept") != expected:
                self.fail("bad Sec-WebSocket-Accept")
                return
            self.state = Conn.OPEN
            self.opened = True
            self.client.on_open(self)
            if self.state in (Conn.DONE, Conn.FAILED):
                return
        while self.state in (Conn.OPEN, Conn.CLOSING, Conn.AWAIT_EOF):
            parsed = parse_frame(self.inbuf)
            if parsed is None:
                return
            fin, opcode, payload, consumed = parsed
            del self.inbuf[:consumed]
            if opcode == OP_PING:
                if not self.sent_close:
                    self.send(client_frame(OP_PONG, payload))
            elif opcode == OP_PONG:
                self.pongs.append(payload)
                self.client.on_pong(self, payload)
            elif opcode == OP_CLOSE:
                self.got_close = True
                self.close_code = struct.unpack("!H", payload[:2])[0] if len(payload) >= 2 else None
                if not self.sent_close:
                    self.sent_close = True
                    self.send(client_frame(OP_CLOSE, payload[:2]))
                self.state = Conn.AWAIT_EOF
            elif opcode in (OP_TEXT, OP_BINARY, 0):
                self.client.on_message(self, opcode, payload)
            if self.state in (Conn.DONE, Conn.FAILED):
                return

    # -- actions

    def ping(self, payload):
        self.send(client_frame(OP_PING, payload))

    def text(self, payload):
        self.send(client_frame(OP_TEXT, payload))

    def close(self, code=1000):
        if self.sent_close or self.state != Conn.OPEN:
            return
        self.sent_close = True
        self.state = Conn.CLOSING
        self.send(client_frame(OP_CLOSE, struct.pack("!H", code)))
