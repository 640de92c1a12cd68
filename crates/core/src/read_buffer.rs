//! [`ReadBuffer`]: the I/O half every blocking hand-written client shares, whatever its protocol.

use std::io::{self, Read};
use std::time::Duration;

use crate::{Error, ReplyDeadline, Result};

/// A reused read buffer over a blocking stream, for replies parsed in place.
///
/// The protocol code stays sans-I/O: it looks at [`pending`](Self::pending) bytes, answers "a
/// reply of `n` bytes" (then [`consume`](Self::consume) them) or "need more" (then
/// [`fill`](Self::fill), one `read`). A value whose length was announced is taken out with
/// [`take_value`](Self::take_value), which reads what has not arrived yet straight into the
/// value's own `Vec`. Every read checks a [`ReplyDeadline`], so a whole reply is bounded in time,
/// not just each read; the end of the stream is an error, since a reply was still owed.
///
/// The buffer has a fixed size and never grows: the caller's longest line (its parser's limit)
/// must be shorter, so a full buffer always holds something the parser can consume or reject.
/// The stream is passed to each call rather than owned, so a client can lend the buffer to another
/// thread that reads through a shared `&TcpStream`.
pub struct ReadBuffer {
    buf: Box<[u8]>,
    /// `buf[start..end]` holds bytes received but not yet consumed.
    start: usize,
    end: usize,
    /// Bounds the time one whole reply may take to arrive.
    deadline: ReplyDeadline,
}

impl ReadBuffer {
    /// An empty buffer of `len` bytes, allocated once, with no whole-reply timeout.
    pub fn new(len: usize) -> Self {
        ReadBuffer {
            buf: vec![0; len].into_boxed_slice(),
            start: 0,
            end: 0,
            deadline: ReplyDeadline::default(),
        }
    }

    /// Fails a reply that takes longer than `limit` to arrive in full (see [`ReplyDeadline`]).
    pub fn set_reply_timeout(&mut self, limit: Option<Duration>) {
        self.deadline.set_limit(limit);
    }

    /// Starts the whole-reply clock afresh: call before waiting for each reply.
    pub fn start_reply(&mut self) {
        self.deadline.start();
    }

    /// Bytes received but not yet consumed.
    pub fn pending(&self) -> &[u8] {
        &self.buf[self.start..self.end]
    }

    /// Marks the first `n` pending bytes as parsed.
    pub fn consume(&mut self, n: usize) {
        debug_assert!(n <= self.end - self.start);
        self.start += n;
    }

    // ANCHOR: core_fill
    /// One `read` into the free end of the buffer, first moving the pending bytes to the front if
    /// the buffer is full (or rewinding it when nothing is pending, which is free).
    pub fn fill(&mut self, stream: &mut impl Read) -> Result<()> {
        if self.start == self.end {
            (self.start, self.end) = (0, 0);
        } else if self.end == self.buf.len() {
            self.buf.copy_within(self.start..self.end, 0);
            (self.start, self.end) = (0, self.end - self.start);
        }
        debug_assert!(self.end < self.buf.len(), "a line longer than the buffer");
        self.end += read_before_deadline(&mut self.deadline, stream, &mut self.buf[self.end..])?;
        Ok(())
    }
    // ANCHOR_END: core_fill

    // ANCHOR: core_take_value
    /// Takes the next `len` bytes as a value of its own: the bytes already buffered are copied,
    /// the rest are read from `stream` straight into the value, with no detour through this buffer.
    ///
    /// This allocates `len` bytes at once, so a `len` announced by the peer must be capped by the
    /// caller first. The one allocation is the returned `Vec`; `len` 0 allocates nothing.
    pub fn take_value(&mut self, stream: &mut impl Read, len: usize) -> Result<Vec<u8>> {
        // Safe Rust reads only into initialised bytes. `vec![0; len]` asks the allocator for
        // zeroed memory, and a large block comes as fresh pages from the kernel, zero already and
        // not even mapped until written: a peer that announces the largest value and then goes
        // silent costs no memset of it. (Growing a `Vec` with `resize` would write every byte.)
        let mut value = vec![0; len];
        let buffered = len.min(self.end - self.start);
        value[..buffered].copy_from_slice(&self.buf[self.start..self.start + buffered]);
        self.start += buffered;
        let mut filled = buffered;
        while filled < len {
            filled += read_before_deadline(&mut self.deadline, stream, &mut value[filled..])?;
        }
        Ok(value)
    }
    // ANCHOR_END: core_take_value
}

