//! `inline`: the command form you can type into telnet — `SET greeting hello\r\n` — and why
//! real clients do not use it. It is shorter on the wire, but its separators are in-band, so it
//! gives up binary safety, empty values and values over 64 KiB, and must refuse such input
//! before sending it (or be open to command injection). Compare it with `raw-tcp`: the same
//! connection; only the request encoding differs.
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
//! **What it offers.** What `raw-tcp` offers, through the same connection: GET, SET, SET with
//! expiry, DEL, and every optional operation of the contract (`INCR`, `MGET`, `HSET`/`HGETALL`,
//! and a transaction as `MULTI`, one `SET` at a time, `EXEC`), each command one inline line
//! within the limits below. A SET of a transaction refused before sending ends the transaction
//! with `DISCARD`, so the refusal leaves nothing queued.
//!
//! **What it gives up.** Binary safety, empty values and large values. A key or value holding a
//! space, tab, vertical tab, form feed, CR, LF, a quote or a NUL, an empty key or value, or a
//! command line longer than Redis's inline limit ([`INLINE_MAX_LEN`], 64 KiB) is refused with
//! [`Error::InvalidInput`] before a byte is written. That refusal is the point of the crate: sent
//! as it is, the key `a\r\nFLUSHALL` would be two commands, and the second would empty the
//! database — command injection, exactly as with SQL built by string concatenation. Replies are
//! ordinary RESP, read by the same [`Connection`] `raw-tcp` uses, with [`Inline`] as its encoding.
//! [`Client::set_many`](kvbench_core::Client::set_many) is the contract's default loop: one round trip per item.
//!
//! After a malformed reply, an I/O error or a timeout the connection is marked broken and refuses
//! further commands; a refused input leaves it untouched (nothing was sent).
//!
//! **Timeouts.** [core's timeout rules](kvbench_core::Options#timeouts); in a pipeline, each reply
//! is bounded on its own.
#![deny(missing_docs)]

use std::io::Write;
use std::net::TcpStream;
use std::os::unix::net::UnixStream;
use std::path::Path;

use kvbench_core::{Backend, ClientSpec, Error, Limitation, Operation, Options, Result};
use kvbench_resp::blocking::{self, Connection, Encoding};

/// Longest inline command line Redis reads, `\r\n` included: `PROTO_INLINE_MAX_SIZE` (64 KiB).
/// A server that has buffered more than this without finding a line end replies
/// `-ERR Protocol error: too big inline request` and closes the connection.
pub const INLINE_MAX_LEN: usize = 64 * 1024;

/// Why `byte` cannot appear in an inline argument, or `None` if it can.
///
/// Redis splits an inline line with `sdssplitargs`: it skips leading `isspace()` bytes (space,
/// `\t`, `\n`, `\v`, `\f`, `\r`), ends an argument at a space, `\t`, `\r`, `\n` or NUL, and starts a
/// quoted argument at `"` or `'`. The line itself ends at the first `\n`, searched with `strchr`,
/// which also stops at a NUL.
// ANCHOR: forbidden
pub fn forbidden(byte: u8) -> Option<&'static str> {
    match byte {
        b' ' | b'\t' | 0x0b | 0x0c => Some("whitespace separates inline arguments"),
        b'\r' | b'\n' => Some("CR and LF end the inline command line"),
        b'"' | b'\'' => Some("quotes start a quoted inline argument"),
        0 => Some("NUL ends the line for the server's C-string parser"),
        _ => None,
    }
}
// ANCHOR_END: forbidden

