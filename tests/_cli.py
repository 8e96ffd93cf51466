"""The ``zarrdask`` command line in a process of its own, many calls per process.

``python -m zarrdask ...`` costs an interpreter start and zarrdask's import (about 1.3 s on
a 2-core machine) per call. A ``CliProcess`` starts one Python process (on its first call)
that runs each call's arguments through ``zarrdask.cli.main``, what the console script and
``python -m zarrdask`` run, with that call's own stdout and stderr, in the caller's working
directory, warnings shown again as in a fresh process; it answers with the exit code and
both texts as a ``subprocess.CompletedProcess``. An exception out of ``main`` is exit code 1
with its traceback on stderr, as the interpreter does. What only a fresh process shows (the
real entry points, a pipe closed early, a terminal, a ``--scheduler`` client) is run as a
real subprocess by the tests that check it (tests/tools/test_cli.py, tests/project/test_first_hour.py,
tests/nodes/test_progress.py).
"""

from __future__ import annotations

import atexit
import json
import os
import selectors
import subprocess
import sys
import tempfile
from typing import Any

_DRIVER = r'''
import contextlib, io, json, os, sys, traceback, warnings
reply = os.fdopen(os.dup(1), "w")  # the answers, on a descriptor of their own
os.dup2(2, 1)  # (anything written to descriptor 1 directly goes to this process's stderr)
from zarrdask.cli import main
for line in sys.stdin:
    argv, cwd = json.loads(line)
    os.chdir(cwd)
    # every warning shows again, as in a fresh process (a filter change resets the registries)
    warnings.filterwarnings("default", message="zarrdask tests: reset the warning registries")
    warnings.filters.pop(0)
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            code = main(argv)
        except SystemExit as exc:
            code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
        except BaseException:
            traceback.print_exc()
            code = 1
    reply.write(json.dumps([code, out.getvalue(), err.getvalue()]) + "\n")
    reply.flush()
'''


class CliProcess:
    """``cli(*args)``: ``zarrdask *args`` in this object's process (started on the first call;
    tests/conftest.py ends it after each test module)."""

    #: every instance made (a module's): ``close_all`` ends their processes
    instances: list[CliProcess] = []

    def __init__(self, timeout: float = 300) -> None:
        self.timeout = timeout
        self._proc: subprocess.Popen[str] | None = None
        self._log: Any = None
        CliProcess.instances.append(self)

    @classmethod
    def close_all(cls) -> None:
        for instance in cls.instances:
            instance.close()

    def _start(self) -> subprocess.Popen[str]:
        self._log = tempfile.TemporaryFile(mode="w+")
        self._proc = subprocess.Popen([sys.executable, "-c", _DRIVER], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                      stderr=self._log, text=True, bufsize=1)
        atexit.register(self.close)
        return self._proc

    def __call__(self, *args: str) -> subprocess.CompletedProcess[str]:
        proc = self._proc if self._proc is not None and self._proc.poll() is None else self._start()
        assert proc.stdin is not None and proc.stdout is not None
        argv = [str(a) for a in args]
        proc.stdin.write(json.dumps([argv, os.getcwd()]) + "\n")
        proc.stdin.flush()
        with selectors.DefaultSelector() as sel:
            sel.register(proc.stdout, selectors.EVENT_READ)
            ready = sel.select(self.timeout)
        line = proc.stdout.readline() if ready else ""
        if not line:
            self.close()
            self._log.seek(0)
            raise AssertionError(f"zarrdask {' '.join(argv)}: no answer within {self.timeout} s or the process "
                                 f"ended; its stderr:\n{self._log.read()}")
        code, out, err = json.loads(line)
        return subprocess.CompletedProcess(["zarrdask", *argv], code, out, err)

    def close(self) -> None:
        proc, self._proc = self._proc, None
        if proc is None:
            return
        if proc.stdin is not None:
            proc.stdin.close()
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        if proc.stdout is not None:
            proc.stdout.close()
        self._log.close()
