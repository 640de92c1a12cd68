//! The codec's blocking I/O half: [`Connection`], the one connection type every blocking
//! hand-written Redis client is built on (all but `multiplexed`, which uses only the codec).
//!
//! The codec above parses bytes it is handed; this module moves them. A [`Connection`] owns a
//! blocking stream, a reused write buffer and a reused [`ReadBuffer`] (from `kvbench-core`, the
//! one `memcached-text` reads with too). It sends a command, reads the reply header with
//! [`read_head`] and a bulk payload with [`read_bulk`], and marks itself [`Broken`] after any
//! error that can leave it out of step. The one thing the clients differ in — how a command
//! becomes bytes on the socket — is a type parameter, an [`Encoding`]: [`MultiBulk`] here (one
//! `write` per command: `raw-tcp`, `raw-unix`, `buffered`), one `write` per token (`raw-tcp`'s
//! `per-token` specs) or the inline form (`inline`).
//!
//! Beyond GET, SET and DEL it implements the contract's optional operations, one round trip per
//! command: `INCR`, `MGET`, `HSET key f v …`, `HGETALL`, and a transaction as `MULTI`, one `SET`
//! at a time (each answered `+QUEUED`), then `EXEC`. Their replies are read as they stream in,
//! never whole in the buffer: [`read_status`] checks a status's text, [`read_value`] reads a bulk
//! or nil, [`read_each`] reads a run of replies or array elements, and [`read_values`],
//! [`read_pairs`] and [`read_exec`] read the arrays MGET, HGETALL and EXEC answer.
//! [`read_transaction`] reads the replies of a whole transaction sent at once, for a client that
//! pipelines it ([`Connection::pipeline`]).
//!
//! Timeouts: the stream's own read and write timeouts bound each `read` and `write`;
//! [`Connection::set_reply_timeout`] also bounds each whole reply, so a server dripping one byte
//! every 100 ms cannot hold a call for as long as it likes (see [`kvbench_core::ReplyDeadline`]).

use std::io::{Read, Write};
use std::net::TcpStream;
use std::os::unix::net::UnixStream;
use std::path::Path;
use std::time::Duration;

use kvbench_core::{Broken, Client, Endpoint, Error, Options, ReadBuffer, Result};

use crate::Header;

/// Size of the reused [`ReadBuffer`]. It must exceed [`MAX_LINE_LEN`](crate::MAX_LINE_LEN) so
/// that an over-long header line is reported as malformed instead of filling the buffer forever.
pub const READ_BUF_LEN: usize = crate::MAX_LINE_LEN + 64 * 1024;

// ANCHOR: resp_blocking_encoding
/// How a command reaches the stream.
pub trait Encoding {
    /// Writes the command `args` to `stream`, with `write_buf` as reused scratch space. A command
    /// the encoding cannot carry is refused with [`Error::InvalidInput`] before a byte is written.
    fn send(&self, stream: &mut impl Write, write_buf: &mut Vec<u8>, args: &[&[u8]]) -> Result<()>;
}
// ANCHOR_END: resp_blocking_encoding

/// The multi-bulk form ([`encode_command`](crate::encode_command)), the whole command in one
/// `write`: what every client library sends.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct MultiBulk;

// ANCHOR: resp_blocking_multibulk
impl Encoding for MultiBulk {
    fn send(&self, stream: &mut impl Write, write_buf: &mut Vec<u8>, args: &[&[u8]]) -> Result<()> {
        write_buf.clear();
        crate::encode_command(write_buf, args);
        Ok(stream.write_all(write_buf)?)
    }
}
// ANCHOR_END: resp_blocking_multibulk

// ANCHOR: resp_blocking_connection
/// A RESP2 connection over any blocking byte stream, sending commands in encoding `E`.
pub struct Connection<S, E> {
    stream: S,
    encoding: E,
    /// Reused for every command: encoding never allocates once it has grown.
    write_buf: Vec<u8>,
    /// Reused for every reply; also bounds the time one whole reply may take to arrive.
    read_buf: ReadBuffer,
    /// Set by the first error that leaves us unsure where the next reply starts.
    broken: Broken,
}
// ANCHOR_END: resp_blocking_connection

