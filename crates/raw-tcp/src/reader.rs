//! Reading RESP2 replies from a blocking stream: the one implementation `raw-tcp`, `raw-unix`,
//! `inline` and `buffered` share.
//!
//! The codec (`kvbench_resp`) is sans-I/O: it parses bytes it is handed. The I/O half — a reused
//! read buffer, the reads that fill it, and the deadline that bounds each whole reply — is
//! [`ReadBuffer`], from `kvbench-core`, which `memcached-text` uses too. What is left here is
//! RESP's part: [`read_head`] and [`read_bulk`].

use std::io::Read;

use kvbench_core::{Error, ReadBuffer, Result};
use kvbench_resp::Header;

/// Size of the reused [`ReadBuffer`]. It must exceed [`kvbench_resp::MAX_LINE_LEN`] so that an
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

/// Reads until one reply header line is complete, and consumes it.
pub fn read_head(input: &mut ReadBuffer, stream: &mut impl Read) -> Result<Head> {
    loop {
        if let Some((header, used)) = kvbench_resp::parse_header(input.pending())? {
            let head = match header {
                Header::Simple(_) => Head::Simple,
                Header::Error(msg) => Head::Error(String::from_utf8_lossy(msg).into_owned()),
                Header::Integer(n) => Head::Integer(n),
                Header::Bulk(len) => Head::Bulk(len),
                Header::Array(_) => Head::Array,
            };
            input.consume(used);
            return Ok(head);
        }
        input.fill(stream)?;
    }
}

/// Reads the body of a bulk reply whose header announced `len` bytes.
pub fn read_bulk(input: &mut ReadBuffer, stream: &mut impl Read, len: usize) -> Result<Vec<u8>> {
    // <data>\r\n — the one allocation of a GET hit is the value, of the announced size (already
    // capped by the decoder at MAX_BULK_LEN). Replies are read by their length, whatever the
    // value holds; what did not arrive with the header goes straight from the socket into it.
    let value = input.take_value(stream, len)?;
    while input.pending().len() < 2 {
        input.fill(stream)?;
    }
    if &input.pending()[..2] != b"\r\n" {
        return Err(Error::Protocol("bulk data not followed by CRLF".into()));
    }
    input.consume(2);
    Ok(value)
}
