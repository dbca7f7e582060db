"""The TLS of a run's own Dask cluster (`--hosts`, `--jobs`): a CA made for the run, and what it signed.

The CA's key lives only in memory while the run's certificates are made: once
they are, nothing else can ever be signed by it, so only the processes the
run hands them to can join its cluster or talk to it.  One certificate
serves the scheduler, the workers and the nannies; one the coordinator.
None of them is ever a file on a disk: each process that needs them keeps
them in memory files of its own (`in_memory`: memfd, gone with the
process), which Dask and Python's ssl open by name, /proc/PID/fd/N.
"""

from __future__ import annotations

import contextlib
import datetime
import os
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

CERT_DAYS = 30  # the run's certificates: valid from a few minutes ago, for longer than any run
# The HTTP servers Dask starts beside each scheduler and worker serve no TLS and ask no credentials:
# they answer a health check only (no task names, worker list or metrics).
HTTP_ROUTES = ["distributed.http.health"]
MEMFD_PREFIX = "netrepro-tls-"  # a memory file's name, as /proc/PID/fd/N links show it ("/memfd:netrepro-tls-...")
NODE_FILES = ("ca.crt", "node.crt", "node.key")  # what a scheduler, nanny or worker of the run holds
CLIENT_FILES = ("ca.crt", "client.crt", "client.key")  # what the coordinator holds


@dataclass(frozen=True)
class RunCertificates:
    """A CA made for one run, and the certificates it signed, as PEM, in this process's memory only.

    The CA's key is never kept: nothing can be signed by it once the run has made these.
    """

    pem: Mapping[str, bytes]  # ca.crt, node.crt, node.key, client.crt, client.key

    def node_files(self) -> dict[str, bytes]:
        return {n: self.pem[n] for n in NODE_FILES}

    def client_files(self) -> dict[str, bytes]:
        return {n: self.pem[n] for n in CLIENT_FILES}


@contextlib.contextmanager
def in_memory(files: Mapping[str, bytes]) -> Iterator[dict[str, str]]:
    """Each file as a memory file of this process (memfd: never on a disk, gone when the last descriptor
    closes), named /proc/PID/fd/N: this process opens it by that name, and so can its children as root,
    which inherit no descriptor from it (multiprocessing's spawn).  Closed when the block ends."""
    fds: list[int] = []
    try:
        for name in files:
            fds.append(os.memfd_create(MEMFD_PREFIX + name, os.MFD_CLOEXEC))
            os.write(fds[-1], files[name])
        yield {name: f"/proc/{os.getpid()}/fd/{fd}" for name, fd in zip(files, fds, strict=True)}
    finally:
        for fd in fds:
            os.close(fd)


def security(paths: Mapping[str, str], *, node: bool = False, client: bool = False) -> Any:
    """A distributed.Security requiring TLS from the run's CA, with the node's and/or the client's files
    (their names, from `in_memory`: given as names, Dask writes nothing; given as PEM, it would write
    them to a temporary directory each time it made a context)."""
    from distributed.security import Security

    files: dict[str, str] = {}
    if node:
        files.update(
            tls_scheduler_cert=paths["node.crt"],
            tls_scheduler_key=paths["node.key"],
            tls_worker_cert=paths["node.crt"],
            tls_worker_key=paths["node.key"],
        )
    if client:
        files.update(tls_client_cert=paths["client.crt"], tls_client_key=paths["client.key"])
    return Security(require_encryption=True, tls_ca_file=paths["ca.crt"], **files)


def dask_config(paths: Mapping[str, str]) -> dict[str, Any]:
    """Dask's configuration for a node of the run: TLS only, with the node's files; health checks only."""
    return {
        "distributed.comm.require-encryption": True,
        "distributed.comm.tls.ca-file": paths["ca.crt"],
        "distributed.comm.tls.scheduler.cert": paths["node.crt"],
        "distributed.comm.tls.scheduler.key": paths["node.key"],
        "distributed.comm.tls.worker.cert": paths["node.crt"],
        "distributed.comm.tls.worker.key": paths["node.key"],
        "distributed.scheduler.http.routes": HTTP_ROUTES,
        "distributed.worker.http.routes": HTTP_ROUTES,
    }


def make_certificates(run: str) -> RunCertificates:
    """The run's CA, and a node and a client certificate it signed (ECDSA P-256), in memory."""
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
    pem = serialization.Encoding.PEM
    return RunCertificates(
        pem={
            "ca.crt": ca_cert.public_bytes(pem),
            "node.crt": node[0],
            "node.key": node[1],
            "client.crt": client[0],
            "client.key": client[1],
        }
    )
