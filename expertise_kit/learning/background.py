"""Learning at session end without keeping the agent waiting: the post hook queues the session, a detached
learner works the queue.

- **The queue** is a directory of small JSON jobs, one per session (``<cache dir>/learn-queue/``, beside
  the render cache in the work tree's git dir, so never committed). A session's later Stop event rewrites
  its job: a session that grew is learned again, once, from its whole transcript.
- **The learner** is one detached process per queue at a time (a non-blocking lock decides which). It
  waits for each transcript to stop growing, learns it, and deletes the job only then. A job outlives the
  learner: if the machine sleeps, the agent exits or the process is killed, the job is still there, and
  the next session's start or end starts a learner that picks it up.
- **Failures** are retried on the next start; after ``MAX_ATTEMPTS`` the job moves to ``failed/`` with its
  error, where ``expertise hooks doctor`` reports it. Every outcome is a line in ``learn.log``.

Kept out of the pre-task hook's imports, except ``pending`` and ``start_learner``, which are stdlib only.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import stat
import sys
import time
from pathlib import Path
from typing import Any

__all__ = [
    "MAX_ATTEMPTS",
    "enqueue",
    "queue_dir",
    "pending",
    "failed",
    "start_learner",
    "drain",
    "wait_idle",
    "log_path",
]

MAX_ATTEMPTS = 3
MAX_JOB_BYTES = 64 << 10
MAX_LOG_BYTES = 256 << 10
STALE_SECONDS = 60  # a job this old with no learner at work was left by one that died: start another
SETTLE_SECONDS = 1.0  # a transcript unchanged this long is done being written
SETTLE_LIMIT = 30.0  # the longest wait for one that keeps growing (the next Stop queues it again anyway)


def queue_dir(expertise_dir: str | Path) -> str:
    from expertise_kit.fast.cache import cache_dir

    return os.path.join(cache_dir(expertise_dir), "learn-queue")


def log_path(expertise_dir: str | Path) -> str:
    return os.path.join(queue_dir(expertise_dir), "learn.log")


def _job_name(key: str | None, transcript: str) -> str:
    if key is None:  # no usable session id: the transcript's path names the session
        key = hashlib.sha256(transcript.encode("utf-8", "surrogatepass")).hexdigest()[:32]
    return key + ".json"


def enqueue(expertise_dir: str, agent: str, payload: dict[str, Any], transcript: str) -> str:
    """Queue (or re-queue) this session's transcript for learning; return the job's path."""
    from expertise_kit.fast.hookinput import session_key

    directory = queue_dir(expertise_dir)
    os.makedirs(directory, exist_ok=True)
    key = session_key(payload)  # the agent's own id for the session (Cursor's `conversation_id` too)
    job = {
        "agent": agent,
        "transcript": transcript,
        "project": os.path.dirname(expertise_dir),
        "session_id": key,
        "event": payload.get("hook_event_name") if isinstance(payload.get("hook_event_name"), str) else None,
        "queued": time.time(),
        "attempts": 0,
    }
    path = os.path.join(directory, _job_name(key, transcript))
    temporary = f"{path}.{os.getpid()}.tmp"
    with open(temporary, "w", encoding="utf-8") as out:
        json.dump(job, out)
    os.replace(temporary, path)
    return path


def pending(expertise_dir: str) -> list[str]:
    """The queued jobs' paths, oldest first."""
    directory = queue_dir(expertise_dir)
    try:
        entries = [e for e in os.scandir(directory) if e.name.endswith(".json") and e.is_file()]
    except OSError:
        return []
    dated = []
    for entry in entries:
        try:
            dated.append((entry.stat().st_mtime, entry.name, entry.path))
        except OSError:  # taken (or dropped) by a learner between the listing and the look
            continue
    return [path for _, _, path in sorted(dated)]


def failed(expertise_dir: str) -> list[str]:
    directory = os.path.join(queue_dir(expertise_dir), "failed")
    try:
        return sorted(e.path for e in os.scandir(directory) if e.name.endswith(".json"))
    except OSError:
        return []


def _lock_path(expertise_dir: str) -> str:
    return os.path.join(queue_dir(expertise_dir), "learner.lock")


