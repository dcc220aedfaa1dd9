"""e2e_job — start an MPI job under otfx-run for an end-to-end test, and end it cleanly.

    job = Job(args, ranks=8, places=3, extra=["--buffer", "1M"])
    session = job.start()        # waits for the root's session file
    ...                          # steer and query it (otfx_client, otfxctl)
    output = job.finish()        # creates the stop file, waits, checks exit 0 and "verification OK"
"""
import argparse
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "tbon", "python"))
import otfx_client  # noqa: E402


def arguments(description):
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--otfx-run", required=True)
    parser.add_argument("--otfxctl", required=True)
    parser.add_argument("--example", required=True, help="the stencil example")
    parser.add_argument("--work", default=None, help="working directory (default: a new temporary one)")
    return parser.parse_args()


class Failure(Exception):
    pass


def check(condition, message):
    if not condition:
        raise Failure(message)
    print(f"ok: {message}", flush=True)


class Job:
    def __init__(self, args, ranks, places, extra=(), example_args=(), name="e2e"):
        self.args = args
        self.ranks = ranks
        self.places = places
        self.work = args.work or tempfile.mkdtemp(prefix=f"otfx-{name}-")
        shutil.rmtree(self.work, ignore_errors=True)  # earlier runs' snapshots and session files
        os.makedirs(self.work)
        self.stop_file = os.path.join(self.work, "stop")
        self.log_path = os.path.join(self.work, "job.log")
        self.command = [os.path.abspath(args.otfx_run), "-n", str(ranks), "--places", str(places), "--session-dir", self.work,
                        "--snapshot-dir", self.work, "--job-id", name, *extra, "--", os.path.abspath(args.example),
                        "--until-file", self.stop_file, *example_args]
        self.process = None
        self.started = 0.0

    def start(self, timeout=60.0):
        if os.path.exists(self.stop_file):
            os.unlink(self.stop_file)
        env = dict(os.environ)
        env.setdefault("MPIR_CVAR_POLLS_BEFORE_YIELD", "10")
        self.started = time.time()
        self.log = open(self.log_path, "wb")
        print("job: " + " ".join(self.command), flush=True)
        self.process = subprocess.Popen(self.command, stdout=self.log, stderr=subprocess.STDOUT, cwd=self.work,
                                        env=env, start_new_session=True)
        deadline = time.monotonic() + timeout
        while True:
            try:
                return otfx_client.read_session(self.work, timeout=0.5, newer_than=self.started - 1)
            except TimeoutError:
                if self.process.poll() is not None:
                    raise Failure(f"the job ended before its session file appeared:\n{self.output()}")
                if time.monotonic() > deadline:
                    raise Failure(f"no session file after {timeout} s:\n{self.output()}")

    def client(self, session, **kwargs):
        return otfx_client.Client(session, **kwargs)

    def output(self):
        self.log.flush()
        with open(self.log_path, "rb") as handle:
            return handle.read().decode("utf-8", "replace")

    def finish(self, timeout=120.0, expect_ok=True):
        open(self.stop_file, "w").close()
        try:
            status = self.process.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            os.killpg(self.process.pid, signal.SIGKILL)
            raise Failure(f"the job did not end within {timeout} s of the stop file:\n{self.output()}")
        output = self.output()
        if expect_ok:
            check(status == 0, f"the job exited with 0 (got {status})")
            check("verification OK" in output, "the application verified its result")
        return output

    def kill(self):
        if self.process and self.process.poll() is None:
            open(self.stop_file, "w").close()
            try:
                self.process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                os.killpg(self.process.pid, signal.SIGKILL)


def run(main):
    """Runs main(args) and turns a Failure into exit code 1 with the job's output."""
    args = arguments(main.__doc__ or "")
    try:
        main(args)
    except (Failure, otfx_client.ServerError, ConnectionError, TimeoutError) as failure:
        print(f"FAIL: {failure}", flush=True)
        sys.exit(1)
    print("PASS", flush=True)
