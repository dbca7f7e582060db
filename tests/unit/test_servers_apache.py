"""Apache's generated configuration and command lines (pure: no server is started)."""

from pathlib import Path

from servers.apache import ApacheConfig, apache_argv, certificate_argv, httpd_conf, listening_argv

RUN = Path("/tmp/netrepro-apache-test")


def directives(conf: str) -> list[str]:
    return [line.strip() for line in conf.splitlines() if line.strip() and not line.startswith("#")]


def test_everything_lives_in_the_run_directory() -> None:
    conf = httpd_conf(ApacheConfig(RUN, "10.0.0.2"))
    lines = directives(conf)
    for key in ("ServerRoot", "PidFile", "ErrorLog", "DefaultRuntimeDir", "DocumentRoot"):
        (value,) = [line.split(None, 1)[1] for line in lines if line.startswith(key + " ")]
        assert value.startswith(str(RUN)), key
    assert "Mutex file:/tmp/netrepro-apache-test default" in lines
    assert "/etc/apache2" not in conf and "/var/" not in conf
    assert not any(line.startswith("Include") for line in lines)


def test_modules_event_mpm_http2_and_tls() -> None:
    lines = directives(httpd_conf(ApacheConfig(RUN, "10.0.0.2")))
    loaded = {line.split()[1] for line in lines if line.startswith("LoadModule")}
    assert loaded == {
        "mpm_event_module",
        "authz_core_module",
        "mime_module",
        "http2_module",
        "socache_shmcb_module",
        "ssl_module",
    }
    assert "unixd_module" not in loaded  # built in; loading it is an error
    assert "TypesConfig /etc/mime.types" in lines


def test_listens_only_on_the_emulated_address() -> None:
    lines = directives(httpd_conf(ApacheConfig(RUN, "10.0.0.2")))
    assert [line for line in lines if line.startswith("Listen")] == ["Listen 10.0.0.2:80", "Listen 10.0.0.2:443 https"]


def test_protocols_h2c_with_prior_knowledge_and_h2_over_tls() -> None:
    conf = httpd_conf(ApacheConfig(RUN, "10.0.0.2", h2_window_size=6 * 65_535))
    lines = directives(conf)
    assert "Protocols h2c http/1.1" in lines and "H2Direct on" in lines
    assert "Protocols h2 http/1.1" in lines  # inside the TLS virtual host
    assert f"SSLCertificateFile {RUN}/server.crt" in lines
    assert "H2WindowSize 393210" in lines


def test_keepalive_outlasts_the_longest_idle_period() -> None:
    lines = directives(httpd_conf(ApacheConfig(RUN, "10.0.0.2")))
    (timeout,) = [int(line.split()[1]) for line in lines if line.startswith("KeepAliveTimeout")]
    assert timeout > 15  # study newcwv idles up to 15 s between bursts
    assert "KeepAlive On" in lines and "MaxKeepAliveRequests 0" in lines


def test_http1_only_and_cleartext_only() -> None:
    conf = httpd_conf(ApacheConfig(RUN, "10.0.0.2", http2=False, tls_port=None))
    lines = directives(conf)
    assert "Protocols http/1.1" in lines
    assert "http2" not in conf and "SSL" not in conf and "443" not in conf


def test_command_lines() -> None:
    assert apache_argv(RUN / "httpd.conf") == ["apache2", "-f", f"{RUN}/httpd.conf", "-DFOREGROUND"]
    cert = certificate_argv(RUN / "c.pem", RUN / "k.pem", "10.0.0.2")
    assert cert[:3] == ["openssl", "req", "-x509"] and "subjectAltName=IP:10.0.0.2" in cert
    assert listening_argv(443) == ["ss", "-Hltn", "sport = :443"]
