//! Fault cases a real memcached cannot be made to produce, on a scripted in-memory stream: a reply
//! that does not match the command, bytes that trickle in one at a time, a peer that hangs up
//! mid-value. Also checks the exact bytes each command writes, and that it writes them once, and
//! (a property) that no key makes a command put a second command on the wire.

use std::collections::VecDeque;
use std::io::{self, Read, Write};

use kvbench_core::{Client, Error};
use kvbench_memcached_text::TextConnection;
use proptest::prelude::*;

/// Replays a script to the client, one server "write" per `read` at most, and records what the
/// client writes.
struct Scripted {
    script: VecDeque<Vec<u8>>,
    /// Largest number of bytes one `read` returns (1 = trickle).
    max_read: usize,
    written: Vec<u8>,
    reads: usize,
    writes: usize,
}

impl Scripted {
    fn new(script: &[&[u8]]) -> Self {
        Scripted {
            script: script.iter().map(|chunk| chunk.to_vec()).collect(),
            max_read: usize::MAX,
            written: Vec::new(),
            reads: 0,
            writes: 0,
        }
    }

    fn trickle(script: &[u8]) -> Self {
        Scripted {
            max_read: 1,
            ..Scripted::new(&[script])
        }
    }
}

impl Read for Scripted {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        self.reads += 1;
        let Some(chunk) = self.script.front_mut() else {
            return Ok(0);
        };
        let n = chunk.len().min(buf.len()).min(self.max_read);
        buf[..n].copy_from_slice(&chunk[..n]);
        chunk.drain(..n);
        if chunk.is_empty() {
            self.script.pop_front();
        }
        Ok(n)
    }
}

impl Write for Scripted {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.writes += 1;
        self.written.extend_from_slice(buf);
        Ok(buf.len())
    }
    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

#[test]
fn each_command_is_one_write_of_exactly_these_bytes() {
    let mut client = TextConnection::new(Scripted::new(&[
        b"STORED\r\n",
        b"STORED\r\n",
        b"VALUE k 0 3\r\nbar\r\nEND\r\n",
        b"DELETED\r\n",
    ]));
    client.set(b"k", b"bar").unwrap();
    client.set_ex(b"k", b"bar", 60).unwrap();
    assert_eq!(client.get(b"k").unwrap().as_deref(), Some(&b"bar"[..]));
    assert!(client.delete(b"k").unwrap());
    let s = client.stream_mut();
    assert_eq!(
        s.written,
        b"set k 0 0 3\r\nbar\r\nset k 0 60 3\r\nbar\r\nget k\r\ndelete k\r\n"
    );
    assert_eq!((s.writes, s.reads), (4, 4));
}

#[test]
fn ttl_above_30_days_is_sent_as_an_absolute_time() {
    let mut client = TextConnection::new(Scripted::new(&[b"STORED\r\n"]));
    let ttl = 31 * 24 * 3600;
    client.set_ex(b"k", b"v", ttl).unwrap();
    let written = String::from_utf8(client.stream_mut().written.clone()).unwrap();
    let exptime: u64 = written.split(' ').nth(3).unwrap().parse().unwrap();
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs();
    assert!(
        (now + u64::from(ttl)).abs_diff(exptime) <= 2,
        "exptime {exptime}, now {now}"
    );
}

#[test]
fn ttl_of_zero_is_refused_before_sending() {
    let mut client = TextConnection::new(Scripted::new(&[]));
    assert!(matches!(
        client.set_ex(b"k", b"v", 0),
        Err(Error::InvalidInput(_))
    ));
    assert_eq!(client.stream_mut().writes, 0);
}

#[test]
fn a_malformed_reply_breaks_the_connection_for_good() {
    // STORED in answer to a get: replies and commands no longer line up.
    let mut client = TextConnection::new(Scripted::new(&[b"STORED\r\nEND\r\n"]));
    assert!(matches!(client.get(b"k"), Err(Error::Protocol(_))));
    assert!(client.is_broken());
    let (reads, writes) = (client.stream_mut().reads, client.stream_mut().writes);
    for _ in 0..3 {
        let err = client.get(b"k").unwrap_err();
        assert!(err.breaks_connection(), "{err:?}");
        assert!(client.set(b"k", b"v").is_err());
        assert!(client.delete(b"k").is_err());
        assert!(client.set_many(&[(b"k", b"v")]).is_err());
    }
    let s = client.stream_mut();
    assert_eq!(
        (s.reads, s.writes),
        (reads, writes),
        "a broken connection touched the socket"
    );
}

#[test]
fn a_value_for_another_key_is_a_protocol_error() {
    let mut client = TextConnection::new(Scripted::new(&[b"VALUE other 0 1\r\nx\r\nEND\r\n"]));
    assert!(matches!(client.get(b"k"), Err(Error::Protocol(_))));
    assert!(client.is_broken());
}

