"""The TLS of a run's own Dask cluster (`--hosts`, `--jobs`): a CA made for the run, and what it signed.

The CA's key lives only in memory while the run's certificates are made: once
they are, nothing else can ever be signed by it, so only the processes the
run hands its files to can join its cluster or talk to it.  One certificate
serves the scheduler, the workers and the nannies; one the coordinator.
Files are written 0600, never through a link, into a directory the caller
made private (a ledger's temp_dir).
"""

from __future__ import annotations

import datetime
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

CERT_DAYS = 30  # the run's certificates: valid from a few minutes ago, for longer than any run
# The HTTP servers Dask starts beside each scheduler and worker serve no TLS and ask no credentials:
# they answer a health check only (no task names, worker list or metrics).
HTTP_ROUTES = ["distributed.http.health"]


@dataclass(frozen=True)
class RunCertificates:
    """A CA made for one run, and the certificates it signed, as PEM files in a private directory.

    The CA's key is never written: nothing can be signed by it once the run has made these.
    """

    directory: Path
    ca: Path
    node_cert: Path  # the scheduler's, the workers' and the nannies'
    node_key: Path
    client_cert: Path  # this process's
    client_key: Path

    def client_security(self) -> Any:
        """The coordinator's: its own certificate, to connect."""
        return self._security(client=True)

    def local_security(self) -> Any:
        """One process's security for a cluster that lives partly in it (--jobs: the scheduler and the
        nannies in the coordinator): the node's certificate to serve, the coordinator's to connect."""
        return self._security(node=True, client=True)

    def node_security(self) -> Any:
        """What a scheduler or worker of the run holds (here for tests; the hosts get these files by SSH)."""
        return self._security(node=True)

    def _security(self, *, node: bool = False, client: bool = False) -> Any:
        """A distributed.Security requiring TLS from the run's CA, with the node's and/or the client's files."""
        from distributed.security import Security

        files: dict[str, Path] = {}
        if node:
            files.update(
                tls_scheduler_cert=self.node_cert,
                tls_scheduler_key=self.node_key,
                tls_worker_cert=self.node_cert,
                tls_worker_key=self.node_key,
            )
        if client:
            files.update(tls_client_cert=self.client_cert, tls_client_key=self.client_key)
        return Security(require_encryption=True, tls_ca_file=str(self.ca), **{k: str(v) for k, v in files.items()})


def _write_private(path: Path, data: bytes) -> None:
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
    with os.fdopen(fd, "wb") as f:
        f.write(data)


def make_certificates(directory: Path, run: str) -> RunCertificates:
    """The run's CA, and a node and a client certificate it signed (ECDSA P-256), into `directory`
    (which must be private: 0700, this user's); each file 0600."""
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

    now = datetime.datetime.now(datetime.timezone.utc)
    ca_key = ec.generate_private_key(ec.SECP256R1())
    ca_name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, f"netrepro run {run} CA")])
    ca_cert = (
        x509.CertificateBuilder()
        .subject_name(ca_name)
        .issuer_name(ca_name)
        .public_key(ca_key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(days=CERT_DAYS))
        .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
        .add_extension(
            x509.KeyUsage(
                digital_signature=False,
                content_commitment=False,
                key_encipherment=False,
                data_encipherment=False,
                key_agreement=False,
                key_cert_sign=True,
                crl_sign=True,
                encipher_only=False,
                decipher_only=False,
            ),
            critical=True,
        )
        .add_extension(x509.SubjectKeyIdentifier.from_public_key(ca_key.public_key()), critical=False)
        .sign(ca_key, hashes.SHA256())
    )

    def leaf(name: str, usages: list[x509.ObjectIdentifier]) -> tuple[bytes, bytes]:
        key = ec.generate_private_key(ec.SECP256R1())
        cert = (
            x509.CertificateBuilder()
            .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, f"netrepro run {run} {name}")]))
            .issuer_name(ca_name)
            .public_key(key.public_key())
            .serial_number(x509.random_serial_number())
            .not_valid_before(now - datetime.timedelta(minutes=5))
            .not_valid_after(now + datetime.timedelta(days=CERT_DAYS))
            .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
            .add_extension(x509.ExtendedKeyUsage(usages), critical=False)
            .add_extension(x509.AuthorityKeyIdentifier.from_issuer_public_key(ca_key.public_key()), critical=False)
            .sign(ca_key, hashes.SHA256())
        )
        pem_key = key.private_bytes(
            serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
        )
        return cert.public_bytes(serialization.Encoding.PEM), pem_key

    node = leaf("node", [ExtendedKeyUsageOID.SERVER_AUTH, ExtendedKeyUsageOID.CLIENT_AUTH])
    client = leaf("coordinator", [ExtendedKeyUsageOID.CLIENT_AUTH])
    made = RunCertificates(
        directory=directory,
        ca=directory / "ca.crt",
        node_cert=directory / "node.crt",
        node_key=directory / "node.key",
        client_cert=directory / "client.crt",
        client_key=directory / "client.key",
    )
    _write_private(made.ca, ca_cert.public_bytes(serialization.Encoding.PEM))
    for (cert_pem, key_pem), (cert_path, key_path) in (
        (node, (made.node_cert, made.node_key)),
        (client, (made.client_cert, made.client_key)),
    ):
        _write_private(cert_path, cert_pem)
        _write_private(key_path, key_pem)
    return made
