//! `raw-tcp`: the smallest honest Redis client — a blocking socket, one reused buffer each way,
//! one `write` per command, and a reply parsed just enough.
//!
//! **What it teaches.** A request/response round trip on loopback costs a few microseconds, and
//! almost all of it is the kernel: one `write`, one `read`, two context switches. A client that
//! makes exactly those two system calls per command, allocates nothing but the value it returns,
//! and reads a bulk reply straight into a buffer of the announced size is about as fast as a
//! synchronous client can be. Compare it with `buffered` (pipelining), `raw-unix` (the same code
//! over a Unix socket) and the `redis-rs` library.
//!
//! **What it gives up.** One round trip per command: [`Client::set_many`] is the contract's
//! default loop, so a million SETs cost a million round trips. No reconnect, no RESP3, no
//! cluster; after a malformed reply or a timeout the connection is marked broken and refuses
//! further commands rather than guess where the next reply starts.
//!
//! **Timeouts.** [`Options::connect_timeout`] bounds the TCP connect; [`Options::write_timeout`]
//! bounds each `write` (the socket's `SO_SNDTIMEO`); [`Options::read_timeout`] bounds each `read`
//! *and* the whole reply: the socket's own timeout only notices a server that goes silent, so a
//! server dripping one byte every 100 ms would otherwise hold a call for as long as it liked.
//! A reply still incomplete after the read timeout fails with [`Error::Timeout`] at the next
//! read (so within twice the timeout at worst). See [`RawConnection::set_reply_timeout`].
//!
//! **The Nagle lesson.** [`WriteStrategy::PerToken`] writes every protocol token with its own
//! `write`, as naive `socket << piece` code does. With `TCP_NODELAY` off, the kernel holds each
//! small segment until the previous one is acknowledged, and the server's delayed ACK can stall a
//! command for tens of milliseconds. The `raw-tcp/per-token*` and `raw-tcp/nagle` specs exist so
//! the benchmark can show it.
//!
//! The connection type is generic over the stream, so `raw-unix` reuses it unchanged; the reply
//! reader ([`read_head`] and [`read_bulk`], in [`reader`]) is shared with `inline` and `buffered`
//! too. It parses replies in a [`ReadBuffer`], the read buffer and whole-reply deadline from
//! `kvbench-core` that `memcached-text` uses as well.
#![deny(missing_docs)]

pub mod reader;

use std::io::{self, Read, Write};
use std::net::TcpStream;
use std::time::Duration;

use kvbench_core::{
    Backend, Client, ClientSpec, Endpoint, Error, Kind, Options, ReadBuffer, Result, Transport,
};

pub use crate::reader::{Head, READ_BUF_LEN, read_bulk, read_head};

/// How a command reaches the socket.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WriteStrategy {
    /// Encode the whole command into one buffer, then one `write`. The default.
    PerCommand,
    /// One `write` per protocol token (`*3\r\n`, `$3\r\n`, `SET`, `\r\n`, ...): the naive way.
    PerToken,
}

/// Socket-level settings of a connection.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Config {
    /// How commands are written.
    pub strategy: WriteStrategy,
    /// Set `TCP_NODELAY` (disable Nagle's algorithm). Ignored for Unix sockets.
    pub nodelay: bool,
}

impl Default for Config {
    fn default() -> Self {
        Config {
            strategy: WriteStrategy::PerCommand,
            nodelay: true,
        }
    }
}

/// A RESP2 connection over any byte stream.
pub struct RawConnection<S> {
    stream: S,
    strategy: WriteStrategy,
    /// Reused for every command: encoding never allocates once it has grown.
    write_buf: Vec<u8>,
    /// Reused for every reply; also bounds the time one whole reply may take to arrive.
    reader: ReadBuffer,
    /// Set after an error that leaves us unsure where the next reply starts.
    broken: bool,
}

impl<S: Read + Write> RawConnection<S> {
    /// Wraps a connected stream (timeouts are the caller's to set on it).
    pub fn new(stream: S, strategy: WriteStrategy) -> Self {
        RawConnection {
            stream,
            strategy,
            write_buf: Vec::with_capacity(256),
            reader: ReadBuffer::new(READ_BUF_LEN),
            broken: false,
        }
    }

    /// Fails a reply that takes longer than `limit` to arrive in full, however steadily its bytes
    /// trickle in. `None` (the default for [`new`](Self::new)) leaves only the stream's own
    /// per-read timeout; the connect functions set the [`Options::read_timeout`].
    pub fn set_reply_timeout(&mut self, limit: Option<Duration>) {
        self.reader.set_reply_timeout(limit);
    }

    /// The underlying stream.
    pub fn stream(&self) -> &S {
        &self.stream
    }

    /// Sends one command and reads its reply header; marks the connection broken on any error
    /// that can leave it out of sync.
    fn call(&mut self, args: &[&[u8]]) -> Result<Head> {
        if self.broken {
            return Err(Error::Io(io::Error::new(
                io::ErrorKind::NotConnected,
                "connection marked broken by an earlier error",
            )));
        }
        self.reader.start_reply();
        let result = self
            .send(args)
            .and_then(|()| read_head(&mut self.reader, &mut self.stream));
        if let Err(err) = &result {
            self.broken |= err.breaks_connection();
        }
        result
    }