#[test]
fn client_error_and_error_break_the_connection() {
    // After CLIENT_ERROR to a set, memcached reads the data block as a command.
    let mut client = TextConnection::new(Scripted::new(&[
        b"CLIENT_ERROR bad data chunk\r\nERROR\r\n",
    ]));
    assert!(matches!(client.set(b"k", b"v"), Err(Error::Protocol(_))));
    assert!(client.is_broken());
    let mut client = TextConnection::new(Scripted::new(&[b"ERROR\r\n"]));
    assert!(matches!(client.delete(b"k"), Err(Error::Protocol(_))));
    assert!(client.is_broken());
}

#[test]
fn a_server_error_leaves_the_connection_usable() {
    let mut client = TextConnection::new(Scripted::new(&[
        b"SERVER_ERROR out of memory writing get response\r\n",
        b"SERVER_ERROR object too large for cache\r\n",
        b"END\r\n",
    ]));
    assert!(matches!(client.get(b"k"), Err(Error::Server(_))));
    assert!(matches!(client.set(b"k", b"v"), Err(Error::Server(msg)) if msg.contains("too large")));
    assert!(!client.is_broken());
    assert_eq!(client.get(b"k").unwrap(), None);
}

#[test]
fn bytes_trickling_in_one_at_a_time_still_decode() {
    let mut script = b"VALUE k 0 5\r\nhello\r\nEND\r\nEND\r\nSTORED\r\n".to_vec();
    let large: Vec<u8> = (0..200_000u32).map(|i| (i % 251) as u8).collect();
    script.extend_from_slice(format!("VALUE k 0 {}\r\n", large.len()).as_bytes());
    script.extend_from_slice(&large);
    script.extend_from_slice(b"\r\nEND\r\nNOT_FOUND\r\n");
    let mut client = TextConnection::new(Scripted::trickle(&script));
    assert_eq!(client.get(b"k").unwrap().as_deref(), Some(&b"hello"[..]));
    assert_eq!(client.get(b"k").unwrap(), None);
    client.set(b"k", b"v").unwrap();
    assert_eq!(client.get(b"k").unwrap(), Some(large));
    assert!(!client.delete(b"k").unwrap());
}

#[test]
fn a_large_value_with_a_bad_trailer_is_a_protocol_error() {
    let mut script = format!("VALUE k 0 {}\r\n", 100_000).into_bytes();
    script.extend(std::iter::repeat_n(b'x', 100_000));
    script.extend_from_slice(b"\r\nEN");
    script.extend_from_slice(b"X\r\n");
    let mut client = TextConnection::new(Scripted::new(&[&script]));
    assert!(matches!(client.get(b"k"), Err(Error::Protocol(_))));
    assert!(client.is_broken());
}

#[test]
fn a_peer_hanging_up_mid_value_is_an_io_error() {
    for script in [&b"VALUE k 0 5\r\nhel"[..], b"VALUE k 0 100000\r\nxyz", b""] {
        let mut client = TextConnection::new(Scripted::new(&[script]));
        let err = client.get(b"k").unwrap_err();
        assert!(matches!(err, Error::Io(_)), "{err:?}");
        assert!(client.is_broken());
    }
}

#[test]
fn an_absurd_value_length_is_refused_without_reading_further() {
    let mut client = TextConnection::new(Scripted::new(&[b"VALUE k 0 99999999999999\r\n"]));
    assert!(matches!(client.get(b"k"), Err(Error::Protocol(_))));
    assert!(client.is_broken());
}

#[test]
fn set_many_drains_every_reply_after_a_server_error() {
    // Three items in one chunk: the middle one fails, the others are still read, in order.
    let mut client = TextConnection::new(Scripted::new(&[
        b"STORED\r\nSERVER_ERROR out of memory storing object\r\nSTORED\r\n",
        b"END\r\n",
    ]));
    let items: Vec<(&[u8], &[u8])> = vec![(b"a", b"1"), (b"b", b"2"), (b"c", b"3")];
    assert!(matches!(client.set_many(&items), Err(Error::Server(_))));
    // The last reply (END) belongs to this get: the stream is still in step.
    assert_eq!(client.get(b"a").unwrap(), None);
    assert_eq!(
        client.stream_mut().written,
        b"set a 0 0 1\r\n1\r\nset b 0 0 1\r\n2\r\nset c 0 0 1\r\n3\r\nget a\r\n"
    );
}

