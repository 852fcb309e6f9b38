"""sparkcdc.secrets: a connection string's passwords found in every form libpq takes, and masked."""

from __future__ import annotations

import psycopg
import pytest

from sparkcdc.postgres.connections import connect, setting_at_fault
from sparkcdc.secrets import MASK, conninfo_secrets, redact, redact_conninfo


@pytest.mark.parametrize("conninfo", [
    "postgresql://u:p%40ss%20word@h:5432/d?sslmode=require",
    "postgres://u:p%40ss%20word@[::1/d",  # malformed: what libpq echoes in its error
    "host=h user=u password='p@ss word' sslmode=require",
    "postgresql://u@h/d?password=p%40ss%20word",
])
def test_the_password_is_found_written_and_decoded(conninfo: str) -> None:
    shown = redact_conninfo(conninfo)
    assert "p@ss word" not in shown and "p%40ss%20word" not in shown and MASK in shown
    assert "p@ss word" in conninfo_secrets(conninfo)


def test_sslpassword_too_and_the_rest_stays() -> None:
    shown = redact_conninfo("postgresql://u:one@h/d?sslpassword=two&sslmode=verify-full&sslrootcert=%2Fca.crt")
    assert shown == f"postgresql://u:{MASK}@h/d?sslpassword={MASK}&sslmode=verify-full&sslrootcert=%2Fca.crt"
    assert redact_conninfo("host=h sslpassword=two password=one dbname=d") == f"host=h sslpassword={MASK} password={MASK} dbname=d"
    assert redact("nothing to hide", ["", None]) == "nothing to hide"


def test_a_malformed_uri_error_from_libpq_is_scrubbed() -> None:
    with pytest.raises(psycopg.Error) as failed:
        connect("postgresql://u:Pw-secret-1@[::1/d?sslpassword=Kp-secret-2")
    assert "URI" in str(failed.value) and "Pw-secret-1" not in str(failed.value) and "Kp-secret-2" not in str(failed.value)


@pytest.mark.parametrize(("message", "keyword"), [
    ('connection to server at "127.0.0.1", port 5432 failed: SSL error: certificate verify failed', "sslrootcert"),
    ('server certificate for "localhost" does not match host name "127.0.0.1"', "host"),
    ('could not load private key file "/k": bad decrypt', "sslpassword"),
    ('FATAL:  password authentication failed for user "u"', "password"),
    ("FATAL:  connection requires a valid client certificate", "sslcert"),
    ('FATAL:  no pg_hba.conf entry for host "127.0.0.1", user "u", database "d", no encryption', "sslmode"),
])
def test_the_setting_a_refusal_blames(message: str, keyword: str) -> None:
    fault = setting_at_fault(message)
    assert fault is not None and fault[0] == keyword


def test_a_server_that_went_away_blames_no_setting() -> None:
    assert setting_at_fault('connection to server at "h", port 1 failed: Connection refused') is None
    assert setting_at_fault("server closed the connection unexpectedly") is None
