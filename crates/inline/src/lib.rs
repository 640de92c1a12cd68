//! `inline`: the command form you can type into telnet — `SET greeting hello\r\n` — and why
//! real clients do not use it.
//!
//! **What it teaches.** Redis accepts two request forms. The *multi-bulk* form every client
//! library sends, `*3\r\n$3\r\nSET\r\n$8\r\ngreeting\r\n$5\r\nhello\r\n`, announces the length of
//! every argument before its bytes, so an argument can hold anything — spaces, quotes, `\r\n`,
//! NUL, nothing at all — and the server reads it without looking at it. The *inline* form,
//! `SET greeting hello\r\n`, exists so that a human with `telnet` or `nc` can talk to the server:
//! the server finds the end of the line, then splits it on whitespace like a shell. It is shorter
//! on the wire (`GET foo\r\n` is 9 bytes against 22), and that is all it has: the separators are
//! in-band, so the bytes that separate arguments cannot be *in* one, and the server must scan
//! every byte to find them. Redis's splitter (`sdssplitargs`) does accept shell-like quoting —
//! `SET k "a\x00b c"` and `SET k ""` work — so a client that escaped everything could carry any
//! bytes inline, at up to four bytes per byte and a byte-by-byte scan on both sides: the length
//! prefix is the cheap way to the same end. This client sends the plain, unquoted form only.
//! Compare it with `raw-tcp`, which sends the same commands in multi-bulk form over the same kind
//! of connection and reads replies the same way; the difference in the benchmark is the request
//! form alone.
//!
//! **What it gives up.** Binary safety, empty values and large values. A key or value holding a
//! space, tab, vertical tab, form feed, CR, LF, a quote or a NUL, an empty key or value, or a
//! command line longer than Redis's inline limit ([`INLINE_MAX_LEN`], 64 KiB) is refused with
//! [`Error::InvalidInput`] before a byte is written. That refusal is the point of the crate: sent
//! as it is, the key `a\r\nFLUSHALL` would be two commands, and the second would empty the
//! database — command injection, exactly as with SQL built by string concatenation. Replies are
//! ordinary RESP and are read by `raw-tcp`'s own reader ([`read_head`], [`read_bulk`]).
//! [`Client::set_many`] is the contract's default loop: one round trip per item.
//!
//! After a malformed reply, an I/O error or a timeout the connection is marked broken and refuses
//! further commands; a refused input leaves it untouched (nothing was sent).
//!
//! **Timeouts.** [`Options::connect_timeout`] bounds a TCP connect (a Unix connect has none: `std`
//! offers no `UnixStream::connect_timeout`, and a local connect only waits while the server's
//! accept backlog is full). [`Options::write_timeout`] bounds each `write`.
//! [`Options::read_timeout`] bounds each `read` and also each whole reply, so a server dripping
//! a byte at a time cannot hold a call for ever: a reply still incomplete after the timeout fails
//! with [`Error::Timeout`] at the next read.
#![deny(missing_docs)]

use std::io::{self, Read, Write};
use std::net::TcpStream;
use std::os::unix::net::UnixStream;
use std::path::Path;
use std::time::Duration;

use kvbench_core::{
    Backend, Client, ClientSpec, Endpoint, Error, Kind, Limitation, Options, ReadBuffer, Result,
    Transport,
};
use kvbench_raw_tcp::{Head, read_bulk, read_head};

/// Longest inline command line Redis reads, `\r\n` included: `PROTO_INLINE_MAX_SIZE` (64 KiB).
/// A server that has buffered more than this without finding a line end replies
/// `-ERR Protocol error: too big inline request` and closes the connection.
pub const INLINE_MAX_LEN: usize = 64 * 1024;

/// Size of the reused [`ReadBuffer`]: `raw-tcp`'s, since replies are read by its [`read_head`].
pub const READ_BUF_LEN: usize = kvbench_raw_tcp::READ_BUF_LEN;

/// Why `byte` cannot appear in an inline argument, or `None` if it can.
///
/// Redis splits an inline line with `sdssplitargs`: it skips leading `isspace()` bytes (space,
/// `\t`, `\n`, `\v`, `\f`, `\r`), ends an argument at a space, `\t`, `\r`, `\n` or NUL, and starts a
/// quoted argument at `"` or `'`. The line itself ends at the first `\n`, searched with `strchr`,
/// which also stops at a NUL.
pub fn forbidden(byte: u8) -> Option<&'static str> {
    match byte {
        b' ' | b'\t' | 0x0b | 0x0c => Some("whitespace separates inline arguments"),
        b'\r' | b'\n' => Some("CR and LF end the inline command line"),
        b'"' | b'\'' => Some("quotes start a quoted inline argument"),
        0 => Some("NUL ends the line for the server's C-string parser"),
        _ => None,
    }
}

/// What each argument position holds, for error messages (every command here is
/// `NAME key [value ...]`).
const ROLES: [&str; 3] = ["command", "key", "value"];