impl<S: Read + Write, E: Encoding> Connection<S, E> {
    /// Wraps a connected stream (timeouts are the caller's to set on it).
    pub fn new(stream: S, encoding: E) -> Self {
        Connection {
            stream,
            encoding,
            write_buf: Vec::with_capacity(256),
            read_buf: ReadBuffer::new(READ_BUF_LEN),
            broken: Broken::default(),
        }
    }

    /// Fails a reply that takes longer than `limit` to arrive in full, however steadily its bytes
    /// trickle in. `None` (the default for [`new`](Self::new)) leaves only the stream's own
    /// per-read timeout; the connect functions set the [`Options::read_timeout`].
    pub fn set_reply_timeout(&mut self, limit: Option<Duration>) {
        self.read_buf.set_reply_timeout(limit);
    }

    /// The underlying stream.
    pub fn stream(&self) -> &S {
        &self.stream
    }

    /// True once an error has left the connection out of step; every call then fails at once.
    pub fn is_broken(&self) -> bool {
        self.broken.is_broken()
    }

    /// Runs `op` on the stream and both buffers, unless the connection is broken; an error that
    /// leaves the stream out of step breaks it. For clients that add an exchange of their own
    /// (`buffered`'s pipeline).
    pub fn exchange<T>(
        &mut self,
        op: impl FnOnce(&mut S, &mut Vec<u8>, &mut ReadBuffer) -> Result<T>,
    ) -> Result<T> {
        self.broken.check()?;
        let result = op(&mut self.stream, &mut self.write_buf, &mut self.read_buf);
        self.broken.note(result)
    }

    // ANCHOR: resp_blocking_pipeline
    /// Writes the commands `encode` appends to the (cleared) write buffer with one `write`, then
    /// reads all their replies with `read`: a pipeline, for a client that offers one
    /// (`buffered`). The whole-reply clock starts once, before the first reply; a reader of many
    /// replies restarts it for each ([`ReadBuffer::start_reply`]).
    pub fn pipeline<T>(
        &mut self,
        encode: impl FnOnce(&mut Vec<u8>),
        read: impl FnOnce(&mut ReadBuffer, &mut S) -> Result<T>,
    ) -> Result<T> {
        self.exchange(|stream, write_buf, read_buf| {
            write_buf.clear();
            encode(write_buf);
            stream.write_all(write_buf)?;
            read_buf.start_reply();
            read(read_buf, stream)
        })
    }
    // ANCHOR_END: resp_blocking_pipeline

    // ANCHOR: resp_blocking_call_with
    /// Sends one command and reads its reply with `read`.
    fn call_with<T>(
        &mut self,
        args: &[&[u8]],
        read: impl FnOnce(&mut ReadBuffer, &mut S) -> Result<T>,
    ) -> Result<T> {
        self.broken.check()?;
        self.read_buf.start_reply();
        let result = (self.encoding)
            .send(&mut self.stream, &mut self.write_buf, args)
            .and_then(|()| read(&mut self.read_buf, &mut self.stream));
        self.broken.note(result)
    }
    // ANCHOR_END: resp_blocking_call_with

    /// Sends one command and reads its reply header.
    fn call(&mut self, args: &[&[u8]]) -> Result<Head> {
        self.call_with(args, read_head)
    }

    fn expect_ok(&mut self, args: &[&[u8]]) -> Result<()> {
        self.call_with(args, |read_buf, stream| read_status(read_buf, stream, "OK"))
    }

    fn integer(&mut self, args: &[&[u8]]) -> Result<i64> {
        match self.call(args)? {
            Head::Integer(n) => Ok(n),
            other => self.unexpected(other, "an integer reply"),
        }
    }

    fn unexpected<T>(&mut self, head: Head, wanted: &str) -> Result<T> {
        self.broken.note(Err(head.unexpected(wanted)))
    }
}

// ANCHOR: resp_blocking_impl_client
impl<S: Read + Write + Send, E: Encoding + Send> Client for Connection<S, E> {
    // ANCHOR: raw_get
    fn get(&mut self, key: &[u8]) -> Result<Option<Vec<u8>>> {
        match self.call(&[b"GET", key])? {
            Head::Bulk(None) => Ok(None),
            Head::Bulk(Some(len)) => {
                let value = read_bulk(&mut self.read_buf, &mut self.stream, len);
                self.broken.note(value).map(Some)
            }
            other => self.unexpected(other, "a bulk reply"),
        }
    }
    // ANCHOR_END: raw_get

