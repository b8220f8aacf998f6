"""The PAPI client (module_utils/onefs.py) against the in-memory simulator: session + CSRF, re-login,
retries, TLS, error messages and the password's absence from them."""

from __future__ import annotations

import json
import ssl
import urllib.error
import urllib.request

import pytest
from ansible.module_utils.onefs import (
    OneFSAuthError,
    OneFSClient,
    OneFSConnection,
    OneFSError,
    OneFSTLSError,
    backoff_delays,
    papi_error_text,
)

from lab.onefs_sim.server import Fault

from .conftest import API_PASSWORD, API_USER


def client(sim, pki, **kw) -> OneFSClient:
    opts = {"host": "127.0.0.1", "port": sim.port, "user": API_USER, "password": API_PASSWORD,
            "ca_path": str(pki.ca), "retry_backoff": 0.0}
    opts.update(kw)
    sleeps: list[float] = []
    c = OneFSClient(OneFSConnection(**opts), sleep=sleeps.append)
    c.sleeps = sleeps  # type: ignore[attr-defined]
    return c


def test_login_sets_session_and_csrf_and_every_call_carries_them(sim, pki):
    c = client(sim, pki)
    assert c.api_version() == 17
    assert c.get("/platform/1/cluster/config")["onefs_version"]["release"].startswith("v9.5")
    assert [(r.method, r.path, r.status) for r in sim.requests] == [
        ("POST", "/session/1/session", 201),
        ("GET", "/platform/latest", 200),
        ("GET", "/platform/1/cluster/config", 200),
    ]
    assert all(r.session_user == API_USER for r in sim.requests)


def _raw(sim, pki, method, path, headers):
    ctx = ssl.create_default_context(cafile=str(pki.ca))
    req = urllib.request.Request(f"https://127.0.0.1:{sim.port}{path}", method=method, headers=headers)
    try:
        with urllib.request.urlopen(req, context=ctx, timeout=10) as resp:
            return resp.status, resp.read()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read()


def test_simulator_enforces_session_and_csrf(sim, pki):
    c = client(sim, pki)
    c.login()
    cookie = {"Cookie": f"isisessid={c._session_id}"}
    referer = {"Referer": f"https://127.0.0.1:{sim.port}"}
    assert _raw(sim, pki, "GET", "/platform/1/zones", {})[0] == 401
    # OneFS answers a missing or wrong CSRF token, or a missing Referer, as an unauthenticated request: 401
    status, body = _raw(sim, pki, "GET", "/platform/1/zones", {**cookie, **referer})
    assert status == 401 and json.loads(body)["errors"][0]["code"] == "AEC_UNAUTHORIZED"
    assert _raw(sim, pki, "GET", "/platform/1/zones", {**cookie, **referer, "X-CSRF-Token": "wrong"})[0] == 401
    assert _raw(sim, pki, "GET", "/platform/1/zones", {**cookie, "X-CSRF-Token": c._csrf})[0] == 401
    assert _raw(sim, pki, "GET", "/platform/1/zones", {**cookie, **referer, "X-CSRF-Token": c._csrf})[0] == 200


def test_expired_session_is_renewed_transparently(sim, pki):
    c = client(sim, pki)
    c.get("/platform/1/zones")
    sim.expire_sessions()
    assert c.get("/platform/1/zones")["zones"][0]["name"] == "System"
    statuses = [(r.method, r.path, r.status) for r in sim.requests]
    assert statuses[-3:] == [("GET", "/platform/1/zones", 401), ("POST", "/session/1/session", 201),
                             ("GET", "/platform/1/zones", 200)]


def test_idle_timeout_gives_401_then_relogin(pki):
    from .conftest import make_sim

    simulator, port = make_sim(pki, idle_timeout=0.05)
    simulator.port = port
    try:
        c = client(simulator, pki)
        c.get("/platform/1/zones")
        import time

        time.sleep(0.2)
        c.get("/platform/1/zones")
        assert [r.status for r in simulator.requests].count(401) == 1
        assert [r.path for r in simulator.requests].count("/session/1/session") == 2
    finally:
        simulator.stop()