/// Appends `args` as one inline command line: the arguments joined by single spaces, then
/// `\r\n`. Refuses, leaving `out` unchanged, anything the server would not read back as the same
/// arguments, and any line longer than [`INLINE_MAX_LEN`].
pub fn encode_inline(out: &mut Vec<u8>, args: &[&[u8]]) -> Result<()> {
    // <arg> <arg> ... <arg>\r\n
    let line_len = args.iter().map(|arg| arg.len() + 1).sum::<usize>() + 1;
    if line_len > INLINE_MAX_LEN {
        return Err(Error::InvalidInput(format!(
            "inline command line of {line_len} bytes exceeds Redis's limit of {INLINE_MAX_LEN} \
             (PROTO_INLINE_MAX_SIZE)"
        )));
    }
    for (position, arg) in args.iter().enumerate() {
        let role = ROLES.get(position).unwrap_or(&"argument");
        if arg.is_empty() {
            return Err(Error::InvalidInput(format!(
                "empty {role}: inline arguments are separated by spaces, so an empty one cannot be written"
            )));
        }
        if let Some((offset, why)) = arg
            .iter()
            .enumerate()
            .find_map(|(i, &b)| Some((i, forbidden(b)?)))
        {
            return Err(Error::InvalidInput(format!(
                "{role} has byte {:?} at offset {offset}: {why}",
                char::from(arg[offset])
            )));
        }
    }
    out.reserve(line_len);
    for (position, arg) in args.iter().enumerate() {
        if position > 0 {
            out.push(b' ');
        }
        out.extend_from_slice(arg);
    }
    out.extend_from_slice(b"\r\n");
    Ok(())
}

/// A connection that sends inline commands and reads RESP2 replies, over any byte stream.
pub struct InlineConnection<S> {
    stream: S,
    /// Reused for every command.
    write_buf: Vec<u8>,
    /// Reads replies exactly as `raw-tcp` does; also bounds the time one whole reply may take.
    reader: ReadBuffer,
    /// Set after an error that leaves us unsure where the next reply starts.
    broken: bool,
}

