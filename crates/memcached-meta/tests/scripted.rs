//! On a scripted in-memory stream: the exact bytes each command writes (a batch's opaques and
//! lengths of every width too), the batch's own key and value checks against `memcached-text`'s,
//! quiet batches answered with failures a real server is hard to make (one `NS` in the middle, an
//! opaque that names no item), replies that belong to another command, and replies trickled one
//! byte at a time.

use std::io::{self, Read, Write};
use std::sync::{Arc, Mutex};

use kvbench_core::{Client, Error};
use kvbench_memcached_meta::{MAX_KEY_LEN, MetaConnection, check_key, check_value};
use kvbench_memcached_reply::MAX_VALUE_LEN;

/// Hands out the script at most `max_read` bytes per `read` (then end of stream), and records
/// every byte written where the test can still see it once the client owns the stream.
struct Scripted {
    script: Vec<u8>,
    max_read: usize,
    written: Arc<Mutex<Vec<u8>>>,
}

impl Read for Scripted {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let n = self.script.len().min(buf.len()).min(self.max_read);
        buf[..n].copy_from_slice(&self.script[..n]);
        self.script.drain(..n);
        Ok(n)
    }
}

impl Write for Scripted {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.written.lock().unwrap().extend_from_slice(buf);
        Ok(buf.len())
    }
    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

/// A client whose server answers with `script`, `max_read` bytes at a time, and what it wrote.
fn scripted(script: &[u8], max_read: usize) -> (MetaConnection<Scripted>, Arc<Mutex<Vec<u8>>>) {
    let written = Arc::new(Mutex::new(Vec::new()));
    let stream = Scripted {
        script: script.to_vec(),
        max_read,
        written: Arc::clone(&written),
    };
    (MetaConnection::new(stream), written)
}

fn sent(written: &Arc<Mutex<Vec<u8>>>) -> String {
    written.lock().unwrap().escape_ascii().to_string()
}

const BATCH: &[(&[u8], &[u8])] = &[(b"item-0", b"x"), (b"item-1", b"yy"), (b"item-2", b"z")];

#[test]
fn each_command_is_written_exactly() {
    let (mut client, written) = scripted(b"EN\r\nHD O0\r\nHD O0\r\nHD O0\r\nNF O0\r\n", 64);
    assert_eq!(client.get(b"foo").unwrap(), None);
    client.set(b"foo", b"bar").unwrap();
    client.set_ex(b"foo", b"bar", 60).unwrap();
    assert!(client.delete(b"foo").unwrap());
    assert!(!client.delete(b"foo").unwrap());
    assert_eq!(
        sent(&written),
        "mg foo v k O0\\r\\n\
         ms foo 3 O0\\r\\nbar\\r\\n\
         ms foo 3 T60 O0\\r\\nbar\\r\\n\
         md foo O0\\r\\n\
         md foo O0\\r\\n"
    );
}

#[test]
fn a_hit_is_read_by_its_count_even_one_byte_at_a_time() {
    for max_read in [1, 64] {
        let (mut client, _) = scripted(b"VA 7 kfoo O0\r\nb\r\nEN\r\n\r\nVA 0 O0\r\n\r\n", max_read);
        assert_eq!(
            client.get(b"foo").unwrap().as_deref(),
            Some(&b"b\r\nEN\r\n"[..])
        );
        assert_eq!(client.get(b"foo").unwrap().as_deref(), Some(&b""[..]));
    }
}

#[test]
fn a_stored_batch_is_quiet_items_then_one_no_op_and_reads_only_mn() {
    let (mut client, written) = scripted(b"MN\r\n", 64);
    client.set_many(BATCH).unwrap();
    assert_eq!(
        sent(&written),
        "ms item-0 1 q O0\\r\\nx\\r\\n\
         ms item-1 2 q O1\\r\\nyy\\r\\n\
         ms item-2 1 q O2\\r\\nz\\r\\n\
         mn\\r\\n"
    );
}

