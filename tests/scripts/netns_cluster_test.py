#!/usr/bin/env python3
"""A cluster of real hosts on one machine (scripts/netns_cluster.sh): four network namespaces on a
bridge, each with its own address, sshd and shaped link. `flexgraph launch --hosts` starts the
workers there over ssh with mutual TLS, and:
  1. a 4-host run equals one process (losses within 1e-4 relative), every worker on its own address;
  2. a link taken down mid-run is detected within the heartbeat timeout and named (rank and host),
     and with --restart_on_failure the run resumes from a checkpoint, once the link is back, to the
     uninterrupted losses;
  3. mpirun over the same hosts file (ssh from the same config, TCP over the bridge) equals one
     process, one rank per host;
  4. nothing is left afterwards: no process or listening socket of the runs, and after `down` no
     namespace, link, sshd or state directory; `down` is idempotent, and an `up` that fails half-way
     removes what it made.
Needs root and network namespaces: without them the test fails (it never skips).
usage: netns_cluster_test.py FLEXGRAPH_BINARY SCRIPTS_DIR [unittest arguments, e.g. -k mpi]
"""
import fcntl
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
import unittest

FLEXGRAPH = ""
SCRIPT = ""
STATE = ""  # $FG_NETNS_DIR of the cluster under test
HOSTS = ["10.77.0.1", "10.77.0.2", "10.77.0.3", "10.77.0.4"]
EPOCHS = 300
HEARTBEAT = 3  # seconds


def run(cmd, timeout=120, env=None, check=True):
    p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                       timeout=timeout, env=env)
    if check and p.returncode != 0:
        raise AssertionError(f"{' '.join(cmd)} exited with {p.returncode}:\n{p.stdout}")
    return p


def losses(path):
    with open(path) as f:
        summary = json.load(f)
    if "losses" not in summary:
        raise AssertionError(f"{path}: no losses in the summary")
    return summary


def our_namespaces():
    out = run(["ip", "netns", "list"]).stdout.split()
    return [n for n in out if n.startswith("fgns") and n[4:].isdigit()]


def namespace_pids(ns):
    return [int(p) for p in run(["ip", "netns", "pids", ns], check=False).stdout.split()]


def cmdline(pid):
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            return f.read().replace(b"\0", b" ").decode(errors="replace")
    except OSError:
        return ""