impl<S: Read + Write> InlineConnection<S> {
    /// Wraps a connected stream (timeouts are the caller's to set on it).
    pub fn new(stream: S) -> Self {
        InlineConnection {
            stream,
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

    /// Encodes one command (or refuses it, having sent nothing), writes it in one write and
    /// reads its reply header.
    fn call(&mut self, args: &[&[u8]]) -> Result<Head> {
        if self.broken {
            return Err(Error::Io(io::Error::new(
                io::ErrorKind::NotConnected,
                "connection marked broken by an earlier error",
            )));
        }
        self.write_buf.clear();
        encode_inline(&mut self.write_buf, args)?;
        self.reader.start_reply();
        let result = match self.stream.write_all(&self.write_buf) {
            Ok(()) => read_head(&mut self.reader, &mut self.stream),
            Err(err) => Err(err.into()),
        };
        if let Err(err) = &result {
            self.broken |= err.breaks_connection();
        }
        result
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

impl<S: Read + Write + Send> Client for InlineConnection<S> {
    fn get(&mut self, key: &[u8]) -> Result<Option<Vec<u8>>> {
        match self.call(&[b"GET", key])? {
            Head::Bulk(None) => Ok(None),
            Head::Bulk(Some(len)) => {
                // <data>\r\n — replies are RESP: the value is read by its length, whatever it holds.
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

/// Connects over TCP (`TCP_NODELAY` on) with the options' timeouts.
pub fn connect_tcp(addr: &str, options: &Options) -> Result<InlineConnection<TcpStream>> {
    let stream = kvbench_core::connect_tcp_stream(addr, options, true)?;
    let mut connection = InlineConnection::new(stream);
    connection.set_reply_timeout(Some(options.read_timeout));
    Ok(connection)
}

/// Connects to a Unix socket with the options' read and write timeouts;
/// [`Options::connect_timeout`] is not applied (see "Timeouts" in the crate docs).
pub fn connect_unix(path: &Path, options: &Options) -> Result<InlineConnection<UnixStream>> {
    let stream = kvbench_core::connect_unix_stream(path, options)?;
    let mut connection = InlineConnection::new(stream);
    connection.set_reply_timeout(Some(options.read_timeout));
    Ok(connection)
}

/// The client as the suite lists it.
pub const SPEC: ClientSpec = ClientSpec {
    name: "inline",
    backend: Backend::Redis,
    transports: Transport::ALL,
    kind: Kind::HandWritten,
    summary: "inline commands (`SET key value\\r\\n`), RESP replies; refuses what the form cannot carry",
    pipelining: "none: one round trip per item (the contract's default loop)",
    limitations: &[
        Limitation {
            behaviour: "binary_safe",
            reason: "inline arguments end at whitespace, CR, LF or NUL and quotes change their \
                     meaning; such bytes are refused before sending",
        },
        Limitation {
            behaviour: "empty_value",
            reason: "inline arguments are separated by spaces, so an empty one cannot be written",
        },
        Limitation {
            behaviour: "large_value",
            reason: "Redis reads inline lines of at most 64 KiB (PROTO_INLINE_MAX_SIZE); a 1 MiB \
                     value is refused before sending",
        },
    ],
    slow_round_trip: None,
    known_defects: &[],
    connect: |endpoint, options| match endpoint {
        Endpoint::Tcp(addr) => Ok(Box::new(connect_tcp(addr, options)?) as Box<dyn Client>),
        Endpoint::Unix(path) => Ok(Box::new(connect_unix(path, options)?)),
    },
};

#[cfg(test)]
mod tests {
    use super::*;

    fn encoded(args: &[&[u8]]) -> Result<Vec<u8>> {
        let mut out = Vec::new();
        encode_inline(&mut out, args).map(|()| out)
    }

    #[test]
    fn encodes_each_command_as_one_line() {
        assert_eq!(encoded(&[b"GET", b"foo"]).unwrap(), b"GET foo\r\n");
        assert_eq!(
            encoded(&[b"SET", b"foo", b"bar"]).unwrap(),
            b"SET foo bar\r\n"
        );
        assert_eq!(
            encoded(&[b"SET", b"k", b"v", b"EX", b"10"]).unwrap(),
            b"SET k v EX 10\r\n"
        );
        assert_eq!(encoded(&[b"DEL", b"user:1"]).unwrap(), b"DEL user:1\r\n");
        // Bytes the splitter does not treat specially pass through, high bytes and `\` included.
        assert_eq!(
            encoded(&[b"GET", b"\\x\xff\x01"]).unwrap(),
            b"GET \\x\xff\x01\r\n"
        );
    }

    #[test]
    fn refuses_every_separator_quote_and_terminator() {
        for byte in [b' ', b'\t', b'\r', b'\n', 0x0b, 0x0c, b'"', b'\'', 0] {
            for (key, value) in [
                (vec![b'k', byte], b"v".to_vec()),
                (b"k".to_vec(), vec![byte, b'v']),
            ] {
                let err = encoded(&[b"SET", &key, &value]).unwrap_err();
                assert!(
                    matches!(err, Error::InvalidInput(_)),
                    "byte {byte:#04x} gave {err:?}"
                );
            }
        }
    }

    #[test]
    fn refuses_the_injection_key() {
        let err = encoded(&[b"SET", b"a\r\nFLUSHALL", b"v"]).unwrap_err();
        let Error::InvalidInput(msg) = err else {
            panic!("want InvalidInput, got {err:?}")
        };
        assert!(msg.starts_with("key has byte '\\r' at offset 1"), "{msg}");
    }

    #[test]
    fn refuses_empty_arguments() {
        for args in [
            &[&b"GET"[..], b""][..],
            &[b"SET", b"k", b""],
            &[b"SET", b"", b"v"],
        ] {
            assert!(
                matches!(encoded(args), Err(Error::InvalidInput(_))),
                "{args:?}"
            );
        }
    }

    #[test]
    fn line_limit_counts_separators_and_crlf() {
        // "SET k " + value + "\r\n" is exactly the limit: accepted.
        let fits = vec![b'v'; INLINE_MAX_LEN - b"SET k ".len() - 2];
        assert_eq!(
            encoded(&[b"SET", b"k", &fits]).unwrap().len(),
            INLINE_MAX_LEN
        );
        let over = vec![b'v'; fits.len() + 1];
        assert!(matches!(
            encoded(&[b"SET", b"k", &over]),
            Err(Error::InvalidInput(_))
        ));
    }

    #[test]
    fn a_refusal_leaves_the_buffer_unchanged() {
        let mut out = b"GET a\r\n".to_vec();
        assert!(encode_inline(&mut out, &[b"SET", b"b", b"x y"]).is_err());
        assert_eq!(out, b"GET a\r\n");
    }

    /// A stream that records writes and has nothing to read: proves that a refusal sends nothing.
    struct Recorder(Vec<u8>);

    impl Read for Recorder {
        fn read(&mut self, _buf: &mut [u8]) -> io::Result<usize> {
            Ok(0)
        }
    }

    impl Write for Recorder {
        fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
            self.0.extend_from_slice(buf);
            Ok(buf.len())
        }
        fn flush(&mut self) -> io::Result<()> {
            Ok(())
        }
    }

    #[test]
    fn refused_commands_write_nothing_and_leave_the_connection_usable() {
        let mut con = InlineConnection::new(Recorder(Vec::new()));
        assert!(matches!(
            con.set(b"a\r\nFLUSHALL", b"v"),
            Err(Error::InvalidInput(_))
        ));
        assert!(matches!(
            con.set_ex(b"k", b"two words", 10),
            Err(Error::InvalidInput(_))
        ));
        assert!(matches!(con.delete(b""), Err(Error::InvalidInput(_))));
        assert!(con.stream().0.is_empty());
        assert!(!con.broken);
    }
}
