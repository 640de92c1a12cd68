//! The sans-I/O reply reader on byte literals: one test per wire form, one per malformed form,
//! every valid reply split at every offset, and property tests that no input panics.

use kvbench_memcached_reply::{
    DATA_TRAILER, MAX_LINE_LEN, MAX_VALUE_LEN, Reply, ReplyError, VALUE_TRAILER, data_end_complete,
    decode, decode_get_many_part, parse_line, place_hit, trailer_complete,
};
use proptest::prelude::*;

/// Decodes a reply that must be complete and exactly `buf` long.
fn complete(buf: &[u8]) -> Reply {
    let shown = buf.escape_ascii().to_string();
    let outcome = decode(buf);
    let Ok(Some((reply, len))) = outcome else {
        panic!("{shown:?}: want a complete reply, got {outcome:?}");
    };
    assert_eq!(len, buf.len(), "reply length for {shown:?}");
    reply
}

fn error_of(buf: &[u8]) -> ReplyError {
    match decode(buf) {
        Err(err) => err,
        other => panic!(
            "{:?}: want an error, got {other:?}",
            buf.escape_ascii().to_string()
        ),
    }
}

#[test]
fn decode_value_hit() {
    // VALUE <key> <flags> <bytes>\r\n<data>\r\nEND\r\n
    let buf = b"VALUE foo 42 3\r\nbar\r\nEND\r\n";
    let Reply::Value { key, flags, data } = complete(buf) else {
        panic!("not a VALUE")
    };
    assert_eq!(&buf[key], b"foo");
    assert_eq!(flags, 42);
    assert_eq!(&buf[data], b"bar");
}

#[test]
fn decode_empty_value_is_a_hit() {
    let buf = b"VALUE k 0 0\r\n\r\nEND\r\n";
    let Reply::Value { data, .. } = complete(buf) else {
        panic!("not a VALUE")
    };
    assert!(data.is_empty());
}

#[test]
fn value_data_may_contain_the_end_marker() {
    // Found by count, not by scanning: CRLF and END inside the data are just data.
    let buf = b"VALUE k 0 9\r\n\r\nEND\r\n\0\xff\r\nEND\r\n";
    let Reply::Value { data, .. } = complete(buf) else {
        panic!("not a VALUE")
    };
    assert_eq!(&buf[data], b"\r\nEND\r\n\0\xff");
}

#[test]
fn decode_status_lines() {
    assert_eq!(complete(b"END\r\n"), Reply::End); // miss
    assert_eq!(complete(b"STORED\r\n"), Reply::Stored);
    assert_eq!(complete(b"NOT_STORED\r\n"), Reply::NotStored);
    assert_eq!(complete(b"DELETED\r\n"), Reply::Deleted);
    assert_eq!(complete(b"NOT_FOUND\r\n"), Reply::NotFound);
    assert_eq!(complete(b"ERROR\r\n"), Reply::Error);
}

#[test]
fn decode_counter_values() {
    // incr's reply: the new value, a bare decimal line; memcached's counters are unsigned 64-bit.
    assert_eq!(complete(b"0\r\n"), Reply::Number(0));
    assert_eq!(complete(b"9223372036854775808\r\n"), Reply::Number(1 << 63));
    assert_eq!(
        complete(b"18446744073709551615\r\n"),
        Reply::Number(u64::MAX)
    );
    // Digits past u64::MAX, or anything but digits, are no counter: see the unknown lines below.
}

#[test]
fn decode_error_lines_with_messages() {
    let buf = b"CLIENT_ERROR bad data chunk\r\n";
    let Reply::ClientError(msg) = complete(buf) else {
        panic!("not CLIENT_ERROR")
    };
    assert_eq!(&buf[msg], b"bad data chunk");

    let buf = b"SERVER_ERROR object too large for cache\r\n";
    let Reply::ServerError(msg) = complete(buf) else {
        panic!("not SERVER_ERROR")
    };
    assert_eq!(&buf[msg], b"object too large for cache");

    let Reply::ServerError(msg) = complete(b"SERVER_ERROR\r\n") else {
        panic!("not SERVER_ERROR")
    };
    assert!(msg.is_empty());
}