class NetnsCluster(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        if os.geteuid() != 0:
            raise AssertionError("the netns cluster test needs root (network namespaces, a bridge, "
                                 f"sshd), running as uid {os.geteuid()}")
        cls.env = dict(os.environ, FG_NETNS_DIR=STATE)
        # One cluster per machine (fixed names): suites of two builds take turns.
        cls.lock = open("/tmp/fg-netns-test.lock", "w")
        deadline = time.monotonic() + 150
        while True:
            try:
                fcntl.flock(cls.lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if time.monotonic() > deadline:
                    raise AssertionError("/tmp/fg-netns-test.lock: another netns cluster test held it for 150 s")
                time.sleep(0.5)
        if os.path.exists(STATE) or our_namespaces():
            raise AssertionError(f"a netns cluster is up already ({STATE} or namespaces fgns*): "
                                 f"{SCRIPT} down removes it")
        cls.tmp = tempfile.mkdtemp(prefix="fg_netns_test_")
        d = cls.tmp
        run([FLEXGRAPH, "generate", "sbm:nodes=2000,classes=4,features=16", "--out", f"{d}/sbm",
             "--threads", "1"])
        # A CA and a certificate it signs for every address peers dial (mutual TLS).
        subj = ["-days", "2", "-subj", "/CN=fg-netns"]
        run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", f"{d}/ca.key",
             "-out", f"{d}/ca.pem"] + subj)
        run(["openssl", "req", "-newkey", "rsa:2048", "-nodes", "-keyout", f"{d}/node.key", "-out",
             f"{d}/node.csr"] + subj)
        with open(f"{d}/ext.cnf", "w") as f:
            f.write("subjectAltName=" + ",".join(f"IP:{h}" for h in HOSTS + ["10.77.0.254"]) + "\n")
        run(["openssl", "x509", "-req", "-in", f"{d}/node.csr", "-CA", f"{d}/ca.pem", "-CAkey",
             f"{d}/ca.key", "-CAcreateserial", "-out", f"{d}/node.pem", "-days", "2", "-extfile",
             f"{d}/ext.cnf"])
        cls.train = ["--", "train", "--dataset", f"{d}/sbm", "--epochs", str(EPOCHS), "--threads",
                     "1", "--quiet"]
        run([FLEXGRAPH] + cls.train[1:] + ["--summary_json", f"{d}/single.json"])
        p = run(["timeout", "-k", "5", "60", SCRIPT, "up", "4", f"{d}/hosts", "--rate", "10gbit"],
                env=cls.env, check=False)
        if p.returncode != 0:
            raise AssertionError(f"netns_cluster.sh up 4 failed (exit {p.returncode}):\n{p.stdout}")

    @classmethod
    def tearDownClass(cls):
        subprocess.run(["timeout", "-k", "5", "60", SCRIPT, "down"], env=cls.env, check=False)
        shutil.rmtree(cls.tmp, ignore_errors=True)
        cls.lock.close()

    def launch(self, name, extra=(), train_extra=(), **kw):
        d = self.tmp
        cmd = ["timeout", "-k", "5", "90", FLEXGRAPH, "launch", "--quiet", "--workers", "4", "--hosts",
               f"{d}/hosts", "--ssh", f"ssh -F {STATE}/ssh_config", "--coordinator_host", "10.77.0.254",
               "--heartbeat_timeout", str(HEARTBEAT), "--log_dir", f"{d}/{name}", "--tls_cert",
               f"{d}/node.pem", "--tls_key", f"{d}/node.key", "--tls_ca", f"{d}/ca.pem"]
        cmd += list(extra) + self.train + ["--summary_json", f"{d}/{name}.json"] + list(train_extra)
        return cmd

    def test_1_four_hosts_match_one_process(self):
        d = self.tmp
        p = run(self.launch("hosts4"), timeout=120, check=False)
        self.assertEqual(p.returncode, 0, p.stdout)
        single, dist = losses(f"{d}/single.json")["losses"], losses(f"{d}/hosts4.json")["losses"]
        self.assertEqual(len(single), EPOCHS)
        self.assertEqual(len(dist), EPOCHS)
        for e, (a, b) in enumerate(zip(single, dist)):
            self.assertLessEqual(abs(a - b), 1e-4 * abs(a), f"epoch {e + 1}: {a} vs {b}")
        # Each worker ran in its own namespace, on its own address, and registered from there.
        with open(f"{d}/hosts4/coordinator.log") as f:
            coordinator = f.read()
        for r, h in enumerate(HOSTS):
            with open(f"{d}/hosts4/worker-{r}.log") as f:
                self.assertIn(f"worker {r} of 4 at {h}:", f.read())
            self.assertIn(f"worker {r} registered from {h}:", coordinator)

    def test_2_link_down_is_named_and_restart_recovers(self):
        d = self.tmp
        ref = f"{d}/hosts4.json"
        if not os.path.exists(ref):  # run alone
            run(self.launch("hosts4"), timeout=120)
        ckpt = f"{d}/ckpt"
        cmd = self.launch("cut", extra=["--restart_on_failure", "--max_restarts", "2"],
                          train_extra=["--checkpoint_dir", ckpt, "--checkpoint_every", "10"])
        launcher = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        output = []
        named = None
        try:
            deadline = time.monotonic() + 60
            while not os.path.exists(f"{ckpt}/checkpoint.pb"):
                self.assertIsNone(launcher.poll(), "the run ended before its first checkpoint")
                self.assertLess(time.monotonic(), deadline, "no checkpoint within 60 s")
                time.sleep(0.05)
            # Host 2 (worker 2) loses its link mid-run; the coordinator's log says when it noticed.
            run([SCRIPT, "link", "2", "down"], env=self.env)
            cut = time.monotonic()
            log = f"{d}/cut/coordinator.log"
            while named is None and time.monotonic() - cut < 30:
                with open(log) as f:
                    if "missed heartbeats" in f.read():
                        named = time.monotonic() - cut
                time.sleep(0.05)
            run([SCRIPT, "link", "2", "up"], env=self.env)
            output.append(launcher.communicate(timeout=90)[0])
        finally:
            subprocess.run([SCRIPT, "link", "2", "up"], env=self.env, check=False)
            if launcher.poll() is None:
                launcher.kill()
                launcher.wait()
            launcher.stdout.close()
        text = "".join(output)
        self.assertIsNotNone(named, f"the coordinator never noticed the cut link:\n{text}")
        print(f"\nthe coordinator noticed the cut link after {named:.2f} s (heartbeat timeout {HEARTBEAT} s)", file=sys.stderr)
        # Detected within the heartbeat timeout (plus the coordinator's 0.2 s checks), and the
        # launcher's report names the rank and the host.
        self.assertLessEqual(named, HEARTBEAT + 1, text)
        self.assertRegex(text, r"flexgraph launch: .*\n(  \| .*\n)*  \| .*worker 2 \(10\.77\.0\.3:\d+\) missed "
                         r"heartbeats for \d+ s: presumed dead")
        self.assertIn("restarting from the last checkpoint", text)
        self.assertEqual(launcher.returncode, 0, text)
        got, want = losses(f"{d}/cut.json"), losses(ref)
        self.assertEqual(len(got["losses"]), EPOCHS)
        self.assertEqual(got["losses"], want["losses"])
        # Resumed from a checkpoint written before the cut, not from scratch.
        resumed = got.get("resumed_from_epoch", 0)
        self.assertGreaterEqual(resumed, 10, text)
        self.assertEqual(resumed % 10, 0, text)

    def test_3_mpi_over_the_same_hosts(self):
        d = self.tmp
        net = ["--mca", "btl", "tcp,self", "--mca", "btl_tcp_if_include", "10.77.0.0/24", "--mca",
               "oob_tcp_if_include", "10.77.0.0/24"]  # ranks talk over the bridge, not shared memory
        cmd = ["timeout", "-k", "5", "90", "mpirun", "--allow-run-as-root", "--display-map", "-np", "4",
               "--hostfile", f"{d}/hosts", "--mca", "plm_rsh_agent", f"ssh -F {STATE}/ssh_config"] + net
        cmd += [FLEXGRAPH, "worker", "--comm", "mpi"] + self.train + ["--summary_json", f"{d}/mpi.json"]
        p = run(cmd, timeout=120, check=False)
        self.assertEqual(p.returncode, 0, p.stdout)
        for r, h in enumerate(HOSTS):  # one rank per host, in the host file's order
            self.assertRegex(p.stdout, f"Data for node: {h}\\s+Num slots: 1[^\\n]*Num procs: 1\\n[^\\n]*"
                             f"Process rank: {r} ")
        single, got = losses(f"{d}/single.json")["losses"], losses(f"{d}/mpi.json")["losses"]
        self.assertEqual(len(got), EPOCHS)
        for e, (a, b) in enumerate(zip(single, got)):
            self.assertLessEqual(abs(a - b), 1e-4 * abs(a), f"epoch {e + 1}: {a} vs {b}")

    def test_4_nothing_is_left(self):
        d = self.tmp
        # The runs' processes are gone from every namespace (an orphan on a host whose link was cut
        # exits once it is back): only each host's sshd remains, and no socket of a run listens.
        deadline = time.monotonic() + 20
        while True:
            left = {ns: [p for p in namespace_pids(ns) if "sshd -D" not in cmdline(p)]
                    for ns in our_namespaces()}
            left = {ns: [cmdline(p) for p in pids] for ns, pids in left.items() if pids}
            if not left or time.monotonic() > deadline:
                break
            time.sleep(0.2)
        self.assertEqual(left, {})
        self.assertEqual(len(our_namespaces()), 4)
        ours = [p for p in os.listdir("/proc") if p.isdigit() and d in cmdline(p)]
        self.assertEqual(ours, [], [cmdline(p) for p in ours])
        sockets = run(["ss", "-Hltnp"]).stdout
        self.assertNotIn("10.77.0.", sockets)
        for ns in our_namespaces():  # inside: only sshd listens
            inside = run(["ip", "netns", "exec", ns, "ss", "-Hltnp"]).stdout.splitlines()
            self.assertEqual([s for s in inside if "sshd" not in s], [], ns)
        # down removes everything, and again is a no-op.
        for _ in range(2):
            p = run(["timeout", "-k", "5", "60", SCRIPT, "down"], env=self.env, check=False)
            self.assertEqual(p.returncode, 0, p.stdout)
            self.assert_nothing_left()
        # An up that fails half-way (tc fails after the bridge and a namespace exist) removes them.
        fake = f"{d}/fakebin"
        os.makedirs(fake, exist_ok=True)
        with open(f"{fake}/tc", "w") as f:
            f.write("#!/bin/sh\necho 'tc: refused for the test' >&2\nexit 1\n")
        os.chmod(f"{fake}/tc", 0o755)
        env = dict(self.env, PATH=f"{fake}:{os.environ['PATH']}")
        p = run(["timeout", "-k", "5", "60", SCRIPT, "up", "2", f"{d}/hosts2"], env=env, check=False)
        self.assertNotEqual(p.returncode, 0, p.stdout)
        self.assertIn("up failed; removing what it made", p.stdout)
        self.assert_nothing_left()

    def assert_nothing_left(self):
        self.assertEqual(our_namespaces(), [])
        links = run(["ip", "-o", "link", "show"]).stdout
        for name in ("fgbr0", "fgv0", "fgv1", "fgv2", "fgv3"):
            self.assertNotIn(f": {name}", links)
        self.assertFalse(os.path.exists(STATE), STATE)
        sshd = [p for p in os.listdir("/proc") if p.isdigit() and STATE + "/sshd" in cmdline(p)]
        self.assertEqual(sshd, [], [cmdline(p) for p in sshd])
        live = [s for s in run(["ss", "-Hatn"]).stdout.splitlines() if not s.startswith("TIME-WAIT")]
        self.assertEqual([s for s in live if "10.77.0." in s], [])


if __name__ == "__main__":
    if len(sys.argv) < 3:
        sys.exit(__doc__)
    FLEXGRAPH = os.path.abspath(sys.argv[1])
    SCRIPT = os.path.join(os.path.abspath(sys.argv[2]), "netns_cluster.sh")
    STATE = os.environ.get("FG_NETNS_TEST_DIR", "/tmp/fg-netns-test")
    unittest.main(argv=sys.argv[:1] + sys.argv[3:], verbosity=2)  # then unittest's own arguments
