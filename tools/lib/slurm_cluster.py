"""A private single-node Slurm cluster for tools (tools/crashtest --executor slurm).

The Python port of tests/support/slurm_cluster.{hpp,cpp}: its own temporary directory, random
free ports and slurm.conf (auth/none, proctrack/pgid, no scheduling delays, OverSubscribe=FORCE),
slurmctld and slurmd started as children of this process, and everything it ran (jobs, their
orphans, slurmstepd, the daemons) gone after close(). /work/shared/SLURM.md has the measurements
and pitfalls this is built on.

    reason = unavailable_reason()          # "" when Slurm can run here (tools on PATH, root)
    with SlurmCluster(cpus=2) as c:        # ~1 s until the node is idle
        env = dict(os.environ, **c.env())  # SLURM_CONF: clients talk to this cluster
        c.queue()                          # [(job id, name, state)]
        c.wait_queue_empty(10)

Clients see the cluster only through SLURM_CONF; this process's own environment is left alone.
The cluster makes this process a child subreaper: every slurmstepd (slurmd double-forks them)
and every orphan of a job is re-parented here, and a thread reaps those zombies (with
proctrack/pgid a zombie still counts as a member of its job, which would keep the job
COMPLETING). The thread reaps only zombies in a session of this cluster, never another child.

Standard library only.
"""

import os
import random
import shutil
import signal
import socket
import subprocess
import tempfile
import threading
import time

DAEMONS = ("slurmctld", "slurmd")
CLIENTS = ("sbatch", "squeue", "scancel", "sinfo")
SLURM_PREFIXES = ("SLURM_", "SBATCH_", "SRUN_", "SALLOC_", "SQUEUE_", "SINFO_", "SCANCEL_")


def unavailable_reason():
    """Empty when the cluster can run here; otherwise what is missing (for a skip message)."""
    missing = [t for t in DAEMONS + CLIENTS if shutil.which(t) is None]
    if missing:
        return f"Slurm is not installed (not on PATH: {', '.join(missing)}); tools/install-deps installs it"
    if os.geteuid() != 0:
        return "the private Slurm cluster needs root (its daemons run as root)"
    return ""


def clean_environment(base=None):
    """base (default os.environ) without the variables that would point a Slurm client at
    another cluster or change what it prints or submits (a run inside a Slurm job has many)."""
    env = dict(os.environ if base is None else base)
    for k in [k for k in env if k.startswith(SLURM_PREFIXES)]:
        del env[k]
    return env


# ---------------------------------------------------------------------------------------------
# /proc


def _read(path):
    try:
        with open(path, "rb") as f:
            return f.read()
    except OSError:
        return b""


def proc_stat(pid):
    """(ppid, sid, state, comm) of pid, or None when it is gone."""
    text = _read(f"/proc/{pid}/stat")
    open_, close = text.find(b"("), text.rfind(b")")
    if open_ < 0 or close < open_:
        return None
    fields = text[close + 2 :].split()
    if len(fields) < 4:
        return None
    try:
        return int(fields[1]), int(fields[3]), fields[0].decode(), text[open_ + 1 : close].decode(errors="replace")
    except ValueError:
        return None


def process_table():
    """{pid: (ppid, sid, state, comm)} of every process."""
    table = {}
    for name in os.listdir("/proc"):
        if name.isdigit():
            st = proc_stat(int(name))
            if st is not None:
                table[int(name)] = st
    return table


def proc_cwd(pid):
    try:
        return os.readlink(f"/proc/{pid}/cwd")
    except OSError:
        return ""


def _under(path, root):
    return path == root or path.startswith(root + "/")


def _zombie(state):
    return state in ("Z", "X")


def become_subreaper():
    try:
        import ctypes

        libc = ctypes.CDLL(None, use_errno=True)
        return libc.prctl(36, 1, 0, 0, 0) == 0  # PR_SET_CHILD_SUBREAPER
    except (OSError, AttributeError):
        return False


# ---------------------------------------------------------------------------------------------
# Ports


