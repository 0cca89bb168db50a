"""The API client's private key, given inline in a kubeconfig (``client-key-data``), never stays on disk."""

from __future__ import annotations

import base64
import datetime
import ssl
import tempfile
from pathlib import Path
from types import SimpleNamespace

import pytest

from planengine_operator import kube


def _client_pair() -> tuple[bytes, bytes]:
    crypto = pytest.importorskip("cryptography")
    del crypto
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "operator")])
    now = datetime.datetime.now(datetime.UTC)
    cert = (x509.CertificateBuilder().subject_name(name).issuer_name(name).public_key(key.public_key())
            .serial_number(x509.random_serial_number()).not_valid_before(now - datetime.timedelta(minutes=5))
            .not_valid_after(now + datetime.timedelta(days=1)).sign(key, hashes.SHA256()))
    return (cert.public_bytes(serialization.Encoding.PEM),
            key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                              serialization.NoEncryption()))


def test_the_client_key_from_kubeconfig_data_is_loaded_and_leaves_no_file(tmp_path: Path,
                                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    cert, key = _client_pair()
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    monkeypatch.setattr(kube, "_conn", SimpleNamespace(
        server="https://127.0.0.1:6443", insecure=False, ca_path=None, ca_data=None, certificate_path=None,
        private_key_path=None, certificate_data=base64.b64encode(cert), private_key_data=base64.b64encode(key)))
    context = kube._ssl_context()
    assert isinstance(context, ssl.SSLContext)
    assert list(tmp_path.iterdir()) == [], "the client certificate or private key was left in the temp directory"


def test_a_key_openssl_refuses_is_removed_too(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    cert, _ = _client_pair()
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    with pytest.raises(ssl.SSLError):
        kube._load_cert_chain_from_data(ssl.create_default_context(), cert, b"not a key")
    assert list(tmp_path.iterdir()) == []