    fn send(&mut self, args: &[&[u8]]) -> Result<()> {
        match self.strategy {
            WriteStrategy::PerCommand => {
                self.write_buf.clear();
                kvbench_resp::encode_command(&mut self.write_buf, args);
                self.stream.write_all(&self.write_buf)?;
            }
            WriteStrategy::PerToken => {
                // *<n>\r\n then, per argument, $<len>\r\n, <bytes>, \r\n — each its own write.
                self.write_token(b'*', args.len())?;
                for arg in args {
                    self.write_token(b'$', arg.len())?;
                    self.stream.write_all(arg)?;
                    self.stream.write_all(b"\r\n")?;
                }
            }
        }
        Ok(())
    }

    fn write_token(&mut self, prefix: u8, n: usize) -> Result<()> {
        self.write_buf.clear();
        self.write_buf.push(prefix);
        self.write_buf
            .extend_from_slice(itoa::Buffer::new().format(n).as_bytes());
        self.write_buf.extend_from_slice(b"\r\n");
        Ok(self.stream.write_all(&self.write_buf)?)
    }

    fn expect_ok(&mut self, args: &[&[u8]]) -> Result<()> {
        match self.call(args)? {
            Head::Simple => Ok(()),
            other => Err(self.unexpected(other, "a status reply")),
        }
    }

    /// Turns an error reply into [`Error::Server`]; anything else is a reply we did not ask
    /// for, and we no longer know where the next one starts.
    fn unexpected(&mut self, head: Head, wanted: &str) -> Error {
        let err = head.unexpected(wanted);
        self.broken |= err.breaks_connection();
        err
    }
}

impl<S: Read + Write + Send> Client for RawConnection<S> {
    fn get(&mut self, key: &[u8]) -> Result<Option<Vec<u8>>> {
        match self.call(&[b"GET", key])? {
            Head::Bulk(None) => Ok(None),
            Head::Bulk(Some(len)) => {
                let value = read_bulk(&mut self.reader, &mut self.stream, len);
                if value.is_err() {
                    self.broken = true;
                }
                value.map(Some)
            }
            other => Err(self.unexpected(other, "a bulk reply")),
        }
    }

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
            other => Err(self.unexpected(other, "an integer reply")),
        }
    }
}

/// Connects over TCP with the given socket settings.
pub fn connect_tcp(
    addr: &str,
    options: &Options,
    config: Config,
) -> Result<RawConnection<TcpStream>> {
    let stream = kvbench_core::connect_tcp_stream(addr, options, config.nodelay)?;
    let mut connection = RawConnection::new(stream, config.strategy);
    connection.set_reply_timeout(Some(options.read_timeout));
    Ok(connection)
}

fn connect_with(endpoint: &Endpoint, options: &Options, config: Config) -> Result<Box<dyn Client>> {
    match endpoint {
        Endpoint::Tcp(addr) => Ok(Box::new(connect_tcp(addr, options, config)?)),
        Endpoint::Unix(_) => Err(Error::Unsupported(
            "raw-tcp speaks TCP only; use raw-unix".into(),
        )),
    }
}

const PER_TOKEN: Config = Config {
    strategy: WriteStrategy::PerToken,
    nodelay: true,
};

/// The default client: one write per command, `TCP_NODELAY` on.
pub const SPEC: ClientSpec = ClientSpec {
    name: "raw-tcp",
    backend: Backend::Redis,
    transports: &[Transport::Tcp],
    kind: Kind::HandWritten,
    summary: "blocking RESP2 over TCP: one write per command, one reused buffer, TCP_NODELAY",
    pipelining: "none: one round trip per item (the contract's default loop)",
    limitations: &[],
    slow_round_trip: None,
    known_defects: &[],
    connect: |endpoint, options| connect_with(endpoint, options, Config::default()),
};

/// One write per protocol token, `TCP_NODELAY` on: extra syscalls, no Nagle stall.
pub const SPEC_PER_TOKEN: ClientSpec = ClientSpec {
    name: "raw-tcp/per-token",
    summary: "raw-tcp writing each protocol token with its own write, TCP_NODELAY on",
    connect: |endpoint, options| connect_with(endpoint, options, PER_TOKEN),
    ..SPEC
};

/// One write per command with Nagle's algorithm left on: harmless, since a whole command is
/// one segment and nothing else is in flight.
pub const SPEC_NAGLE: ClientSpec = ClientSpec {
    name: "raw-tcp/nagle",
    summary: "raw-tcp with TCP_NODELAY off: one write per command, so Nagle never holds a segment",
    connect: |endpoint, options| {
        connect_with(
            endpoint,
            options,
            Config {
                strategy: WriteStrategy::PerCommand,
                nodelay: false,
            },
        )
    },
    ..SPEC
};

/// One write per protocol token with Nagle's algorithm on: each small write after the first
/// waits for the previous segment's ACK, which the server delays.
pub const SPEC_PER_TOKEN_NAGLE: ClientSpec = ClientSpec {
    name: "raw-tcp/per-token/nagle",
    summary: "raw-tcp writing each token separately with TCP_NODELAY off: Nagle meets delayed ACK",
    slow_round_trip: Some(
        "each command's later tokens wait for the ACK of its first, which the server delays: \
         ~40 ms per round trip on Linux loopback",
    ),
    connect: |endpoint, options| {
        connect_with(
            endpoint,
            options,
            Config {
                strategy: WriteStrategy::PerToken,
                nodelay: false,
            },
        )
    },
    ..SPEC
};
