#!/usr/bin/env python3
"""Scan a remote_segments source on a Dask distributed cluster, one task per shard.

Each task runs the DuckDB CLI with the extension over shard k of n
(remote_segments(source, shard := 'k/n')) and returns that shard's
per-segment partial aggregates. A segment lies in exactly one shard, so the
client combines them by concatenation, and checks the totals against the
data generator's expected.csv when one is given.

    shards.py --scheduler tcp://HOST:8786 --source s3://bucket/ds/ --shards 8
    shards.py --local-cluster 2 --source s3://bucket/ds/ --shards 3 --kill-one

The workers need the DuckDB CLI and the extension at the paths given
(--duckdb, --ext) and their own S3 credentials in the environment
(REMOTE_SEGMENTS_S3_ENDPOINT, REMOTE_SEGMENTS_S3_ACCESS_KEY_ID, ... or the
AWS default chain): no credential travels through the scheduler.

--local-cluster N starts a scheduler and N workers on 127.0.0.1 (one thread
each, no nanny, each in its own process group); --kill-one then kills, with
SIGKILL, the first worker seen running a DuckDB, with that DuckDB, while it
scans: Dask runs the task again on a live worker.
"""

import argparse
import csv
import json
import os
import re
import signal
import subprocess
import sys
import tempfile
import time

from distributed import Client, Queue, as_completed, get_worker

# The partial aggregates of one shard, and what the scan did. Any
# aggregate that combines across segments by concatenation works the same.
SHARD_QUERY = """\
LOAD '{ext}';
SELECT segment_id, count(*)::BIGINT AS rows, sum(x)::BIGINT AS sum_x, min(x) AS min_x, max(x) AS max_x,
       count(s)::BIGINT AS strings
FROM remote_segments('{source}', shard := '{k}/{n}') GROUP BY ALL ORDER BY 1;
SELECT chunks, pruned, gets, wall_ms FROM remote_segments_stats();
"""

PLAN_QUERY = """\
LOAD '{ext}';
SELECT shard, count(*)::BIGINT AS chunks, count(DISTINCT segment_id)::BIGINT AS segments
FROM remote_segments_chunks('{source}', shards := {n}) GROUP BY ALL ORDER BY 1;
"""


def sql_text(s):
    return s.replace("'", "''")