#[test]
fn a_reply_ends_where_it_ends_even_with_more_bytes_behind_it() {
    // Pipelined replies arrive back to back.
    let buf = b"STORED\r\nSTORED\r\nSERVER_ERROR out of memory\r\n";
    assert_eq!(decode(buf), Ok(Some((Reply::Stored, 8))));
    let buf = b"VALUE k 0 1\r\nx\r\nEND\r\nEND\r\n";
    assert!(matches!(decode(buf), Ok(Some((Reply::Value { .. }, 21)))));
}

#[test]
fn rejects_count_smaller_than_the_data() {
    assert_eq!(
        error_of(b"VALUE k 0 2\r\nabc\r\nEND\r\n"),
        ReplyError::MissingEnd
    );
}

#[test]
fn rejects_count_larger_than_the_data() {
    // Four bytes of data would be "abc\r"; what follows is not "\r\nEND\r\n".
    assert_eq!(
        error_of(b"VALUE k 0 4\r\nabc\r\nEND\r\n"),
        ReplyError::MissingEnd
    );
}

#[test]
fn wrong_count_fails_on_the_first_wrong_byte_not_at_a_timeout() {
    // Only one trailer byte is here, and it is already wrong.
    assert_eq!(error_of(b"VALUE k 0 2\r\nabc"), ReplyError::MissingEnd);
}

#[test]
fn rejects_value_without_end() {
    assert_eq!(
        error_of(b"VALUE k 0 3\r\nabc\r\nVALUE j 0 1\r\nx\r\nEND\r\n"),
        ReplyError::MissingEnd
    );
    assert_eq!(
        error_of(b"VALUE k 0 3\r\nabc\r\nSTORED\r\n"),
        ReplyError::MissingEnd
    );
    assert_eq!(
        error_of(b"VALUE k 0 3\r\nabcEND\r\n"),
        ReplyError::MissingEnd
    );
}

#[test]
fn rejects_unknown_status_line() {
    for line in [
        &b"EXISTS\r\n"[..],
        b"stored\r\n",
        b"+OK\r\n",
        b"\r\n",
        b"STORED \r\n",
        b"SERVER_ERRORX\r\n",
        b"18446744073709551616\r\n",
        b"99999999999999999999999999\r\n",
        b"-1\r\n",
        b"+1\r\n",
        b"1 2\r\n",
        b"0x10\r\n",
    ] {
        assert!(
            matches!(error_of(line), ReplyError::UnknownLine(_)),
            "{line:?}"
        );
    }
}

#[test]
fn rejects_bare_line_feed() {
    assert_eq!(error_of(b"STORED\n"), ReplyError::BareLineFeed);
    assert_eq!(error_of(b"\n"), ReplyError::BareLineFeed);
}

#[test]
fn rejects_overlong_line_at_the_limit() {
    let mut buf = vec![b'A'; MAX_LINE_LEN - 1];
    assert_eq!(
        decode(&buf),
        Ok(None),
        "one byte short of the limit: still waiting"
    );
    buf.push(b'A');
    assert_eq!(error_of(&buf), ReplyError::LineTooLong);
    // A line of exactly MAX_LINE_LEN bytes with its CRLF is fine.
    let mut exact = b"SERVER_ERROR ".to_vec();
    exact.resize(MAX_LINE_LEN - 2, b'x');
    exact.extend_from_slice(b"\r\n");
    assert!(matches!(complete(&exact), Reply::ServerError(_)));
}

