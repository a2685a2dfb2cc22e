"""The service's journal: every session's state and its accepted event batches, in SQLite (WAL).

A session is stored as a snapshot (:meth:`hetplace.Session.to_json`) and the event
batches accepted since, in order.  A batch is committed before its request is
answered; an applied decision replaces the snapshot and drops the batches it
covers, in one transaction.  After a crash (``kill -9``), a session is its snapshot
with its batches applied again: every acknowledged batch is there, no other one,
and a batch is never half there (docs/service.md §5).
"""

import sqlite3
import threading
from pathlib import Path

#: Name of the journal file in the state directory.
FILENAME = "hetplace-journal.sqlite3"
#: Batches after which a snapshot is written even without a decision (bounds the replay).
SNAPSHOT_EVERY = 256

_SCHEMA = """
CREATE TABLE IF NOT EXISTS sessions (
    id TEXT PRIMARY KEY,
    created REAL NOT NULL,
    seq INTEGER NOT NULL,
    state TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS batches (
    session TEXT NOT NULL,
    seq INTEGER NOT NULL,
    events TEXT NOT NULL,
    PRIMARY KEY (session, seq)
);
"""


class Journal:
    """An SQLite file in WAL mode under ``state_dir``.

    Parameters
    ----------
    state_dir : path-like
        Created if missing.
    sync : {"normal", "full"}
        SQLite's ``synchronous``: ``"normal"`` keeps every committed batch through
        a crash of the process (``kill -9``); ``"full"`` through a crash of the
        machine too, at an fsync per commit.
    """

    def __init__(self, state_dir, sync="normal"):
        path = Path(state_dir)
        path.mkdir(parents=True, exist_ok=True)
        self.path = path / FILENAME
        self._db = sqlite3.connect(self.path, check_same_thread=False, isolation_level=None)
        self._lock = threading.Lock()
        with self._lock:
            self._db.execute("PRAGMA journal_mode=WAL")
            self._db.execute(f"PRAGMA synchronous={'FULL' if sync == 'full' else 'NORMAL'}")
            self._db.executescript(_SCHEMA)

    def _write(self, *statements):
        """Run ``(sql, args)`` statements in one transaction."""
        with self._lock:
            db = self._db
            db.execute("BEGIN IMMEDIATE")
            try:
                for sql, args in statements:
                    db.execute(sql, args)
                db.execute("COMMIT")  # inside the try: a failed COMMIT must not leave the transaction open
            except BaseException:
                if db.in_transaction:
                    db.execute("ROLLBACK")
                raise

    def create(self, sid, state, created):
        self._write(("INSERT INTO sessions (id, created, seq, state) VALUES (?, ?, 0, ?)", (sid, created, state)))

    def append(self, sid, seq, events):
        """Journal batch number ``seq`` (JSON text of its events)."""
        self._write(("INSERT INTO batches (session, seq, events) VALUES (?, ?, ?)", (sid, seq, events)))

    def snapshot(self, sid, seq, state):
        """Replace the session's snapshot by ``state`` (after ``seq`` batches); drop the batches it covers."""
        self._write(("UPDATE sessions SET seq = ?, state = ? WHERE id = ?", (seq, state, sid)),
                    ("DELETE FROM batches WHERE session = ? AND seq <= ?", (sid, seq)))

    def delete(self, sid):
        self._write(("DELETE FROM batches WHERE session = ?", (sid,)), ("DELETE FROM sessions WHERE id = ?", (sid,)))

    def load(self, sid=None):
        """Yield ``(id, created, snapshot seq, snapshot, [(seq, events text), ...])`` of every session (or of ``sid``)."""
        with self._lock:
            if sid is None:
                rows = self._db.execute("SELECT id, created, seq, state FROM sessions ORDER BY created, id").fetchall()
            else:
                rows = self._db.execute("SELECT id, created, seq, state FROM sessions WHERE id = ?", (sid,)).fetchall()
        for sid, created, seq, state in rows:
            with self._lock:
                batches = self._db.execute("SELECT seq, events FROM batches WHERE session = ? AND seq > ? "
                                           "ORDER BY seq", (sid, seq)).fetchall()
            yield sid, created, seq, state, batches

    def close(self):
        with self._lock:
            self._db.close()
