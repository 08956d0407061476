#!/usr/bin/env python3
"""The scale-out setup Backlot's Python benchmarks share (scripts/bench-cluster, scripts/bench-storm):
PostgreSQL, radosgw and nginx through scripts/services (the one way every script and test starts
them), `backlot serve` instances, and the management API. A script imports it with:

    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "lib"))
    from cluster import Cluster

    cluster = Cluster(backlot, work)          # work: a scratch folder, removed by cluster.cleanup()
    pg = cluster.start_postgres()             # env lines of scripts/services (BACKLOT_POSTGRES_*)
    s3, s3cfg = cluster.start_radosgw()       # BACKLOT_S3_ENDPOINT, AWS_* ; an s3cmd config file
    instance = cluster.serve(data_dir, args, env)   # `backlot serve --tls off` on a free port
    cluster.api(instance.port, token, "POST", "/api/apps", {"id": "com.example.game"})
    cluster.cleanup()                         # children stopped, engines stopped, folder removed
"""
import http.client, json, os, shutil, signal, subprocess, sys, time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import free_port  # noqa: E402  (a port taken meanwhile: run again)

here = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))  # scripts/
pgbin = "/usr/lib/postgresql/15/bin"


def sh(*args, env=None, quiet=True):
    return subprocess.run(list(args), check=True, env=env, stdout=subprocess.PIPE if quiet else None,
                          stderr=subprocess.PIPE if quiet else None, text=True).stdout


def wait_ready(port, path, what="", seconds=20, tls_ca=None):
    """Until GET path on 127.0.0.1:port answers (any status), or exit naming what did not come up."""
    import ssl
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        try:
            if tls_ca:
                c = http.client.HTTPSConnection("127.0.0.1", port, timeout=1, context=ssl.create_default_context(cafile=tls_ca))
            else:
                c = http.client.HTTPConnection("127.0.0.1", port, timeout=1)
            c.request("GET", path); c.getresponse().read(); c.close(); return
        except OSError:
            time.sleep(0.05)
    sys.exit(f"{os.path.basename(sys.argv[0])}: {what or 'nothing'} answers on port {port} within {seconds} s")


class Instance:
    """One `backlot serve --tls off` on a free port, its stderr in DATA.err."""
    def __init__(self, cluster, data, args, env=None):
        self.data = data
        self.port = free_port()
        self.process = subprocess.Popen(
            [cluster.backlot, "serve", "--data", data, "--port", str(self.port), "--tls", "off", "--quiet",
             "--connections-per-address", "0"] + args,
            env=env, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=open(data + ".err", "w"))
        cluster.children.append(self.process)
        wait_ready(self.port, "/v1/keys/root.json", f"backlot serve ({data}.err)", 60)
        self.url = f"http://127.0.0.1:{self.port}/"

    def stop(self):
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM); self.process.wait(timeout=30)

    def kill(self):
        if self.process.poll() is None:
            self.process.kill(); self.process.wait(timeout=30)

    def metrics(self):
        """/metrics as {name{labels}: value}."""
        c = http.client.HTTPConnection("127.0.0.1", self.port, timeout=10)
        c.request("GET", "/metrics"); text = c.getresponse().read().decode(); c.close()
        out = {}
        for line in text.splitlines():
            if line and not line.startswith("#"):
                name, _, value = line.rpartition(" ")
                try: out[name] = float(value)
                except ValueError: pass
        return out


