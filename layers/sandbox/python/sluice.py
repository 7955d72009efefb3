"""Governed queries from inside a Sluice sandbox.

    import sluice
    result = sluice.query("select * from orders limit 10")
    result.columns, result.rows
    frame = sluice.query_df("select 1 as one")   # a pandas DataFrame

Every query goes through the gateway's gate, governed executor and audit log, as the sandbox's
creator, read-only, with PII masked; the sandbox never sees a connection's credentials.
"""
import json
import socket
import struct

SOCKET = "/run/sluice/gateway.sock"
TOKEN = "/run/sluice/token"

__all__ = ["query", "query_df", "QueryError", "Result"]


class QueryError(Exception):
    """The gateway refused the query or it failed: `code` says which, `message` why."""

    def __init__(self, code, message):
        super().__init__("%s: %s" % (code, message))
        self.code = code
        self.message = message


class Result:
    """A query's answer: `columns` (names), `rows` (lists of values), and what the gateway said of it."""

    def __init__(self, answer):
        self.columns = [column["name"] for column in answer["columns"]]
        self.rows = answer["rows"]
        self.row_count = answer["row_count"]
        self.truncated = answer.get("truncated_at") is not None
        self.pii_masked = answer.get("pii_masked", [])
        self.query_id = answer.get("query_id")

    def dicts(self):
        return [dict(zip(self.columns, row)) for row in self.rows]

    def __iter__(self):
        return iter(self.rows)

    def __len__(self):
        return len(self.rows)

    def __repr__(self):
        return "<sluice.Result %d row(s): %s>" % (self.row_count, ", ".join(self.columns))


def _exchange(message):
    with open(TOKEN) as token_file:
        message["token"] = token_file.read().strip()
    data = json.dumps(message).encode()
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as connection:
        connection.connect(SOCKET)
        connection.sendall(struct.pack(">I", len(data)) + data)
        header = _read(connection, 4)
        (length,) = struct.unpack(">I", header)
        return json.loads(_read(connection, length))


def _read(connection, count):
    data = b""
    while len(data) < count:
        chunk = connection.recv(count - len(data))
        if not chunk:
            raise QueryError("unavailable", "the gateway closed the connection")
        data += chunk
    return data


def query(sql, connection=None, row_limit=None):
    """Runs read-only SQL through the gateway; a refusal or failure raises QueryError."""
    if not isinstance(sql, str):
        raise TypeError("sql must be a string")
    request = {"sql": sql}
    if connection is not None:
        request["connection"] = connection
    if row_limit is not None:
        request["row_limit"] = int(row_limit)
    answer = _exchange(request)
    if "error" in answer:
        raise QueryError(answer["error"]["code"], answer["error"]["message"])
    return Result(answer)


def query_df(sql, connection=None, row_limit=None):
    """`query` as a pandas DataFrame (pandas must be importable)."""
    import pandas

    result = query(sql, connection, row_limit)
    return pandas.DataFrame(result.rows, columns=result.columns)
