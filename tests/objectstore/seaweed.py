"""A real SeaweedFS (`weed server` with its S3 gateway, authentication on) on free loopback ports,
for the process tests of checkpoints in object storage (tests/engine/s3_checkpoint_tests.py);
the C++ tests have the same in seaweed_server.h.

    with Seaweed(bin_dir, src_dir) as s3:        # started, bucket BUCKET made
        env = s3.env()                            # AWS_* for ppu-launch and its ranks
        s3.ls("run/"), s3.get(key), s3.put(key, b"..."), s3.rm(key)   # through bin/ppu-s3-tool
        s3.kill(); s3.start()                     # the same ports and data
        s3.pause(); s3.resume()                   # SIGSTOP and SIGCONT: a server that does not answer

The binary comes from scripts/build-seaweedfs.sh (ctest's objectstore.seaweedfs fixture builds
it). start() writes and removes one object (SeaweedFS grows its volumes on the first write); it fails (RuntimeError with the end of the server's log) when S3 does not answer within
90 s. Leaving the `with` kills the server and removes its data.
"""

import json
import os
import shutil
import signal
import socket
import subprocess
import tempfile
import time

BUCKET = "ppu-test"
ACCESS_KEY = "ppu-test-access"
SECRET_KEY = "ppu-test-secret-key-0123456789"


def _free_port():
    """A free loopback port whose SeaweedFS gRPC twin (port + 10000) fits below 65536."""
    for _ in range(100):
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            port = s.getsockname()[1]
        if port + 10000 < 65536:
            return port
    raise RuntimeError("no free loopback port below 55536")


class Seaweed:
    def __init__(self, bin_dir, src_dir, volumes=16):
        """`volumes` of 64 MB hold what it stores (deleted objects' space comes back only when the
        server compacts): 1 GB by default, more for a bench that writes gigabytes."""
        self.volumes = volumes
        out = subprocess.run(
            [os.path.join(src_dir, "scripts", "build-seaweedfs.sh"), "--print-dir"],
            capture_output=True, text=True, check=True,
        )  # fmt: skip
        self.weed = os.path.join(out.stdout.strip().splitlines()[-1], "weed")
        if not os.access(self.weed, os.X_OK):
            raise RuntimeError(f"{self.weed} is missing: ctest's objectstore.seaweedfs builds it")
        self.tool_path = os.path.join(bin_dir, "bin", "ppu-s3-tool")
        self.dir = tempfile.mkdtemp(prefix="ppu-seaweed-")
        self.ports = {name: _free_port() for name in ("master", "volume", "filer", "s3")}
        identity = {"name": "ppu", "credentials": [{"accessKey": ACCESS_KEY, "secretKey": SECRET_KEY}],
                    "actions": ["Admin", "Read", "Write", "List", "Tagging"]}  # fmt: skip
        with open(os.path.join(self.dir, "s3.json"), "w") as f:
            json.dump({"identities": [identity]}, f)
        os.makedirs(os.path.join(self.dir, "data"))
        self.proc = None

    @property
    def endpoint(self):
        return f"http://127.0.0.1:{self.ports['s3']}"

    def env(self, base=None, secret=SECRET_KEY):
        env = dict(base if base is not None else os.environ)
        env.update(AWS_ACCESS_KEY_ID=ACCESS_KEY, AWS_SECRET_ACCESS_KEY=secret, AWS_ENDPOINT_URL=self.endpoint,
                   AWS_REGION="us-east-1")  # fmt: skip
        return env

    def start(self):
        args = [self.weed, "server", "-ip=127.0.0.1", "-ip.bind=127.0.0.1", f"-dir={self.dir}/data", "-filer", "-s3",
                f"-s3.config={self.dir}/s3.json", "-s3.port.iceberg=0", "-s3.port.lance=0",
                "-master.volumeSizeLimitMB=64", f"-volume.max={self.volumes}"]  # fmt: skip
        for name, port in self.ports.items():
            args += [f"-{name}.port={port}", f"-{name}.port.grpc={port + 10000}"]
        log = open(os.path.join(self.dir, "weed.log"), "a")  # noqa: SIM115  (the server's, closed with it)
        self.proc = subprocess.Popen(args, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
        deadline = time.monotonic() + 90
        refused = ""
        while time.monotonic() < deadline:
            # Ready once the bucket exists and a write is stored. The first write grows
            # SeaweedFS's volumes, which takes seconds, and after a restart on the same data the
            # volume server registers with the master a little after S3 answers: writes are
            # refused until then. Done here, so that a test's first checkpoint does not meet it.
            attempt = self.tool("mb", check=False)
            if attempt.returncode == 0:
                attempt = self.tool("put", "warm-up", data=os.urandom(1 << 20), check=False)
                if attempt.returncode == 0:
                    self.rm("warm-up")
                    return self
            refused = attempt.stderr.decode(errors="replace")
            if self.proc.poll() is not None:
                break
            time.sleep(0.25)
        raise RuntimeError(f"SeaweedFS did not store a write within 90 s ({refused.strip()}):\n{self.log_tail()}")

    def kill(self):
        if self.proc is not None and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()

    def pause(self):
        os.killpg(self.proc.pid, signal.SIGSTOP)

    def resume(self):
        os.killpg(self.proc.pid, signal.SIGCONT)

    def log_tail(self, lines=30):
        with open(os.path.join(self.dir, "weed.log"), errors="replace") as f:
            return "".join(f.readlines()[-lines:])

    def tool(self, *args, data=None, check=True):
        return subprocess.run([self.tool_path, BUCKET, *args], input=data, capture_output=True, env=self.env(),
                              check=check, timeout=120)  # fmt: skip

    def ls(self, prefix):
        """{key: size} of every object under prefix."""
        out = self.tool("ls", prefix).stdout.decode()
        return {key: int(size) for key, size in (line.rsplit(" ", 1) for line in out.splitlines())}

    def get(self, key):
        r = self.tool("get", key, check=False)
        if b"no such key" in r.stderr:
            return None
        if r.returncode != 0:
            raise RuntimeError(f"ppu-s3-tool get {key}: {r.stderr.decode()}")
        return r.stdout

    def put(self, key, data):
        self.tool("put", key, data=data)

    def rm(self, key):
        self.tool("rm", key)

    def __enter__(self):
        return self.start()

    def __exit__(self, *exc):
        self.kill()
        shutil.rmtree(self.dir, ignore_errors=True)