class Cluster:
    def __init__(self, backlot, work):
        self.backlot = os.path.abspath(backlot)
        self.work = work
        os.makedirs(work, exist_ok=True)
        os.chmod(work, 0o755)
        self.root = os.getuid() == 0
        self.children, self.cleanups = [], []

    def cleanup(self, remove=True):
        for p in self.children:
            if p.poll() is None:
                p.send_signal(signal.SIGTERM)
        for p in self.children:
            try: p.wait(timeout=15)
            except subprocess.TimeoutExpired: p.kill()
        for f in reversed(self.cleanups):
            try: f()
            except Exception: pass
        if remove:
            shutil.rmtree(self.work, ignore_errors=True)

    def start_postgres(self):
        """PostgreSQL 15 by scripts/services (scripts/lib/postgres.sh), as the tests and the demo start
        it, but durable (fsync and synchronous commit on: what a deployment runs). Its env lines."""
        folder = os.path.join(self.work, "pg")
        sh(here + "/services", "start", "postgres", folder, env=dict(os.environ, BACKLOT_POSTGRES_DURABLE="1"))
        self.cleanups.append(lambda: sh(here + "/services", "stop", folder))
        with open(os.path.join(folder, "postgres", "env")) as f:
            self.pg = dict(line.rstrip("\n").split("=", 1) for line in f if "=" in line)
        return self.pg

    def new_database(self, name):
        pg = self.pg
        as_postgres = ["runuser", "-u", "postgres", "--"] if self.root else []
        sh(*as_postgres, pgbin + "/createdb", "-h", pg["BACKLOT_POSTGRES_SOCKET"], "-p", pg["BACKLOT_POSTGRES_PORT"], "-U", "backlot", name)
        return f"postgresql://backlot:{pg['BACKLOT_POSTGRES_PASSWORD']}@127.0.0.1:{pg['BACKLOT_POSTGRES_PORT']}/{name}"

    def postgres_statements(self, database):
        """Statements the database has run (committed + rolled-back transactions are not statements:
        pg_stat_database's xact counts are what PostgreSQL keeps without an extension)."""
        pg = self.pg
        as_postgres = ["runuser", "-u", "postgres", "--"] if self.root else []
        out = sh(*as_postgres, "psql", "-h", pg["BACKLOT_POSTGRES_SOCKET"],
                 "-p", pg["BACKLOT_POSTGRES_PORT"], "-U", "backlot", "-d", database, "-Atc",
                 "SELECT xact_commit + xact_rollback, tup_returned + tup_fetched, tup_inserted + tup_updated + tup_deleted "
                 "FROM pg_stat_database WHERE datname = current_database()",
                 env=dict(os.environ, PGPASSWORD=pg["BACKLOT_POSTGRES_PASSWORD"]))
        transactions, read, written = (int(x) for x in out.strip().split("|"))
        return {"transactions": transactions, "rowsRead": read, "rowsWritten": written}

    def start_radosgw(self, memstore_bytes=6 << 30):
        folder = os.path.join(self.work, "ceph")
        env = dict(os.environ, BACKLOT_RADOSGW_MEMSTORE_BYTES=str(memstore_bytes))
        sh(here + "/services", "start", "radosgw", folder, "--owner", str(os.getpid()), env=env)
        self.cleanups.append(lambda: sh(here + "/services", "stop", folder))
        self.ceph = folder
        values = dict(line.split("=", 1) for line in sh(here + "/services", "env", folder).split())
        host = values["BACKLOT_S3_ENDPOINT"][len("http://"):]
        cfg = os.path.join(self.work, "s3cfg")
        with open(cfg, "w") as f:
            f.write(f"[default]\naccess_key = {values['AWS_ACCESS_KEY_ID']}\nsecret_key = {values['AWS_SECRET_ACCESS_KEY']}\n"
                    f"host_base = {host}\nhost_bucket = {host}\nuse_https = False\nsignature_v2 = False\nmultipart_chunk_size_mb = 16\n")
        self.s3, self.s3cfg = values, cfg
        return values, cfg

    def restart_radosgw(self):
        """Stops the gateway alone and starts it again (memstore keeps the objects: the OSD runs on)."""
        sh(here + "/services", "stop", self.ceph, "radosgw")
        sh(here + "/services", "start", "radosgw", self.ceph, env=dict(os.environ))

    def s3cmd(self, *args):
        return sh("s3cmd", "-q", "-c", self.s3cfg, *args)

    def public_tree(self, bucket, prefix):
        """Makes BUCKET/PREFIX/v1/ readable anonymously (what an edge or CDN in front needs)."""
        policy = os.path.join(self.work, f"policy-{bucket}.json")
        with open(policy, "w") as f:
            json.dump({"Version": "2012-10-17", "Statement": [
                {"Effect": "Allow", "Principal": "*", "Action": ["s3:GetObject"], "Resource": [f"arn:aws:s3:::{bucket}/{prefix}/v1/*"]},
                {"Effect": "Allow", "Principal": "*", "Action": ["s3:ListBucket"], "Resource": [f"arn:aws:s3:::{bucket}"]}]}, f)
        self.s3cmd("setpolicy", policy, f"s3://{bucket}")

    def start_edge(self, origin_host, origin_path, name="edge", drop_ins=None):
        """contrib/nginx/edge.conf in front of ORIGIN_HOST + ORIGIN_PATH, with DROP_INS ({file name:
        text}) in its conf.d/ (*.http at the http level, *.server in the server block). Its port."""
        folder = os.path.join(self.work, name)
        for sub in ["cache", "tmp", "conf.d"]:
            os.makedirs(os.path.join(folder, sub), exist_ok=True)
            if self.root: shutil.chown(os.path.join(folder, sub), "nobody")
        for file_name, text in (drop_ins or {}).items():
            with open(os.path.join(folder, "conf.d", file_name), "w") as f:
                f.write(text)
        # Started by scripts/services (scripts/lib/nginx.sh), as the demo and the tests start nginx.
        sh(here + "/services", "start", "nginx", folder, "--config",
           os.path.join(here, "..", "contrib", "nginx", "edge.conf"),
           f"ORIGIN_PATH={origin_path}", f"ORIGIN={origin_host}", f"CACHE_DIR={folder}")
        self.cleanups.append(lambda: sh(here + "/services", "stop", folder, "nginx"))
        with open(os.path.join(folder, "nginx", "env")) as f:
            port = int(dict(line.rstrip("\n").split("=", 1) for line in f if "=" in line)["BACKLOT_NGINX_PORT"])
        wait_ready(port, "/v1/keys/root.json", f"the nginx edge ({folder}/nginx/error.log)")
        return port

    def edge_pid(self, name="edge"):
        """The pid of the nginx master start_edge(…, name=NAME) started (daemonized: not a child)."""
        with open(os.path.join(self.work, name, "nginx", "nginx.pid")) as f:
            pid = int(f.read().strip())
        with open(f"/proc/{pid}/comm") as f:
            if f.read().strip() != "nginx":
                sys.exit(f"{os.path.basename(sys.argv[0])}: pid {pid} of the edge {name} is not nginx")
        return pid

    def serve(self, data, args, env=None):
        return Instance(self, data, args, env)

    def signing_key(self):
        """A signing key for instances that share a database and a bucket, and its root.pub."""
        seed = os.path.join(self.work, "seed")
        sh(self.backlot, "catalog", "resign", "--data", seed)
        key = os.path.join(self.work, "signing.key")
        shutil.copy(os.path.join(seed, "keys", "signing.key"), key); os.chmod(key, 0o600)
        return key, os.path.join(seed, "root.pub")


def api(port, token, method, path, body=None, headers=None, timeout=600):
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
    h = {"Authorization": "Bearer " + token}
    if isinstance(body, (dict, list)):
        body = json.dumps(body).encode(); h["Content-Type"] = "application/json"
    h.update(headers or {})
    c.request(method, path, body=body, headers=h)
    r = c.getresponse(); data = r.read(); c.close()
    return r.status, data