#[test]
fn a_batch_numbers_its_items_and_counts_their_bytes_at_every_width() {
    // 1,001 items: opaques of one to four digits, lengths of none to four, in every mix, and
    // more than one write's worth.
    let lengths = [0, 1, 9, 10, 99, 100, 1000];
    let items: Vec<(Vec<u8>, Vec<u8>)> = (0..1001)
        .map(|i| (format!("k{i}").into_bytes(), vec![b'v'; lengths[i % 7]]))
        .collect();
    let items: Vec<(&[u8], &[u8])> = items.iter().map(|(k, v)| (&k[..], &v[..])).collect();
    let (mut client, written) = scripted(b"MN\r\n", 64);
    client.set_many(&items).unwrap();
    let mut want = Vec::new();
    for (i, (key, value)) in items.iter().enumerate() {
        let line = format!("ms {} {} q O{i}\r\n", key.escape_ascii(), value.len());
        want.extend_from_slice(&[line.as_bytes(), value, b"\r\n"].concat());
    }
    want.extend_from_slice(b"mn\r\n");
    assert!(*written.lock().unwrap() == want);
}

#[test]
fn a_batch_refuses_what_the_text_checks_refuse_with_their_errors() {
    // Every byte inside a key, and the key lengths at the limits.
    let mut keys: Vec<Vec<u8>> = (0..=255).map(|byte| vec![b'a', byte, b'z']).collect();
    keys.extend([vec![], vec![b'k'; MAX_KEY_LEN], vec![b'k'; MAX_KEY_LEN + 1]]);
    // And a value just over the limit (zeroed pages, never touched) with a key that is fine.
    let huge = vec![0; MAX_VALUE_LEN + 1];
    let values: [&[u8]; 2] = [b"v", &huge];
    let cases = keys.iter().map(|key| (&key[..], values[0]));
    for (key, value) in cases.chain([(&b"k"[..], values[1])]) {
        let (mut client, written) = scripted(b"MN\r\n", 64);
        let got = client.set_many(&[(key, value)]);
        let want = check_key(key).and_then(|()| check_value(value));
        let shown = key.escape_ascii();
        assert_eq!(format!("{got:?}"), format!("{want:?}"), "key {shown}");
        assert_eq!(want.is_err(), written.lock().unwrap().is_empty(), "{shown}");
    }
}

#[test]
fn failures_in_a_batch_name_their_keys_and_leave_nothing_unread() {
    // (the server's reply to the batch, the error it must give)
    let cases: &[(&[u8], &str)] = &[
        // One item not stored, in the middle: its key, and no other.
        (
            b"NS O1\r\nMN\r\n",
            "NotStored for key item-1; 1 of 3 items failed",
        ),
        // Every failure is counted, the first reported.
        (
            b"NS O0\r\nEX O2\r\nMN\r\n",
            "NotStored for key item-0; 2 of 3 items failed",
        ),
        // An error line names no item; the server skipped the item's data, so all is in step.
        (
            b"SERVER_ERROR out of memory storing object\r\nMN\r\n",
            "SERVER_ERROR out of memory storing object for an item of the batch; 1 of 3 items failed",
        ),
    ];
    for (reply, want) in cases {
        for max_read in [1, 64] {
            // Then the reply to the next command, a miss: read as such only if the batch's
            // reply was read up to its MN.
            let (mut client, _) = scripted(&[reply, &b"EN\r\n"[..]].concat(), max_read);
            match client.set_many(BATCH) {
                Err(Error::Server(msg)) => assert_eq!(msg, *want),
                other => panic!("{}: want Err(Server), got {other:?}", reply.escape_ascii()),
            }
            assert!(!client.is_broken());
            assert_eq!(client.get(b"k").unwrap(), None);
        }
    }
}

#[test]
fn quiet_gets_read_only_the_hits_and_place_each_by_its_opaque() {
    // `a` asked twice, `b` a miss (silent); the hits may come in any order.
    let keys: &[&[u8]] = &[b"a", b"b", b"a"];
    for max_read in [1, 64] {
        let script = b"VA 1 O2\r\n1\r\nVA 5 O0\r\n1\r\nMN\r\nMN\r\nMN\r\nEN\r\n";
        let (mut client, written) = scripted(script, max_read);
        let values = client.get_many_pipelined(keys).unwrap();
        assert_eq!(
            values,
            [Some(b"1\r\nMN".to_vec()), None, Some(b"1".to_vec())]
        );
        assert_eq!(
            sent(&written),
            "mg a v q O0\\r\\nmg b v q O1\\r\\nmg a v q O2\\r\\nmn\\r\\n"
        );
        // A batch of misses reads its MN alone, and the next command its own reply.
        assert_eq!(client.get_many_pipelined(&[b"c"]).unwrap(), [None]);
        assert_eq!(client.get(b"d").unwrap(), None);
    }
    // No key, nothing sent; a bad key refuses the batch with nothing sent.
    let (mut client, written) = scripted(b"", 64);
    assert!(client.get_many_pipelined(&[]).unwrap().is_empty());
    let refused = client.get_many_pipelined(&[b"a", b"b c"]);
    assert!(
        matches!(refused, Err(Error::InvalidInput(_))),
        "{refused:?}"
    );
    assert!(written.lock().unwrap().is_empty());
}

