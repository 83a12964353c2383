"""Start, wait for and stop a local Apache Cassandra 5.0 node from Maven Central jars.

The node runs on the machine's JDK 17 with this folder's cassandra.yaml, logback.xml and
jvm17.options; jars, data and logs live under .state/ (git-ignored).
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import signal
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from ops.common import STATE, StackError, is_alive, log, port_open, tail

HERE = Path(__file__).resolve().parent / "cassandra"
LIB = STATE / "cassandra" / "lib"
POM = HERE / "pom.xml"
# A joining node's ring delay: how long its shadow gossip round may wait for the seed,
# which starts at the same moment (see cluster_start); it ends as soon as the seed answers.
JOIN_RING_DELAY_MS = 30_000
JOIN_ATTEMPTS = 3  # starts of a joining node that did not hear a seed in time
NO_SEED = (b"Unable to contact any seeds", b"Unable to gossip with any peers")


@dataclass(frozen=True)
class Node:
    """One local Cassandra node: its loopback address, ports and folders."""

    index: int = 1
    address: str = "127.0.0.1"
    cql_port: int = 9042
    storage_port: int = 7000
    jmx_port: int = 7199
    seeds: str = "127.0.0.1:7000"
    cluster_name: str = "clickstream-local"
    heap: str = "1g"
    # "periodic" (Cassandra's default) or "group" (no acknowledged write lost on a crash).
    commitlog_sync: str = "periodic"
    # How long gossip gets to settle (Cassandra's default is 30 s): short for a lone node;
    # a joining node must have heard from a seed by its end, or it exits.
    ring_delay_ms: int = 1000
    # A loopback cluster node's own tokens (initial_token, comma-separated): it then
    # neither allocates them from the ring nor bootstraps, so it need not wait for others.
    initial_tokens: str = ""
    # The JIT's first tier only: a node that lives minutes (a loopback cluster, a test's
    # own node) starts in half the time and spends no core on C2 compiles it would not
    # live to use; measured: three nodes 37 → 21 s, a restart 23 → 11 s.
    quick_jit: bool = False

    @property
    def home(self) -> Path:
        return STATE / "cassandra" / f"node{self.index}"

    @property
    def logdir(self) -> Path:
        return self.home / "logs"

    @property
    def system_log(self) -> Path:
        return self.logdir / "system.log"

    @property
    def gc_log(self) -> Path:
        return self.logdir / "gc.log"

    @property
    def stdout_log(self) -> Path:
        return self.logdir / "stdout.log"

    @property
    def pidfile(self) -> Path:
        return self.home / "cassandra.pid"


def node_from_env() -> Node:
    """Return the single local node, with ports overridable from the environment."""
    return Node(
        cql_port=int(os.environ.get("CASSANDRA_PORT", "9042")),
        storage_port=int(os.environ.get("CASSANDRA_STORAGE_PORT", "7000")),
        jmx_port=int(os.environ.get("CASSANDRA_JMX_PORT", "7199")),
        seeds=f"127.0.0.1:{os.environ.get('CASSANDRA_STORAGE_PORT', '7000')}",
        heap=os.environ.get("CASSANDRA_HEAP", "1g"),
        commitlog_sync=os.environ.get("CASSANDRA_COMMITLOG_SYNC", "periodic"),
    )


def cluster_nodes(
    count: int = 3,
    *,
    cql_port: int = 9142,
    storage_port: int = 7100,
    jmx_base: int = 7210,
    first_index: int = 11,
    cluster_name: str = "clickstream-cluster",
    heap: str = "512m",
) -> list[Node]:
    """Nodes of a loopback cluster on 127.0.0.1..count, the first one the seed.

    Its ports differ from the single node's (9042/7000/7199), so both can run side by
    side on 127.0.0.1; each node keeps its own folder (.state/cassandra/node<index>).
    """
    if not 1 <= count <= 9:
        raise StackError(f"a loopback cluster has 1 to 9 nodes, not {count}")
    tokens = ring_tokens(count)
    return [
        Node(
            index=first_index + i,
            address=f"127.0.0.{i + 1}",
            cql_port=cql_port,
            storage_port=storage_port,
            jmx_port=jmx_base + i + 1,
            seeds=f"127.0.0.1:{storage_port}",
            cluster_name=cluster_name,
            heap=heap,
            ring_delay_ms=1000 if i == 0 else JOIN_RING_DELAY_MS,
            initial_tokens=",".join(str(t) for t in tokens[i]),
            quick_jit=True,
        )
        for i in range(count)
    ]


def ring_tokens(count: int) -> list[list[int]]:
    """Murmur3 tokens for `count` nodes, num_tokens each, evenly spaced and dealt in turn
    (node i takes every count-th one from the i-th): no two nodes share a token, as two
    that allocated theirs at the same moment would ("Bootstrap Token collision")."""
    found = re.search(r"^num_tokens: (\d+)$", (HERE / "cassandra.yaml").read_text(), re.M)
    if found is None:
        raise StackError(f"no num_tokens in {HERE / 'cassandra.yaml'}")
    total = count * int(found[1])
    ring = [-(2**63) + j * 2**64 // total for j in range(total)]
    return [ring[i::count] for i in range(count)]


def cluster_from_env() -> list[Node]:
    return cluster_nodes(
        int(os.environ.get("CASSANDRA_CLUSTER_NODES", "3")),
        cql_port=int(os.environ.get("CASSANDRA_CLUSTER_PORT", "9142")),
        heap=os.environ.get("CASSANDRA_CLUSTER_HEAP", "512m"),
    )


def cluster_start(nodes: list[Node], *, timeout: float = 300.0) -> list[Node]:
    """Start the nodes at once; return those this call started.

    No node waits for another to join: each has its own tokens (initial_token) and none
    bootstraps (auto_bootstrap false: a brand-new cluster has no data to stream, and a
    node that joined once starts from its saved tokens). A joining node's shadow gossip
    round waits for the seed, up to its ring delay.

    Returns once every node answers CQL and the driver sees all of them up. If one
    fails, the nodes this call started are stopped before the error goes on.
    """
    started: list[Node] = []
    try:
        for node in nodes:
            if _launch_needed(node):
                if node_pid(node) is None:
                    _launch(node)
                started.append(node)
        for node in started:
            _wait_joined(node, timeout=timeout)
        wait_peers_up(nodes, timeout=timeout)
    except BaseException:
        stop_all(started)
        raise
    return started


def _wait_joined(node: Node, *, timeout: float) -> None:
    """Wait for a launched node; start it again if it exited without hearing the seed.

    On two loaded cores a joining node can miss the seed's gossip within its ring
    delay: Cassandra then exits ("Unable to gossip with any peers").
    """
    for attempt in range(1, JOIN_ATTEMPTS + 1):
        seen = node.system_log.stat().st_size if node.system_log.exists() else 0
        try:
            wait_ready(node, timeout=timeout)
            return
        except StackError:
            text = node.system_log.read_bytes()[seen:] if node.system_log.exists() else b""
            if attempt == JOIN_ATTEMPTS or node_pid(node) or not any(m in text for m in NO_SEED):
                raise
            log(f"cassandra node{node.index}: it did not hear the seed in time; starting it again")
            _launch(node)


def wait_peers_up(nodes: list[Node], *, timeout: float) -> None:
    """Block until the driver sees every one of the nodes up and owning tokens."""
    from cassandra.cluster import EXEC_PROFILE_DEFAULT, Cluster, ExecutionProfile
    from cassandra.policies import RoundRobinPolicy

    deadline = time.monotonic() + timeout
    expected = {node.address for node in nodes}
    while True:
        cluster = Cluster(
            [node.address for node in nodes],
            port=nodes[0].cql_port,
            connect_timeout=5,
            execution_profiles={EXEC_PROFILE_DEFAULT: ExecutionProfile(RoundRobinPolicy())},
        )
        try:
            cluster.connect()
            token_map = cluster.metadata.token_map
            owners = {h.address for h in token_map.token_to_host_owner.values()}
            up = {h.address for h in cluster.metadata.all_hosts() if h.is_up} & owners
        except Exception:  # noqa: BLE001 - not ready yet
            up = set()
        finally:
            cluster.shutdown()
        if expected <= up:
            log(f"cassandra cluster up: {', '.join(sorted(up))}")
            return
        if time.monotonic() > deadline:
            raise StackError(f"cluster nodes not all up after {timeout:.0f}s: up={sorted(up)}")
        time.sleep(2)


def cassandra_version() -> str:
    text = POM.read_text()
    start = text.index("<cassandra.version>") + len("<cassandra.version>")
    return text[start : text.index("</cassandra.version>")]


def jars_install() -> Path:
    """Resolve the Cassandra jars with Maven once; later calls reuse .state/cassandra/lib."""
    version = cassandra_version()
    stamp = LIB / ".version"
    if stamp.exists() and stamp.read_text().strip() == version:
        return LIB
    if not shutil.which("mvn"):
        raise StackError("Maven (mvn) is missing: apt-get install -y maven")
    if LIB.exists():
        shutil.rmtree(LIB)
    LIB.mkdir(parents=True)
    log(f"resolving Apache Cassandra {version} jars from Maven Central (first run only) ...")
    started = time.monotonic()
    # The parent pom of cassandra-all declares a systemPath dependency that Maven
    # reports as an ERROR; it is harmless for copy-dependencies.
    result = subprocess.run(
        [
            "mvn",
            "-B",
            "-q",
            "-f",
            str(POM),
            "dependency:copy-dependencies",
            f"-DoutputDirectory={LIB}",
            "-DincludeScope=runtime",
        ],
        capture_output=True,
        text=True,
        check=False,
    )
    jars = list(LIB.glob("cassandra-all-*.jar"))
    if result.returncode != 0 or not jars:
        raise StackError(
            "mvn could not resolve cassandra-all:\n" + (result.stdout + result.stderr)[-3000:]
        )
    stamp.write_text(version + "\n")
    log(f"jars ready in {time.monotonic() - started:.0f}s ({len(list(LIB.glob('*.jar')))} jars)")
    return LIB


def _render_conf(node: Node) -> Path:
    conf = node.home / "conf"
    conf.mkdir(parents=True, exist_ok=True)
    text = (HERE / "cassandra.yaml").read_text()
    for key, value in {
        "CLUSTER_NAME": node.cluster_name,
        "SEEDS": node.seeds,
        "ADDRESS": node.address,
        "STORAGE_PORT": str(node.storage_port),
        "CQL_PORT": str(node.cql_port),
        "JOIN_LINES": (
            f"auto_bootstrap: false\ninitial_token: {node.initial_tokens}"
            if node.initial_tokens
            else ""
        ),
        "COMMITLOG_SYNC_LINES": (
            "commitlog_sync: group\ncommitlog_sync_group_window: 15ms"
            if node.commitlog_sync == "group"
            else "commitlog_sync: periodic\ncommitlog_sync_period: 10000ms"
        ),
    }.items():
        text = text.replace("${" + key + "}", value)
    (conf / "cassandra.yaml").write_text(text)
    shutil.copy(HERE / "logback.xml", conf / "logback.xml")
    shutil.copy(HERE / "cassandra-rackdc.properties", conf / "cassandra-rackdc.properties")
    return conf


def _jvm_options() -> list[str]:
    lines = (HERE / "jvm17.options").read_text().splitlines()
    return [line.strip() for line in lines if line.strip() and not line.startswith("#")]


def node_pid(node: Node) -> int | None:
    """Return the pid of this node's JVM if it is running."""
    try:
        pid = int(node.pidfile.read_text().strip())
    except (FileNotFoundError, ValueError):
        return None
    return pid if is_alive(pid) else None


