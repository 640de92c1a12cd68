//! "Are you up, what version are you, and are you *ours*?" — asked over a raw socket.
//!
//! Deliberately independent of every client crate: the harness must not depend on the code it
//! measures. Each probe is a fresh connection with read/write timeouts and a bounded reply, so a
//! silent or babbling server costs at most the timeout.

use std::io::{self, Read, Write};
use std::net::{TcpStream, ToSocketAddrs};
use std::os::unix::net::UnixStream;
use std::time::Duration;

use kvbench_core::{Backend, Endpoint};

/// The largest probe reply we read. `INFO server` is ~1.5 KiB and `stats` ~3 KiB; anything far
/// bigger is not the server we think it is.
const MAX_REPLY: usize = 64 * 1024;

/// What a server said about itself.
#[derive(Debug)]
pub(crate) struct Answer {
    /// `redis_version:` of `INFO server`, or the word after memcached's `VERSION`.
    pub version: String,
    /// `process_id:` (Redis) or `STAT pid` (memcached). Lets a private start notice that the
    /// port it picked was taken by someone else's server in the meantime.
    pub pid: Option<u32>,
}

/// Asks `backend` at `endpoint`. The error is a one-line reason.
pub(crate) fn ask(
    backend: Backend,
    endpoint: &Endpoint,
    timeout: Duration,
) -> Result<Answer, String> {
    let mut conn = Conn::open(endpoint, timeout).map_err(|err| format!("connect: {err}"))?;
    match backend {
        Backend::Redis | Backend::RedisCluster => ask_redis(&mut conn),
        Backend::Memcached => ask_memcached(&mut conn),
    }
}

fn ask_redis(conn: &mut Conn) -> Result<Answer, String> {
    // Inline command; reply `+PONG\r\n` (or `-NOAUTH ...` from a server that wants a password).
    let pong = conn.exchange(b"PING\r\n", |buf| line_end(buf).is_some())?;
    if pong != b"+PONG\r\n" {
        return Err(format!(
            "PING answered {:?}",
            String::from_utf8_lossy(&pong)
        ));
    }
    // `INFO server` is read-only; reply `$<len>\r\n<text>\r\n`.
    let info = conn.exchange(b"*2\r\n$4\r\nINFO\r\n$6\r\nserver\r\n", bulk_complete)?;
    if info.first() != Some(&b'$') {
        // A managed server may refuse INFO; it answered PING, so it is up.
        return Ok(Answer {
            version: "unknown (INFO refused)".into(),
            pid: None,
        });
    }
    let text = String::from_utf8_lossy(&info);
    Ok(Answer {
        version: field(&text, "redis_version:")
            .unwrap_or("unknown")
            .to_string(),
        pid: field(&text, "process_id:").and_then(|pid| pid.parse().ok()),
    })
}

fn ask_memcached(conn: &mut Conn) -> Result<Answer, String> {
    // `version\r\n` → `VERSION 1.6.18\r\n`.
    let reply = conn.exchange(b"version\r\n", |buf| line_end(buf).is_some())?;
    let text = String::from_utf8_lossy(&reply);
    let version = text
        .trim_end()
        .strip_prefix("VERSION ")
        .ok_or_else(|| format!("version answered {text:?}"))?
        .to_string();
    // `stats\r\n` → `STAT <name> <value>\r\n`... `END\r\n`.
    let stats = conn.exchange(b"stats\r\n", |buf| buf.ends_with(b"END\r\n"))?;
    let stats = String::from_utf8_lossy(&stats);
    Ok(Answer {
        version,
        pid: field(&stats, "STAT pid ").and_then(|pid| pid.parse().ok()),
    })
}

/// A connection of its own to one server, kept open, that asks how many connections the server
/// has accepted so far: Redis's `total_connections_received` (`INFO stats`), memcached's
/// `total_connections` (`stats`). The difference between two counts is the connections opened
/// in between, however many others closed meanwhile: what a test counts a shared client's
/// connections with, independent of the client.
pub struct AcceptedConnections {
    backend: Backend,
    conn: Conn,
}

impl AcceptedConnections {
    /// Connects to `backend` at `endpoint`; every read and write times out after `timeout`. The
    /// error is a one-line reason.
    pub fn open(
        backend: Backend,
        endpoint: &Endpoint,
        timeout: Duration,
    ) -> Result<AcceptedConnections, String> {
        let conn = Conn::open(endpoint, timeout).map_err(|err| format!("connect: {err}"))?;
        Ok(AcceptedConnections { backend, conn })
    }

