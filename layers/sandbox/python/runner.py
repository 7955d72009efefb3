"""A sandbox's interpreter loop: runs the code the gateway sends on fd 3, answers on fd 4.

Each message is a 4-byte big-endian length and a JSON object. The code's globals carry over
between calls, as in a REPL; `snapshot` and `restore` save and load them name by name, so one
value that cannot be pickled costs only its own name.
"""
import builtins
import collections
import io
import json
import os
import pickle
import signal
import struct
import sys
import threading
import time
import traceback

sys.path.insert(0, "/opt/sluice")

REQUESTS = os.fdopen(3, "rb", buffering=0)
ANSWERS = os.fdopen(4, "wb", buffering=0)
STATE_FILE = "/state/globals.pickle"


def read_exactly(count):
    data = b""
    while len(data) < count:
        chunk = REQUESTS.read(count - len(data))
        if not chunk:
            sys.exit(0)
        data += chunk
    return data


def receive():
    (length,) = struct.unpack(">I", read_exactly(4))
    return json.loads(read_exactly(length))


# The loop and a live execute's feed both write on fd 4, one whole message at a time.
ANSWERING = threading.Lock()


def answer(message):
    data = json.dumps(message).encode()
    with ANSWERING:
        ANSWERS.write(struct.pack(">I", len(data)) + data)


class LiveFeed:
    """What an execute prints, sent to the gateway as `output` messages while it runs, at most every
    0.2 s. A thread of its own writes them: a timeout raised in the code never cuts one in half."""

    INTERVAL = 0.2
    PIECE = 65536

    def __init__(self):
        self.pending = collections.deque()
        self.open = True
        self.closed = threading.Event()
        # One sender at a time, so pieces go out in the order they were printed.
        self.sending = threading.Lock()
        threading.Thread(target=self.run, daemon=True).start()

    def push(self, stream, text):
        if self.open:
            self.pending.append((stream, text))

    def send(self):
        with self.sending:
            while self.pending:
                stream, text = self.pending.popleft()
                while self.pending and self.pending[0][0] == stream and len(text) < self.PIECE:
                    text += self.pending.popleft()[1]
                for at in range(0, len(text), self.PIECE):
                    answer({"output": text[at : at + self.PIECE], "stream": stream})

    def run(self):
        while not self.closed.wait(self.INTERVAL):
            self.send()

    def close(self):
        """Sends what is left; what the code's threads print later goes nowhere."""
        self.open = False
        self.closed.set()
        self.send()


class CappedOutput(io.TextIOBase):
    """What the code prints, kept up to `cap` characters; the rest is counted, not kept."""

    def __init__(self, cap, feed=None, name=None):
        self.cap = cap
        self.feed = feed
        self.name = name
        self.parts = []
        self.kept = 0
        self.truncated = False

    def writable(self):
        return True

    def write(self, text):
        if not isinstance(text, str):
            raise TypeError("write() argument must be str, not " + type(text).__name__)
        room = self.cap - self.kept
        if len(text) > room:
            self.truncated = True
            text = text[: max(room, 0)]
        if text:
            self.parts.append(text)
            self.kept += len(text)
            if self.feed is not None:
                self.feed.push(self.name, text)
        return len(text)

    def value(self):
        return "".join(self.parts)


class Timeout(BaseException):
    """Raised in the code when its time is up; a BaseException so `except Exception` does not swallow it."""


def on_alarm(signum, frame):
    raise Timeout()


signal.signal(signal.SIGALRM, on_alarm)

namespace = {"__name__": "__main__", "__builtins__": builtins}


def execute(request):
    feed = LiveFeed() if request.get("live") else None
    stdout = CappedOutput(request["output_cap"], feed, "stdout")
    stderr = CappedOutput(request["output_cap"], feed, "stderr")
    error = None
    started = time.perf_counter()
    sys.stdout, sys.stderr = stdout, stderr
    try:
        signal.setitimer(signal.ITIMER_REAL, request["timeout_ms"] / 1000)
        try:
            exec(compile(request["code"], "<sandbox>", "exec"), namespace)
        finally:
            signal.setitimer(signal.ITIMER_REAL, 0)
    except Timeout:
        error = "TimeoutError: the code ran past its %g s timeout" % (request["timeout_ms"] / 1000)
    except SystemExit as exit_:
        error = "SystemExit: %s" % (exit_.code,)
    except BaseException:
        kind, value, trace = sys.exc_info()
        # The frames of this loop say nothing about the user's code.
        frames = traceback.extract_tb(trace)
        frames = [frame for frame in frames if frame.filename != __file__]
        error = "".join(traceback.format_list(frames) + traceback.format_exception_only(kind, value)).rstrip()
    finally:
        sys.stdout, sys.stderr = sys.__stdout__, sys.__stderr__
        if feed is not None:
            feed.close()
    return {
        "success": error is None,
        "stdout": stdout.value(),
        "stderr": stderr.value(),
        "error": error,
        "execution_ms": round((time.perf_counter() - started) * 1000, 3),
        "truncated": stdout.truncated or stderr.truncated,
    }


def saved_names():
    return [name for name in namespace if not (name.startswith("__") and name.endswith("__"))]


def snapshot(request):
    import dill

    kept = {}
    unpicklable = []
    for name in saved_names():
        try:
            kept[name] = dill.dumps(namespace[name], recurse=True)
        except BaseException:
            unpicklable.append(name)
    with open(STATE_FILE, "wb") as state:
        pickle.dump(kept, state, protocol=pickle.HIGHEST_PROTOCOL)
    return {"saved": sorted(kept), "unpicklable": sorted(unpicklable), "bytes": os.path.getsize(STATE_FILE)}


def restore(request):
    import dill

    with open(STATE_FILE, "rb") as state:
        kept = pickle.load(state)
    unpicklable = []
    for name, data in kept.items():
        try:
            namespace[name] = dill.loads(data)
        except BaseException:
            unpicklable.append(name)
    os.remove(STATE_FILE)
    return {"restored": sorted(set(kept) - set(unpicklable)), "unpicklable": sorted(unpicklable)}


OPERATIONS = {"execute": execute, "snapshot": snapshot, "restore": restore}

answer({"ready": True})
while True:
    request = receive()
    try:
        answer(OPERATIONS[request["op"]](request))
    except BaseException as failure:
        answer({"failed": "%s: %s" % (type(failure).__name__, failure)})