#[test]
fn a_multi_key_get_is_one_command_and_its_hits_fill_their_places() {
    // `get a b a c`: b is a miss, a is asked (and answered) twice.
    let mut client = TextConnection::new(Scripted::new(&[
        b"VALUE a 0 1\r\n1\r\nVALUE a 0 1\r\n1\r\nVALUE c 0 5\r\nEND\r\n\r\nEND\r\n",
    ]));
    let keys: [&[u8]; 4] = [b"a", b"b", b"a", b"c"];
    let values = client.get_many(&keys).unwrap();
    let want: [Option<&[u8]>; 4] = [Some(b"1"), None, Some(b"1"), Some(b"END\r\n")];
    assert_eq!(values, want.map(|value| value.map(<[u8]>::to_vec)));
    let s = client.stream_mut();
    assert_eq!(
        (s.written.as_slice(), s.writes),
        (&b"get a b a c\r\n"[..], 1)
    );
    // No key: nothing to send (a bare `get` is memcached's ERROR).
    assert_eq!(client.get_many(&[]).unwrap(), Vec::<Option<Vec<u8>>>::new());
    assert_eq!(client.stream_mut().writes, 1);
}

#[test]
fn a_value_not_asked_for_or_out_of_order_in_a_multi_key_get_is_a_protocol_error() {
    for script in [
        &b"VALUE z 0 1\r\n1\r\nEND\r\n"[..],
        b"VALUE b 0 1\r\n2\r\nVALUE a 0 1\r\n1\r\nEND\r\n",
        b"VALUE a 0 1\r\n1\r\nVALUE a 0 1\r\n1\r\nEND\r\n",
        // A wrong byte count: the data is not followed by its CRLF.
        b"VALUE a 0 2\r\n1\r\nEND\r\n",
    ] {
        let mut client = TextConnection::new(Scripted::new(&[script]));
        let result = client.get_many(&[b"a", b"b"]);
        assert!(matches!(result, Err(Error::Protocol(_))), "{result:?}");
        assert!(client.is_broken());
    }
}

#[test]
fn a_server_error_ends_a_multi_key_get_and_leaves_the_connection_usable() {
    let mut client = TextConnection::new(Scripted::new(&[
        b"VALUE a 0 1\r\n1\r\nSERVER_ERROR out of memory writing get response\r\n",
        b"END\r\n",
    ]));
    let result = client.get_many(&[b"a", b"b"]);
    assert!(matches!(result, Err(Error::Server(_))), "{result:?}");
    assert_eq!(client.get(b"a").unwrap(), None);
}

#[test]
fn a_multi_key_get_trickling_in_a_byte_at_a_time_still_decodes() {
    let large: Vec<u8> = (0..200_000u32).map(|i| (i % 251) as u8).collect();
    let mut script = format!("VALUE big 0 {}\r\n", large.len()).into_bytes();
    script.extend_from_slice(&large);
    script.extend_from_slice(b"\r\nVALUE k 0 5\r\nhello\r\nEND\r\n");
    let mut client = TextConnection::new(Scripted::trickle(&script));
    let values = client.get_many(&[b"big", b"none", b"k"]).unwrap();
    assert_eq!(values, [Some(large), None, Some(b"hello".to_vec())]);
}

#[test]
fn incr_reads_the_counter_and_its_refusals_leave_the_connection_usable() {
    let mut client = TextConnection::new(Scripted::new(&[
        b"42\r\n",
        b"NOT_FOUND\r\n",
        b"CLIENT_ERROR cannot increment or decrement non-numeric value\r\n",
        b"9223372036854775808\r\n",
        b"END\r\n",
    ]));
    assert_eq!(client.incr(b"n").unwrap(), 42);
    for want in ["NOT_FOUND", "non-numeric", "9223372036854775808"] {
        let err = client.incr(b"n").unwrap_err();
        assert!(
            matches!(&err, Error::Server(msg) if msg.contains(want)),
            "{err:?}"
        );
    }
    assert_eq!(client.get(b"n").unwrap(), None);
    assert!(
        client
            .stream_mut()
            .written
            .starts_with(b"incr n 1\r\nincr n 1\r\n")
    );
    // A reply of another kind breaks the connection.
    let mut client = TextConnection::new(Scripted::new(&[b"STORED\r\n"]));
    assert!(matches!(client.incr(b"n"), Err(Error::Protocol(_))));
    assert!(client.is_broken());
}