    fn set(&mut self, key: &[u8], value: &[u8]) -> Result<()> {
        self.expect_ok(&[b"SET", key, value])
    }

    fn set_ex(&mut self, key: &[u8], value: &[u8], ttl_secs: u32) -> Result<()> {
        let mut ttl = itoa::Buffer::new();
        self.expect_ok(&[b"SET", key, value, b"EX", ttl.format(ttl_secs).as_bytes()])
    }

    fn delete(&mut self, key: &[u8]) -> Result<bool> {
        Ok(self.integer(&[b"DEL", key])? > 0)
    }
    // ANCHOR_END: resp_blocking_impl_client

    fn incr(&mut self, key: &[u8]) -> Result<i64> {
        self.integer(&[b"INCR", key])
    }

    /// One command, one reply: `MGET` and its array of one bulk (or nil) per key.
    // ANCHOR: raw_get_many
    fn get_many(&mut self, keys: &[&[u8]]) -> Result<Vec<Option<Vec<u8>>>> {
        if keys.is_empty() {
            return Ok(Vec::new()); // Redis refuses an MGET of no keys; there is nothing to ask.
        }
        let args = [&[&b"MGET"[..]], keys].concat();
        self.call_with(&args, |read_buf, stream| {
            read_values(read_buf, stream, keys.len())
        })
    }
    // ANCHOR_END: raw_get_many

    fn hset_many(&mut self, key: &[u8], fields: &[(&[u8], &[u8])]) -> Result<()> {
        if fields.is_empty() {
            return Ok(()); // Redis refuses an HSET of no fields; there is nothing to store.
        }
        let mut args = vec![&b"HSET"[..], key];
        args.extend(fields.iter().flat_map(|&(field, value)| [field, value]));
        self.integer(&args).map(drop)
    }

    fn hgetall(&mut self, key: &[u8]) -> Result<Vec<(Vec<u8>, Vec<u8>)>> {
        self.call_with(&[b"HGETALL", key], read_pairs)
    }

    /// One round trip per command: `MULTI`, each `SET` (answered `+QUEUED`), `EXEC`.
    // ANCHOR: raw_transaction
    fn transaction(&mut self, items: &[(&[u8], &[u8])]) -> Result<()> {
        self.expect_ok(&[b"MULTI"])?;
        for (key, value) in items {
            let queued = self.call_with(&[b"SET", key, value], |read_buf, stream| {
                read_status(read_buf, stream, "QUEUED")
            });
            if let Err(err) = queued {
                // Refused by the server, or by the encoding before a byte was sent: the
                // transaction is still open, earlier SETs queued in it. Drop it, so that the
                // next command runs on its own instead of being queued.
                if !err.breaks_connection() {
                    self.expect_ok(&[b"DISCARD"])?;
                }
                return Err(err);
            }
        }
        self.call_with(&[b"EXEC"], |read_buf, stream| {
            read_exec(read_buf, stream, items.len())
        })
    }
    // ANCHOR_END: raw_transaction
}

/// Connects to either transport (`TCP_NODELAY` on), boxed as a `ClientSpec`'s `connect` wants.
pub fn connect<E: Encoding + Send + 'static>(
    endpoint: &Endpoint,
    options: &Options,
    encoding: E,
) -> Result<Box<dyn Client>> {
    Ok(match endpoint {
        Endpoint::Tcp(addr) => Box::new(connect_tcp(addr, options, true, encoding)?),
        Endpoint::Unix(path) => Box::new(connect_unix(path, options, encoding)?),
    })
}

/// Connects over TCP (`TCP_NODELAY` as `nodelay` says) with the options' timeouts, the read
/// timeout bounding each whole reply too.
pub fn connect_tcp<E: Encoding>(
    addr: &str,
    options: &Options,
    nodelay: bool,
    encoding: E,
) -> Result<Connection<TcpStream, E>> {
    let stream = kvbench_core::connect_tcp_stream(addr, options, nodelay)?;
    let mut connection = Connection::new(stream, encoding);
    connection.set_reply_timeout(Some(options.read_timeout));
    Ok(connection)
}

