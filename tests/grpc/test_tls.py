"""The service over TLS, mutual TLS and a bearer token, on loopback with certificates made here."""

from __future__ import annotations

import datetime
import ipaddress
import time
from collections.abc import Iterator
from pathlib import Path

import grpc
import pytest
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

from solver.service import client, server

ROOT = Path(__file__).resolve().parent.parent.parent
BODY = (ROOT / "examples" / "gang-preemption.yaml").read_bytes()


def _name(cn: str) -> x509.Name:
    return x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, cn)])


def _cert(subject: str, issuer: tuple[x509.Certificate, ec.EllipticCurvePrivateKey] | None, *, ca: bool = False
          ) -> tuple[x509.Certificate, ec.EllipticCurvePrivateKey]:
    key = ec.generate_private_key(ec.SECP256R1())
    now = datetime.datetime.now(datetime.UTC)
    builder = (x509.CertificateBuilder().subject_name(_name(subject))
               .issuer_name(issuer[0].subject if issuer else _name(subject))
               .public_key(key.public_key()).serial_number(x509.random_serial_number())
               .not_valid_before(now - datetime.timedelta(minutes=1)).not_valid_after(now + datetime.timedelta(days=1))
               .add_extension(x509.BasicConstraints(ca=ca, path_length=None), critical=True))
    if not ca:
        builder = builder.add_extension(x509.SubjectAlternativeName(
            [x509.DNSName("localhost"), x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]), critical=False)
    return builder.sign(issuer[1] if issuer else key, hashes.SHA256()), key


def _write(folder: Path, name: str, cert: x509.Certificate, key: ec.EllipticCurvePrivateKey | None = None) -> None:
    (folder / f"{name}.crt").write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    if key is not None:
        (folder / f"{name}.key").write_bytes(key.private_bytes(serialization.Encoding.PEM,
                                                               serialization.PrivateFormat.PKCS8,
                                                               serialization.NoEncryption()))


@pytest.fixture()
def pki(tmp_path: Path) -> Path:
    return write_pki(tmp_path)


def write_pki(tmp_path: Path) -> Path:
    """A CA; a server ("localhost"), a client and a stranger's certificate; a token file."""
    ca = _cert("gangplace-ca", None, ca=True)
    _write(tmp_path, "ca", ca[0])
    _write(tmp_path, "server", *_cert("gangplace-solver", ca))
    _write(tmp_path, "client", *_cert("gangplace-adapter", ca))
    other = _cert("someone-else", None, ca=True)
    _write(tmp_path, "stranger", *_cert("stranger", other))
    (tmp_path / "token").write_text("s3cret\n")
    return tmp_path


def _serve(pki: Path, **extra: str) -> server.Running:
    return server.start(server.ServerConfig(address="127.0.0.1:0", tls_cert=str(pki / "server.crt"),
                                            tls_key=str(pki / "server.key"), **extra))


@pytest.fixture()
def mtls(pki: Path) -> Iterator[server.Running]:
    run = _serve(pki, tls_client_ca=str(pki / "ca.crt"), token_file=str(pki / "token"))
    yield run
    run.stop(2)


def test_tls_serves_a_client_that_trusts_its_ca(pki: Path) -> None:
    run = _serve(pki)
    try:
        with client.PlacementClient(f"localhost:{run.port}", tls_ca=str(pki / "ca.crt")) as c:
            assert c.solve(BODY).status == "OPTIMAL"
        with client.PlacementClient(f"localhost:{run.port}") as plain, pytest.raises(client.PlacementError) as err:
            plain.solve(BODY, deadline=3)
        assert err.value.code == grpc.StatusCode.UNAVAILABLE
    finally:
        run.stop(2)


def test_mutual_tls_and_the_token_let_only_the_right_client_in(mtls: server.Running, pki: Path) -> None:
    target = f"localhost:{mtls.port}"
    good = {"tls_ca": str(pki / "ca.crt"), "tls_cert": str(pki / "client.crt"), "tls_key": str(pki / "client.key")}
    with client.PlacementClient(target, **good, token="s3cret") as c:
        assert c.solve(BODY).status == "OPTIMAL"
    with client.PlacementClient(target, **good, token="wrong") as c, pytest.raises(client.PlacementError) as err:
        c.solve(BODY)
    assert err.value.code == grpc.StatusCode.UNAUTHENTICATED
    with client.PlacementClient(target, **good) as c, pytest.raises(client.PlacementError) as err:
        c.solve(BODY)
    assert err.value.code == grpc.StatusCode.UNAUTHENTICATED
    stranger = {"tls_ca": str(pki / "ca.crt"), "tls_cert": str(pki / "stranger.crt"), "tls_key": str(pki / "stranger.key")}
    with client.PlacementClient(target, **stranger, token="s3cret") as c, pytest.raises(client.PlacementError) as err:
        c.solve(BODY, deadline=3)
    assert err.value.code == grpc.StatusCode.UNAVAILABLE  # the handshake refuses its certificate