#[test]
fn rejects_absurd_length_before_anything_is_allocated() {
    for header in [
        &b"VALUE k 0 99999999999999999999999999999999\r\n"[..],
        b"VALUE k 0 18446744073709551615\r\n",
        format!("VALUE k 0 {}\r\n", MAX_VALUE_LEN + 1).as_bytes(),
    ] {
        assert_eq!(error_of(header), ReplyError::ValueTooLarge, "{header:?}");
    }
    // The cap itself is accepted: the header parses and the reader waits for the data.
    let header = format!("VALUE k 0 {MAX_VALUE_LEN}\r\n");
    assert_eq!(decode(header.as_bytes()), Ok(None));
    let Ok(Some((Reply::Value { data, .. }, len))) = parse_line(header.as_bytes()) else {
        panic!("header did not parse")
    };
    assert_eq!((data.len(), len), (MAX_VALUE_LEN, header.len()));
}

#[test]
fn rejects_malformed_value_headers() {
    for header in [
        &b"VALUE k 0\r\n"[..],
        b"VALUE k 0 3 7\r\n",
        b"VALUE  0 3\r\n",
        b"VALUE k 0 -3\r\n",
        b"VALUE k 0 3x\r\n",
        b"VALUE k 0 \r\n",
        b"VALUE k x 3\r\n",
        b"VALUE k 4294967296 3\r\n",
        b"VALUE k  0 3\r\n",
    ] {
        assert!(
            matches!(error_of(header), ReplyError::BadValueLine(_)),
            "{:?}",
            header.escape_ascii().to_string()
        );
    }
}

#[test]
fn flags_up_to_u32_max_are_accepted() {
    let buf = b"VALUE k 4294967295 0\r\n\r\nEND\r\n";
    assert!(matches!(
        complete(buf),
        Reply::Value {
            flags: u32::MAX,
            ..
        }
    ));
}

const VALID: &[&[u8]] = &[
    b"VALUE foo 0 3\r\nbar\r\nEND\r\n",
    b"VALUE k 7 0\r\n\r\nEND\r\n",
    b"VALUE k 0 7\r\n\r\nEND\r\n\r\nEND\r\n",
    b"END\r\n",
    b"STORED\r\n",
    b"NOT_STORED\r\n",
    b"DELETED\r\n",
    b"NOT_FOUND\r\n",
    b"ERROR\r\n",
    b"CLIENT_ERROR bad command line format\r\n",
    b"SERVER_ERROR object too large for cache\r\n",
    b"42\r\n",
    b"18446744073709551615\r\n",
];

type Decoder = fn(&[u8]) -> Result<Option<(Reply, usize)>, ReplyError>;

/// `decoder` needs more bytes for every prefix of `whole`, and takes exactly all of it.
fn needs_more_until_the_last_byte(decoder: Decoder, whole: &[u8]) {
    let shown = whole.escape_ascii().to_string();
    for cut in 0..whole.len() {
        assert_eq!(decoder(&whole[..cut]), Ok(None), "{shown:?} cut at {cut}");
    }
    let len = decoder(whole).map(|reply| reply.map(|(_, len)| len));
    assert_eq!(len, Ok(Some(whole.len())), "{shown:?}");
}

#[test]
fn every_valid_reply_split_at_every_offset_needs_more_until_the_last_byte() {
    for reply in VALID {
        needs_more_until_the_last_byte(decode, reply);
    }
}

#[test]
fn trailer_is_checked_byte_by_byte_as_it_arrives() {
    // \r\nEND\r\n after a value's data: a prefix needs more, a wrong byte fails at once.
    for cut in 0..VALUE_TRAILER.len() {
        assert_eq!(
            trailer_complete(&VALUE_TRAILER[..cut]),
            Ok(false),
            "cut at {cut}"
        );
    }
    assert_eq!(trailer_complete(b"\r\nEND\r\nSTORED\r\n"), Ok(true));
    assert_eq!(trailer_complete(b"\r\nX"), Err(ReplyError::MissingEnd));
    assert_eq!(trailer_complete(b"x"), Err(ReplyError::MissingEnd));
}

