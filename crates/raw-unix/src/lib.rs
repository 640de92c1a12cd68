//! `raw-unix`: the `raw-tcp` client over a Unix domain socket — and nothing else changed. It
//! shows what TCP itself costs on a loopback round trip; it gives up reach (a Unix socket only
//! works on the same machine). Compare it with `raw-tcp`.
//!
//! **What it teaches.** How much of a loopback round trip is TCP itself. A Unix stream socket
//! skips the TCP/IP stack (no checksums, no segmentation, no ACKs, no Nagle), so the same bytes
//! cost fewer instructions in the kernel. To make the comparison mean exactly that, this crate
//! contains no protocol code at all: it connects a [`UnixStream`] and hands it to
//! [`kvbench_raw_tcp::RawConnection`], the very type `raw-tcp` uses, which is generic over the
//! stream. Same buffers, same single `write` per command, same parser — only the socket differs.
//!
//! **What it offers.** Everything `raw-tcp` offers — GET, SET, SET with expiry, DEL and every
//! optional operation of the contract (INCR, MGET, HSET/HGETALL, MULTI … EXEC) — through the
//! same code, since the connection and the spec's operations are `raw-tcp`'s.
//!
//! **What it gives up.** Everything `raw-tcp` gives up, plus reach: a Unix socket only works on
//! the same machine, so it says nothing about a real network.
//!
//! **Timeouts.** [core's timeout rules](kvbench_core::Options#timeouts), as in `raw-tcp`; what this
//! transport changes is that the connect has none (`std` has no `UnixStream::connect_timeout`).
#![deny(missing_docs)]

use std::os::unix::net::UnixStream;
use std::path::Path;

use kvbench_core::{Client, ClientSpec, Endpoint, Error, Options, Result, Transport};
use kvbench_raw_tcp::{RawConnection, WriteStrategy};

/// Connects to a Redis Unix socket. Reads and writes get the usual timeouts;
/// [`Options::connect_timeout`] is not applied (see the crate docs).
// ANCHOR: connect_unix
pub fn connect_unix(path: &Path, options: &Options) -> Result<RawConnection<UnixStream>> {
    kvbench_resp::blocking::connect_unix(path, options, WriteStrategy::PerCommand)
}
// ANCHOR_END: connect_unix

// ANCHOR: raw_unix_spec
/// The client as the suite lists it: `raw-tcp`'s spec with another name, transport and connect.
pub const SPEC: ClientSpec = ClientSpec {
    name: "raw-unix",
    transports: &[Transport::Unix],
    summary: "raw-tcp's connection type over a Unix socket: only the transport differs",
    connect: |endpoint, options| match endpoint {
        Endpoint::Unix(path) => Ok(Box::new(connect_unix(path, options)?) as Box<dyn Client>),
        Endpoint::Tcp(_) => Err(Error::Unsupported(
            "raw-unix speaks Unix sockets only; use raw-tcp".into(),
        )),
    },
    ..kvbench_raw_tcp::SPEC
};
// ANCHOR_END: raw_unix_spec
