"""A Google Cloud Storage on loopback that TensorFlow's own gs:// file system, Beam's GCS IO and
google-cloud-storage all reach: what tests/test_object_store.py runs our components against.

    python tests/gcs_server.py DIR     # prints "ready EMULATOR_PORT PROXY_PORT", serves until killed

Two parts in one process:

- gcp-storage-emulator (PyPI, pure Python; in both locks), in memory, with the bucket
  ``tfxline``. One fix: an empty upload body (TensorFlow's ``dir/`` markers) reaches it as None
  and crashes ``handlers/objects.py`` ``_media_upload``; it is read as b"".
- A CONNECT proxy that terminates TLS for ``*.googleapis.com``. TensorFlow's GCS file system
  (tensorflow ``tsl/platform/cloud/gcs_file_system.cc``) has its endpoints written in:
  https://www.googleapis.com/storage/v1/, .../upload/storage/v1/ and storage.googleapis.com; no
  setting points it elsewhere. Its libcurl follows ``https_proxy`` and trusts ``CURL_CA_BUNDLE``
  (``tsl/platform/cloud/curl_http_request.cc``), so the proxy shows a certificate for those
  hosts from a CA made here, and forwards each request as plain HTTP to the emulator:
  bodies re-framed with a Content-Length (TensorFlow's resumable PUT sends chunked framing
  beside a Content-Length, which the emulator would store as data), Host set to the emulator
  (which writes it into the mediaLink that google-cloud-storage 3 downloads from), upload
  session Locations pointed back through the tunnel; and ``buckets.getStorageLayout``, which the
  emulator lacks and TensorFlow 2.19+ asks before renaming a directory, answered as real GCS
  answers it for a bucket without hierarchical namespace.

``environment(DIR, ports)`` is what a process needs to use it: the proxy and CA for
TensorFlow, a test token (``GOOGLE_AUTH_TOKEN_FOR_TESTING``, no OAuth; ``NO_GCE_CHECK``) and
``STORAGE_EMULATOR_HOST`` for the Python clients.
"""
from __future__ import annotations

import datetime
import http.client
import http.server
import json
import os
import re
import socketserver
import ssl
import sys
import threading
from typing import Dict, Tuple

BUCKET = "tfxline"
HOSTS = ("www.googleapis.com", "storage.googleapis.com", "oauth2.googleapis.com")
HOP_BY_HOP = {"connection", "keep-alive", "proxy-connection", "proxy-authorization", "te", "trailer",
              "transfer-encoding", "upgrade", "host"}


def make_certificates(directory: str) -> Tuple[str, str, str]:
    """(CA certificate, leaf certificate, leaf key) PEM files for HOSTS, made with cryptography."""
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

    now = datetime.datetime.now(datetime.timezone.utc)
    valid = dict(not_valid_before=now - datetime.timedelta(days=1), not_valid_after=now + datetime.timedelta(days=30))

    def name(cn):
        return x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, cn)])

    ca_key, leaf_key = ec.generate_private_key(ec.SECP256R1()), ec.generate_private_key(ec.SECP256R1())
    ca = (x509.CertificateBuilder().subject_name(name("tfxline test CA")).issuer_name(name("tfxline test CA"))
          .public_key(ca_key.public_key()).serial_number(x509.random_serial_number())
          .not_valid_before(valid["not_valid_before"]).not_valid_after(valid["not_valid_after"])
          .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
          .add_extension(x509.KeyUsage(False, False, False, False, False, True, True, False, False), critical=True)
          .sign(ca_key, hashes.SHA256()))
    leaf = (x509.CertificateBuilder().subject_name(name(HOSTS[0])).issuer_name(ca.subject)
            .public_key(leaf_key.public_key()).serial_number(x509.random_serial_number())
            .not_valid_before(valid["not_valid_before"]).not_valid_after(valid["not_valid_after"])
            .add_extension(x509.SubjectAlternativeName([x509.DNSName(h) for h in HOSTS]), critical=False)
            .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH]), critical=False)
            .sign(ca_key, hashes.SHA256()))
    paths = tuple(os.path.join(directory, n) for n in ("ca.pem", "leaf.pem", "leaf.key"))
    for path, data in zip(paths, (ca.public_bytes(serialization.Encoding.PEM),
                                  leaf.public_bytes(serialization.Encoding.PEM),
                                  leaf_key.private_bytes(serialization.Encoding.PEM,
                                                         serialization.PrivateFormat.PKCS8,
                                                         serialization.NoEncryption()))):
        with open(path, "wb") as f:
            f.write(data)
    return paths


