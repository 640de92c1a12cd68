//! `REDIS_URL` / `MEMCACHED_URL` → [`Endpoint`].
//!
//! Only the forms the suite's clients can all honour are accepted. Anything else (credentials,
//! query options, a Redis database other than 0) is refused with a reason rather than silently
//! dropped: a benchmark that quietly ignores part of the URL would write somewhere the user did
//! not expect.

use kvbench_core::{Backend, Endpoint};

/// Default ports, used when a TCP URL names none (as redis-rs and memcache do).
const REDIS_PORT: u16 = 6379;
const MEMCACHED_PORT: u16 = 11211;

/// Parses a URL for `backend`. The error is a reason, without the URL (the caller adds it).
pub(crate) fn parse(backend: Backend, text: &str) -> Result<Endpoint, String> {
    let url = url::Url::parse(text).map_err(|err| match err {
        url::ParseError::RelativeUrlWithoutBase => {
            format!("expected scheme://..., for example {}", example(backend))
        }
        url::ParseError::InvalidPort => "bad port (expected 1-65535)".to_string(),
        url::ParseError::EmptyHost => {
            "missing host (an IPv6 address goes in brackets, as in [::1]:port)".to_string()
        }
        url::ParseError::InvalidIpv6Address => {
            "invalid IPv6 address: write it in brackets, as in [::1]:port".to_string()
        }
        other => other.to_string(),
    })?;
    if !url.username().is_empty() || url.password().is_some() {
        return Err("'@' is not supported: credentials cannot be passed to every client".into());
    }
    if url.query().is_some() || url.fragment().is_some() {
        return Err(
            "'?' and '#' are not supported: query options cannot be passed to every \
                    client"
                .into(),
        );
    }
    let host = url.host_str().unwrap_or("");
    match (backend, url.scheme()) {
        (Backend::Redis, "redis") => {
            // `/` and `/0` select database 0; clients connect by Endpoint, which has no database.
            if !matches!(url.path(), "" | "/" | "/0") {
                return Err(format!(
                    "database {:?} is not supported: the clients always use database 0 \
                     (keys are namespaced with a per-run prefix instead)",
                    url.path().trim_start_matches('/')
                ));
            }
            tcp(host, url.port(), REDIS_PORT)
        }
        (Backend::Redis, "redis+unix" | "unix") | (Backend::Memcached, "unix") => {
            unix(host, url.path())
        }
        // `memcache:///path` is the memcache crate's spelling of a Unix socket.
        (Backend::Memcached, "memcache") if host.is_empty() && url.port().is_none() => {
            unix(host, url.path())
        }
        (Backend::Memcached, "memcache" | "tcp") => {
            let endpoint = tcp(host, url.port(), MEMCACHED_PORT)?;
            if !matches!(url.path(), "" | "/") {
                return Err(format!("unexpected path {:?} after host:port", url.path()));
            }
            Ok(endpoint)
        }
        (_, scheme) => Err(format!(
            "unknown scheme {scheme:?}; use {}",
            match backend {
                Backend::Redis | Backend::RedisCluster =>
                    "redis://host:port, redis+unix:///path or unix:///path",
                Backend::Memcached =>
                    "memcache://host:port, tcp://host:port, memcache:///path or unix:///path",
            }
        )),
    }
}

/// `REDIS_CLUSTER_URL`, `redis://host:port[,host:port…]`, → one TCP endpoint per node named,
/// each checked by [`parse`]'s rules for a Redis URL. A cluster announces its nodes by
/// host:port, so only TCP is accepted.
pub(crate) fn parse_cluster(text: &str) -> Result<Vec<Endpoint>, String> {
    let Some(nodes) = text.strip_prefix("redis://") else {
        return Err(
            "expected redis://host:port[,host:port…]: a cluster's nodes are reached \
                    over TCP"
                .into(),
        );
    };
    nodes
        .split(',')
        .map(|node| parse(Backend::Redis, &format!("redis://{node}")))
        .collect()
}

fn example(backend: Backend) -> &'static str {
    match backend {
        Backend::Redis | Backend::RedisCluster => "redis://127.0.0.1:6379",
        Backend::Memcached => "memcache://127.0.0.1:11211",
    }
}

/// A host (`[v6]` in brackets, as the URL spells it) and a port → `Endpoint::Tcp("host:port")`.
fn tcp(host: &str, port: Option<u16>, default_port: u16) -> Result<Endpoint, String> {
    if host.is_empty() {
        return Err("missing host".into());
    }
    match port.unwrap_or(default_port) {
        0 => Err("bad port 0 (expected 1-65535)".into()),
        port => Ok(Endpoint::Tcp(format!("{host}:{port}"))),
    }
}

