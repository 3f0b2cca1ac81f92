"""arun on a real pseudo-terminal, and the checks the terminal tests report with."""
import argparse
import fcntl
import os
import pty
import select
import signal
import struct
import sys
import termios
import time

ERASE = "\r\x1b[K"  # what the status line is erased with
failures = []


def arun_argument(doc):
    """The test's --arun (the arun binary), absolute."""
    parser = argparse.ArgumentParser(description=doc)
    parser.add_argument("--arun", required=True)
    return os.path.abspath(parser.parse_args().arun)


def check(ok, what):
    """Records a failed check (and says it at once); the run goes on to the next check."""
    if not ok:
        failures.append(what)
        print("FAIL:", what, file=sys.stderr)


def report(passed):
    """The test's exit code: 1 with the number of failures, else 0 with `passed` said."""
    if failures:
        print(f"{len(failures)} failure(s)", file=sys.stderr)
        return 1
    print(passed)
    return 0


class on_pty:
    """arun with stdin, stdout and stderr on a pseudo-terminal (`cols` wide, echo on or off,
    `env` added to the environment)."""

    def __init__(self, arun, args, cwd, echo=True, cols=None, env=None):
        self.pid, self.fd = pty.fork()
        if self.pid == 0:
            # The forked child is this Python until execv: a Ctrl-C pressed before then must
            # kill it as it would kill arun while loading, and it never unwinds into the
            # caller's clean-up (which would remove the test's directory), whatever happens.
            try:
                signal.signal(signal.SIGINT, signal.SIG_DFL)
                os.chdir(cwd)
                if env:
                    os.environ.update(env)
                if not echo:  # `stty -echo` before arun starts
                    attrs = termios.tcgetattr(0)
                    attrs[3] &= ~termios.ECHO
                    termios.tcsetattr(0, termios.TCSANOW, attrs)
                os.execv(arun, [arun] + args)
            except KeyboardInterrupt:  # pressed before the default action was back: die of it
                signal.signal(signal.SIGINT, signal.SIG_DFL)
                os.kill(os.getpid(), signal.SIGINT)
            finally:
                os._exit(127)
        if cols:
            fcntl.ioctl(self.fd, termios.TIOCSWINSZ, struct.pack("HHHH", 24, cols, 0, 0))
        self.out = b""
        self.code = None

    def text(self):
        return self.out.decode("utf-8", "replace")

    def read_for(self, seconds, until=None, poll=0.05):
        """Reads for `seconds`, or until `until` is in the output (a string, or a function
        that says when); False at the end of output."""
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            if until is not None and (until() if callable(until) else until in self.text()):
                return True
            ready, _, _ = select.select([self.fd], [], [], poll)
            if not ready:
                continue
            try:
                data = os.read(self.fd, 65536)
            except OSError:
                return False
            if not data:
                return False
            self.out += data
        return True

    def type(self, keys):
        os.write(self.fd, keys)

    def finish(self, seconds=60):
        """Reads to the end and reaps arun; killed (and the check fails) after `seconds`."""
        deadline = time.monotonic() + seconds
        self.read_for(seconds)
        while True:  # the end of output may come a moment before the exit
            done, status = os.waitpid(self.pid, os.WNOHANG)
            if done == self.pid or time.monotonic() >= deadline:
                break
            time.sleep(0.01)
        if done != self.pid:
            check(False, f"arun still runs after {seconds} s: killed")
            os.kill(self.pid, signal.SIGKILL)
            _, status = os.waitpid(self.pid, 0)
        os.close(self.fd)
        self.code = os.waitstatus_to_exitcode(status)
        return self.code