/// Every part of a multi-key get reply, in order, and the bytes each took.
fn get_many_parts(buf: &[u8]) -> Result<Vec<(Reply, usize)>, ReplyError> {
    let (mut parts, mut start) = (Vec::new(), 0);
    while start < buf.len() {
        let Some((part, len)) = decode_get_many_part(&buf[start..])? else {
            panic!("{:?}: incomplete", buf.escape_ascii().to_string());
        };
        parts.push((part, len));
        start += len;
    }
    Ok(parts)
}

#[test]
fn a_multi_key_get_is_read_block_by_block() {
    // `get a b a c`, b a miss: a VALUE block per hit (a twice), data ended by its CRLF, one END.
    let buf = b"VALUE a 0 1\r\n1\r\nVALUE a 0 1\r\n1\r\nVALUE c 0 4\r\nx\r\ny\r\nEND\r\n";
    let parts = get_many_parts(buf).unwrap();
    let lens: Vec<usize> = parts.iter().map(|(_, len)| *len).collect();
    assert_eq!(lens, [16, 16, 19, 5]);
    let Reply::Value { key, data, .. } = &parts[2].0 else {
        panic!("not a VALUE")
    };
    // Ranges index the part's own start.
    assert_eq!(
        (&buf[32..][key.clone()], &buf[32..][data.clone()]),
        (&b"c"[..], &b"x\r\ny"[..])
    );
    assert_eq!(parts[3].0, Reply::End);
    // All misses: END alone. An error line is a part of its own.
    assert_eq!(decode_get_many_part(b"END\r\n"), Ok(Some((Reply::End, 5))));
    let oom = b"SERVER_ERROR out of memory writing get response\r\n";
    assert!(matches!(
        decode_get_many_part(oom),
        Ok(Some((Reply::ServerError(_), len))) if len == oom.len()
    ));
}

#[test]
fn a_block_of_a_multi_key_get_with_a_wrong_count_is_an_error() {
    for buf in [
        &b"VALUE a 0 2\r\nabc\r\nEND\r\n"[..],
        b"VALUE a 0 4\r\nabc\r\nEND\r\n",
        b"VALUE a 0 1\r\nabc",
    ] {
        assert_eq!(
            decode_get_many_part(buf),
            Err(ReplyError::MissingDataEnd),
            "{:?}",
            buf.escape_ascii().to_string()
        );
    }
}

#[test]
fn every_part_of_a_multi_key_get_split_at_every_offset_needs_more_until_the_last_byte() {
    let parts: &[&[u8]] = &[
        b"VALUE foo 0 3\r\nbar\r\n",
        b"VALUE k 0 0\r\n\r\n",
        b"VALUE k 0 7\r\n\r\nEND\r\n\r\n",
        b"END\r\n",
        b"SERVER_ERROR out of memory writing get response\r\n",
    ];
    for part in parts {
        needs_more_until_the_last_byte(decode_get_many_part, part);
    }
    for cut in 0..DATA_TRAILER.len() {
        assert_eq!(data_end_complete(&DATA_TRAILER[..cut]), Ok(false));
    }
    assert_eq!(data_end_complete(b"\r\nEND\r\n"), Ok(true));
    assert_eq!(data_end_complete(b"\rX"), Err(ReplyError::MissingDataEnd));
}

