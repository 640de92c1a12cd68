//! The codec's blocking I/O half: [`Connection`], the one connection type every blocking
//! hand-written Redis client is built on (all but `multiplexed`, which uses only the codec).
//!
//! The codec above parses bytes it is handed; this module moves them. A [`Connection`] is a
//! [`Wire`] from `kvbench-core` (a blocking stream, a reused write buffer and a reused
//! [`ReadBuffer`], as the memcached clients' are) with an encoding. It sends a command, reads its
//! reply with one of the readers in `blocking/read.rs` ([`read_value`], [`read_status`], …: a
//! header line parsed in place, a bulk's data read by its length), and marks itself
//! [`Broken`](kvbench_core::Broken) after any error that can leave it out of step. The one thing
//! the clients differ in — how a command becomes bytes on the socket — is a type parameter, an
//! [`Encoding`]: [`MultiBulk`] here (one `write` per command: `raw-tcp`, `raw-unix`, `buffered`),
//! one `write` per token (`raw-tcp`'s `per-token` specs) or the inline form (`inline`).
//!
//! Beyond GET, SET and DEL it implements the contract's optional operations, one round trip per
//! command: `INCR`, `MGET`, `HSET key f v …`, `HGETALL`, and a transaction as `MULTI`, one `SET`
//! at a time (each answered `+QUEUED`), then `EXEC`. A client that pipelines reads with the public
//! readers itself: [`read_statuses`], [`read_each`], and [`read_transaction`] for a whole
//! transaction sent at once ([`Connection::pipeline`]).
//!
//! Timeouts follow [core's rules](kvbench_core::Options#timeouts); the connect functions set the
//! whole-reply bound ([`Connection::set_reply_timeout`]).

use std::io::{Read, Write};
use std::net::TcpStream;
use std::os::unix::net::UnixStream;
use std::path::Path;
use std::time::Duration;

use kvbench_core::{Client, Endpoint, Options, ReadBuffer, Result, Wire};

mod read;

pub use read::{
    read_each, read_pairs, read_reply, read_status, read_statuses, read_transaction, read_value,
    read_values,
};
use read::{read_exec, read_integer};

/// Size of the reused [`ReadBuffer`]. It must exceed [`MAX_LINE_LEN`](crate::MAX_LINE_LEN) so
/// that an over-long header line is reported as malformed instead of filling the buffer forever.
pub const READ_BUF_LEN: usize = crate::MAX_LINE_LEN + 64 * 1024;

// ANCHOR: resp_blocking_encoding
/// How a command reaches the stream.
pub trait Encoding {
    /// Writes the command `args` to `stream`, with `write_buf` as reused scratch space. A command
    /// the encoding cannot carry is refused with
    /// [`Error::InvalidInput`](kvbench_core::Error::InvalidInput) before a byte is written.
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
    /// The stream, a write buffer reused for every command (encoding never allocates once it has
    /// grown), the read buffer replies are parsed in, and whether the stream is out of step.
    wire: Wire<S>,
    encoding: E,
}
// ANCHOR_END: resp_blocking_connection

impl<S: Read + Write, E: Encoding> Connection<S, E> {
    /// Wraps a connected stream (timeouts are the caller's to set on it).
    pub fn new(stream: S, encoding: E) -> Self {
        let wire = Wire::new(stream, 256, READ_BUF_LEN);
        Connection { wire, encoding }
    }

    /// Fails a reply that takes longer than `limit` to arrive in full
    /// ([`Wire::set_reply_timeout`]); the connect functions set the [`Options::read_timeout`].
    pub fn set_reply_timeout(&mut self, limit: Option<Duration>) {
        self.wire.set_reply_timeout(limit);
    }

    /// The underlying stream.
    pub fn stream(&self) -> &S {
        &self.wire.stream
    }

    /// True once an error has left the connection out of step; every call then fails at once.
    pub fn is_broken(&self) -> bool {
        self.wire.broken.is_broken()
    }

    /// Runs `op` on the stream and both buffers, unless the connection is broken; an error that
    /// leaves the stream out of step breaks it. For clients that add an exchange of their own
    /// (`buffered`'s pipeline).
    pub fn exchange<T>(
        &mut self,
        op: impl FnOnce(&mut S, &mut Vec<u8>, &mut ReadBuffer) -> Result<T>,
    ) -> Result<T> {
        self.wire.broken.check()?;
        let result = op(
            &mut self.wire.stream,
            &mut self.wire.write_buf,
            &mut self.wire.read_buf,
        );
        self.wire.broken.note(result)
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
        self.wire.broken.check()?;
        self.wire.read_buf.start_reply();
        let result = (self.encoding)
            .send(&mut self.wire.stream, &mut self.wire.write_buf, args)
            .and_then(|()| read(&mut self.wire.read_buf, &mut self.wire.stream));
        self.wire.broken.note(result)
    }
    // ANCHOR_END: resp_blocking_call_with

    fn expect_ok(&mut self, args: &[&[u8]]) -> Result<()> {
        self.call_with(args, |read_buf, stream| read_status(read_buf, stream, "OK"))
    }

    fn integer(&mut self, args: &[&[u8]]) -> Result<i64> {
        self.call_with(args, read_integer)
    }
}

// ANCHOR: resp_blocking_impl_client
impl<S: Read + Write + Send, E: Encoding + Send> Client for Connection<S, E> {
    // ANCHOR: raw_get
    fn get(&mut self, key: &[u8]) -> Result<Option<Vec<u8>>> {
        self.call_with(&[b"GET", key], read_value)
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

#[cfg(test)]
mod tests;