/// A Unix socket URL has no host and an absolute path (`unix:///tmp/x.sock`).
fn unix(host: &str, path: &str) -> Result<Endpoint, String> {
    if !host.is_empty() || !path.starts_with('/') || path.len() < 2 {
        return Err("expected an absolute socket path, as in unix:///tmp/server.sock".into());
    }
    Ok(Endpoint::Unix(path.into()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use Backend::{Memcached, Redis};

    fn tcp(addr: &str) -> Result<Endpoint, String> {
        Ok(Endpoint::Tcp(addr.into()))
    }

    fn unix(path: &str) -> Result<Endpoint, String> {
        Ok(Endpoint::Unix(path.into()))
    }

    #[test]
    fn redis_forms() {
        assert_eq!(
            parse(Redis, "redis://127.0.0.1:7000"),
            tcp("127.0.0.1:7000")
        );
        assert_eq!(
            parse(Redis, "redis://localhost:7000/"),
            tcp("localhost:7000")
        );
        assert_eq!(
            parse(Redis, "redis://localhost:7000/0"),
            tcp("localhost:7000")
        );
        assert_eq!(parse(Redis, "redis://cache"), tcp("cache:6379"));
        assert_eq!(parse(Redis, "redis://[::1]:7000"), tcp("[::1]:7000"));
        assert_eq!(parse(Redis, "redis://[::1]"), tcp("[::1]:6379"));
        assert_eq!(
            parse(Redis, "redis+unix:///tmp/r.sock"),
            unix("/tmp/r.sock")
        );
        assert_eq!(parse(Redis, "unix:///tmp/r.sock"), unix("/tmp/r.sock"));
    }

    #[test]
    fn memcached_forms() {
        assert_eq!(
            parse(Memcached, "memcache://127.0.0.1:7001"),
            tcp("127.0.0.1:7001")
        );
        assert_eq!(
            parse(Memcached, "tcp://127.0.0.1:7001/"),
            tcp("127.0.0.1:7001")
        );
        assert_eq!(parse(Memcached, "memcache://mc"), tcp("mc:11211"));
        assert_eq!(
            parse(Memcached, "memcache:///tmp/m.sock"),
            unix("/tmp/m.sock")
        );
        assert_eq!(parse(Memcached, "unix:///tmp/m.sock"), unix("/tmp/m.sock"));
    }

    #[test]
    fn cluster_forms() {
        let nodes =
            |addrs: &[&str]| Ok(addrs.iter().map(|a| Endpoint::Tcp(a.to_string())).collect());
        assert_eq!(
            parse_cluster("redis://127.0.0.1:7000"),
            nodes(&["127.0.0.1:7000"])
        );
        assert_eq!(
            parse_cluster("redis://a:7000,b,[::1]:7002/"),
            nodes(&["a:7000", "b:6379", "[::1]:7002"])
        );
        let cases = [
            ("127.0.0.1:7000", "redis://host:port"),
            ("redis+unix:///tmp/r.sock", "over TCP"),
            ("redis://a:7000,,b:7001", "missing host"),
            ("redis://a:7000,b:0", "bad port"),
            ("redis://a:7000,:secret@b:7001", "'@'"),
            ("redis://a:7000,b:7001?x=1", "'?'"),
            ("redis://a:7000/3,b:7001", "database"),
        ];
        for (url, needle) in cases {
            match parse_cluster(url) {
                Err(reason) => assert!(
                    reason.contains(needle),
                    "{url}: {reason:?} lacks {needle:?}"
                ),
                Ok(endpoints) => panic!("{url} was accepted as {endpoints:?}"),
            }
        }
    }

    #[test]
    fn rejects_what_clients_cannot_honour() {
        let cases = [
            (Redis, "127.0.0.1:6379", "scheme"),
            (Redis, "memcache://127.0.0.1:1", "unknown scheme"),
            (Memcached, "redis://127.0.0.1:1", "unknown scheme"),
            (Redis, "redis://127.0.0.1:6379/3", "database \"3\""),
            (Redis, "redis://:secret@127.0.0.1:6379", "'@'"),
            (Redis, "redis://127.0.0.1:6379?protocol=resp3", "'?'"),
            (Redis, "redis://127.0.0.1:0", "bad port"),
            (Redis, "redis://127.0.0.1:99999", "bad port"),
            (Redis, "redis://127.0.0.1:x", "bad port"),
            (Redis, "redis://:6379", "missing host"),
            (Redis, "redis://::1:6379", "brackets"),
            (Redis, "redis://[::1", "brackets"),
            (Redis, "unix://relative.sock", "absolute"),
            (Redis, "redis+unix://", "absolute"),
            (Memcached, "tcp://", "missing host"),
            (Memcached, "tcp:///tmp/m.sock", "missing host"),
            (Memcached, "memcache://mc:11211/x", "unexpected path"),
        ];
        for (backend, url, needle) in cases {
            match parse(backend, url) {
                Err(reason) => assert!(
                    reason.contains(needle),
                    "{url}: {reason:?} lacks {needle:?}"
                ),
                Ok(endpoint) => panic!("{url} was accepted as {endpoint}"),
            }
        }
    }
}
