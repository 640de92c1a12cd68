//! [`Wire`]: a blocking connection's stream with what every hand-written blocking client keeps
//! beside it, whatever its protocol.

use std::io::{Read, Write};
use std::time::Duration;

use crate::{Broken, ReadBuffer, Result};

// ANCHOR: core_wire
/// A connected byte stream and what every hand-written blocking client keeps beside it: a write
/// buffer reused for every command, a [`ReadBuffer`] replies are parsed in, and whether an error
/// has left the stream out of step. It knows bytes, not commands: each client's protocol code
/// encodes into [`write_buf`](Self::write_buf) and parses [`read_buf`](Self::read_buf)'s pending
/// bytes itself.
pub struct Wire<S> {
    /// The connected stream. Timeouts, if any, are its own.
    pub stream: S,
    /// Reused for every command: encoding never allocates once it has grown, and a command (or a
    /// chunk of a batch) goes out in one write.
    pub write_buf: Vec<u8>,
    /// Received bytes not yet parsed; also bounds the time one whole reply may take to arrive.
    pub read_buf: ReadBuffer,
    /// Set by the first error that leaves the stream out of step; the connection is not reused.
    pub broken: Broken,
}
// ANCHOR_END: core_wire

impl<S: Read + Write> Wire<S> {
    /// Wraps a connected stream, with a write buffer of `write_capacity` bytes to start with and
    /// a read buffer of `read_buf_len` (longer than the protocol's longest line).
    pub fn new(stream: S, write_capacity: usize, read_buf_len: usize) -> Self {
        Wire {
            stream,
            write_buf: Vec::with_capacity(write_capacity),
            read_buf: ReadBuffer::new(read_buf_len),
            broken: Broken::default(),
        }
    }

    /// Fails a reply that takes longer than `limit` to arrive in full, however steadily its bytes
    /// trickle in. `None` (the default) leaves only the stream's own per-read timeout; the
    /// clients' connect functions set the [`Options::read_timeout`](crate::Options).
    pub fn set_reply_timeout(&mut self, limit: Option<Duration>) {
        self.read_buf.set_reply_timeout(limit);
    }

    /// Sends the write buffer with one `write_all` and empties it for reuse (also on an error,
    /// which breaks the connection anyway).
    pub fn flush(&mut self) -> Result<()> {
        let sent = self.stream.write_all(&self.write_buf);
        self.write_buf.clear();
        Ok(sent?)
    }

    /// True once an error has left the stream out of step.
    pub fn is_broken(&self) -> bool {
        self.broken.is_broken()
    }

    /// One `read` into the read buffer ([`ReadBuffer::fill`]).
    pub fn fill(&mut self) -> Result<()> {
        self.read_buf.fill(&mut self.stream)
    }

    /// The next `len` bytes as a value of their own ([`ReadBuffer::take_value`]).
    pub fn take_value(&mut self, len: usize) -> Result<Vec<u8>> {
        self.read_buf.take_value(&mut self.stream, len)
    }
}

impl<S> Wire<S> {
    // ANCHOR: core_exchange
    /// Runs `op`, one exchange of a connection built on a `Wire`, unless an earlier error has
    /// broken the connection; an error of `op` that may leave the stream out of step breaks it,
    /// and every later exchange then fails at once. Every call of the memcached clients goes
    /// through it: `Wire::exchange(self, |c| …)`.
    pub fn exchange<C: AsMut<Wire<S>>, T>(
        connection: &mut C,
        op: impl FnOnce(&mut C) -> Result<T>,
    ) -> Result<T> {
        connection.as_mut().broken.check()?;
        let result = op(connection);
        connection.as_mut().broken.note(result)
    }
    // ANCHOR_END: core_exchange
}