#[test]
fn hits_are_placed_in_the_order_of_the_keys() {
    let keys: &[&[u8]] = &[b"a", b"b", b"a", b"c"];
    // Each hit fills the first place at or after the one the last hit left off at.
    assert_eq!(place_hit(keys, 0, b"a"), Some(0));
    assert_eq!(place_hit(keys, 1, b"a"), Some(2));
    assert_eq!(place_hit(keys, 1, b"c"), Some(3));
    // Not asked, asked earlier (out of order), a third `a`, past the end.
    assert_eq!(place_hit(keys, 0, b"z"), None);
    assert_eq!(place_hit(keys, 2, b"b"), None);
    assert_eq!(place_hit(keys, 3, b"a"), None);
    assert_eq!(place_hit(keys, 4, b"c"), None);
    assert_eq!(place_hit(keys, 9, b"c"), None);
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(kvbench_servers::script::property_cases(256)))]

    #[test]
    fn never_panics_and_never_claims_more_than_it_was_given(bytes in proptest::collection::vec(any::<u8>(), 0..2048)) {
        if let Ok(Some((_, len))) = decode(&bytes) {
            prop_assert!(len <= bytes.len());
        }
    }

    #[test]
    fn never_panics_on_value_shaped_noise(count in any::<u64>(), tail in proptest::collection::vec(any::<u8>(), 0..64)) {
        let mut bytes = format!("VALUE k 0 {count}\r\n").into_bytes();
        bytes.extend_from_slice(&tail);
        if let Ok(Some((_, len))) = decode(&bytes) {
            prop_assert!(len <= bytes.len());
        }
    }

    #[test]
    fn get_many_parts_never_panic_nor_claim_more_than_they_were_given(bytes in proptest::collection::vec(any::<u8>(), 0..2048)) {
        if let Ok(Some((_, len))) = decode_get_many_part(&bytes) {
            prop_assert!(len <= bytes.len());
        }
    }

    #[test]
    fn any_multi_key_get_round_trips(
        stored in proptest::collection::vec(proptest::option::of(proptest::collection::vec(any::<u8>(), 0..64)), 3),
        asked in proptest::collection::vec(0..3usize, 0..12),
    ) {
        // Keys out of three, repeats included; a key asked twice is a hit (or a miss) twice.
        let keys: Vec<Vec<u8>> = asked.iter().map(|&i| format!("k{i}").into_bytes()).collect();
        let values: Vec<Option<Vec<u8>>> = asked.iter().map(|&i| stored[i].clone()).collect();
        let mut buf = Vec::new();
        for (key, value) in keys.iter().zip(&values) {
            if let Some(value) = value {
                buf.extend_from_slice(&[b"VALUE ", &key[..], format!(" 0 {}\r\n", value.len()).as_bytes(), value, b"\r\n"].concat());
            }
        }
        buf.extend_from_slice(b"END\r\n");
        let key_refs: Vec<&[u8]> = keys.iter().map(Vec::as_slice).collect();
        let (mut placed, mut next, mut start) = (vec![None; keys.len()], 0, 0);
        loop {
            let (part, len) = decode_get_many_part(&buf[start..]).unwrap().unwrap();
            let at = &buf[start..];
            match part {
                Reply::Value { key, data, .. } => {
                    let i = place_hit(&key_refs, next, &at[key]).unwrap();
                    placed[i] = Some(at[data].to_vec());
                    next = i + 1;
                }
                Reply::End => break,
                other => return Err(TestCaseError::fail(format!("{other:?}"))),
            }
            start += len;
        }
        prop_assert_eq!(start + 5, buf.len());
        prop_assert_eq!(placed, values);
    }

    #[test]
    fn any_value_round_trips(data in proptest::collection::vec(any::<u8>(), 0..600), flags in any::<u32>()) {
        let mut buf = format!("VALUE some:key {flags} {}\r\n", data.len()).into_bytes();
        buf.extend_from_slice(&data);
        buf.extend_from_slice(b"\r\nEND\r\nSTORED\r\n");
        let (reply, len) = decode(&buf).unwrap().unwrap();
        prop_assert_eq!(len, buf.len() - b"STORED\r\n".len());
        let Reply::Value { key, flags: got_flags, data: range } = reply else {
            return Err(TestCaseError::fail("not a VALUE"));
        };
        prop_assert_eq!(&buf[key], b"some:key");
        prop_assert_eq!(got_flags, flags);
        prop_assert_eq!(&buf[range], &data[..]);
        for cut in 0..len {
            prop_assert_eq!(decode(&buf[..cut]), Ok(None));
        }
    }
}