def cql_ready(address: str, port: int, timeout: float = 5.0) -> str | None:
    """Return the server's release_version if a CQL query succeeds, else None."""
    if not port_open(address, port):
        return None
    from cassandra.cluster import EXEC_PROFILE_DEFAULT, Cluster, ExecutionProfile
    from cassandra.policies import WhiteListRoundRobinPolicy

    profile = ExecutionProfile(
        load_balancing_policy=WhiteListRoundRobinPolicy([address]), request_timeout=timeout
    )
    cluster = Cluster(
        [address],
        port=port,
        connect_timeout=timeout,
        control_connection_timeout=timeout,
        execution_profiles={EXEC_PROFILE_DEFAULT: profile},
    )
    try:
        session = cluster.connect()
        row = session.execute("SELECT release_version FROM system.local").one()
        return str(row.release_version)
    except Exception:  # noqa: BLE001 - any failure means "not ready yet"
        return None
    finally:
        cluster.shutdown()


def start(node: Node, *, timeout: float = 240.0) -> bool:
    """Start the node unless it already answers; return True if this call started it."""
    if not _launch_needed(node):
        return False
    if node_pid(node) is None:
        _launch(node)
    wait_ready(node, timeout=timeout)
    return True


def _launch_needed(node: Node) -> bool:
    """False if the node (or another Cassandra on its address and port) already answers."""
    if node_pid(node) and cql_ready(node.address, node.cql_port):
        log(f"cassandra node{node.index} already running on {node.address}:{node.cql_port}")
        return False
    if not node_pid(node) and port_open(node.address, node.cql_port):
        version = cql_ready(node.address, node.cql_port)
        if version:
            log(
                f"reusing the Cassandra {version} already answering on "
                f"{node.address}:{node.cql_port} (not started by this project)"
            )
            return False
        raise StackError(
            f"port {node.address}:{node.cql_port} is taken by something that is "
            "not a Cassandra node; free it or set CASSANDRA_PORT"
        )
    return True