/// Connects to a Unix socket with the options' read and write timeouts, the read timeout
/// bounding each whole reply too. [`Options::connect_timeout`] is not applied: `std` offers no
/// `UnixStream::connect_timeout`, and a local connect only waits while the accept backlog is full.
pub fn connect_unix<E: Encoding>(
    path: &Path,
    options: &Options,
    encoding: E,
) -> Result<Connection<UnixStream, E>> {
    let stream = kvbench_core::connect_unix_stream(path, options)?;
    let mut connection = Connection::new(stream, encoding);
    connection.set_reply_timeout(Some(options.read_timeout));
    Ok(connection)
}

/// The reply header with what a simple client needs of it, detached from the read buffer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Head {
    /// `+<text>\r\n`: a status reply such as `+OK` ([`read_status`] checks its text).
    Simple,
    /// `-<message>\r\n`: an error reply, with its message.
    Error(String),
    /// `:<n>\r\n`: an integer reply.
    Integer(i64),
    /// `$<len>\r\n`: a bulk reply of `len` bytes still to read, or `None` for `$-1` (nil).
    Bulk(Option<usize>),
    /// `*<n>\r\n`: an array of `n` replies still to read, or `None` for `*-1` (nil).
    Array(Option<usize>),
}

impl Head {
    /// The error for a reply other than the one `wanted`: an error reply is [`Error::Server`]
    /// (the connection stays in step); anything else is a reply we did not ask for, and we no
    /// longer know where the next one starts, so [`Error::Protocol`].
    pub fn unexpected(self, wanted: &str) -> Error {
        match self {
            Head::Error(msg) => Error::Server(msg),
            _ => Error::Protocol(format!("unexpected reply type, wanted {wanted}")),
        }
    }
}

// ANCHOR: resp_blocking_read_head
/// Reads until one reply header line is complete, and consumes it.
pub fn read_head(read_buf: &mut ReadBuffer, stream: &mut impl Read) -> Result<Head> {
    read_header(read_buf, stream, |header| match header {
        Header::Simple(_) => Head::Simple,
        Header::Error(msg) => Head::Error(lossy(msg)),
        Header::Integer(n) => Head::Integer(n),
        Header::Bulk(len) => Head::Bulk(len),
        Header::Array(count) => Head::Array(count),
    })
}
// ANCHOR_END: resp_blocking_read_head