def _port_free(port):
    """Free for a listening socket: bound without SO_REUSEADDR this also fails while
    connections linger in TIME_WAIT. Slurm's daemons bind INADDR_ANY."""
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    try:
        s.bind(("0.0.0.0", port))
        return True
    except OSError:
        return False
    finally:
        s.close()


def _pick_port(rng, avoid):
    """A random free port below the kernel's ephemeral range, so no outgoing connection is
    given it between our check and the daemon's bind. Random, not "bind port 0": two runs
    starting at once are unlikely to draw the same one, and a clash is caught anyway (the
    loser's daemon exits and start retries with new ports)."""
    for _ in range(200):
        port = rng.randint(20000, 32000)
        if port != avoid and _port_free(port):
            return port
    raise RuntimeError("slurm_cluster: no free port found in 20000-32000")


def _accepts_connections(port):
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=1):
            return True
    except OSError:
        return False


def _last_lines(text, n):
    # Harmless on every start (SLURM.md): they would crowd out what explains a failure.
    kept = [l for l in text.splitlines() if l and "pmix" not in l and "MPI: Cannot create context" not in l]
    return "\n".join(kept[-n:]) + ("\n" if kept else "")


# ---------------------------------------------------------------------------------------------
# The cluster


class SlurmCluster:
    """A single-node cluster: started by start() (or entering the context), gone after close()
    (or leaving it). close() is bounded (about 5 s when a job ignores SIGTERM) and never raises."""

    def __init__(self, cpus=2, kill_wait=5, min_job_age=10, extra_conf=(), start_timeout=15.0):
        self.cpus = cpus
        self.kill_wait = kill_wait
        self.min_job_age = min_job_age
        self.extra_conf = list(extra_conf)
        self.start_timeout = start_timeout
        self.dir = None
        self.node = None
        self.ctld_port = self.slurmd_port = 0
        self._ctld = self._slurmd = None  # Popen
        self._sessions = set()  # session ids of this cluster's processes (see _track_and_reap)
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._reaper = None
        self._closed = False

    # -- lifecycle ------------------------------------------------------------------------------

    def __enter__(self):
        self.start()
        return self

    def __exit__(self, *exc):
        self.close()
        return False

    def start(self):
        why = unavailable_reason()
        if why:
            raise RuntimeError("slurm_cluster: " + why)
        # slurmd double-forks each slurmstepd, and a job's background processes outlive its
        # script: as a subreaper this process gets them all, can reap them and find them at
        # teardown. Without it they would become init's, which may not reap (SLURM.md pitfall 5).
        become_subreaper()
        failures = []
        for attempt in range(1, 4):
            try:
                ok, failure = self._start_once()
            except BaseException:
                self._abandon_start()
                raise
            if ok:
                self._reaper = threading.Thread(target=self._reap_loop, name="slurm-reaper", daemon=True)
                self._reaper.start()
                return self
            failures.append(f"attempt {attempt}: {failure}")
        raise RuntimeError("slurm_cluster: did not start\n" + "\n".join(failures))

    def _start_once(self):
        """One try with fresh ports and a fresh directory. (False, why) with everything cleaned
        up when a daemon exits early (what a port taken meanwhile looks like); raises when the
        node does not become idle in time."""
        rng = random.Random(os.urandom(8))
        self.ctld_port = _pick_port(rng, 0)
        self.slurmd_port = _pick_port(rng, self.ctld_port)
        # Named after the controller's port: a client that reached another cluster's controller
        # on a port we thought free never sees our node idle.
        self.node = f"node{self.ctld_port}"
        self.dir = tempfile.mkdtemp(prefix="arun-slurm-")
        for sub in ("etc", "state", "log", "run", f"spool/{self.node}"):  # slurmd creates spool late
            os.makedirs(os.path.join(self.dir, sub), exist_ok=True)
        with open(os.path.join(self.dir, "etc", "plugstack.conf"), "w"):
            pass
        with open(self.conf_path(), "w") as f:
            f.write(self.render_conf())
        self._ctld = self._spawn("slurmctld", ["-D", "-f", self.conf_path()])
        deadline = time.monotonic() + self.start_timeout
        listening = False
        last = ""
        while True:
            for name, proc in (("slurmctld", self._ctld), ("slurmd", self._slurmd)):
                if proc is not None and proc.poll() is not None:
                    # Typically "fatal: ... Address already in use": the last lines say it.
                    failure = (f"{name} exited (status {proc.returncode}): "
                               + _last_lines(_read(os.path.join(self.dir, "log", name + ".out")).decode(errors="replace"), 2))
                    self._abandon_start()
                    return False, failure
            # Clients retry a controller that is not there for many seconds: ask only once it
            # listens (and probe only until then: each probe logs an error in slurmctld.log).
            if not listening and _accepts_connections(self.ctld_port):
                listening = True
                # slurmd only now: its first registration then succeeds.
                self._slurmd = self._spawn("slurmd", ["-D", "-f", self.conf_path(), "-N", self.node])
            if listening:
                r = self.run_client(["sinfo", "-h", "-o", "%N %T"], timeout=2)
                last = r.stdout + r.stderr
                if f"{self.node} idle" in r.stdout.splitlines():
                    return True, ""
            if time.monotonic() >= deadline:
                failure = (f"node {self.node} not idle after {self.start_timeout:.0f} s (sinfo: {last.strip()})\n"
                           + self.log_tail())
                self._abandon_start()
                raise RuntimeError("slurm_cluster: " + failure)
            time.sleep(0.05)

    def _abandon_start(self):
        self._stop_daemons(0)
        self._kill_leftovers(2.0)
        if self.dir:
            shutil.rmtree(self.dir, ignore_errors=True)
        self._ctld = self._slurmd = None

    def _spawn(self, tool, args):
        log = open(os.path.join(self.dir, "log", tool + ".out"), "wb")
        try:
            # cwd: each slurmstepd inherits slurmd's, which is how the reaper recognises ours.
            # Own session: their helpers are recognised by it, and no terminal signal reaches them.
            # Popen resets SIGPIPE & co. (restore_signals); _die_with_parent: a SIGKILLed tool
            # does not leave the daemons running (its jobs then end on their own).
            return subprocess.Popen([shutil.which(tool)] + args, cwd=self.dir, env=self._client_env(),
                                    stdin=subprocess.DEVNULL, stdout=log, stderr=log, start_new_session=True,
                                    preexec_fn=_die_with_parent(os.getpid()))
        finally:
            log.close()

    def close(self):
        """scancel everything, stop both daemons, SIGKILL whatever of the cluster is left, and
        remove dir. Ctrl-C and SIGTERM are ignored meanwhile (when called from the main thread),
        so an impatient second Ctrl-C does not leave daemons behind."""
        if self._closed or self.dir is None:
            return
        self._closed = True
        saved = {}
        if threading.current_thread() is threading.main_thread():
            for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
                try:
                    saved[sig] = signal.signal(sig, signal.SIG_IGN)
                except (OSError, ValueError):
                    pass
        try:
            drained = False
            try:
                # Cancel, then cancel again what is still there: a job submitted while squeue ran
                # is caught by the next round. No client call once slurmctld is gone or not
                # listening (clients would retry it for seconds).
                deadline = time.monotonic() + 5.0
                while (not drained and time.monotonic() < deadline and self._ctld is not None
                       and self._ctld.poll() is None and _accepts_connections(self.ctld_port)):
                    left = deadline - time.monotonic()
                    ids = [j for j, _, _ in self.queue(timeout=min(max(left, 0.1), 2.0), check=False)]
                    if ids:
                        self.run_client(["scancel"] + ids, timeout=min(max(left, 0.1), 2.0))
                    left = deadline - time.monotonic()
                    if left > 0:
                        drained = self.wait_queue_empty(min(left, 1.0))
            except Exception:
                pass
            self._stop.set()
            if self._reaper is not None:
                self._reaper.join(timeout=5)
            # A job still there (one that ignores SIGTERM takes KillWait) keeps its slurmstepd
            # alive, and slurmd does not exit on SIGTERM while one is: waiting would only cost more.
            self._stop_daemons(5.0 if drained else 0.0)
            self._kill_leftovers(3.0)
            shutil.rmtree(self.dir, ignore_errors=True)
        finally:
            for sig, handler in saved.items():
                try:
                    signal.signal(sig, handler)
                except (OSError, ValueError, TypeError):
                    pass

    # -- clients ----------------------------------------------------------------------------------

    def conf_path(self):
        return os.path.join(self.dir, "etc", "slurm.conf")

    def env(self):
        """What to add to a child's environment so that Slurm clients talk to this cluster.
        (Also drop the caller's SLURM_* variables: clean_environment does.)"""
        return {"SLURM_CONF": self.conf_path()}

    def _client_env(self):
        env = clean_environment()
        env.update(self.env())
        return env

    def daemon_pids(self):
        return {p.pid for p in (self._ctld, self._slurmd) if p is not None and p.returncode is None}

    def run_client(self, argv, timeout=10.0):
        """A Slurm client against this cluster; stdin /dev/null; killed after timeout.
        Returns a CompletedProcess (returncode -9 and timed_out=True on timeout, 127 when the
        tool is missing)."""
        try:
            r = subprocess.run(argv, env=self._client_env(), stdin=subprocess.DEVNULL, capture_output=True,
                               text=True, timeout=timeout)
            r.timed_out = False
            return r
        except subprocess.TimeoutExpired as e:
            r = subprocess.CompletedProcess(argv, -9, _text(e.stdout), _text(e.stderr))
            r.timed_out = True
            return r
        except OSError as e:
            r = subprocess.CompletedProcess(argv, 127, "", str(e))
            r.timed_out = False
            return r

    def queue(self, name=None, timeout=10.0, check=True):
        """[(job id, job name, state)] of the jobs squeue lists (pending, running, completing:
        finished jobs leave at once), one per array task (123_4); only those named `name` when
        given. Raises RuntimeError when squeue fails (with check), else returns []."""
        argv = ["squeue", "-h", "-r", "-o", "%i|%j|%T"]
        if name:
            argv.append(f"--name={name}")
        r = self.run_client(argv, timeout=timeout)
        if r.returncode != 0:
            if check:
                raise RuntimeError(f"slurm_cluster: squeue failed ({r.returncode}): {r.stderr.strip()}")
            return []
        jobs = []
        for line in r.stdout.splitlines():
            parts = line.strip().split("|")
            if len(parts) == 3:
                jobs.append(tuple(parts))
        return jobs

    def wait_queue_empty(self, timeout, name=None):
        """Polls the queue until it is empty (of jobs named `name`, when given); False on timeout
        or when squeue keeps failing."""
        deadline = time.monotonic() + timeout
        while True:
            left = deadline - time.monotonic()
            argv = ["squeue", "-h", "-o", "%i"] + ([f"--name={name}"] if name else [])
            r = self.run_client(argv, timeout=max(left, 0.1))
            if r.returncode == 0 and not r.stdout.strip():
                return True
            if time.monotonic() >= deadline:
                return False
            time.sleep(0.02)

    def cancel_all(self, name=None, signal_name=None):
        """scancel every job (named `name`, when given): a plain cancel (SIGTERM, SIGKILL after
        KillWait) unless signal_name ("KILL") says otherwise."""
        ids = [j for j, _, _ in self.queue(name=name, check=False)]
        if ids:
            argv = ["scancel"] + ([f"--signal={signal_name}", "--full"] if signal_name else []) + ids
            self.run_client(argv)  # exit code not checked: a job that ended meanwhile makes it complain

    def log_tail(self, lines=15):
        """The last lines of the daemons' logs, for messages."""
        out = []
        for log, fallback in (("slurmctld.log", "slurmctld.out"), (f"slurmd-{self.node}.log", "slurmd.out")):
            name = log
            text = _last_lines(_read(os.path.join(self.dir, "log", log)).decode(errors="replace"), lines)
            if not text:
                name = fallback
                text = _last_lines(_read(os.path.join(self.dir, "log", fallback)).decode(errors="replace"), lines)
            if text:
                out.append(f"== {name} ==\n{text}")
        return "".join(out)

    def render_conf(self):
        d = self.dir
        lines = [
            f"ClusterName=arun{self.ctld_port}",
            "SlurmctldHost=localhost(127.0.0.1)",
            f"SlurmctldPort={self.ctld_port}",
            f"SlurmdPort={self.slurmd_port}",
            "SlurmUser=root",
            "SlurmdUser=root",
            # No munge daemon: the cluster trusts every local client.
            "AuthType=auth/none",
            "CredType=cred/none",
            f"StateSaveLocation={d}/state",
            f"SlurmdSpoolDir={d}/spool/%n",
            f"SlurmctldPidFile={d}/run/slurmctld.pid",
            f"SlurmdPidFile={d}/run/slurmd-%n.pid",
            f"SlurmctldLogFile={d}/log/slurmctld.log",
            f"SlurmdLogFile={d}/log/slurmd-%n.log",
            "SlurmctldDebug=info",
            "SlurmdDebug=info",
            # pgid, not linuxproc: a job's background processes stay in its script's process
            # group, and pgid SIGKILLs that group when the job ends; linuxproc misses re-parented
            # orphans (SLURM.md pitfall 4). Orphans that leave the group (setsid) escape both;
            # close() ends them.
            "ProctrackType=proctrack/pgid",
            "TaskPlugin=task/none",
            "SelectType=select/cons_tres",
            "SelectTypeParameters=CR_Core",
            "SchedulerType=sched/backfill",
            # Pending jobs start at once instead of in 3 s batches (SLURM.md pitfall 2).
            "SchedulerParameters=batch_sched_delay=0,sched_min_interval=0",
            "MpiDefault=none",
            "JobAcctGatherType=jobacct_gather/none",
            "AccountingStorageType=accounting_storage/none",
            "JobCompType=jobcomp/none",
            "ReturnToService=2",
            "MailProg=/bin/true",  # the default /usr/bin/mail is not installed: an error at every start
            f"KillWait={self.kill_wait}",
            f"MinJobAge={self.min_job_age}",
            # An empty plugstack.conf keeps the package's /etc/slurm/plugstack.conf out.
            f"PlugStackConfig={d}/etc/plugstack.conf",
            # RealMemory must not exceed the machine's memory (SLURM.md pitfall 7).
            f"NodeName={self.node} NodeAddr=127.0.0.1 CPUs={self.cpus} RealMemory=1000 State=UNKNOWN",
            # FORCE:32: up to 32 jobs share each CPU, so jobs do not queue behind each other.
            f"PartitionName=debug Nodes={self.node} Default=YES MaxTime=INFINITE State=UP OverSubscribe=FORCE:32",
        ]
        return "\n".join(lines + self.extra_conf) + "\n"

    # -- reaping and teardown ---------------------------------------------------------------------

    def _reap_loop(self):
        while not self._stop.wait(0.02):
            try:
                self._track_and_reap()
            except Exception:  # never end the thread over one bad /proc read
                pass

    def _track_and_reap(self):
        """Every slurmstepd ends up a child of this (subreaper) process, and so does every
        background process a job leaves behind; nobody else reaps them. Reaps only zombies in
        a session of this cluster: one a slurmstepd of this cluster (recognised by its cwd,
        inherited from slurmd) leads or led, or a daemon's own. Other children (the tool's own
        subprocesses) are left to their owners."""
        me = os.getpid()
        table = process_table()
        with self._lock:
            alive_sessions = {st[1] for st in table.values()}
            # Forget dead sessions, so that a recycled pid never makes a stranger's session ours.
            nxt = {s for s in self._sessions if s in alive_sessions}
            daemons = self.daemon_pids()
            nxt |= daemons
            for pid, (ppid, sid, state, comm) in table.items():
                if ppid == me and not _zombie(state) and comm == "slurmstepd" and _under(proc_cwd(pid), self.dir):
                    nxt.add(sid)
            self._sessions = nxt
            for pid, (ppid, sid, state, comm) in table.items():
                if ppid == me and _zombie(state) and sid in nxt and pid not in daemons:
                    _reap(pid)

    def owns_session(self, sid):
        with self._lock:
            return sid in self._sessions

    def _stop_daemons(self, patience):
        """SIGTERM both daemons, wait, then SIGKILL. slurmctld stops at once; slurmd does not
        while a slurmstepd of its is alive (SLURM.md), which _kill_leftovers deals with."""
        procs = [p for p in (self._ctld, self._slurmd) if p is not None]
        for p in procs:
            if p.poll() is None:
                _signal(p.pid, signal.SIGTERM)
        if _wait_all(procs, patience):
            return
        for p in procs:
            if p.poll() is None:
                _signal(p.pid, signal.SIGKILL)
        _wait_all(procs, 2.0)

    def _kill_leftovers(self, patience):
        """SIGKILLs what is left of the cluster and reaps what is ours to reap, until nothing is
        left or patience runs out. Ours: processes in the cluster's sessions re-parented here
        (slurmstepd, job processes, slurmscriptd once slurmctld is gone); anywhere on the
        machine, a slurm* process whose cwd or command line names the cluster's directory, and
        any process started with this cluster's SLURM_CONF (job processes that left the session)."""
        if not self.dir:
            return
        try:
            me = os.getpid()
            conf_entry = f"SLURM_CONF={self.conf_path()}".encode()
            root = self.dir
            deadline = time.monotonic() + patience
            killed = set()
            while True:
                self._track_and_reap()
                left = False
                with self._lock:
                    sessions = set(self._sessions)
                for pid, (ppid, sid, state, comm) in process_table().items():
                    if pid == me:
                        continue
                    in_session = ppid == me and sid in sessions
                    if _zombie(state):
                        if in_session or (ppid == me and pid in killed):
                            _reap(pid)
                            left = True
                        continue
                    ours = in_session
                    if not ours and comm.startswith("slurm"):
                        ours = _under(proc_cwd(pid), root) or root.encode() in _read(f"/proc/{pid}/cmdline")
                    if not ours:
                        ours = conf_entry in _read(f"/proc/{pid}/environ").split(b"\0")
                    if ours:
                        _signal(pid, signal.SIGKILL)
                        if ppid == me:
                            killed.add(pid)
                        left = True
                if not left or time.monotonic() >= deadline:
                    return
                time.sleep(0.01)
        except Exception:
            pass


def _die_with_parent(parent):
    """A preexec_fn: SIGKILL the child when this process dies (PR_SET_PDEATHSIG). Only used
    while no other thread runs (the reaper starts after the daemons)."""
    try:
        import ctypes

        prctl = ctypes.CDLL(None, use_errno=True).prctl
    except (OSError, AttributeError):
        return None

    def set_deathsig():
        prctl(1, int(signal.SIGKILL), 0, 0, 0)  # PR_SET_PDEATHSIG
        if os.getppid() != parent:  # died before the prctl
            os._exit(1)

    return set_deathsig


def _text(b):
    if b is None:
        return ""
    return b.decode(errors="replace") if isinstance(b, bytes) else b


def _signal(pid, sig):
    try:
        os.kill(pid, sig)
    except OSError:
        pass


def _reap(pid):
    try:
        os.waitpid(pid, os.WNOHANG)
    except OSError:
        pass


def _wait_all(procs, patience):
    """Polls (never blocks: a process stuck in the kernel must not hang the tool) until every
    Popen has ended; whether all have."""
    deadline = time.monotonic() + patience
    while True:
        if all(p.poll() is not None for p in procs):
            return True
        if time.monotonic() >= deadline:
            return False
        time.sleep(0.01)
