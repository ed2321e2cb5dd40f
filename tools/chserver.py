"""chserver.py - a throwaway clickhouse-server in a temporary folder.

Used by tools/demo-clickhouse and tests/bench/ch_bench.py: a config XML
of its own listening on 127.0.0.1 only, free ports for HTTP, the native
protocol (clickhouse-client) and interserver, its own data, tmp, log and
user_files folders, and a users.xml with the passwordless `default` user
(for inspection) and `etl` with a password (the daemon's, written to
etl.password in the folder).  Run as root, the server is started as the
`clickhouse` user when it refuses to run as root.

    srv = ChServer()          # raises ChServerError(why) if it cannot start
    try:
        srv.q("SELECT 1")
    finally:
        srv.close()           # SIGKILL of its process group, folder removed

ZkServer is a standalone ZooKeeper of the same kind (java and Debian's
`zookeeper` package), for servers that are replicas of one another
(ReplicatedMergeTree): ChServer(extra=zk.replica_xml(shard, replica)).

Python 3 standard library only.
"""
import os
import random
import shutil
import signal
import socket
import subprocess
import tempfile
import time
import urllib.error
import urllib.request

SERVER = os.environ.get("CLICKHOUSE_SERVER", "/usr/sbin/clickhouse-server")
CLIENT = os.environ.get("CLICKHOUSE_CLIENT", "clickhouse-client")

CONFIG_XML = """<?xml version="1.0"?>
<yandex>
  <logger><level>information</level><log>{d}/log/server.log</log>
    <errorlog>{d}/log/error.log</errorlog><console>0</console></logger>
  <listen_host>127.0.0.1</listen_host>
  <http_port>{http}</http_port>
  <tcp_port>{tcp}</tcp_port>
  <interserver_http_port>{inter}</interserver_http_port>
  <path>{d}/data/</path>
  <tmp_path>{d}/tmp/</tmp_path>
  <user_files_path>{d}/user_files/</user_files_path>
  <format_schema_path>{d}/format_schemas/</format_schema_path>
  <users_config>{d}/users.xml</users_config>
  <default_profile>default</default_profile>
  <default_database>default</default_database>
  <mark_cache_size>{cache}</mark_cache_size>
  <uncompressed_cache_size>{cache}</uncompressed_cache_size>
  <max_concurrent_queries>50</max_concurrent_queries>
{query_log}{extra}</yandex>
"""

USERS_XML = """<?xml version="1.0"?>
<yandex>
  <profiles><default><max_memory_usage>2000000000</max_memory_usage>{log_queries}</default></profiles>
  <users>
    <default><password></password><networks><ip>127.0.0.1</ip></networks>
      <profile>default</profile><quota>default</quota></default>
    <etl><password>{pw}</password><networks><ip>127.0.0.1</ip></networks>
      <profile>default</profile><quota>default</quota></etl>
  </users>
  <quotas><default><interval><duration>3600</duration><queries>0</queries>
    <errors>0</errors><result_rows>0</result_rows><read_rows>0</read_rows>
    <execution_time>0</execution_time></interval></default></quotas>
</yandex>
"""


QUERY_LOG_XML = """  <query_log><database>system</database><table>query_log</table>
    <flush_interval_milliseconds>500</flush_interval_milliseconds></query_log>
"""


class ChServerError(Exception):
    """The server cannot be started here; the message says why."""