def test_500_then_success_is_retried_with_backoff(sim, pki):
    c = client(sim, pki, retries=4, retry_backoff=0.5)
    c.login()
    sim.inject(Fault(status=500, count=2, path_prefix="/platform/1/zones"))
    assert c.get("/platform/1/zones")["zones"]
    zone_calls = [r.status for r in sim.requests if r.path == "/platform/1/zones"]
    assert zone_calls == [500, 500, 200]
    assert c.sleeps == [0.5, 1.0]


def test_500_forever_fails_clearly_after_the_configured_tries(sim, pki):
    c = client(sim, pki, retries=3)
    c.login()
    sim.inject(Fault(status=503, count=None, path_prefix="/platform/1/zones"))
    with pytest.raises(OneFSError) as err:
        c.get("/platform/1/zones")
    assert [r.status for r in sim.requests if r.path == "/platform/1/zones"] == [503] * 4
    text = str(err.value)
    assert "HTTP 503" in text and "after 4 attempt(s)" in text and "api_retries=3" in text
    assert "Injected fault" in text


def test_4xx_is_never_retried(sim, pki):
    c = client(sim, pki, retries=4)
    with pytest.raises(OneFSError) as err:
        c.get("/platform/4/protocols/nfs/exports/999", query={"zone": "System"})
    assert err.value.status == 404 and err.value.code == "AEC_NOT_FOUND"
    assert [r.status for r in sim.requests if "exports" in r.path] == [404]
    assert c.sleeps == []


def test_connection_refused_is_retried_then_reported(pki):
    import socket

    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    sleeps: list[float] = []
    c = OneFSClient(OneFSConnection(host="127.0.0.1", port=port, user=API_USER, password=API_PASSWORD,
                                    ca_path=str(pki.ca), retries=2, retry_backoff=0.1), sleep=sleeps.append)
    with pytest.raises(OneFSError) as err:
        c.login()
    assert "connection failed after 3 attempt(s)" in str(err.value)
    assert sleeps == [0.1, 0.2]


def test_tls_fails_without_the_ca_and_with_the_wrong_ca(sim, pki):
    for kw in ({"ca_path": None}, {"ca_path": str(pki.other_ca)}):
        c = client(sim, pki, **kw)
        with pytest.raises(OneFSTLSError) as err:
            c.login()
        assert "could not be verified" in str(err.value) and "ca_path" in str(err.value)
    assert sim.requests == []  # nothing reached the application layer


def test_tls_works_with_the_ca_or_with_verification_explicitly_off(sim, pki):
    assert client(sim, pki).api_version() == 17
    assert client(sim, pki, ca_path=None, validate_certs=False).api_version() == 17


def test_wrong_password_is_a_clear_error_without_the_password(sim, pki):
    c = client(sim, pki, password="not-the-" + API_PASSWORD)
    with pytest.raises(OneFSAuthError) as err:
        c.get("/platform/1/zones")
    text = str(err.value)
    assert "refused the login of user 'svc-ansible'" in text and "powerscale_api_password" in text
    assert API_PASSWORD not in text and API_PASSWORD not in repr(err.value.__dict__)
    assert API_PASSWORD not in repr(c.conn)


def test_papi_error_bodies_become_messages():
    code, text = papi_error_text(b'{"errors":[{"code":"AEC_CONFLICT","message":"already exported"}]}')
    assert code == "AEC_CONFLICT" and text == "AEC_CONFLICT: already exported"
    assert papi_error_text(b"<html>proxy error</html>") == (None, "<html>proxy error</html>")
    assert backoff_delays(4, 1.0) == [1.0, 2.0, 4.0, 8.0]
    assert backoff_delays(7, 10.0)[-1] == 30.0