def test_a_rotated_token_is_read_again(mtls: server.Running, pki: Path) -> None:
    good = {"tls_ca": str(pki / "ca.crt"), "tls_cert": str(pki / "client.crt"), "tls_key": str(pki / "client.key")}
    time.sleep(0.01)
    (pki / "token").write_text("rotated-token\n")
    with client.PlacementClient(f"localhost:{mtls.port}", **good, token="rotated-token") as c:
        assert c.solve(BODY).status == "OPTIMAL"


def test_the_adapter_reaches_a_mutual_tls_solver_with_its_token(mtls: server.Running, pki: Path) -> None:
    from adapter.main import remote
    from solver.kube import loader

    docs = loader.read_documents(ROOT / "examples" / "gang-preemption.yaml")
    solve = remote(f"localhost:{mtls.port}", 5.0, tls_ca=str(pki / "ca.crt"), tls_cert=str(pki / "client.crt"),
                   tls_key=str(pki / "client.key"), token_file=str(pki / "token"))
    plan = solve(docs)
    from adapter.main import in_process
    assert plan.status == "OPTIMAL" and plan.stats["pdbPolicy"] == "strict"
    assert plan.objective == in_process(5.0)(docs).objective  # the same plan as solving in the adapter


def test_a_rotated_server_certificate_is_used_by_the_next_connection(pki: Path) -> None:
    # the server starts with a certificate from one CA, which is then replaced on disk by one
    # from another CA: a new client that trusts only the new CA gets in
    old_ca = _cert("old-ca", None, ca=True)
    _write(pki, "server", *_cert("gangplace-solver", old_ca))
    run = _serve(pki)
    try:
        with client.PlacementClient(f"localhost:{run.port}", tls_ca=str(pki / "ca.crt")) as c, \
                pytest.raises(client.PlacementError):
            c.solve(BODY, deadline=3)  # the server still shows the old CA's certificate
        new_ca = _cert("gangplace-ca-2", None, ca=True)
        _write(pki, "ca2", new_ca[0])
        time.sleep(0.02)
        _write(pki, "server", *_cert("gangplace-solver", new_ca))
        with client.PlacementClient(f"localhost:{run.port}", tls_ca=str(pki / "ca2.crt")) as c:
            assert c.solve(BODY).status == "OPTIMAL"
    finally:
        run.stop(2)


def test_a_certificate_that_is_no_pem_is_a_clear_error(tmp_path: Path) -> None:
    (tmp_path / "bad.pem").write_text("not a certificate\n")
    with pytest.raises(OSError, match="not a usable PEM certificate and key"):
        server.start(server.ServerConfig(address="127.0.0.1:0", tls_cert=str(tmp_path / "bad.pem"),
                                         tls_key=str(tmp_path / "bad.pem")))


def test_the_plaintext_health_port_answers_probes_and_nothing_else(pki: Path) -> None:
    from grpc_health.v1 import health_pb2, health_pb2_grpc

    run = _serve(pki, tls_client_ca=str(pki / "ca.crt"), token_file=str(pki / "token"),
                 health_address="127.0.0.1:0")
    assert run.health_port and run.health_port != run.port
    Check = health_pb2.HealthCheckRequest
    with grpc.insecure_channel(f"127.0.0.1:{run.health_port}") as channel:
        probe = health_pb2_grpc.HealthStub(channel)
        for service in ("", server.SERVICE):  # liveness and readiness, as kubelet asks them: no TLS, no token
            assert probe.Check(Check(service=service), timeout=3).status == health_pb2.HealthCheckResponse.SERVING
        with pytest.raises(grpc.RpcError) as err:  # the placement service itself is not on this port
            channel.unary_unary(f"/{server.SERVICE}/Solve")(b"", timeout=3)
        assert err.value.code() == grpc.StatusCode.UNIMPLEMENTED
        run.health.enter_graceful_shutdown()  # what stop() does first: the probe sees the drain
        assert probe.Check(Check(service=server.SERVICE), timeout=3).status == \
            health_pb2.HealthCheckResponse.NOT_SERVING
    run.stop(2)
