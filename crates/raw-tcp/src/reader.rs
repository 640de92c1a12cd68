//! Reading RESP2 replies from a blocking stream: the one implementation `raw-tcp`, `raw-unix`,
//! `inline` and `buffered` share.
//!
//! The codec (`kvbench_resp`) is sans-I/O: it parses bytes it is handed. This is the I/O half: a
//! reused read buffer, the reads that fill it, and a [`ReplyDeadline`] that bounds each whole
//! reply. The stream is passed to each call rather than owned, so `buffered` can lend the reader
//! to its reader thread with a shared `&TcpStream`.

use std::io::{self, Read};
use std::time::Duration;

use kvbench_core::{Error, ReplyDeadline, Result};
use kvbench_resp::Header;

/// Size of the reused read buffer. It must exceed [`kvbench_resp::MAX_LINE_LEN`] so that an
/// over-long header line is reported as malformed instead of filling the buffer forever.
pub const READ_BUF_LEN: usize = kvbench_resp::MAX_LINE_LEN + 64 * 1024;

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
    /// (the connection stays in sync); anything else is a reply we did not ask for, and we no
    /// longer know where the next one starts, so [`Error::Protocol`].
    pub fn unexpected(self, wanted: &str) -> Error {
        match self {
            Head::Error(msg) => Error::Server(msg),
            _ => Error::Protocol(format!("unexpected reply type, wanted {wanted}")),
        }
    }
}

/// The buffered reply reader: `buf[start..end]` holds bytes received but not yet parsed.
/// Reused for every reply.
pub struct RespReader {
    buf: Box<[u8]>,
    start: usize,
    end: usize,
    /// Bounds the time one whole reply may take to arrive.
    deadline: ReplyDeadline,
}

impl Default for RespReader {
    fn default() -> Self {
        Self::new()
    }
}

impl RespReader {
    /// An empty reader with a [`READ_BUF_LEN`] buffer and no whole-reply timeout.
    pub fn new() -> Self {
        RespReader {
            buf: vec![0; READ_BUF_LEN].into_boxed_slice(),
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

    /// Reads more bytes from the stream into the free end of the buffer.
    pub fn fill(&mut self, stream: &mut impl Read) -> Result<()> {
        if self.start == self.end {
            (self.start, self.end) = (0, 0);
        } else if self.end == self.buf.len() {
            self.buf.copy_within(self.start..self.end, 0);
            (self.start, self.end) = (0, self.end - self.start);
        }
        self.deadline.check()?;
        let n = stream.read(&mut self.buf[self.end..])?;
        if n == 0 {
            return Err(Error::Io(io::Error::new(
                io::ErrorKind::UnexpectedEof,
                "server closed the connection mid-reply",
            )));
        }
        self.end += n;
        Ok(())
    }

    /// Reads until one reply header line is complete, and consumes it.
    pub fn read_head(&mut self, stream: &mut impl Read) -> Result<Head> {
        loop {
            if let Some((header, used)) = kvbench_resp::parse_header(self.pending())? {
                let head = match header {
                    Header::Simple(_) => Head::Simple,
                    Header::Error(msg) => Head::Error(String::from_utf8_lossy(msg).into_owned()),
                    Header::Integer(n) => Head::Integer(n),
                    Header::Bulk(len) => Head::Bulk(len),
                    Header::Array(_) => Head::Array,
                };
                self.start += used;
                return Ok(head);
            }
            self.fill(stream)?;
        }
    }

    /// Reads the body of a bulk reply whose header announced `len` bytes.
    pub fn read_bulk(&mut self, stream: &mut impl Read, len: usize) -> Result<Vec<u8>> {
        // <data>\r\n — the one allocation of a GET hit is this buffer of the announced size
        // (already capped by the decoder at MAX_BULK_LEN). Replies are read by their length,
        // whatever the value holds.
        let mut value = vec![0; len];
        let buffered = len.min(self.end - self.start);
        value[..buffered].copy_from_slice(&self.buf[self.start..self.start + buffered]);
        self.start += buffered;
        // What did not arrive with the header goes straight from the socket into the value.
        let mut filled = buffered;
        while filled < len {
            self.deadline.check()?;
            match stream.read(&mut value[filled..]) {
                Ok(0) => return Err(io::Error::from(io::ErrorKind::UnexpectedEof).into()),
                Ok(n) => filled += n,
                Err(err) if err.kind() == io::ErrorKind::Interrupted => {}
                Err(err) => return Err(err.into()),
            }
        }
        while self.end - self.start < 2 {
            self.fill(stream)?;
        }
        if &self.buf[self.start..self.start + 2] != b"\r\n" {
            return Err(Error::Protocol("bulk data not followed by CRLF".into()));
        }
        self.start += 2;
        Ok(value)
    }
}
