"""The control plane's certificates: one CA, the API server's serving certificate, a client certificate per
identity, and the service-account signing key.

Identities are what the real authorizers see: ``O=system:masters`` is the superuser group (only the test's
admin and the API server's own kubelet client hold it), ``CN=system:node:<node>, O=system:nodes`` is what the
Node authorizer and the NodeRestriction admission plugin judge a kubelet by, ``CN=system:kube-scheduler`` and
``CN=system:kube-controller-manager`` get their bootstrap RBAC roles. ECDSA P-256 keys: a key costs milliseconds,
so a session's whole PKI is made in well under a second.
"""

from __future__ import annotations

import dataclasses
import datetime
import ipaddress
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

VALIDITY = datetime.timedelta(days=2)


@dataclasses.dataclass(frozen=True)
class KeyPair:
    cert: Path
    key: Path


def _key() -> ec.EllipticCurvePrivateKey:
    return ec.generate_private_key(ec.SECP256R1())


def _write_key(key: ec.EllipticCurvePrivateKey, path: Path) -> Path:
    path.write_bytes(key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                       serialization.NoEncryption()))
    path.chmod(0o600)
    return path


def _name(common_name: str, groups: tuple[str, ...] = ()) -> x509.Name:
    attrs = [x509.NameAttribute(NameOID.ORGANIZATION_NAME, g) for g in groups]
    return x509.Name([*attrs, x509.NameAttribute(NameOID.COMMON_NAME, common_name)])


class Authority:
    """A CA under ``directory``; ``issue`` writes ``<name>.crt``/``<name>.key`` signed by it."""

    def __init__(self, directory: Path, common_name: str = "planengine-test-ca") -> None:
        directory.mkdir(parents=True, exist_ok=True)
        self.directory = directory
        self._key = _key()
        now = datetime.datetime.now(datetime.UTC)
        name = _name(common_name)
        self._cert = (x509.CertificateBuilder().subject_name(name).issuer_name(name).public_key(self._key.public_key())
                      .serial_number(x509.random_serial_number()).not_valid_before(now - datetime.timedelta(hours=1))
                      .not_valid_after(now + VALIDITY)
                      .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
                      .add_extension(x509.KeyUsage(digital_signature=True, key_cert_sign=True, crl_sign=True,
                                                   content_commitment=False, key_encipherment=False,
                                                   data_encipherment=False, key_agreement=False,
                                                   encipher_only=False, decipher_only=False), critical=True)
                      .sign(self._key, hashes.SHA256()))
        self.cert = directory / "ca.crt"
        self.cert.write_bytes(self._cert.public_bytes(serialization.Encoding.PEM))
        self.key = _write_key(self._key, directory / "ca.key")

    def issue(self, name: str, common_name: str, *, groups: tuple[str, ...] = (), hosts: tuple[str, ...] = (),
              server: bool = False, client: bool = True) -> KeyPair:
        key = _key()
        now = datetime.datetime.now(datetime.UTC)
        usages = ([ExtendedKeyUsageOID.SERVER_AUTH] if server else []) + ([ExtendedKeyUsageOID.CLIENT_AUTH]
                                                                             if client else [])
        builder = (x509.CertificateBuilder().subject_name(_name(common_name, groups))
                   .issuer_name(self._cert.subject).public_key(key.public_key())
                   .serial_number(x509.random_serial_number()).not_valid_before(now - datetime.timedelta(hours=1))
                   .not_valid_after(now + VALIDITY)
                   .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
                   .add_extension(x509.ExtendedKeyUsage(usages), critical=False))
        if hosts:
            names: list[x509.GeneralName] = []
            for host in hosts:
                try:
                    names.append(x509.IPAddress(ipaddress.ip_address(host)))
                except ValueError:
                    names.append(x509.DNSName(host))
            builder = builder.add_extension(x509.SubjectAlternativeName(names), critical=False)
        cert = builder.sign(self._key, hashes.SHA256())
        pair = KeyPair(self.directory / f"{name}.crt", self.directory / f"{name}.key")
        pair.cert.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
        _write_key(key, pair.key)
        return pair


def signing_key(directory: Path) -> KeyPair:
    """The service-account token signing key (``sa.key``) and its public half (``sa.pub``)."""
    key = _key()
    private = _write_key(key, directory / "sa.key")
    public = directory / "sa.pub"
    public.write_bytes(key.public_key().public_bytes(serialization.Encoding.PEM,
                                                     serialization.PublicFormat.SubjectPublicKeyInfo))
    return KeyPair(public, private)
