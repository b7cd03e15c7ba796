#!/usr/bin/env python3
"""Where the Kotlin peer's CPU per unary call goes, by thread.

Drives one Kotlin server and one Kotlin client by hand on loopback (docs/peer-protocol.md
lifecycle; unary, 256 B) and reads every thread's CPU time (/proc/PID/task/TID/schedstat, ns) and
voluntary context switches of both JVMs: idle for IDLE_S seconds between `armed` and START, then
over the window (START to the sample event). Threads are grouped by name without their number.
A throwaway CA and a 127.0.0.1 certificate are made with openssl in a temporary directory.

usage: thread-cpu.py STACK LOAD-ARGS... -- WARMUP_MS WINDOW_MS IDLE_S
  e.g. flock /tmp/rpcarena-measure.lock ./thread-cpu.py grpc --load open --rate 120 --concurrency 4 -- 20000 10000 10
"""
import json, os, re, subprocess, sys, tempfile, time, collections
PEER = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "bin", "rpcarena-peer-kotlin")
PKI = tempfile.mkdtemp(prefix="kotlin-thread-cpu-")

def pki():
    def run(*a):
        subprocess.run(["openssl", *a], cwd=PKI, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    run("genpkey", "-algorithm", "EC", "-pkeyopt", "ec_paramgen_curve:P-256", "-out", "ca.key")
    run("req", "-x509", "-new", "-key", "ca.key", "-subj", "/CN=thread-cpu-ca", "-days", "1", "-out", "ca.pem")
    run("genpkey", "-algorithm", "EC", "-pkeyopt", "ec_paramgen_curve:P-256", "-out", "key.pem")
    run("req", "-new", "-key", "key.pem", "-subj", "/CN=127.0.0.1", "-out", "leaf.csr")
    with open(os.path.join(PKI, "ext"), "w") as f:
        f.write("subjectAltName=IP:127.0.0.1\nbasicConstraints=CA:FALSE\nkeyUsage=digitalSignature\nextendedKeyUsage=serverAuth\n")
    run("x509", "-req", "-in", "leaf.csr", "-CA", "ca.pem", "-CAkey", "ca.key", "-CAcreateserial", "-days", "1", "-extfile", "ext", "-out", "cert.pem")

argv = sys.argv[1:]
cut = argv.index("--")
stack, load = argv[0], argv[1:cut]
warmup, window, idle = argv[cut + 1], argv[cut + 2], float(argv[cut + 3])

def threads(pid):
    out = {}
    for tid in os.listdir(f"/proc/{pid}/task"):
        try:
            comm = open(f"/proc/{pid}/task/{tid}/comm").read().strip()
            ns = int(open(f"/proc/{pid}/task/{tid}/schedstat").read().split()[0])
            sw = open(f"/proc/{pid}/task/{tid}/status").read()
            vol = int(re.search(r"voluntary_ctxt_switches:\s+(\d+)", sw).group(1))
            out[tid] = (comm, ns, vol)
        except (FileNotFoundError, ProcessLookupError):
            pass
    return out

def group(comm):
    return re.sub(r"[-#\s]*\d+$", "", comm)

def delta(a, b):
    g = collections.defaultdict(lambda: [0, 0])
    for tid, (comm, ns, vol) in b.items():
        ns0, vol0 = (a[tid][1], a[tid][2]) if tid in a else (0, 0)
        g[group(comm)][0] += ns - ns0
        g[group(comm)][1] += vol - vol0
    return g

def line(p):
    l = p.stdout.readline()
    if not l:
        raise SystemExit(f"peer ended: {p.args}")
    return json.loads(l)

pki()

srv = subprocess.Popen([PEER, "server", "--stack", stack, "--listen", "127.0.0.1:0", "--cert", f"{PKI}/cert.pem", "--key", f"{PKI}/key.pem"],
                       stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
ready = line(srv)
cli = subprocess.Popen([PEER, "client", "--stack", stack, "--server", ready["address"], "--server-name", "127.0.0.1", "--ca", f"{PKI}/ca.pem",
                        "--shape", "unary", "--request-size", "256", "--response-size", "256", "--messages-per-stream", "1",
                        *load, "--warmup-ms", warmup, "--window-ms", window, "--drain-ms", "2000"],
                       stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
armed = line(cli)
assert armed["event"] == "armed", armed
pids = {"client": cli.pid, "server": srv.pid}
s0 = {k: threads(v) for k, v in pids.items()}
time.sleep(idle)
s1 = {k: threads(v) for k, v in pids.items()}
t1 = time.monotonic()
cli.stdin.write("START\n"); cli.stdin.flush()
sample = line(cli)
t2 = time.monotonic()
s2 = {k: threads(v) for k, v in pids.items()}
for p in (cli, srv):
    p.stdin.write("SHUTDOWN\n"); p.stdin.flush()
for p in (cli, srv):
    p.wait(10)
import shutil
shutil.rmtree(PKI)
done = int(sample["completed"])
span = t2 - t1
print(f"== {stack} {' '.join(load)} warmup {warmup} ms: warmup_completed {armed.get('warmup_completed')}, window {window} ms: completed {done} ({done/span:.0f}/s over START..sample {span:.2f} s), failed {sample['failed']}")
for role in ("client", "server"):
    idle_g = delta(s0[role], s1[role])
    win_g = delta(s1[role], s2[role])
    tot_i = sum(v[0] for v in idle_g.values()); tot_w = sum(v[0] for v in win_g.values())
    print(f"  {role}: idle {tot_i/1e6/idle:.1f} ms CPU per s; window {tot_w/1e3/done:.0f} us CPU per call ({tot_w/1e6/span:.0f} ms per s)")
    for name in sorted(win_g, key=lambda n: -win_g[n][0]):
        w = win_g[name]; i = idle_g.get(name, [0, 0])
        if w[0] < 0.01 * tot_w and i[0] < 0.05 * tot_i:
            continue
        print(f"    {name:18s} window {w[0]/1e3/done:7.1f} us/call {w[1]/done:6.2f} wakeups/call | idle {i[0]/1e6/idle:6.2f} ms/s {i[1]/idle:7.1f} wakeups/s")