def free_port():
    """A TCP port on 127.0.0.1 nothing listens on now, chosen at random
    below the kernel's range of ephemeral ports (ip_local_port_range),
    so that no client's outgoing connection takes it before the server
    binds it.  Another test's server may still take it first: a server
    started on it retries with new ports on "Address already in use"
    (ChServer does)."""
    low = 32768
    try:
        with open("/proc/sys/net/ipv4/ip_local_port_range") as f:
            low = int(f.read().split()[0])
    except (OSError, ValueError, IndexError):
        pass
    low = max(low, 2048)
    for _ in range(200):
        port = random.randrange(1024 + (low - 1024) // 4, low)
        s = socket.socket()
        try:
            s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            s.bind(("127.0.0.1", port))
            return port
        except OSError:
            continue
        finally:
            s.close()
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


class _Server:
    """What ChServer and ZkServer share: a process group of its own in
    self.dir (its output in stdout.log), waited for by polling, stopped
    with SIGKILL, its folder removed unless keep."""

    LOGS = ("stdout.log",)

    def _init_dir(self, prefix, keep, parent, own_parent):
        self.keep = keep
        self.own_parent = own_parent
        self.proc = None
        self.out = None
        self.dir = tempfile.mkdtemp(prefix=prefix, dir=parent)

    def _spawn(self, argv, **kw):
        self.out = open(os.path.join(self.dir, "stdout.log"), "a")
        self.proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=self.out,
                                     stderr=self.out, start_new_session=True, cwd=self.dir,
                                     **kw)

    def _wait(self, ready, timeout=60):
        """True once ready() is, False if the process ended or timeout
        passed (the servers have no readiness event: polled)."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                return False
            if ready():
                return True
            time.sleep(0.1)
        return False

    def log_tail(self):
        out = []
        for n in self.LOGS:
            try:
                with open(os.path.join(self.dir, n), errors="replace") as f:
                    out.append(f.read()[-1500:])
            except OSError:
                pass
        return "\n".join(out)

    def _stop(self):
        p, self.proc = self.proc, None
        if p is not None:
            if p.poll() is None:
                try:
                    os.killpg(p.pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
            p.wait()
        if self.out is not None:
            self.out.close()
            self.out = None

    def close(self):
        """Stop the server (SIGKILL of its process group) and remove its
        folder (its parent too if own_parent), unless keep; safe twice."""
        self._stop()
        if self.keep:
            return
        folder = os.path.dirname(self.dir) if self.own_parent else self.dir
        if os.path.isdir(folder):
            shutil.rmtree(folder, ignore_errors=True)

    kill = close   # for harness.register_server: as fast, and safe twice


class ChServer(_Server):
    """A clickhouse-server of our own; close() stops it whatever happened."""

    LOGS = ("stdout.log", "log/error.log")

    def __init__(self, prefix="backfilld-ch-", password="etl-secret-0d1e",
                 cache=53687091, keep=False, query_log=False,
                 parent=None, extra="", own_parent=False):
        """parent: the folder to make its own in (own_parent: a folder
        made for it alone, harness.suite_mkdtemp's, removed with it);
        extra: XML inside <yandex> (<remote_servers>, or
        ZkServer.replica_xml() for a replica)."""
        if not os.access(SERVER, os.X_OK):
            _refuse(parent, own_parent, "no %s (apt-get install clickhouse-server)" % SERVER)
        self.password = password
        self._init_dir(prefix, keep, parent, own_parent)
        for sub in ("data", "tmp", "user_files", "log", "format_schemas"):
            os.makedirs(os.path.join(self.dir, sub))

        def configure():
            self.http, self.tcp, self.inter = free_port(), free_port(), free_port()
            with open(os.path.join(self.dir, "config.xml"), "w") as f:
                f.write(CONFIG_XML.format(d=self.dir, http=self.http, tcp=self.tcp,
                                          inter=self.inter, cache=cache,
                                          query_log=QUERY_LOG_XML if query_log else "",
                                          extra=extra))
        configure()
        with open(os.path.join(self.dir, "users.xml"), "w") as f:
            f.write(USERS_XML.format(pw=password, log_queries="<log_queries>1</log_queries>"
                                     if query_log else ""))
        self.pwfile = os.path.join(self.dir, "etl.password")
        with open(self.pwfile, "w") as f:
            f.write(password + "\n")
        os.chmod(self.pwfile, 0o600)
        for attempt in range(5):
            self._start(None)
            if self._wait_ready():
                return
            log = self.log_tail()
            self._stop()
            if "Address already in use" not in log:
                break
            configure()   # a port taken since it was chosen: new ones
        if "root" in log.lower():
            self._start("clickhouse")
            if self._wait_ready():
                return
            log = self.log_tail()
        self.close()
        raise ChServerError("clickhouse-server did not start:\n%s" % log)

    def _start(self, as_user):
        argv = [SERVER, "--config-file=%s" % os.path.join(self.dir, "config.xml")]
        if as_user:
            for root, dirs, files in os.walk(self.dir):
                shutil.chown(root, as_user)
                for n in files:
                    shutil.chown(os.path.join(root, n), as_user)
            argv = ["runuser", "-u", as_user, "--"] + argv
        self._spawn(argv)

    def _wait_ready(self):
        return self._wait(self._ping)

    def _ping(self):
        try:
            return urllib.request.urlopen("http://127.0.0.1:%d/ping" % self.http,
                                          timeout=2).read().strip() == b"Ok."
        except (OSError, urllib.error.URLError):
            return False

    def url(self, db):
        """The HTTP interface's URL for database db (a clickhouse: warehouse)."""
        return "http://127.0.0.1:%d/?database=%s" % (self.http, db)

    def q(self, sql, db="default", timeout=600):
        """One statement as `default`: the body text (TabSeparated).  Raises
        ChQueryError with the server's exception text."""
        try:
            return urllib.request.urlopen(self.url(db), sql.encode(),
                                          timeout=timeout).read().decode()
        except urllib.error.HTTPError as e:
            raise ChQueryError("%s\n-> %s" % (sql.strip()[:800], e.read().decode().strip()))

    def rows(self, sql, db="default"):
        return [tuple(l.split("\t")) for l in self.q(sql, db).splitlines()]

    def script(self, text, db="default"):
        """Statements separated by ';', '--' comment lines dropped."""
        text = "\n".join(l for l in text.splitlines() if not l.strip().startswith("--"))
        for st in text.split(";"):
            if st.strip():
                self.q(st, db)

    def client_argv(self, db, user="etl"):
        """clickhouse-client on the native port, as `user` (etl: with its password)."""
        argv = [CLIENT, "--host", "127.0.0.1", "--port", str(self.tcp), "--user", user,
                "--database", db]
        if user == "etl":
            argv += ["--password", self.password]
        return argv


class ChQueryError(Exception):
    """A statement the server refused."""


ZK_JAR = os.environ.get("ZOOKEEPER_JAR", "/usr/share/java/zookeeper.jar")
ZK_LOG_JAR = "/usr/share/java/slf4j-simple.jar"   # its log on stderr (libslf4j-java)
JAVA = os.environ.get("JAVA", "java")

ZOO_CFG = """tickTime=500
initLimit=10
syncLimit=5
dataDir={d}/data
clientPort={port}
clientPortAddress=127.0.0.1
maxClientCnxns=0
"""


class ZkServer(_Server):
    """A standalone ZooKeeper of our own (Debian's `zookeeper` package, run
    with java): its own folder, data dir and free port on 127.0.0.1, no
    admin server; close() stops it whatever happened.  As ChServer, it
    raises ChServerError(why) when it cannot start, and keep=True keeps
    its folder.  The JVM is killed too when the process that started it
    dies (PR_SET_PDEATHSIG): a ZooKeeper outlives no test."""

    def __init__(self, prefix="backfilld-zk-", keep=False, parent=None, own_parent=False):
        if not os.path.exists(ZK_JAR):
            _refuse(parent, own_parent, "no %s (apt-get install zookeeper)" % ZK_JAR)
        if shutil.which(JAVA) is None:
            _refuse(parent, own_parent, "no %s for ZooKeeper (apt-get install zookeeper)" % JAVA)
        self._init_dir(prefix, keep, parent, own_parent)
        self.port = free_port()
        os.makedirs(os.path.join(self.dir, "data"))
        cfg = os.path.join(self.dir, "zoo.cfg")
        with open(cfg, "w") as f:
            f.write(ZOO_CFG.format(d=self.dir, port=self.port))
        argv = [JAVA, "-Xmx192m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1",
                "-Dzookeeper.admin.enableServer=false",
                "-Dzookeeper.4lw.commands.whitelist=srvr",
                "-Dorg.slf4j.simpleLogger.showDateTime=true",
                "-cp", ZK_JAR + (":" + ZK_LOG_JAR if os.path.exists(ZK_LOG_JAR) else ""),
                "org.apache.zookeeper.server.ZooKeeperServerMain", cfg]
        self._spawn(argv, preexec_fn=_die_with_parent)
        if not self._wait(self.serving):
            log = self.log_tail()
            self.close()
            raise ChServerError("ZooKeeper did not start:\n%s" % log)

    def serving(self):
        """True when the server serves requests: `srvr` gives its version
        (`ruok` says imok as soon as it listens, before it loaded its
        database; a client connecting then is dropped)."""
        try:
            with socket.create_connection(("127.0.0.1", self.port), timeout=2) as s:
                s.sendall(b"srvr")
                return s.recv(64).startswith(b"Zookeeper version:")
        except OSError:
            return False

    def xml(self, session_timeout_ms=30000):
        """The <zookeeper> section of a clickhouse-server's config."""
        return ("  <zookeeper><node><host>127.0.0.1</host><port>%d</port></node>\n"
                "    <session_timeout_ms>%d</session_timeout_ms></zookeeper>\n"
                % (self.port, session_timeout_ms))

    def replica_xml(self, shard, replica):
        """extra= for a clickhouse-server that is replica `replica` of shard
        `shard` on this ZooKeeper: the <zookeeper> section, the {shard} and
        {replica} macros, and 127.0.0.1 as the host its replicas fetch
        parts from (its interserver port)."""
        return (self.xml() +
                "  <macros><shard>%s</shard><replica>%s</replica></macros>\n"
                "  <interserver_http_host>127.0.0.1</interserver_http_host>\n"
                % (shard, replica))


def _refuse(parent, own_parent, why):
    """Raise ChServerError(why) for a server that cannot start here, its
    own parent folder (own_parent) removed."""
    if own_parent and parent:
        shutil.rmtree(parent, ignore_errors=True)
    raise ChServerError(why)


def _die_with_parent():
    """In the child before exec: SIGKILL when the parent dies (Linux)."""
    try:
        import ctypes
        ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        pass