#[test]
fn get_many_pipelined_writes_every_get_then_reads_every_reply() {
    let mut client = TextConnection::new(Scripted::new(&[
        b"VALUE a 0 1\r\n1\r\nEND\r\nEND\r\nVALUE a 0 1\r\n1\r\nEND\r\n",
    ]));
    let values = client.get_many_pipelined(&[b"a", b"b", b"a"]).unwrap();
    assert_eq!(values, [Some(b"1".to_vec()), None, Some(b"1".to_vec())]);
    let s = client.stream_mut();
    assert_eq!(s.written, b"get a\r\nget b\r\nget a\r\n");
    assert_eq!(s.writes, 1);
    // One bad key refuses the batch with nothing sent.
    let mut client = TextConnection::new(Scripted::new(&[]));
    let result = client.get_many_pipelined(&[b"a", b"b c"]);
    assert!(matches!(result, Err(Error::InvalidInput(_))), "{result:?}");
    assert_eq!(client.stream_mut().writes, 0);
}

// --- Properties: what a command puts on the wire ----------------------------------------------

/// One command as memcached reads it: the words of its line, and a `set`'s data block.
struct Command<'a> {
    words: Vec<&'a [u8]>,
    data: Option<&'a [u8]>,
}

/// Splits what the client wrote the way memcached reads it: a line up to `\r\n`, its words
/// separated by single spaces; after a `set` line, `<bytes>` of data and `\r\n`. Fails on anything
/// else, or on a second command.
fn the_one_command(written: &[u8]) -> Result<Command<'_>, String> {
    let shown = || written.escape_ascii().to_string();
    let line_end = written
        .windows(2)
        .position(|w| w == b"\r\n")
        .ok_or_else(|| format!("no line end in {}", shown()))?;
    let line = &written[..line_end];
    if line.contains(&b'\n') || line.contains(&b'\r') {
        return Err(format!("a line end inside the command line: {}", shown()));
    }
    let words: Vec<&[u8]> = line.split(|&b| b == b' ').collect();
    let rest = &written[line_end + 2..];
    if words[0] != b"set" {
        return match rest.is_empty() {
            true => Ok(Command { words, data: None }),
            false => Err(format!("bytes after the command: {}", shown())),
        };
    }
    let len: usize = words
        .get(4)
        .and_then(|n| std::str::from_utf8(n).ok()?.parse().ok())
        .ok_or_else(|| format!("no byte count in {}", shown()))?;
    match (rest.get(..len), rest.get(len..)) {
        (Some(data), Some(b"\r\n")) => Ok(Command {
            words,
            data: Some(data),
        }),
        _ => Err(format!("data block does not match its count: {}", shown())),
    }
}

/// Keys of every kind: arbitrary bytes, printable keys around the 250-byte limit, and keys that
/// memcached would read as a command line of its own.
fn any_key() -> impl Strategy<Value = Vec<u8>> {
    prop_oneof![
        proptest::collection::vec(any::<u8>(), 0..40),
        proptest::collection::vec(0x21u8..0x7f, 1..260),
        proptest::collection::vec(
            prop_oneof![Just(b'k'), Just(b' '), Just(b'\r'), Just(b'\n'), Just(0u8)],
            1..12,
        ),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(kvbench_servers::script::property_cases(1_000)))]

    /// Every command either is refused with nothing written, or is exactly one command that
    /// reads back as the same key (and value): no key can smuggle in a second command.
    #[test]
    fn a_command_is_refused_or_round_trips_as_exactly_one_command(
        key in any_key(),
        value in proptest::collection::vec(any::<u8>(), 0..64),
    ) {
        type Call = fn(&mut TextConnection<Scripted>, &[u8], &[u8]) -> kvbench_core::Result<()>;
        let calls: [(&[u8], &[u8], Call); 5] = [
            (b"set", b"STORED\r\n", |c, k, v| c.set(k, v)),
            (b"get", b"END\r\n", |c, k, _| c.get(k).map(drop)),
            (b"delete", b"NOT_FOUND\r\n", |c, k, _| c.delete(k).map(drop)),
            (b"incr", b"1\r\n", |c, k, _| c.incr(k).map(drop)),
            (b"get", b"END\r\n", |c, k, _| c.get_many(&[k]).map(drop)),
        ];
        for (name, reply, call) in calls {
            let mut client = TextConnection::new(Scripted::new(&[reply]));
            let result = call(&mut client, &key, &value);
            let written = &client.stream_mut().written;
            if let Err(Error::InvalidInput(_)) = result {
                prop_assert!(written.is_empty(), "refused, yet wrote {:?}", written);
                continue;
            }
            prop_assert!(result.is_ok(), "{:?}", result);
            let Command { words, data } = the_one_command(written).map_err(TestCaseError::fail)?;
            prop_assert_eq!(words[0], name);
            prop_assert_eq!(words[1], &key[..]);
            if name == b"set" {
                prop_assert_eq!(words.len(), 5);
                prop_assert_eq!(data, Some(&value[..]));
            } else if name == b"incr" {
                prop_assert_eq!(&words[1..], [&key[..], b"1"]);
            } else {
                prop_assert_eq!(words.len(), 2);
            }
        }
    }
}
