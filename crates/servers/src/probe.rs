//! "Are you up, what version are you, and are you *ours*?" — asked over a raw socket.
//!
//! Deliberately independent of every client crate: the harness must not depend on the code it
//! measures. Each probe is a fresh connection with read/write timeouts and a bounded reply, so a
//! silent or babbling server costs at most the timeout.

use std::io::{Read, Write};
use std::time::Duration;

use kvbench_core::{Backend, Endpoint, Options, Stream};

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
    let mut conn = Conn::open(endpoint, timeout)?;
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

/// A Redis reply, as [`Cluster::command`](crate::cluster::Cluster::command) returns it: what the
/// cluster's set-up reads (`CLUSTER INFO`, `CLUSTER SLOTS`) and what a test asks one node
/// (`CLUSTER SETSLOT`, `MIGRATE`, `CLUSTER GETKEYSINSLOT`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Reply {
    /// `+<text>`, such as `+OK`.
    Status(String),
    /// `-<text>`, such as `-MOVED 3999 127.0.0.1:7001`.
    Error(String),
    /// `:<n>`.
    Integer(i64),
    /// A bulk string; `None` for nil.
    Bulk(Option<Vec<u8>>),
    /// An array; `None` for nil.
    Array(Option<Vec<Reply>>),
}

impl Reply {
    /// The text of a status or bulk reply (bytes that are not UTF-8 replaced).
    pub fn text(&self) -> Option<String> {
        match self {
            Reply::Status(text) => Some(text.clone()),
            Reply::Bulk(Some(bytes)) => Some(String::from_utf8_lossy(bytes).into_owned()),
            _ => None,
        }
    }

    /// The number of an integer reply.
    pub fn integer(&self) -> Option<i64> {
        match self {
            Reply::Integer(n) => Some(*n),
            _ => None,
        }
    }

    /// The elements of an array reply.
    pub fn elements(&self) -> Option<&[Reply]> {
        match self {
            Reply::Array(Some(items)) => Some(items),
            _ => None,
        }
    }
}

/// Deepest array nesting [`command`] accepts (`CLUSTER SLOTS` nests three levels).
const MAX_DEPTH: usize = 8;

/// Sends one command, in multi-bulk form, on a fresh connection, and reads its reply (at most
/// [`MAX_REPLY`] bytes). The error is a one-line reason; an error reply is a [`Reply::Error`].
pub(crate) fn command(
    endpoint: &Endpoint,
    args: &[&[u8]],
    timeout: Duration,
) -> Result<Reply, String> {
    let mut conn = Conn::open(endpoint, timeout)?;
    let mut request = format!("*{}\r\n", args.len()).into_bytes();
    for arg in args {
        request.extend_from_slice(format!("${}\r\n", arg.len()).as_bytes());
        request.extend_from_slice(arg);
        request.extend_from_slice(b"\r\n");
    }
    let bytes = conn.exchange(&request, |buf| !matches!(parse_reply(buf, 0), Ok(None)))?;
    parse_reply(&bytes, 0)?
        .map(|(reply, _)| reply)
        .ok_or_else(|| "incomplete reply".into())
}

/// The reply at the start of `buf` and its length; `None` while it is incomplete. Nothing is
/// sized by a length the peer claims: an array grows as its elements are parsed.
fn parse_reply(buf: &[u8], depth: usize) -> Result<Option<(Reply, usize)>, String> {
    let Some(end) = line_end(buf) else {
        return Ok(None);
    };
    let text = String::from_utf8_lossy(&buf[1..end]).into_owned();
    let number = || {
        text.parse::<i64>()
            .map_err(|_| format!("bad number {text:?} in a reply"))
    };
    let length = || usize::try_from(number()?).map_err(|_| format!("bad length {text:?}"));
    let next = end + 2;
    let reply = match buf[0] {
        b'+' => (Reply::Status(text), next),
        b'-' => (Reply::Error(text), next),
        b':' => (Reply::Integer(number()?), next),
        b'$' if text == "-1" => (Reply::Bulk(None), next),
        b'*' if text == "-1" => (Reply::Array(None), next),
        b'$' => {
            let data_end = next.saturating_add(length()?);
            if buf.len() < data_end.saturating_add(2) {
                return Ok(None);
            }
            (
                Reply::Bulk(Some(buf[next..data_end].to_vec())),
                data_end + 2,
            )
        }
        b'*' if depth < MAX_DEPTH => {
            let (count, mut pos, mut items) = (length()?, next, Vec::new());
            for _ in 0..count {
                let Some((item, used)) = parse_reply(&buf[pos..], depth + 1)? else {
                    return Ok(None);
                };
                items.push(item);
                pos += used;
            }
            (Reply::Array(Some(items)), pos)
        }
        b'*' => return Err(format!("arrays nested deeper than {MAX_DEPTH}")),
        other => return Err(format!("unknown reply type byte {other:#04x}")),
    };
    Ok(Some(reply))
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
        let conn = Conn::open(endpoint, timeout)?;
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

/// A probe's connection: one timeout for the connect, each read and each write.
struct Conn(Stream);

impl Conn {
    fn open(endpoint: &Endpoint, timeout: Duration) -> Result<Conn, String> {
        Stream::connect(endpoint, &Options::with_timeout(timeout))
            .map(Conn)
            .map_err(|err| err.to_string())
    }

    /// Writes `request` and reads until `complete` says the reply is whole.
    fn exchange(
        &mut self,
        request: &[u8],
        complete: impl Fn(&[u8]) -> bool,
    ) -> Result<Vec<u8>, String> {
        self.0
            .write_all(request)
            .map_err(|err| format!("write: {err}"))?;
        let mut reply = Vec::new();
        let mut chunk = [0u8; 4096];
        while !complete(&reply) {
            let n = self
                .0
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
    fn replies_parse_whole_or_not_at_all() {
        let slots = b"*1\r\n*3\r\n:0\r\n:5460\r\n*3\r\n$9\r\n127.0.0.1\r\n:7000\r\n$2\r\nid\r\n";
        let (reply, used) = parse_reply(slots, 0).unwrap().unwrap();
        assert_eq!(used, slots.len());
        let range = &reply.elements().unwrap()[0];
        assert_eq!(range.elements().unwrap()[1].integer(), Some(5460));
        for cut in 0..slots.len() {
            assert_eq!(parse_reply(&slots[..cut], 0), Ok(None), "cut at {cut}");
        }
        assert_eq!(
            parse_reply(b"-MOVED 1 a:1\r\n", 0),
            Ok(Some((Reply::Error("MOVED 1 a:1".into()), 14)))
        );
        assert_eq!(parse_reply(b"$-1\r\n", 0), Ok(Some((Reply::Bulk(None), 5))));
        assert!(parse_reply(b"$-2\r\n", 0).is_err());
        assert!(parse_reply(b"%1\r\n", 0).is_err());
        assert!(parse_reply(&b"*1\r\n".repeat(9), 0).is_err());
        // A claim of four billion elements waits for bytes; it reserves nothing.
        assert_eq!(parse_reply(b"*4294967295\r\n:1\r\n", 0), Ok(None));
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