/// One `read` of part of a reply, once the reply's deadline is checked: retried if a signal
/// interrupted it; end of stream is an error, since the reply is not complete.
fn read_before_deadline(
    deadline: &mut ReplyDeadline,
    stream: &mut impl Read,
    into: &mut [u8],
) -> Result<usize> {
    deadline.check()?;
    loop {
        match stream.read(into) {
            Ok(0) => {
                let msg = "server closed the connection mid-reply";
                return Err(Error::Io(io::Error::new(io::ErrorKind::UnexpectedEof, msg)));
            }
            Ok(n) => return Ok(n),
            Err(err) if err.kind() == io::ErrorKind::Interrupted => {}
            Err(err) => return Err(err.into()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Hands out `bytes` at most `step` bytes per read, then end of stream; counts reads.
    struct Drip<'a> {
        bytes: &'a [u8],
        step: usize,
        reads: usize,
    }

    impl Read for Drip<'_> {
        fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
            self.reads += 1;
            let n = self.step.min(buf.len()).min(self.bytes.len());
            buf[..n].copy_from_slice(&self.bytes[..n]);
            self.bytes = &self.bytes[n..];
            Ok(n)
        }
    }

    fn drip(bytes: &[u8], step: usize) -> Drip<'_> {
        Drip {
            bytes,
            step,
            reads: 0,
        }
    }

    #[test]
    fn fill_appends_and_consume_advances() {
        let mut read_buf = ReadBuffer::new(8);
        let mut stream = drip(b"abcdef", 4);
        read_buf.fill(&mut stream).unwrap();
        assert_eq!(read_buf.pending(), b"abcd");
        read_buf.consume(3);
        read_buf.fill(&mut stream).unwrap();
        assert_eq!(read_buf.pending(), b"def");
    }

    #[test]
    fn a_full_buffer_moves_its_pending_bytes_to_the_front() {
        let mut read_buf = ReadBuffer::new(4);
        let mut stream = drip(b"abcdef", 4);
        read_buf.fill(&mut stream).unwrap();
        read_buf.consume(2);
        read_buf.fill(&mut stream).unwrap();
        assert_eq!(read_buf.pending(), b"cdef");
    }

    #[test]
    fn take_value_copies_what_is_buffered_and_reads_the_rest_in_place() {
        let mut read_buf = ReadBuffer::new(4);
        let mut stream = drip(b"0123456789tail", 4);
        read_buf.fill(&mut stream).unwrap();
        read_buf.consume(1);
        let value = read_buf.take_value(&mut stream, 9).unwrap();
        assert_eq!(value, b"123456789");
        assert_eq!(value.capacity(), 9, "allocated once, at the announced size");
        assert_eq!(
            stream.reads, 3,
            "one fill, then two reads straight into the value"
        );
        assert_eq!(read_buf.pending(), b"");
        read_buf.fill(&mut stream).unwrap();
        assert_eq!(read_buf.pending(), b"tail");
    }

    #[test]
    fn a_value_that_arrived_whole_needs_no_read() {
        let mut read_buf = ReadBuffer::new(16);
        let mut stream = drip(b"valueEND", 16);
        read_buf.fill(&mut stream).unwrap();
        assert_eq!(read_buf.take_value(&mut stream, 5).unwrap(), b"value");
        assert_eq!(read_buf.take_value(&mut stream, 0).unwrap(), b"");
        assert_eq!((stream.reads, read_buf.pending()), (1, &b"END"[..]));
    }

    #[test]
    fn end_of_stream_mid_reply_is_an_eof_error() {
        let mut read_buf = ReadBuffer::new(8);
        let eof =
            |err: Error| matches!(err, Error::Io(e) if e.kind() == io::ErrorKind::UnexpectedEof);
        assert!(eof(read_buf.fill(&mut drip(b"", 1)).unwrap_err()));
        assert!(eof(read_buf
            .take_value(&mut drip(b"ab", 1), 3)
            .unwrap_err()));
    }

    #[test]
    fn a_late_reply_times_out() {
        let mut read_buf = ReadBuffer::new(8);
        read_buf.set_reply_timeout(Some(Duration::ZERO));
        read_buf.start_reply();
        let mut stream = drip(b"abcdef", 1);
        read_buf.fill(&mut stream).unwrap();
        let err = read_buf.take_value(&mut stream, 3).unwrap_err();
        assert!(matches!(err, Error::Timeout(_)), "{err:?}");
    }
}
