//! `raw-tcp`: the smallest honest Redis client — one `write` and one `read` per command, nothing
//! allocated but the value returned. It gives up pipelining: a million SETs are a million round
//! trips. Compare it with `buffered` (the same connection, pipelined), `raw-unix` (the same code
//! over a Unix socket), the `redis-rs` library, and `raw-tcp/per-token`, which writes the same
//! command token by token and pays for it in system calls and, with Nagle on, in delayed ACKs.
//!
//! **What it teaches.** A request/response round trip on loopback costs a few microseconds, and
//! almost all of it is the kernel: one `write`, one `read`, two context switches. A client that
//! makes exactly those two system calls per command, allocates nothing but the value it returns,
//! and reads a bulk reply straight into a buffer of the announced size is about as fast as a
//! synchronous client can be.
//!
//! **What it offers.** The contract's GET, SET, SET with expiry and DEL, and every optional
//! operation ([`Operation::ALL`]): `incr` (INCR), `get_many` (one MGET), `hset_many` and
//! `hgetall` (HSET, HGETALL) and `transaction` (MULTI, the SETs, EXEC).
//!
//! **What it gives up.** One round trip per command: [`Client::set_many`] and
//! [`Client::get_many_pipelined`] are the contract's default loops, so a million SETs cost a
//! million round trips, and a transaction of N SETs costs N + 2 (each SET is answered `+QUEUED`
//! before the next is sent). No reconnect, no RESP3, no cluster; after a malformed reply or a
//! timeout the connection is marked broken and refuses further commands rather than guess where
//! the next reply starts.
//!
//! **Timeouts.** [core's timeout rules](kvbench_core::Options#timeouts), the whole-reply bound set
//! by the connect functions ([`RawConnection::set_reply_timeout`]).
//!
//! **The Nagle lesson.** [`WriteStrategy::PerToken`] writes every protocol token with its own
//! `write`, as naive `socket << piece` code does. With `TCP_NODELAY` off, the kernel holds each
//! small segment until the previous one is acknowledged, and the server's delayed ACK can stall a
//! command for tens of milliseconds. The `raw-tcp/per-token*` and `raw-tcp/nagle` specs exist so
//! the benchmark can show it.
//!
//! **How to read it.** The connection itself is [`kvbench_resp::blocking::Connection`], generic
//! over the stream (so `raw-unix` reuses it unchanged) and over how a command is encoded (so
//! `inline` does too). Open `crates/resp/src/blocking.rs` first: a command is encoded and written
//! by its [`Encoding`], the reply header read by `read_header`, a bulk value by `read_bulk`,
//! straight into a `Vec` of the announced size. What is left here is this crate's own lesson: the
//! two ways of writing a command ([`WriteStrategy`]) and the four specs that measure them.
#![deny(missing_docs)]

use std::io::Write;
use std::net::TcpStream;

use kvbench_core::{
    Backend, Client, ClientSpec, Endpoint, Error, Operation, Options, Result, Transport,
};
use kvbench_resp::blocking::{Connection, Encoding, MultiBulk};

// ANCHOR: raw_tcp_per_token
/// How a command reaches the socket: this crate's [`Encoding`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WriteStrategy {
    /// Encode the whole command into one buffer, then one `write` ([`MultiBulk`]). The default.
    PerCommand,
    /// One `write` per protocol token (`*3\r\n`, `$3\r\n`, `SET`, `\r\n`, ...): the naive way.
    PerToken,
}
// ANCHOR_END: raw_tcp_per_token

impl Encoding for WriteStrategy {
    // ANCHOR: send
    fn send(&self, stream: &mut impl Write, write_buf: &mut Vec<u8>, args: &[&[u8]]) -> Result<()> {
        if *self == WriteStrategy::PerCommand {
            return MultiBulk.send(stream, write_buf, args);
        }
        // *<n>\r\n then, per argument, $<len>\r\n, <bytes>, \r\n — each its own write.
        write_token(stream, write_buf, b'*', args.len())?;
        for arg in args {
            write_token(stream, write_buf, b'$', arg.len())?;
            stream.write_all(arg)?;
            stream.write_all(b"\r\n")?;
        }
        Ok(())
    }
    // ANCHOR_END: send
}

/// Writes `<prefix><n>\r\n` with a `write` of its own.
fn write_token(
    stream: &mut impl Write,
    write_buf: &mut Vec<u8>,
    prefix: u8,
    n: usize,
) -> Result<()> {
    write_buf.clear();
    write_buf.push(prefix);
    write_buf.extend_from_slice(itoa::Buffer::new().format(n).as_bytes());
    write_buf.extend_from_slice(b"\r\n");
    Ok(stream.write_all(write_buf)?)
}

/// Socket-level settings of a connection.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Config {
    /// How commands are written.
    pub strategy: WriteStrategy,
    /// Set `TCP_NODELAY` (disable Nagle's algorithm).
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

// ANCHOR: raw_tcp_connection
/// The connection of `raw-tcp` and `raw-unix`: the shared RESP connection, written by a
/// [`WriteStrategy`].
pub type RawConnection<S> = Connection<S, WriteStrategy>;
// ANCHOR_END: raw_tcp_connection

/// Connects over TCP with the given socket settings.
// ANCHOR: connect_tcp
pub fn connect_tcp(
    addr: &str,
    options: &Options,
    config: Config,
) -> Result<RawConnection<TcpStream>> {
    kvbench_resp::blocking::connect_tcp(addr, options, config.nodelay, config.strategy)
}
// ANCHOR_END: connect_tcp

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
    summary: "blocking RESP2 over TCP: one write per command, one reused buffer, TCP_NODELAY",
    // The fastest Redis client over TCP (one write per command, no pipelining to pay for).
    loopback_floor: true,
    connect: |endpoint, options| connect_with(endpoint, options, Config::default()),
    operations: Operation::ALL,
    ..ClientSpec::HAND_WRITTEN
};

/// One write per protocol token, `TCP_NODELAY` on: extra syscalls, no Nagle stall.
pub const SPEC_PER_TOKEN: ClientSpec = ClientSpec {
    name: "raw-tcp/per-token",
    summary: "raw-tcp writing each protocol token with its own write, TCP_NODELAY on",
    loopback_floor: false,
    connect: |endpoint, options| connect_with(endpoint, options, PER_TOKEN),
    ..SPEC
};

/// One write per command with Nagle's algorithm left on: harmless, since a whole command is
/// one segment and nothing else is in flight.
pub const SPEC_NAGLE: ClientSpec = ClientSpec {
    name: "raw-tcp/nagle",
    summary: "raw-tcp with TCP_NODELAY off: one write per command, so Nagle never holds a segment",
    loopback_floor: false,
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
// ANCHOR: spec_per_token_nagle
pub const SPEC_PER_TOKEN_NAGLE: ClientSpec = ClientSpec {
    name: "raw-tcp/per-token/nagle",
    summary: "raw-tcp writing each token separately with TCP_NODELAY off: Nagle meets delayed ACK",
    loopback_floor: false,
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
// ANCHOR_END: spec_per_token_nagle