def _launch(node: Node) -> None:
    if not shutil.which("java"):
        raise StackError("java is missing: apt-get install -y openjdk-17-jre-headless")
    lib = jars_install()
    conf = _render_conf(node)
    node.logdir.mkdir(parents=True, exist_ok=True)
    (node.home / "data").mkdir(parents=True, exist_ok=True)
    jamm = sorted(lib.glob("jamm-*.jar"))
    if not jamm:
        raise StackError(f"no jamm-*.jar in {lib}: delete {lib} and retry")
    command = [
        "java",
        f"-Xms{node.heap}",
        f"-Xmx{node.heap}",
        *_jvm_options(),
        *(["-XX:TieredStopAtLevel=1"] if node.quick_jit else []),
        f"-Dcassandra.ring_delay_ms={node.ring_delay_ms}",
        f"-javaagent:{jamm[-1]}",
        f"-Dcassandra.config=file://{conf / 'cassandra.yaml'}",
        f"-Dcassandra.storagedir={node.home / 'data'}",
        f"-Dcassandra.logdir={node.logdir}",
        # One line per garbage-collection pause (bench/tail.py counts them under load).
        f"-Xlog:gc:file={node.gc_log}:time,uptime:filecount=3,filesize=5m",
        f"-Dlogback.configurationFile={conf / 'logback.xml'}",
        f"-Dcassandra-rackdc.properties=file://{conf / 'cassandra-rackdc.properties'}",
        f"-Dcassandra.jmx.local.port={node.jmx_port}",
        "-cp",
        f"{conf}:{lib}/*",
        "org.apache.cassandra.service.CassandraDaemon",
    ]
    log(
        f"starting cassandra node{node.index} on {node.address}:{node.cql_port} "
        f"(log: {node.system_log})"
    )
    with open(node.stdout_log, "ab") as out:
        process = subprocess.Popen(
            command,
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=subprocess.STDOUT,
            cwd=node.home,
            start_new_session=True,
        )
    node.pidfile.write_text(f"{process.pid}\n")