def learner_running(expertise_dir: str) -> bool:
    """Whether a learner holds this queue's lock now."""
    import fcntl

    try:
        descriptor = os.open(_lock_path(expertise_dir), os.O_RDWR | os.O_CREAT, 0o644)
    except OSError:
        return False
    try:
        fcntl.flock(descriptor, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        return True
    finally:
        os.close(descriptor)  # closing drops a lock we took
    return False


def start_learner(expertise_dir: str) -> None:
    """Start a detached learner for this queue. It holds none of our pipes, so an agent reading ours to
    their end never waits for it; if one is at work already, the new one leaves at once."""
    import subprocess

    code = f"import expertise_kit.learning.background as b; b.drain({expertise_dir!r})"
    subprocess.Popen(
        [sys.executable, "-I", "-c", code],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        close_fds=True,
        start_new_session=True,  # the agent's exit, or a signal to its process group, does not reach it
        cwd=os.path.dirname(expertise_dir),
    )


def _log(expertise_dir: str, line: str) -> None:
    path = log_path(expertise_dir)
    stamp = time.strftime("%Y-%m-%dT%H:%M:%S", time.localtime())
    with contextlib.suppress(OSError):
        if os.path.getsize(path) > MAX_LOG_BYTES:  # keep the newer half
            with open(path, "rb") as log:
                log.seek(-MAX_LOG_BYTES // 2, os.SEEK_END)
                tail = log.read().split(b"\n", 1)[-1]
            with open(path, "wb") as log:
                log.write(tail)
    with contextlib.suppress(OSError), open(path, "a", encoding="utf-8") as log:
        log.write(f"{stamp} {line}\n")


def _wait_for_transcript(path: str, settle: float = SETTLE_SECONDS, limit: float = SETTLE_LIMIT) -> None:
    """Agents write their last records a moment after the hook fires: wait until the file has held still
    for ``settle`` seconds, at most ``limit`` in all. A missing file is not waited for."""
    deadline = time.monotonic() + limit
    last: tuple[int, int] | None = None
    still_since = time.monotonic()
    while time.monotonic() < deadline:
        try:
            info = os.stat(path)
        except OSError:
            return
        if time.time() - info.st_mtime >= settle:
            return
        now = (info.st_size, info.st_mtime_ns)
        if now != last:
            last, still_since = now, time.monotonic()
        elif time.monotonic() - still_since >= settle:
            return
        time.sleep(0.1)


def _read_job(path: str) -> dict[str, Any] | None:
    try:
        with open(path, "rb") as handle:
            raw = handle.read(MAX_JOB_BYTES + 1)
        job = json.loads(raw) if len(raw) <= MAX_JOB_BYTES else None
    except (OSError, ValueError):
        return None
    if not isinstance(job, dict) or not isinstance(job.get("transcript"), str) or not isinstance(job.get("agent"), str):
        return None
    return job


def _set_aside(expertise_dir: str, path: str, job: dict[str, Any] | None, error: str) -> None:
    """Move a job that can't be learned to ``failed/``, with its error, for doctor to report."""
    directory = os.path.join(queue_dir(expertise_dir), "failed")
    os.makedirs(directory, exist_ok=True)
    record = dict(job or {}, error=error, failed=time.time())
    target = os.path.join(directory, os.path.basename(path))
    with open(target + ".tmp", "w", encoding="utf-8") as out:
        json.dump(record, out)
    os.replace(target + ".tmp", target)
    with contextlib.suppress(FileNotFoundError):
        os.unlink(path)


class NotARegularFile(OSError):
    """A queued transcript that is no file on disk any more: set aside at once, as a gone one is."""


def learn_job(expertise_dir: str, job: dict[str, Any]) -> str:
    """Learn one queued session; the outcome as one line. Raises on failure."""
    from expertise_kit.learning.learn import learn_from
    from expertise_kit.learning.session_end import credit
    from expertise_kit.project import find_project
    from expertise_kit.store import Store

    transcript = job["transcript"]
    if not os.path.exists(transcript):
        raise FileNotFoundError(f"{transcript}: the transcript is gone")
    _wait_for_transcript(transcript)
    if not stat.S_ISREG(os.stat(transcript).st_mode):  # made a FIFO since it was queued: reading could block
        raise NotARegularFile(f"{transcript}: not a regular file (a FIFO or a device) any more; not read")
    store = Store(find_project(Path(os.path.dirname(expertise_dir))))
    report = learn_from(store, [Path(transcript)])
    if report.errors and not report.sessions:
        raise ValueError(report.errors[0].one_line())
    added = sum(len(m.added) for m in report.domains.values())
    seen = sum(len(m.updated) for m in report.domains.values())
    line = f"learned {added} new, {seen} seen again, {len(report.held)} held from {transcript}"
    given = credit(store, job, report)
    return f"{line}; {given}" if given else line


def drain(expertise_dir: str, *, nice: bool = True) -> int:
    """Work the queue until it is empty; return how many jobs were learned. Never raises: a learner has
    nobody to tell but its log."""
    import fcntl

    done = 0
    tried: set[tuple[str, int]] = set()  # a job that failed is retried by the next learner, not this one
    with contextlib.suppress(BaseException):
        if nice and hasattr(os, "nice"):
            os.nice(10)  # the agent's own work comes first
    while True:
        try:
            descriptor = os.open(_lock_path(expertise_dir), os.O_RDWR | os.O_CREAT, 0o644)
        except OSError:
            return done
        try:
            try:
                fcntl.flock(descriptor, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except OSError:
                return done  # another learner is at work; it looks again before it leaves
            done += _work(expertise_dir, tried)
        finally:
            os.close(descriptor)
        # Looked at after the lock is let go: a job queued while we worked, by a hook whose own learner
        # found us holding the lock, is ours to take.
        if all((p, _mtime(p)) in tried for p in pending(expertise_dir)):
            return done


def _work(expertise_dir: str, tried: set[tuple[str, int]]) -> int:
    done = 0
    while True:
        jobs = [p for p in pending(expertise_dir) if (p, _mtime(p)) not in tried]
        if not jobs:
            return done
        path = jobs[0]
        stamp = _mtime(path)
        tried.add((path, stamp))
        job = _read_job(path)
        if job is None:
            with contextlib.suppress(OSError):
                _set_aside(expertise_dir, path, None, "the job file is not a queued session")
            continue
        try:
            line = learn_job(expertise_dir, job)
        except BaseException as exc:  # noqa: BLE001 - logged, retried, then set aside
            error = next((ln for ln in str(exc).splitlines() if ln.strip()), type(exc).__name__)
            from expertise_kit.errors import LockTimeout

            if isinstance(exc, LockTimeout):  # another writer is busy: not this job's fault
                _log(expertise_dir, f"store busy, left queued: {job['transcript']}: {error}")
                return done
            _log(expertise_dir, f"failed: {job['transcript']}: {error}")
            job["attempts"] = int(job.get("attempts") or 0) + 1
            with contextlib.suppress(OSError):
                if job["attempts"] >= MAX_ATTEMPTS or isinstance(exc, (FileNotFoundError, NotARegularFile)):
                    _set_aside(expertise_dir, path, job, error)
                elif _mtime(path) == stamp:
                    _rewrite(path, job, stamp)
            if isinstance(exc, (KeyboardInterrupt, SystemExit)):
                raise
            continue
        _log(expertise_dir, line)
        done += 1
        # Only the job we learned goes: one the session's next Stop rewrote meanwhile is learned again.
        with contextlib.suppress(FileNotFoundError):
            if _mtime(path) == stamp:
                os.unlink(path)


def _mtime(path: str) -> int:
    try:
        return os.stat(path).st_mtime_ns
    except OSError:
        return -1


def _rewrite(path: str, job: dict[str, Any], stamp: int) -> None:
    """Record an attempt without making the job look newer than it is."""
    with open(path + ".tmp", "w", encoding="utf-8") as out:
        json.dump(job, out)
    os.utime(path + ".tmp", ns=(stamp, stamp))
    os.replace(path + ".tmp", path)


def wait_idle(expertise_dir: str, timeout: float = 60.0) -> bool:
    """Wait until the queue is empty and no learner is at work; whether that happened within ``timeout``."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if not pending(expertise_dir) and not learner_running(expertise_dir):
            return True
        time.sleep(0.1)
    return False