#[test]
fn quiet_gets_close_each_chunk_with_its_own_no_op() {
    // 250-byte keys: 64 KiB of commands is about 250 of them, so 600 make three chunks.
    let keys: Vec<Vec<u8>> = (0..600)
        .map(|i| format!("{i:0>250}").into_bytes())
        .collect();
    let refs: Vec<&[u8]> = keys.iter().map(Vec::as_slice).collect();
    let (mut client, written) = scripted(b"VA 1 O599\r\nz\r\nMN\r\nMN\r\nMN\r\n", 64);
    let values = client.get_many_pipelined(&refs).unwrap();
    assert_eq!(values.iter().flatten().count(), 1);
    assert_eq!(values[599].as_deref(), Some(&b"z"[..]));
    let written = written.lock().unwrap();
    let no_ops = written.windows(4).filter(|w| w == b"mn\r\n").count();
    assert_eq!(no_ops, 3);
    assert!(written.ends_with(b"O599\r\nmn\r\n"));
}

#[test]
fn replies_that_belong_to_no_command_of_ours_break_the_connection() {
    let cases: &[(&[u8], bool)] = &[
        // (server's reply, whether the call is the batch)
        (b"NS O3\r\nMN\r\n", true), // an opaque past the batch's end
        (b"NS\r\nMN\r\n", true),    // a failure without its opaque
        (b"HD O1\r\nMN\r\n", true), // a quiet success that was not quiet
        (b"VA 3 kbar O0\r\nbar\r\n", false), // another key's value
        (b"VA 3 kfoo O1\r\nbar\r\n", false), // another command's opaque
        (b"MN\r\n", false),         // a no-op nobody sent
        (b"CLIENT_ERROR bad command line format\r\n", false),
    ];
    // (server's reply to quiet gets of `foo` and `bar`)
    let gets: &[&[u8]] = &[
        b"VA 1 O2\r\nx\r\nMN\r\n", // an opaque past the batch's end
        b"VA 1\r\nx\r\nMN\r\n",    // a hit without its opaque
        b"VA 1 Ox\r\nx\r\nMN\r\n", // an opaque that is no index
        b"EN O1\r\nMN\r\n",        // a quiet miss that was not quiet
        b"HD O0\r\nMN\r\n",        // a reply to another kind of command
        // An error line cannot say which get it answers: the rest is not read.
        b"SERVER_ERROR out of memory\r\nMN\r\n",
    ];
    let cases = cases
        .iter()
        .map(|&(script, batch)| (script, Some(batch)))
        .chain(gets.iter().map(|&script| (script, None)));
    for (script, batch) in cases {
        let (mut client, written) = scripted(script, 64);
        let result = match batch {
            Some(true) => client.set_many(BATCH),
            Some(false) => client.get(b"foo").map(drop),
            None => client.get_many_pipelined(&[b"foo", b"bar"]).map(drop),
        };
        let shown = script.escape_ascii().to_string();
        assert!(
            matches!(result, Err(Error::Protocol(_))),
            "{shown}: {result:?}"
        );
        let before = written.lock().unwrap().len();
        assert!(client.get(b"foo").is_err(), "{shown}: usable after");
        assert_eq!(
            written.lock().unwrap().len(),
            before,
            "{shown}: wrote again"
        );
    }
}

#[test]
fn a_peer_that_hangs_up_mid_value_is_an_io_error() {
    let (mut client, _) = scripted(b"VA 10 kfoo O0\r\nhello", 64);
    assert!(matches!(client.get(b"foo"), Err(Error::Io(_))));
    assert!(client.is_broken());
}

#[test]
fn a_bad_key_refuses_the_whole_batch_before_anything_is_written() {
    let (mut client, written) = scripted(b"", 64);
    let items: &[(&[u8], &[u8])] = &[(b"fine", b"v"), (b"has space", b"v")];
    assert!(matches!(
        client.set_many(items),
        Err(Error::InvalidInput(_))
    ));
    assert!(matches!(
        client.get(b"a\r\nflush_all"),
        Err(Error::InvalidInput(_))
    ));
    assert!(written.lock().unwrap().is_empty());
    assert!(!client.is_broken());
}