def wait_ready(node: Node, *, timeout: float) -> str:
    """Block until a CQL query succeeds; raise with the log's last lines on failure."""
    deadline = time.monotonic() + timeout
    started = time.monotonic()
    while time.monotonic() < deadline:
        version = cql_ready(node.address, node.cql_port)
        if version:
            log(
                f"cassandra {version} ready on {node.address}:{node.cql_port} "
                f"after {time.monotonic() - started:.0f}s"
            )
            return version
        if node_pid(node) is None:
            raise StackError(_failure(node, "exited during start"))
        time.sleep(2)
    raise StackError(_failure(node, f"did not answer CQL within {timeout:.0f}s"))


def _failure(node: Node, what: str) -> str:
    log_file = node.system_log if node.system_log.exists() else node.stdout_log
    return (
        f"cassandra node{node.index} {what}. Log: {log_file}\n--- last lines ---\n"
        + tail(log_file, 25)
        + ("\n--- stdout ---\n" + tail(node.stdout_log, 10) if log_file != node.stdout_log else "")
    )


def stop(node: Node, *, grace: float = 45.0) -> None:
    """Stop the node: SIGTERM (Cassandra's shutdown hook drains), then SIGKILL."""
    stop_all([node], grace=grace)


def stop_all(nodes: list[Node], *, grace: float = 45.0) -> None:
    """Stop the nodes together: SIGTERM to each, then wait; SIGKILL what outlives grace."""
    running: dict[Node, int] = {}
    for node in nodes:
        pid = node_pid(node)
        if pid is None:
            node.pidfile.unlink(missing_ok=True)
            continue
        log(f"stopping cassandra node{node.index} (pid {pid})")
        os.killpg(pid, signal.SIGTERM)
        running[node] = pid
    deadline = time.monotonic() + grace
    while time.monotonic() < deadline and any(is_alive(pid) for pid in running.values()):
        time.sleep(0.2)
    for node, pid in running.items():
        if is_alive(pid):
            log(f"cassandra node{node.index} ignored SIGTERM for {grace:.0f}s; killing it")
            os.killpg(pid, signal.SIGKILL)
            while is_alive(pid):
                time.sleep(0.2)
        node.pidfile.unlink(missing_ok=True)


def status_line(node: Node) -> str:
    """Describe a node: its address, pid and whether it answers CQL."""
    version = cql_ready(node.address, node.cql_port)
    state = f"up {version}" if version else "down"
    return f"node{node.index} {node.address}:{node.cql_port}: pid={node_pid(node)} cql={state}"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument(
        "action",
        choices=[
            "jars",
            "start",
            "stop",
            "status",
            "cluster-start",
            "cluster-stop",
            "cluster-status",
        ],
    )
    parser.add_argument("--timeout", type=float, default=240.0)
    args = parser.parse_args(argv)
    node = node_from_env()
    try:
        if args.action.startswith("cluster-"):
            nodes = cluster_from_env()
            if args.action == "cluster-start":
                cluster_start(nodes, timeout=args.timeout)
            elif args.action == "cluster-stop":
                stop_all(nodes)
            for member in nodes:
                print(status_line(member))
        elif args.action == "jars":
            jars_install()
        elif args.action == "start":
            start(node, timeout=args.timeout)
        elif args.action == "stop":
            stop(node)
        else:
            print(status_line(node))
    except StackError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