def environment(directory: str, proxy_port: int, emulator_port: int) -> Dict[str, str]:
    proxy = f"http://127.0.0.1:{proxy_port}"
    return {"https_proxy": proxy, "HTTPS_PROXY": proxy, "no_proxy": "127.0.0.1,localhost",
            "NO_PROXY": "127.0.0.1,localhost", "CURL_CA_BUNDLE": os.path.join(directory, "ca.pem"),
            "GOOGLE_AUTH_TOKEN_FOR_TESTING": "test-token", "NO_GCE_CHECK": "true",
            "STORAGE_EMULATOR_HOST": f"http://127.0.0.1:{emulator_port}", "GOOGLE_CLOUD_PROJECT": "test"}


class _Forwarder(http.server.BaseHTTPRequestHandler):
    """The decrypted requests of one CONNECT tunnel, forwarded to the emulator."""
    protocol_version = "HTTP/1.1"
    upstream: Tuple[str, int] = ("127.0.0.1", 0)

    def log_message(self, *args):
        pass

    def _body(self) -> bytes:
        if "chunked" in self.headers.get("Transfer-Encoding", "").lower():
            chunks = []
            while True:
                size = int(self.rfile.readline().split(b";")[0].strip() or b"0", 16)
                if size == 0:
                    while self.rfile.readline() not in (b"\r\n", b"\n", b""):
                        pass
                    return b"".join(chunks)
                chunks.append(self.rfile.read(size))
                self.rfile.readline()
        n = int(self.headers.get("Content-Length") or 0)
        return self.rfile.read(n) if n else b""

    def _forward(self):
        body = self._body()
        layout = re.match(r"^/storage/v1/b/([^/?]+)/storageLayout", self.path)
        if self.command == "GET" and layout:
            # buckets.getStorageLayout, which the emulator lacks: TensorFlow 2.19+'s GCS file system
            # asks it before renaming a directory (GcsFileSystem::GetStorageLayout; folders are
            # renamed with the HNS API only where hierarchicalNamespace is enabled), and fails the
            # rename on a 404. Real GCS answers it for every bucket; a flat bucket's layout:
            data = json.dumps({"kind": "storage#storageLayout", "bucket": layout.group(1), "location": "US",
                               "locationType": "multi-region", "hierarchicalNamespace": {"enabled": False}}).encode()
            self.send_response_only(200, "OK")
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)
            return
        headers = {k: v for k, v in self.headers.items() if k.lower() not in HOP_BY_HOP}
        headers["Host"] = "%s:%d" % self.upstream
        if body or self.command in ("POST", "PUT", "PATCH"):
            headers["Content-Length"] = str(len(body))
        conn = http.client.HTTPConnection(*self.upstream, timeout=300)
        try:
            conn.request(self.command, self.path, body=body, headers=headers)
            response = conn.getresponse()
            data = response.read()
        finally:
            conn.close()
        self.send_response_only(response.status, response.reason)
        emulator = "http://%s:%d/" % self.upstream
        for k, v in response.getheaders():
            if k.lower() in HOP_BY_HOP or k.lower() == "content-length":
                continue
            if k.lower() == "location" and v.startswith(emulator):  # upload sessions: back through the tunnel
                v = "https://%s/%s" % (self.headers.get("Host"), v[len(emulator):])
            self.send_header(k, v)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(data)

    do_GET = do_POST = do_PUT = do_DELETE = do_PATCH = do_HEAD = _forward


class _Connect(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    tls: ssl.SSLContext = None

    def log_message(self, *args):
        pass

    def do_CONNECT(self):
        if not self.path.rsplit(":", 1)[0].endswith(".googleapis.com"):
            self.send_error(403, "only *.googleapis.com goes to the emulator")
            return
        self.send_response(200, "Connection established")
        self.end_headers()
        self.wfile.flush()
        try:
            tunnel = self.tls.wrap_socket(self.connection, server_side=True)
        except (ssl.SSLError, OSError):
            self.close_connection = True
            return
        _Forwarder(tunnel, self.client_address, self.server)
        self.close_connection = True


class _Threaded(socketserver.ThreadingMixIn, http.server.HTTPServer):
    daemon_threads = True
    allow_reuse_address = True


def serve(directory: str) -> None:
    from gcp_storage_emulator import server as emulator

    read = emulator._read_data  # noqa: SLF001 - the one fix named in the docstring

    def read_data(handler, query):
        data = read(handler, query)
        return b"" if data is None and handler.command in ("POST", "PUT") and "uploadType" in str(query) else data

    emulator._read_data = read_data
    import socket
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        emulator_port = s.getsockname()[1]
    store = emulator.create_server("127.0.0.1", emulator_port, True, BUCKET)
    store.start()
    _, leaf, key = make_certificates(directory)
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(leaf, key)
    _Connect.tls, _Forwarder.upstream = context, ("127.0.0.1", emulator_port)
    proxy = _Threaded(("127.0.0.1", 0), _Connect)
    threading.Thread(target=proxy.serve_forever, daemon=True).start()
    print(f"ready {emulator_port} {proxy.server_address[1]}", flush=True)
    threading.Event().wait()


if __name__ == "__main__":
    serve(sys.argv[1])