    /// The connections the server has accepted since it started, this one included.
    pub fn count(&mut self) -> Result<u64, String> {
        let (reply, name) = match self.backend {
            Backend::Redis | Backend::RedisCluster => (
                // `INFO stats` is read-only; reply `$<len>\r\n<text>\r\n`.
                self.conn
                    .exchange(b"*2\r\n$4\r\nINFO\r\n$5\r\nstats\r\n", bulk_complete)?,
                "total_connections_received:",
            ),
            Backend::Memcached => (
                self.conn
                    .exchange(b"stats\r\n", |buf| buf.ends_with(b"END\r\n"))?,
                "STAT total_connections ",
            ),
        };
        let text = String::from_utf8_lossy(&reply);
        field(&text, name)
            .and_then(|count| count.parse().ok())
            .ok_or_else(|| format!("no `{name}` count in {text:?}"))
    }
}

/// The rest of the first line that starts with `name`.
fn field<'a>(text: &'a str, name: &str) -> Option<&'a str> {
    text.lines()
        .find_map(|line| line.strip_prefix(name))
        .map(str::trim)
}

fn line_end(buf: &[u8]) -> Option<usize> {
    buf.windows(2).position(|pair| pair == b"\r\n")
}

/// True once `buf` holds a whole reply that starts `$<len>\r\n`; any other first line is a
/// whole reply by itself (an error, for instance).
fn bulk_complete(buf: &[u8]) -> bool {
    let Some(end) = line_end(buf) else {
        return false;
    };
    if buf[0] != b'$' {
        return true;
    }
    let len: usize = std::str::from_utf8(&buf[1..end])
        .ok()
        .and_then(|n| n.parse().ok())
        .unwrap_or(0);
    // A bogus length is caught by MAX_REPLY in `exchange`, not trusted for allocation.
    buf.len() >= end + 2 + len + 2
}

/// A TCP or Unix stream with timeouts.
enum Conn {
    Tcp(TcpStream),
    Unix(UnixStream),
}

impl Conn {
    fn open(endpoint: &Endpoint, timeout: Duration) -> io::Result<Conn> {
        let conn = match endpoint {
            Endpoint::Tcp(addr) => {
                let addr = addr
                    .to_socket_addrs()?
                    .next()
                    .ok_or_else(|| io::Error::other(format!("{addr} resolves to no address")))?;
                Conn::Tcp(TcpStream::connect_timeout(&addr, timeout)?)
            }
            Endpoint::Unix(path) => Conn::Unix(UnixStream::connect(path)?),
        };
        match &conn {
            Conn::Tcp(stream) => {
                stream.set_read_timeout(Some(timeout))?;
                stream.set_write_timeout(Some(timeout))?;
            }
            Conn::Unix(stream) => {
                stream.set_read_timeout(Some(timeout))?;
                stream.set_write_timeout(Some(timeout))?;
            }
        }
        Ok(conn)
    }

    /// Writes `request` and reads until `complete` says the reply is whole.
    fn exchange(
        &mut self,
        request: &[u8],
        complete: impl Fn(&[u8]) -> bool,
    ) -> Result<Vec<u8>, String> {
        self.write_all(request)
            .map_err(|err| format!("write: {err}"))?;
        let mut reply = Vec::new();
        let mut chunk = [0u8; 4096];
        while !complete(&reply) {
            let n = self
                .read(&mut chunk)
                .map_err(|err| format!("read: {err}"))?;
            if n == 0 {
                return Err("connection closed before a whole reply".into());
            }
            reply.extend_from_slice(&chunk[..n]);
            if reply.len() > MAX_REPLY {
                return Err(format!("reply longer than {MAX_REPLY} bytes"));
            }
        }
        Ok(reply)
    }
}

impl Read for Conn {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        match self {
            Conn::Tcp(stream) => stream.read(buf),
            Conn::Unix(stream) => stream.read(buf),
        }
    }
}

impl Write for Conn {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        match self {
            Conn::Tcp(stream) => stream.write(buf),
            Conn::Unix(stream) => stream.write(buf),
        }
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bulk_reply_is_complete_only_with_its_trailer() {
        assert!(!bulk_complete(b""));
        assert!(!bulk_complete(b"$5\r\nhel"));
        assert!(!bulk_complete(b"$5\r\nhello"));
        assert!(bulk_complete(b"$5\r\nhello\r\n"));
        assert!(bulk_complete(b"-ERR unknown command\r\n"));
    }

    #[test]
    fn fields_are_found_by_prefix() {
        let info = "# Server\r\nredis_version:7.0.15\r\nprocess_id:42\r\n";
        assert_eq!(field(info, "redis_version:"), Some("7.0.15"));
        assert_eq!(field(info, "process_id:"), Some("42"));
        assert_eq!(field("STAT pid 7\r\nEND\r\n", "STAT pid "), Some("7"));
        assert_eq!(field(info, "missing:"), None);
    }
}
