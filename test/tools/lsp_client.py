"""A scripted LSP client for the spmd-clangd tests: frames messages, reads
the server's output and stderr on threads, and waits for messages matching a
predicate (with a timeout, never forever)."""
import json
import queue
import subprocess
import threading
import time


class LspClient:
    def __init__(self, argv, cwd=None):
        self.proc = subprocess.Popen(argv, stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE,
                                     stderr=subprocess.PIPE, cwd=cwd)
        self.messages = queue.Queue()
        self.received = []  # everything from the server, in order
        self.stderr_lines = []
        self.next_id = 1
        threading.Thread(target=self._read_stdout, daemon=True).start()
        threading.Thread(target=self._read_stderr, daemon=True).start()

    def _read_stdout(self):
        out = self.proc.stdout
        while True:
            length = None
            while True:
                line = out.readline()
                if not line:
                    self.messages.put(None)
                    return
                line = line.decode("ascii").strip()
                if not line:
                    break
                name, _, value = line.partition(":")
                if name.lower() == "content-length":
                    length = int(value)
            body = out.read(length)
            self.messages.put(json.loads(body))

    def _read_stderr(self):
        for line in self.proc.stderr:
            self.stderr_lines.append(line.decode("utf-8", "replace").rstrip())

    def send(self, message):
        message = dict(message, jsonrpc="2.0")
        body = json.dumps(message).encode("utf-8")
        self.proc.stdin.write(b"Content-Length: %d\r\n\r\n" % len(body) + body)
        self.proc.stdin.flush()

    def notify(self, method, params):
        self.send({"method": method, "params": params})

    def request(self, method, params):
        rid = self.next_id
        self.next_id += 1
        self.send({"id": rid, "method": method, "params": params})
        return rid

    def wait_for(self, predicate, timeout, what):
        """Returns the first message (received from now on) satisfying
        predicate; raises on timeout or when the server exits."""
        deadline = time.monotonic() + timeout
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                raise TimeoutError("timed out waiting for " + what)
            try:
                m = self.messages.get(timeout=left)
            except queue.Empty:
                continue
            if m is None:
                raise EOFError("server exited while waiting for " + what)
            self.received.append(m)
            # Answer the server's requests (progress tokens, ...).
            if "id" in m and "method" in m:
                self.send({"id": m["id"], "result": None})
            if predicate(m):
                return m

    def response(self, rid, timeout=60):
        return self.wait_for(lambda m: m.get("id") == rid and "method" not in m,
                             timeout, "the response to request %d" % rid)

    def wait_stderr(self, text, timeout):
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            for line in list(self.stderr_lines):
                if text in line:
                    return line
            time.sleep(0.02)
        raise TimeoutError("timed out waiting for %r on stderr" % text)
