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

/// How a command reaches the stream.
pub trait Encoding {
    /// Writes the command `args` to `stream`, with `write_buf` as reused scratch space. A command
    /// the encoding cannot carry is refused with [`Error::InvalidInput`] before a byte is written.
    fn send(&self, stream: &mut impl Write, write_buf: &mut Vec<u8>, args: &[&[u8]]) -> Result<()>;
}

/// The multi-bulk form ([`encode_command`](crate::encode_command)), the whole command in one
/// `write`: what every client library sends.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct MultiBulk;

impl Encoding for MultiBulk {
    fn send(&self, stream: &mut impl Write, write_buf: &mut Vec<u8>, args: &[&[u8]]) -> Result<()> {
        write_buf.clear();
        crate::encode_command(write_buf, args);
        Ok(stream.write_all(write_buf)?)
    }
}

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

    /// Sends one command and reads its reply header.
    fn call(&mut self, args: &[&[u8]]) -> Result<Head> {
        self.broken.check()?;
        self.read_buf.start_reply();
        let result = (self.encoding)
            .send(&mut self.stream, &mut self.write_buf, args)
            .and_then(|()| read_head(&mut self.read_buf, &mut self.stream));
        self.broken.note(result)
    }

    fn expect_ok(&mut self, args: &[&[u8]]) -> Result<()> {
        match self.call(args)? {
            Head::Simple => Ok(()),
            other => self.unexpected(other, "a status reply"),
        }
    }

    fn unexpected<T>(&mut self, head: Head, wanted: &str) -> Result<T> {
        self.broken.note(Err(head.unexpected(wanted)))
    }
}

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
        match self.call(&[b"DEL", key])? {
            Head::Integer(removed) => Ok(removed > 0),
            other => self.unexpected(other, "an integer reply"),
        }
    }
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
    /// `+<text>\r\n`: a status reply such as `+OK`.
    Simple,
    /// `-<message>\r\n`: an error reply, with its message.
    Error(String),
    /// `:<n>\r\n`: an integer reply.
    Integer(i64),
    /// `$<len>\r\n`: a bulk reply of `len` bytes still to read, or `None` for `$-1` (nil).
    Bulk(Option<usize>),
    /// `*<n>\r\n`: an array; no command these clients send expects one.
    Array,
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

/// Reads until one reply header line is complete, and consumes it.
pub fn read_head(read_buf: &mut ReadBuffer, stream: &mut impl Read) -> Result<Head> {
    loop {
        if let Some((header, used)) = crate::parse_header(read_buf.pending())? {
            let head = match header {
                Header::Simple(_) => Head::Simple,
                Header::Error(msg) => Head::Error(String::from_utf8_lossy(msg).into_owned()),
                Header::Integer(n) => Head::Integer(n),
                Header::Bulk(len) => Head::Bulk(len),
                Header::Array(_) => Head::Array,
            };
            read_buf.consume(used);
            return Ok(head);
        }
        read_buf.fill(stream)?;
    }
}

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