/// Reads until one reply header line is complete, and consumes it once `map` has taken what it
/// needs of it (the header borrows the read buffer).
fn read_header<T>(
    read_buf: &mut ReadBuffer,
    stream: &mut impl Read,
    map: impl FnOnce(Header<'_>) -> T,
) -> Result<T> {
    loop {
        if let Some((header, used)) = crate::parse_header(read_buf.pending())? {
            let mapped = map(header);
            read_buf.consume(used);
            return Ok(mapped);
        }
        read_buf.fill(stream)?;
    }
}

fn lossy(text: &[u8]) -> String {
    String::from_utf8_lossy(text).into_owned()
}

// ANCHOR: resp_blocking_read_bulk
/// Reads the body of a bulk reply whose header announced `len` bytes.
pub fn read_bulk(read_buf: &mut ReadBuffer, stream: &mut impl Read, len: usize) -> Result<Vec<u8>> {
    // <data>\r\n — the one allocation of a GET hit is the value, of the announced size (already
    // capped by the decoder at MAX_BULK_LEN). Replies are read by their length, whatever the
    // value holds; what did not arrive with the header goes straight from the socket into it.
    let value = read_buf.take_value(stream, len)?;
    while read_buf.pending().len() < 2 {
        read_buf.fill(stream)?;
    }
    if &read_buf.pending()[..2] != b"\r\n" {
        return Err(Error::Protocol("bulk data not followed by CRLF".into()));
    }
    read_buf.consume(2);
    Ok(value)
}
// ANCHOR_END: resp_blocking_read_bulk

/// Reads a status reply that must say `want` (`+OK`, `+QUEUED`): [`read_statuses`] of one.
pub fn read_status(read_buf: &mut ReadBuffer, stream: &mut impl Read, want: &str) -> Result<()> {
    read_statuses(read_buf, stream, 1, want)
}

/// Reads `count` status replies that must each say `want`: the replies to a pipeline of SETs
/// (`+OK`), or to the commands queued in a transaction (`+QUEUED`). A run of them is compared
/// byte for byte (five bytes per `+OK\r\n`), nothing parsed, nothing allocated. An error reply
/// is kept and the rest still read, so that the connection stays in step: the batch fails with
/// [`Error::Server`] once every reply is in. Any other reply is [`Error::Protocol`].
///
/// The whole-reply clock times one reply at a time: it restarts once a reply has come in since
/// the last read (one check per read, not per reply), so a long batch is not one long reply.
// ANCHOR: read_statuses
pub fn read_statuses(
    read_buf: &mut ReadBuffer,
    stream: &mut impl Read,
    count: usize,
    want: &str,
) -> Result<()> {
    let (mut left, mut errors, mut first_error) = (count, 0, None);
    let mut unread_before_fill = left;
    read_buf.start_reply();
    while left > 0 {
        // Fast path: a run of `+<want>\r\n`, compared as bytes.
        let pending = read_buf.pending();
        let mut pos = 0;
        while left > 0 && is_status(&pending[pos..], want) {
            pos += want.len() + 3;
            left -= 1;
        }
        read_buf.consume(pos);
        if left == 0 {
            break;
        }
        // Anything else (or a reply cut by the end of a read) goes through the decoder.
        let Some((header, used)) = crate::parse_header(read_buf.pending())? else {
            if left < unread_before_fill {
                read_buf.start_reply();
            }
            unread_before_fill = left;
            read_buf.fill(stream)?;
            continue;
        };
        match header {
            Header::Simple(text) if text == want.as_bytes() => {}
            Header::Error(msg) => {
                errors += 1;
                first_error.get_or_insert_with(|| lossy(msg));
            }
            _ => return Err(Error::Protocol(format!("unexpected reply, wanted +{want}"))),
        }
        read_buf.consume(used);
        left -= 1;
    }
    first_error.map_or(Ok(()), |first| Err(failed(errors, count, first)))
}
// ANCHOR_END: read_statuses

/// True if `bytes` starts with the status line `+<want>\r\n`.
fn is_status(bytes: &[u8], want: &str) -> bool {
    (bytes
        .strip_prefix(b"+")
        .and_then(|rest| rest.strip_prefix(want.as_bytes())))
    .is_some_and(|rest| rest.starts_with(b"\r\n"))
}

/// The [`Error::Server`] of a batch of `count` replies of which `errors` were error replies.
fn failed(errors: usize, count: usize, first: String) -> Error {
    Error::Server(match errors {
        1 => first,
        _ => format!("{errors} of {count} commands failed; the first: {first}"),
    })
}

/// Reads a bulk reply, `None` for nil: what GET answers, and each element of MGET's array. An
/// error reply is [`Error::Server`], read whole; any other reply is [`Error::Protocol`].
pub fn read_value(read_buf: &mut ReadBuffer, stream: &mut impl Read) -> Result<Option<Vec<u8>>> {
    match read_head(read_buf, stream)? {
        Head::Bulk(None) => Ok(None),
        Head::Bulk(Some(len)) => read_bulk(read_buf, stream, len).map(Some),
        other => Err(other.unexpected("a bulk reply")),
    }
}

/// Reads one whole reply of any type with the codec's [`decode`](crate::decode), such as
/// `CLUSTER SLOTS`'s nested arrays; it must fit in the read buffer ([`READ_BUF_LEN`]).
pub fn read_reply(read_buf: &mut ReadBuffer, stream: &mut impl Read) -> Result<crate::Reply> {
    loop {
        if let Some((reply, used)) = crate::decode(read_buf.pending())? {
            read_buf.consume(used);
            return Ok(reply);
        }
        if read_buf.pending().len() == READ_BUF_LEN {
            let limit = READ_BUF_LEN;
            return Err(Error::Protocol(format!(
                "a reply longer than {limit} bytes"
            )));
        }
        read_buf.fill(stream)?;
    }
}

// ANCHOR: resp_blocking_read_each
/// Reads `count` replies in a row — the elements of an array, or the replies to a pipeline —
/// each with `read_one`, which reports an error reply it has read whole as [`Error::Server`].
/// Such an error is kept and the rest still read, so that the connection stays in step; the
/// first one is returned once all are read. Any other error ends the reading at once.
///
/// `count` may be a peer's claim: room is reserved only for the elements whose bytes can have
/// arrived already ([`array_capacity`](crate::array_capacity)), and the `Vec` grows as more do.
pub fn read_each<S: Read, T>(
    read_buf: &mut ReadBuffer,
    stream: &mut S,
    count: usize,
    mut read_one: impl FnMut(&mut ReadBuffer, &mut S) -> Result<T>,
) -> Result<Vec<T>> {
    let mut items = Vec::with_capacity(crate::array_capacity(count, read_buf.pending().len()));
    let (mut errors, mut first_error) = (0, None);
    for _ in 0..count {
        match read_one(read_buf, stream) {
            Ok(item) => items.push(item),
            Err(Error::Server(msg)) => {
                errors += 1;
                first_error.get_or_insert(msg);
            }
            Err(err) => return Err(err),
        }
    }
    first_error.map_or(Ok(items), |first| Err(failed(errors, count, first)))
}
// ANCHOR_END: resp_blocking_read_each

/// Reads MGET's reply to `count` keys: an array of exactly `count` bulks or nils, in the keys'
/// order. Another count is [`Error::Protocol`], before anything is allocated.
pub fn read_values(
    read_buf: &mut ReadBuffer,
    stream: &mut impl Read,
    count: usize,
) -> Result<Vec<Option<Vec<u8>>>> {
    match read_head(read_buf, stream)? {
        Head::Array(Some(n)) if n == count => read_each(read_buf, stream, count, read_value),
        other => Err(other.unexpected(&format!("an array of {count} values"))),
    }
}

/// Reads HGETALL's reply: an array of fields and values, alternating (empty for a missing key).
/// An odd count, or a nil where a field or value should be, is [`Error::Protocol`]; an error
/// reply (`WRONGTYPE`) is [`Error::Server`].
pub fn read_pairs(
    read_buf: &mut ReadBuffer,
    stream: &mut impl Read,
) -> Result<Vec<(Vec<u8>, Vec<u8>)>> {
    let count = match read_head(read_buf, stream)? {
        Head::Array(Some(n)) if n % 2 == 0 => n,
        other => return Err(other.unexpected("an array of fields and values")),
    };
    let flat = read_each(read_buf, stream, count, |read_buf, stream| {
        read_value(read_buf, stream)?
            .ok_or_else(|| Error::Protocol("nil among a hash's fields and values".into()))
    })?;
    let mut flat = flat.into_iter();
    let mut pairs = Vec::with_capacity(count / 2);
    while let (Some(field), Some(value)) = (flat.next(), flat.next()) {
        pairs.push((field, value));
    }
    Ok(pairs)
}

/// Reads EXEC's reply to a transaction of `count` SETs: an array of `count` `+OK`s. A nil array
/// (the transaction was aborted) and an error reply (`-EXECABORT`: a command was refused while
/// queued) are [`Error::Server`]; an array of another length is [`Error::Protocol`].
pub fn read_exec(read_buf: &mut ReadBuffer, stream: &mut impl Read, count: usize) -> Result<()> {
    match read_head(read_buf, stream)? {
        Head::Array(Some(n)) if n == count => read_statuses(read_buf, stream, count, "OK"),
        Head::Array(None) => Err(Error::Server(
            "EXEC answered nil: the transaction was aborted".into(),
        )),
        other => Err(other.unexpected(&format!("an array of {count} replies"))),
    }
}

// ANCHOR: resp_blocking_read_transaction
/// Reads the replies to `MULTI`, `count` SETs and `EXEC` sent together: `+OK`, `count`
/// `+QUEUED`, then [`read_exec`]'s array. A SET refused while queued is reported (as
/// [`Error::Server`]) once EXEC's reply, `-EXECABORT`, has been read too, so the connection stays
/// in step. A refused MULTI is [`Error::Protocol`]: the SETs then ran on their own, and what
/// follows is not what was asked for.
pub fn read_transaction(
    read_buf: &mut ReadBuffer,
    stream: &mut impl Read,
    count: usize,
) -> Result<()> {
    read_status(read_buf, stream, "OK").map_err(|err| match err {
        Error::Server(msg) => Error::Protocol(format!("MULTI refused: {msg}")),
        other => other,
    })?;
    let queued = read_statuses(read_buf, stream, count, "QUEUED");
    if let Err(err) = &queued
        && err.breaks_connection()
    {
        return queued;
    }
    let exec = read_exec(read_buf, stream, count);
    match (queued, exec) {
        (_, Err(err)) if err.breaks_connection() => Err(err),
        (Err(refused), _) => Err(refused),
        (Ok(()), exec) => exec,
    }
}
// ANCHOR_END: resp_blocking_read_transaction

#[cfg(test)]
mod tests;