/// Appends `args` as one inline command line: the arguments joined by single spaces, then
/// `\r\n`. Refuses, leaving `write_buf` unchanged, anything the server would not read back as the same
/// arguments, and any line longer than [`INLINE_MAX_LEN`].
// ANCHOR: encode_inline
pub fn encode_inline(write_buf: &mut Vec<u8>, args: &[&[u8]]) -> Result<()> {
    // <arg> <arg> ... <arg>\r\n
    let line_len = args.iter().map(|arg| arg.len() + 1).sum::<usize>() + 1;
    if line_len > INLINE_MAX_LEN {
        return Err(Error::InvalidInput(format!(
            "inline command line of {line_len} bytes exceeds Redis's limit of {INLINE_MAX_LEN} \
             (PROTO_INLINE_MAX_SIZE)"
        )));
    }
    for (position, arg) in args.iter().enumerate() {
        // What the argument is, for the error message.
        let role = match position {
            0 => "command",
            1 => "key",
            2 if args[0] == b"SET" => "value",
            _ => "argument",
        };
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
    write_buf.reserve(line_len);
    for (position, arg) in args.iter().enumerate() {
        if position > 0 {
            write_buf.push(b' ');
        }
        write_buf.extend_from_slice(arg);
    }
    write_buf.extend_from_slice(b"\r\n");
    Ok(())
}
// ANCHOR_END: encode_inline

// ANCHOR: inline_encoding
/// The inline form as an [`Encoding`]: [`encode_inline`], then one `write`. A refused command
/// writes nothing, so the connection stays usable.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Inline;

impl Encoding for Inline {
    fn send(&self, stream: &mut impl Write, write_buf: &mut Vec<u8>, args: &[&[u8]]) -> Result<()> {
        write_buf.clear();
        encode_inline(write_buf, args)?;
        Ok(stream.write_all(write_buf)?)
    }
}
// ANCHOR_END: inline_encoding

/// The shared RESP connection, sending inline commands; replies are RESP, read as `raw-tcp` reads
/// them.
pub type InlineConnection<S> = Connection<S, Inline>;

/// Connects over TCP (`TCP_NODELAY` on) with the options' timeouts.
pub fn connect_tcp(addr: &str, options: &Options) -> Result<InlineConnection<TcpStream>> {
    blocking::connect_tcp(addr, options, true, Inline)
}

/// Connects to a Unix socket with the options' read and write timeouts;
/// [`Options::connect_timeout`] is not applied (see "Timeouts" in the crate docs).
pub fn connect_unix(path: &Path, options: &Options) -> Result<InlineConnection<UnixStream>> {
    blocking::connect_unix(path, options, Inline)
}

/// The client as the suite lists it.
pub const SPEC: ClientSpec = ClientSpec {
    name: "inline",
    backend: Backend::Redis,
    summary: "inline commands (`SET key value\\r\\n`), RESP replies; refuses what the form cannot carry",
    // ANCHOR: inline_limitations
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
    // ANCHOR_END: inline_limitations
    connect: |endpoint, options| blocking::connect(endpoint, options, Inline),
    operations: Operation::ALL,
    ..ClientSpec::HAND_WRITTEN
};

#[cfg(test)]
mod tests {
    use super::*;

    use std::io::{self, Read};

    use kvbench_core::Client;

    fn encoded(args: &[&[u8]]) -> Result<Vec<u8>> {
        let mut write_buf = Vec::new();
        encode_inline(&mut write_buf, args).map(|()| write_buf)
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
    fn a_refusal_names_the_argument() {
        let message = |args: &[&[u8]]| encoded(args).unwrap_err().to_string();
        assert!(message(&[b"SET", b"k", b"a b"]).contains("value has byte ' '"));
        assert!(message(&[b"MGET", b"a", b"b c"]).contains("argument has byte ' '"));
        assert!(message(&[b"HSET", b"h k", b"f", b"v"]).contains("key has byte ' '"));
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
        let mut write_buf = b"GET a\r\n".to_vec();
        assert!(encode_inline(&mut write_buf, &[b"SET", b"b", b"x y"]).is_err());
        assert_eq!(write_buf, b"GET a\r\n");
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
        let mut con = InlineConnection::new(Recorder(Vec::new()), Inline);
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
        assert!(!con.is_broken());
    }
}