def run_duckdb(duckdb, sql, started=None):
    """Runs sql in a DuckDB CLI process; returns its result sets (JSON).

    started, if given, is called with the process id once it runs."""
    proc = subprocess.Popen([duckdb, "-unsigned", "-batch", "-init", "/dev/null", "-json", "-c", sql],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    if started:
        started(proc.pid)
    out, err = proc.communicate()
    if proc.returncode != 0:
        raise RuntimeError("duckdb exited with %d: %s" % (proc.returncode, err.strip() or out.strip()))
    results, dec, i = [], json.JSONDecoder(), 0
    while True:
        while i < len(out) and out[i].isspace():
            i += 1
        if i == len(out):
            return results
        value, i = dec.raw_decode(out, i)
        results.append(value)


def scan_shard(k, n, source, duckdb, ext):
    """The task: scan shard k of n on this worker. Runs on a Dask worker."""
    worker = get_worker()
    t0 = time.monotonic()

    def started(pid):
        # Tell the client where the shard runs (the demo's kill uses it).
        Queue("shard-started").put({"shard": k, "worker": worker.address, "worker_pid": os.getpid(), "duckdb_pid": pid})

    results = run_duckdb(duckdb, SHARD_QUERY.format(ext=sql_text(ext), source=sql_text(source), k=k, n=n), started)
    segments = results[0] if results else []
    stats = results[1][0] if len(results) > 1 else {}
    return {"shard": k, "worker": worker.address, "worker_pid": os.getpid(), "segments": segments,
            "stats": stats, "seconds": time.monotonic() - t0}


def plan(duckdb, ext, source, n):
    """Chunks and segments per shard, from remote_segments_chunks (no chunk is read)."""
    results = run_duckdb(duckdb, PLAN_QUERY.format(ext=sql_text(ext), source=sql_text(source), n=n))
    return {r["shard"]: r for r in (results[0] if results else [])}


class LocalCluster:
    """A scheduler and workers on 127.0.0.1, each process in its own group."""

    def __init__(self, workers):
        self.dir = tempfile.mkdtemp(prefix="rs-dask-")
        self.file = os.path.join(self.dir, "scheduler.json")
        self.procs = []
        self.log = open(os.path.join(self.dir, "cluster.log"), "w")
        py = sys.executable
        self._start([py, "-m", "distributed.cli.dask_scheduler", "--host", "127.0.0.1", "--port", "0",
                     "--no-dashboard", "--scheduler-file", self.file])
        # The workers start at once: they wait for the scheduler's file.
        self.workers = [self._start([py, "-m", "distributed.cli.dask_worker", "--scheduler-file", self.file,
                                     "--host", "127.0.0.1", "--nthreads", "1", "--no-nanny", "--no-dashboard",
                                     "--name", "worker-%d" % i]) for i in range(workers)]

    def _start(self, argv):
        p = subprocess.Popen(argv, stdout=self.log, stderr=subprocess.STDOUT, start_new_session=True)
        self.procs.append(p)
        return p

    def close(self):
        for p in reversed(self.procs):
            if p.poll() is None:
                os.killpg(p.pid, signal.SIGTERM)
        for p in self.procs:
            try:
                p.wait(timeout=10)
            except subprocess.TimeoutExpired:
                os.killpg(p.pid, signal.SIGKILL)
                p.wait()
        self.log.close()


def kill_first_scanning(cluster, addresses, n, log):
    """SIGKILLs the first worker seen running a DuckDB, with that DuckDB.

    It watches the workers' child processes (every 5 ms) rather than waiting
    for a message from the task, so the kill lands while the DuckDB scans:
    its shard comes from its command line. addresses maps worker pid to
    address."""
    import psutil  # a dependency of distributed
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        for w in cluster.workers:
            try:
                kids = psutil.Process(w.pid).children(recursive=True)
            except psutil.NoSuchProcess:
                continue
            for d in kids:
                try:
                    cmd = " ".join(d.cmdline())
                    age = time.time() - d.create_time()
                except psutil.NoSuchProcess:
                    continue
                m = re.search(r"shard := '(\d+)/\d+'", cmd)
                if not m:
                    continue
                os.killpg(w.pid, signal.SIGKILL)  # the worker and its DuckDB child
                w.wait()
                log("KILL  worker %s (pid %d) while its DuckDB (pid %d, started %.0f ms before) scans shard %s/%d: "
                    "SIGKILL to the worker's process group" % (addresses.get(w.pid, "?"), w.pid, d.pid, age * 1000, m.group(1), n))
                return {"shard": int(m.group(1)), "worker_pid": w.pid}
        time.sleep(0.005)
    raise RuntimeError("no worker started a DuckDB within 120 s")


def read_expected(path):
    with open(path) as f:
        return {r["segment_id"]: r for r in csv.DictReader(f)}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--scheduler", help="address of a running scheduler (tcp://host:port)")
    ap.add_argument("--local-cluster", type=int, metavar="N", help="start a scheduler and N workers on 127.0.0.1")
    ap.add_argument("--source", required=True, help="the remote_segments source (glob, prefix, catalog)")
    ap.add_argument("--shards", type=int, default=2)
    ap.add_argument("--duckdb", required=True, help="DuckDB CLI on the workers")
    ap.add_argument("--ext", required=True, help="remote_segments.duckdb_extension on the workers")
    ap.add_argument("--expected", help="expected.csv of the data generator, to check the answer")
    ap.add_argument("--kill-one", action="store_true", help="with --local-cluster: kill a worker mid-run")
    args = ap.parse_args()
    if bool(args.scheduler) == bool(args.local_cluster):
        ap.error("give one of --scheduler and --local-cluster")
    if args.kill_one and not args.local_cluster:
        ap.error("--kill-one needs --local-cluster (it kills a worker process it started)")
    t0 = time.monotonic()

    def log(msg):
        print("[%6.2fs] %s" % (time.monotonic() - t0, msg), flush=True)

    n = args.shards
    cluster = LocalCluster(args.local_cluster) if args.local_cluster else None
    try:
        # Planning needs no cluster: it runs while the processes start.
        expect = plan(args.duckdb, args.ext, args.source, n)
        log("PLAN  remote_segments_chunks(%r, shards := %d): %s" % (args.source, n, ", ".join(
            "shard %d: %d chunks / %d segments" % (k, expect[k]["chunks"], expect[k]["segments"]) if k in expect
            else "shard %d: empty" % k for k in range(n))))
        client = Client(scheduler_file=cluster.file) if cluster else Client(args.scheduler)
        if cluster:
            client.wait_for_workers(args.local_cluster, timeout=120)
        log("DASK  scheduler %s, workers %s" % (client.scheduler.address,
                                                 ", ".join(sorted(client.scheduler_info()["workers"]))))
        addresses = {pid: addr for addr, pid in client.run(os.getpid).items()}
        queue = Queue("shard-started", client=client)
        futures = [client.submit(scan_shard, k, n, args.source, args.duckdb, args.ext, key="shard-%d-of-%d" % (k, n),
                                 pure=False, retries=2) for k in range(n)]  # a shard that fails runs again
        killed, parts, ok = None, [], True

        def show_starts():
            while queue.qsize() > 0:
                ev = queue.get()
                log("START shard %d/%d on %s (worker pid %d, DuckDB pid %d)" % (
                    ev["shard"], n, ev["worker"], ev["worker_pid"], ev["duckdb_pid"]))

        if args.kill_one:
            killed = kill_first_scanning(cluster, addresses, n, log)
        for fut in as_completed(futures):
            show_starts()
            p = fut.result()
            parts.append(p)
            st = p["stats"]
            log("DONE  shard %d/%d on %s: %d segments, %d chunks read, %d pruned, %.2f s%s" % (
                p["shard"], n, p["worker"], len(p["segments"]), st.get("chunks", -1), st.get("pruned", -1), p["seconds"],
                "  <- run again: its first worker was killed" if killed and p["shard"] == killed["shard"] else ""))
            want = expect.get(p["shard"], {"chunks": 0})["chunks"]
            if st.get("chunks") != want:
                log("FAIL  shard %d read %s chunks; remote_segments_chunks planned %d" % (p["shard"], st.get("chunks"), want))
                ok = False
        if killed:
            # The scheduler's own record: a task that was processing on a
            # worker when it died is "suspicious" and runs again elsewhere
            # (after allowed-failures = 3 such deaths, it fails).
            suspicious = client.run_on_scheduler(
                lambda dask_scheduler: {k: ts.suspicious for k, ts in dask_scheduler.tasks.items()})
            log("DASK  workers alive: %d; tasks that were processing on the dead worker (suspicious): %s" % (
                len(client.scheduler_info()["workers"]),
                ", ".join("%s (%d time)" % (k, v) for k, v in sorted(suspicious.items()) if v) or "none"))
        client.close()
    finally:
        if cluster:
            cluster.close()

    if killed:
        redo = [p for p in parts if p["shard"] == killed["shard"]][0]
        if redo["worker_pid"] == killed["worker_pid"]:
            log("FAIL  shard %d's result comes from the killed worker" % killed["shard"])
            ok = False

    # Combine: a segment is in one shard only, so the partials concatenate.
    combined = {}
    for p in parts:
        for row in p["segments"]:
            if row["segment_id"] in combined:
                log("FAIL  segment %s came from two shards" % row["segment_id"])
                ok = False
            combined[row["segment_id"]] = row
    print("segment_id  rows  sum_x  min_x  max_x  strings")
    for seg in sorted(combined):
        r = combined[seg]
        print("%s  %d  %d  %d  %d  %d" % (seg, r["rows"], r["sum_x"], r["min_x"], r["max_x"], r["strings"]))
    total = sum(r["rows"] for r in combined.values())
    log("TOTAL %d rows in %d segments from %d shards" % (total, len(combined), n))
    if args.expected:
        exp = read_expected(args.expected)
        diff = [s for s in set(exp) | set(combined) if s not in exp or s not in combined or (
            int(exp[s]["rows"]), int(exp[s]["sum_x"]), int(exp[s]["min_x"]), int(exp[s]["max_x"]),
            int(exp[s]["rows"]) - int(exp[s]["null_s"])) != (
            combined[s]["rows"], combined[s]["sum_x"], combined[s]["min_x"], combined[s]["max_x"], combined[s]["strings"])]
        if diff:
            log("FAIL  segments differing from %s: %s" % (args.expected, ", ".join(sorted(diff))))
            ok = False
        else:
            log("OK    the combined answer equals %s (%d segments: rows, sum_x, min_x, max_x, strings)" % (args.expected, len(exp)))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
