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
pub(crate) fn parse(backend: Backend, url: &str) -> Result<Endpoint, String> {
    let (scheme, rest) = url
        .split_once("://")
        .ok_or_else(|| format!("expected scheme://..., for example {}", example(backend)))?;
    if let Some(bad) = rest.chars().find(|c| matches!(c, '?' | '#' | '@')) {
        return Err(format!(
            "{bad:?} is not supported: credentials and query options cannot be passed to every client"
        ));
    }
    match (backend, scheme) {
        (Backend::Redis, "redis") => {
            let (authority, path) = split_authority(rest);
            // `/` and `/0` select database 0; clients connect by Endpoint, which has no database.
            if !matches!(path, "" | "/" | "/0") {
                return Err(format!(
                    "database {:?} is not supported: the clients always use database 0 \
                     (keys are namespaced with a per-run prefix instead)",
                    path.trim_start_matches('/')
                ));
            }
            tcp(authority, REDIS_PORT)
        }
        (Backend::Redis, "redis+unix" | "unix") | (Backend::Memcached, "unix") => unix(rest),
        (Backend::Memcached, "memcache" | "tcp") => {
            let (authority, path) = split_authority(rest);
            if authority.is_empty() && scheme == "memcache" {
                // `memcache:///path` is the memcache crate's spelling of a Unix socket.
                return unix(path);
            }
            let endpoint = tcp(authority, MEMCACHED_PORT)?;
            if !matches!(path, "" | "/") {
                return Err(format!("unexpected path {path:?} after host:port"));
            }
            Ok(endpoint)
        }
        _ => Err(format!(
            "unknown scheme {scheme:?}; use {}",
            match backend {
                Backend::Redis => "redis://host:port, redis+unix:///path or unix:///path",
                Backend::Memcached =>
                    "memcache://host:port, tcp://host:port, memcache:///path or unix:///path",
            }
        )),
    }
}

fn example(backend: Backend) -> &'static str {
    match backend {
        Backend::Redis => "redis://127.0.0.1:6379",
        Backend::Memcached => "memcache://127.0.0.1:11211",
    }
}

/// `host:port/path` → (`host:port`, `/path`).
fn split_authority(rest: &str) -> (&str, &str) {
    match rest.find('/') {
        Some(slash) => rest.split_at(slash),
        None => (rest, ""),
    }
}

/// `host`, `host:port`, `[v6]` or `[v6]:port` → `Endpoint::Tcp("host:port")`.
fn tcp(authority: &str, default_port: u16) -> Result<Endpoint, String> {
    let (host, port) = if let Some(v6) = authority.strip_prefix('[') {
        let (addr, after) = v6
            .split_once(']')
            .ok_or("missing ']' after an IPv6 address")?;
        let port = match after {
            "" => None,
            _ => Some(
                after
                    .strip_prefix(':')
                    .ok_or("expected ':port' after ']'")?,
            ),
        };
        (format!("[{addr}]"), port)
    } else if authority.matches(':').count() > 1 {
        return Err("an IPv6 address must be written in brackets: [::1]:port".into());
    } else {
        match authority.split_once(':') {
            Some((host, port)) => (host.to_string(), Some(port)),
            None => (authority.to_string(), None),
        }
    };
    if host.is_empty() || host == "[]" {
        return Err("missing host".into());
    }
    let port = match port {
        None => default_port,
        Some(text) => match text.parse::<u16>() {
            Ok(port) if port != 0 => port,
            _ => return Err(format!("bad port {text:?} (expected 1-65535)")),
        },
    };
    Ok(Endpoint::Tcp(format!("{host}:{port}")))
}

/// The part after `unix://` must be an absolute path (`unix:///tmp/x.sock`).
fn unix(path: &str) -> Result<Endpoint, String> {
    if !path.starts_with('/') || path.len() < 2 {
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
            (Redis, "redis://[::1", "']'"),
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
