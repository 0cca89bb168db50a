"""The PostgreSQL test server accepts connections and transactions, and isolates tests by database."""

import psycopg
import pytest


def test_server_accepts_a_connection_and_a_transaction(postgres):
    assert postgres.host == "127.0.0.1" and postgres.user == "postgres"
    assert postgres.jdbc_url == f"jdbc:postgresql://127.0.0.1:{postgres.port}/postgres"
    with psycopg.connect(postgres.dsn) as conn:
        assert conn.execute("SELECT current_setting('server_version_num')::int / 10000").fetchone() == (15,)


def test_committed_and_rolled_back_transactions(postgres_db):
    assert postgres_db.jdbc_url.endswith(f"/{postgres_db.name}")
    with psycopg.connect(postgres_db.dsn) as conn:
        conn.execute("CREATE TABLE sink (id int PRIMARY KEY, v text)")
        with conn.transaction():
            conn.execute("INSERT INTO sink VALUES (1, 'a')")
        with pytest.raises(psycopg.errors.UniqueViolation), conn.transaction():
            conn.execute("INSERT INTO sink VALUES (2, 'b')")
            conn.execute("INSERT INTO sink VALUES (1, 'again')")  # rolls back the whole transaction
        assert conn.execute("SELECT id, v FROM sink ORDER BY id").fetchall() == [(1, "a")]


def test_each_test_gets_an_empty_database(postgres, postgres_db):
    with psycopg.connect(postgres_db.dsn) as conn:
        tables = conn.execute("SELECT count(*) FROM pg_tables WHERE schemaname = 'public'").fetchone()
    assert tables == (0,)
    other = postgres.create_database("other")
    try:
        assert other.name != postgres_db.name
        with psycopg.connect(other.dsn) as conn:
            assert conn.execute("SELECT current_database()").fetchone() == (other.name,)
    finally:
        postgres.drop_database(other.name)
