//! Byte literals in, outcomes out: one test per reply type, one per malformed form, every valid
//! reply split at every byte, and property tests for round trips and for panics.

use super::*;
use proptest::prelude::*;

use DecodeErrorKind::*;

fn bulk(data: &[u8]) -> Reply {
    Reply::Bulk(Some(data.to_vec()))
}

fn array(items: Vec<Reply>) -> Reply {
    Reply::Array(Some(items))
}

/// Decodes `bytes`, expecting exactly one complete reply that uses all of them.
fn decode_all(bytes: &[u8]) -> Reply {
    match decode(bytes) {
        Ok(Some((reply, used))) => {
            assert_eq!(
                used,
                bytes.len(),
                "decode used {used} of {} bytes",
                bytes.len()
            );
            reply
        }
        other => panic!(
            "{:?}: expected a complete reply, got {other:?}",
            bytes.escape_ascii().to_string()
        ),
    }
}

/// Decodes `bytes`, expecting an error, and checks that `check` fails the same way.
fn decode_err(bytes: &[u8]) -> DecodeError {
    let err = match decode(bytes) {
        Err(err) => err,
        other => panic!(
            "{:?}: expected an error, got {other:?}",
            bytes.escape_ascii().to_string()
        ),
    };
    assert_eq!(check(bytes), Err(err), "check and decode disagree");
    err
}

fn nested(depth: usize) -> Vec<u8> {
    let mut bytes = b"*1\r\n".repeat(depth);
    bytes.extend_from_slice(b":1\r\n");
    bytes
}

/// Valid replies with the value each must decode to. Every one is written the way `encode_reply`
/// writes it, so the list also pins the encoder.
fn valid_replies() -> Vec<(&'static [u8], Reply)> {
    vec![
        (b"+OK\r\n", Reply::Simple(b"OK".to_vec())),
        (b"+\r\n", Reply::Simple(Vec::new())),
        (
            b"-ERR unknown command 'FOO'\r\n",
            Reply::Error(b"ERR unknown command 'FOO'".to_vec()),
        ),
        (b":0\r\n", Reply::Integer(0)),
        (b":1000\r\n", Reply::Integer(1000)),
        (b":-42\r\n", Reply::Integer(-42)),
        (b":9223372036854775807\r\n", Reply::Integer(i64::MAX)),
        (b":-9223372036854775808\r\n", Reply::Integer(i64::MIN)),
        (b"$5\r\nhello\r\n", bulk(b"hello")),
        (b"$0\r\n\r\n", bulk(b"")),
        (b"$-1\r\n", Reply::Bulk(None)),
        (b"$8\r\n\r\n\0\xff\r\n$1\r\n", bulk(b"\r\n\0\xff\r\n$1")),
        (b"*0\r\n", array(vec![])),
        (b"*-1\r\n", Reply::Array(None)),
        (
            b"*3\r\n$3\r\nfoo\r\n:7\r\n$-1\r\n",
            array(vec![bulk(b"foo"), Reply::Integer(7), Reply::Bulk(None)]),
        ),
        (
            b"*2\r\n*2\r\n+a\r\n-b\r\n*3\r\n*-1\r\n*0\r\n*1\r\n$2\r\n\r\n\r\n",
            array(vec![
                array(vec![
                    Reply::Simple(b"a".to_vec()),
                    Reply::Error(b"b".to_vec()),
                ]),
                array(vec![
                    Reply::Array(None),
                    array(vec![]),
                    array(vec![bulk(b"\r\n")]),
                ]),
            ]),
        ),
    ]
}

// --- One test per reply type -----------------------------------------------------------------

#[test]
fn decode_simple() {
    assert_eq!(decode_all(b"+OK\r\n"), Reply::Simple(b"OK".to_vec()));
    assert_eq!(decode_all(b"+\r\n"), Reply::Simple(Vec::new()));
}

#[test]
fn decode_error() {
    assert_eq!(
        decode_all(b"-WRONGTYPE Operation against a key\r\n"),
        Reply::Error(b"WRONGTYPE Operation against a key".to_vec())
    );
}

#[test]
fn decode_integer() {
    assert_eq!(decode_all(b":1000\r\n"), Reply::Integer(1000));
    assert_eq!(decode_all(b":0\r\n"), Reply::Integer(0));
    assert_eq!(decode_all(b":-42\r\n"), Reply::Integer(-42));
    assert_eq!(
        decode_all(b":9223372036854775807\r\n"),
        Reply::Integer(i64::MAX)
    );
    assert_eq!(
        decode_all(b":-9223372036854775808\r\n"),
        Reply::Integer(i64::MIN)
    );
}

#[test]
fn decode_bulk() {
    assert_eq!(decode_all(b"$5\r\nhello\r\n"), bulk(b"hello"));
}

#[test]
fn decode_nil_bulk() {
    assert_eq!(decode_all(b"$-1\r\n"), Reply::Bulk(None));
}

#[test]
fn decode_empty_bulk() {
    assert_eq!(decode_all(b"$0\r\n\r\n"), bulk(b""));
}

#[test]
fn decode_binary_bulk() {
    // The payload holds CRLF, NUL, a non-UTF-8 byte and something that looks like a header: the
    // length decides where it ends, not the bytes.
    assert_eq!(
        decode_all(b"$8\r\n\r\n\0\xff\r\n$1\r\n"),
        bulk(b"\r\n\0\xff\r\n$1")
    );
}

#[test]
fn decode_array() {
    assert_eq!(
        decode_all(b"*2\r\n$3\r\nfoo\r\n:7\r\n"),
        array(vec![bulk(b"foo"), Reply::Integer(7)])
    );
    assert_eq!(decode_all(b"*0\r\n"), array(vec![]));
}

#[test]
fn decode_nil_array() {
    assert_eq!(decode_all(b"*-1\r\n"), Reply::Array(None));
}

#[test]
fn decode_nested_array() {
    assert_eq!(
        decode_all(b"*2\r\n*1\r\n+a\r\n*2\r\n$-1\r\n*-1\r\n"),
        array(vec![
            array(vec![Reply::Simple(b"a".to_vec())]),
            array(vec![Reply::Bulk(None), Reply::Array(None)]),
        ])
    );
}

#[test]
fn decode_accepts_max_depth() {
    let mut expected = Reply::Integer(1);
    for _ in 0..MAX_DEPTH {
        expected = array(vec![expected]);
    }
    assert_eq!(decode_all(&nested(MAX_DEPTH)), expected);
}

#[test]
fn decode_accepts_line_of_max_len() {
    let mut line = vec![b'+'];
    line.resize(MAX_LINE_LEN - 2, b'a');
    line.extend_from_slice(b"\r\n");
    assert_eq!(line.len(), MAX_LINE_LEN);
    assert_eq!(
        decode_all(&line),
        Reply::Simple(vec![b'a'; MAX_LINE_LEN - 3])
    );
}

#[test]
fn parse_header_reads_each_form() {
    assert_eq!(
        parse_header(b"+OK\r\n"),
        Ok(Some((Header::Simple(b"OK"), 5)))
    );
    assert_eq!(
        parse_header(b"-ERR x\r\n"),
        Ok(Some((Header::Error(b"ERR x"), 8)))
    );
    assert_eq!(parse_header(b":-3\r\n"), Ok(Some((Header::Integer(-3), 5))));
    assert_eq!(parse_header(b"$-1\r\n"), Ok(Some((Header::Bulk(None), 5))));
    assert_eq!(parse_header(b"*-1\r\n"), Ok(Some((Header::Array(None), 5))));
    assert_eq!(
        parse_header(b"*2\r\n:1\r\n"),
        Ok(Some((Header::Array(Some(2)), 4)))
    );
    // The header of a bulk ends at its CRLF; the payload is the caller's to read.
    assert_eq!(
        parse_header(b"$5\r\nhel"),
        Ok(Some((Header::Bulk(Some(5)), 4)))
    );
}

#[test]
fn limits_are_inclusive() {
    // A bulk of exactly MAX_BULK_LEN is allowed: the header parses, and the reply needs more bytes.
    let header = format!("${MAX_BULK_LEN}\r\n");
    let consumed = header.len();
    assert_eq!(
        parse_header(header.as_bytes()),
        Ok(Some((Header::Bulk(Some(MAX_BULK_LEN)), consumed)))
    );
    assert_eq!(check(header.as_bytes()), Ok(None));

    let header = format!("*{MAX_ARRAY_LEN}\r\n:1\r\n");
    assert_eq!(check(header.as_bytes()), Ok(None));
    assert_eq!(decode(header.as_bytes()), Ok(None));
}

#[test]
fn huge_array_claim_reserves_only_what_is_present() {
    // walk building a reply is the allocating half of decode. Called directly, without check in
    // front, it must still size its Vec by the bytes present: reserving 2^32 - 1 replies would
    // abort the test process.
    let bytes = format!("*{MAX_ARRAY_LEN}\r\n:1\r\n:2\r\n");
    assert_eq!(walk(bytes.as_bytes(), 0, 0, true), Ok(None));
}

#[test]
fn array_capacity_is_the_claim_or_what_the_bytes_present_can_hold() {
    assert_eq!(array_capacity(MAX_ARRAY_LEN, 8), 2);
    assert_eq!(array_capacity(MAX_ARRAY_LEN, 0), 0);
    assert_eq!(array_capacity(2, 1 << 20), 2);
    assert_eq!(array_capacity(5, 15), 5);
}

#[test]
fn decode_leaves_following_bytes_alone() {
    let bytes = b"$3\r\nfoo\r\n+NEXT\r\n";
    assert_eq!(decode(bytes), Ok(Some((bulk(b"foo"), 9))));
    assert_eq!(
        decode(&bytes[9..]),
        Ok(Some((Reply::Simple(b"NEXT".to_vec()), 7)))
    );
}

// --- One test per malformed form -------------------------------------------------------------

#[test]
fn rejects_negative_length() {
    assert_eq!(
        decode_err(b"$-2\r\n"),
        DecodeError::new(NegativeLength(-2), 0)
    );
    assert_eq!(decode_err(b"*-5\r\n").kind(), NegativeLength(-5));
    assert_eq!(
        decode_err(b"$-9223372036854775808\r\n").kind(),
        NegativeLength(i64::MIN)
    );
}

#[test]
fn rejects_absurd_bulk_length() {
    assert_eq!(
        decode_err(b"$99999999999\r\n"),
        DecodeError::new(
            LengthTooLarge {
                claimed: 99_999_999_999,
                max: MAX_BULK_LEN
            },
            0
        )
    );
    let one_over = format!("${}\r\n", MAX_BULK_LEN + 1);
    assert!(matches!(
        decode_err(one_over.as_bytes()).kind(),
        LengthTooLarge { .. }
    ));
}

#[test]
fn rejects_absurd_array_length() {
    assert_eq!(
        decode_err(b"*4294967296\r\n").kind(),
        LengthTooLarge {
            claimed: 4_294_967_296,
            max: MAX_ARRAY_LEN
        }
    );
    // Nested: the offset points at the offending header.
    assert_eq!(
        decode_err(b"*1\r\n*99999999999\r\n"),
        DecodeError::new(
            LengthTooLarge {
                claimed: 99_999_999_999,
                max: MAX_ARRAY_LEN
            },
            4
        )
    );
}

#[test]
fn rejects_length_beyond_i64() {
    assert_eq!(decode_err(b"$99999999999999999999\r\n").kind(), BadLength);
    assert_eq!(decode_err(b"*-99999999999999999999\r\n").kind(), BadLength);
}

#[test]
fn rejects_malformed_length() {
    let cases: &[&[u8]] = &[
        b"$\r\n",
        b"$-\r\n",
        b"$+5\r\n",
        b"$ 5\r\n",
        b"$5 \r\n",
        b"$05\r\n",
        b"$-0\r\n",
        b"$-01\r\n",
        b"$5x\r\n",
        b"$0x5\r\n",
        b"$1.0\r\n",
        b"*+1\r\n",
        b"*\t1\r\n",
    ];
    for case in cases {
        assert_eq!(
            decode_err(case),
            DecodeError::new(BadLength, 0),
            "{}",
            case.escape_ascii()
        );
    }
}

#[test]
fn rejects_bad_type_byte() {
    // RESP3 types and plain garbage alike; reported at once, without waiting for a line end.
    for byte in [
        b'?', b'x', b'_', b',', b'%', b'~', b'>', b'#', b'\r', b'\n', b' ', 0, 0xff,
    ] {
        assert_eq!(decode_err(&[byte]), DecodeError::new(BadTypeByte(byte), 0));
        assert_eq!(
            parse_header(&[byte]),
            Err(DecodeError::new(BadTypeByte(byte), 0))
        );
    }
    // Inside an array, after a valid element.
    assert_eq!(
        decode_err(b"*2\r\n:1\r\n!oops\r\n"),
        DecodeError::new(BadTypeByte(b'!'), 8)
    );
}

#[test]
fn rejects_missing_crlf_after_bulk() {
    assert_eq!(
        decode_err(b"$3\r\nfooX\r\n"),
        DecodeError::new(MissingCrlf, 7)
    );
    assert_eq!(
        decode_err(b"$3\r\nfoo\rX"),
        DecodeError::new(MissingCrlf, 7)
    );
    assert_eq!(
        decode_err(b"$3\r\nfoo\n\r"),
        DecodeError::new(MissingCrlf, 7)
    );
    // A payload longer than its header says is the same fault.
    assert_eq!(decode_err(b"$3\r\nfoobar\r\n").kind(), MissingCrlf);
}

#[test]
fn rejects_lone_cr_or_lf_in_line() {
    assert_eq!(decode_err(b"+OK\rX\r\n"), DecodeError::new(MissingCrlf, 3));
    assert_eq!(decode_err(b"+OK\n"), DecodeError::new(MissingCrlf, 3));
    assert_eq!(decode_err(b":1\n"), DecodeError::new(MissingCrlf, 2));
    assert_eq!(
        parse_header(b"$5\n").map_err(|e| e.kind()),
        Err(MissingCrlf)
    );
}

#[test]
fn rejects_too_deep() {
    assert_eq!(
        decode_err(&nested(MAX_DEPTH + 1)),
        DecodeError::new(TooDeep, 4 * MAX_DEPTH)
    );
    // Known as soon as the header that goes too deep has arrived.
    let headers_only = b"*1\r\n".repeat(MAX_DEPTH + 1);
    assert_eq!(decode_err(&headers_only).kind(), TooDeep);
}

#[test]
fn rejects_overlong_line() {
    // No CRLF in sight and the line is already too long: an error, not a wait.
    let mut line = vec![b'+'];
    line.resize(MAX_LINE_LEN, b'a');
    assert_eq!(decode_err(&line), DecodeError::new(LineTooLong, 0));
    // One byte more than the longest line, CRLF included.
    line.truncate(MAX_LINE_LEN - 1);
    line.extend_from_slice(b"\r\n");
    assert_eq!(line.len(), MAX_LINE_LEN + 1);
    assert_eq!(decode_err(&line).kind(), LineTooLong);
    // The same for a header whose digits never end.
    let mut header = vec![b'$'];
    header.resize(MAX_LINE_LEN, b'9');
    assert_eq!(parse_header(&header), Err(DecodeError::new(LineTooLong, 0)));
    // One byte short of the limit is still just waiting.
    header.truncate(MAX_LINE_LEN - 2);
    assert_eq!(parse_header(&header), Ok(None));
}

#[test]
fn rejects_bad_integer() {
    let cases: &[&[u8]] = &[
        b":\r\n",
        b":-\r\n",
        b":+1\r\n",
        b": 1\r\n",
        b":1 \r\n",
        b":01\r\n",
        b":-0\r\n",
        b":1.5\r\n",
        b":1e3\r\n",
        b":0x10\r\n",
        b":9223372036854775808\r\n",
        b":-9223372036854775809\r\n",
        b":99999999999999999999999\r\n",
    ];
    for case in cases {
        assert_eq!(
            decode_err(case),
            DecodeError::new(BadInteger, 0),
            "{}",
            case.escape_ascii()
        );
    }
}

#[test]
fn errors_become_protocol_errors() {
    let err = decode_err(b"$-2\r\n");
    let core: kvbench_core::Error = err.into();
    assert!(core.breaks_connection());
    match core {
        kvbench_core::Error::Protocol(msg) => {
            assert_eq!(
                msg,
                "negative length -2 (only -1, meaning nil, is allowed) at byte 0"
            );
        }
        other => panic!("expected Error::Protocol, got {other:?}"),
    }
    assert_eq!(
        DecodeError::new(BadTypeByte(b'_'), 3).to_string(),
        "unknown reply type byte 0x5f at byte 3"
    );
}

// --- Split at every byte ---------------------------------------------------------------------

#[test]
fn every_strict_prefix_needs_more() {
    for (bytes, expected) in valid_replies() {
        let shown = bytes.escape_ascii().to_string();
        let (header, header_len) = parse_header(bytes).unwrap().unwrap();
        for cut in 0..bytes.len() {
            let prefix = &bytes[..cut];
            assert_eq!(check(prefix), Ok(None), "check({shown:?} cut at {cut})");
            assert_eq!(decode(prefix), Ok(None), "decode({shown:?} cut at {cut})");
            let want = if cut < header_len {
                None
            } else {
                Some((header, header_len))
            };
            assert_eq!(
                parse_header(prefix),
                Ok(want),
                "parse_header({shown:?} cut at {cut})"
            );
        }
        assert_eq!(check(bytes), Ok(Some(bytes.len())), "check({shown:?})");
        assert_eq!(
            decode(bytes),
            Ok(Some((expected.clone(), bytes.len()))),
            "{shown:?}"
        );

        // Trailing bytes, valid or not, are not consumed and not looked at.
        for trailer in [&b"+NEXT\r\n"[..], b"!garbage", b"$99999999999\r\n"] {
            let mut longer = bytes.to_vec();
            longer.extend_from_slice(trailer);
            assert_eq!(check(&longer), Ok(Some(bytes.len())), "{shown:?} + trailer");
            assert_eq!(decode(&longer), Ok(Some((expected.clone(), bytes.len()))));
        }

        let mut encoded = Vec::new();
        encode_reply(&mut encoded, &expected);
        assert_eq!(encoded, bytes, "encode_reply({expected:?})");
    }
}

// --- Encoding --------------------------------------------------------------------------------

#[test]
fn encode_command_writes_multi_bulk() {
    let mut out = Vec::new();
    encode_command(&mut out, &[b"SET", b"key", b"value"]);
    assert_eq!(out, b"*3\r\n$3\r\nSET\r\n$3\r\nkey\r\n$5\r\nvalue\r\n");

    // It appends, and arguments are binary-safe.
    encode_command(&mut out, &[b"GET", b"a\r\nb\0"]);
    assert_eq!(
        out,
        b"*3\r\n$3\r\nSET\r\n$3\r\nkey\r\n$5\r\nvalue\r\n*2\r\n$3\r\nGET\r\n$5\r\na\r\nb\0\r\n"
    );

    let mut empty = Vec::new();
    encode_command(&mut empty, &[]);
    assert_eq!(empty, b"*0\r\n");

    let mut long = Vec::new();
    encode_command(&mut long, &[&[b'v'; 1000]]);
    assert!(long.starts_with(b"*1\r\n$1000\r\nvvv"));
    assert_eq!(long.len(), 4 + 7 + 1000 + 2);
}

// --- Properties ------------------------------------------------------------------------------

/// Cases for a property that runs `default` cases in `make test`. `KVBENCH_FUZZ_CASES=N` (set by
/// `make fuzz`, see FUZZING.md) scales every property so that the standard 10,000-case ones run
/// N cases and the costlier ones proportionally fewer.
pub(crate) fn cases(default: u32) -> u32 {
    match std::env::var("KVBENCH_FUZZ_CASES").map(|n| n.parse::<u64>()) {
        Ok(Ok(n)) => u32::try_from(n * u64::from(default) / 10_000)
            .unwrap_or(u32::MAX)
            .max(1),
        _ => default,
    }
}

/// Text for simple strings and errors: any bytes but CR and LF.
fn line_text() -> impl Strategy<Value = Vec<u8>> {
    proptest::collection::vec(any::<u8>(), 0..24).prop_map(|bytes| {
        bytes
            .into_iter()
            .filter(|b| !matches!(b, b'\r' | b'\n'))
            .collect()
    })
}

/// Any reply, nested at most `depth` arrays deep.
pub(crate) fn any_reply(depth: u32, bulk_len: usize) -> impl Strategy<Value = Reply> {
    let leaf = prop_oneof![
        line_text().prop_map(Reply::Simple),
        line_text().prop_map(Reply::Error),
        any::<i64>().prop_map(Reply::Integer),
        proptest::option::of(proptest::collection::vec(any::<u8>(), 0..bulk_len))
            .prop_map(Reply::Bulk),
        Just(Reply::Array(None)),
    ];
    leaf.prop_recursive(depth, 64, 6, |inner| {
        proptest::collection::vec(inner, 0..6).prop_map(|items| Reply::Array(Some(items)))
    })
}

/// Byte strings made of RESP-looking pieces, so that random input reaches past the type byte.
fn resp_like_bytes() -> impl Strategy<Value = Vec<u8>> {
    let piece = prop_oneof![
        Just(b"+".to_vec()),
        Just(b"-".to_vec()),
        Just(b":".to_vec()),
        Just(b"$".to_vec()),
        Just(b"*".to_vec()),
        Just(b"\r\n".to_vec()),
        Just(b"\r".to_vec()),
        Just(b"\n".to_vec()),
        Just(b"-1".to_vec()),
        Just(b"0".to_vec()),
        Just(b"1".to_vec()),
        Just(b"3".to_vec()),
        Just(b"99999999999".to_vec()),
        Just(b"4294967295".to_vec()),
        Just(b"9223372036854775808".to_vec()),
        proptest::collection::vec(any::<u8>(), 1..4),
    ];
    proptest::collection::vec(piece, 0..40).prop_map(|pieces| pieces.concat())
}

/// What every decoding entry point must do on any input: not panic, and agree with each other.
fn assert_consistent(bytes: &[u8]) -> Result<(), TestCaseError> {
    let checked = check(bytes);
    let decoded = decode(bytes);
    let _ = parse_header(bytes);
    match (&checked, &decoded) {
        (Ok(Some(len)), Ok(Some((reply, used)))) => {
            prop_assert_eq!(len, used);
            prop_assert!(*len <= bytes.len());
            // A decoded reply re-encodes to a reply of the same value.
            let mut again = Vec::new();
            encode_reply(&mut again, reply);
            prop_assert_eq!(decode(&again), Ok(Some((reply.clone(), again.len()))));
        }
        (Ok(None), Ok(None)) => {}
        (Err(a), Err(b)) => prop_assert_eq!(a, b),
        _ => prop_assert!(false, "check {:?} but decode {:?}", checked, decoded),
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(cases(10_000)))]

    #[test]
    fn decode_never_panics_on_arbitrary_bytes(bytes in proptest::collection::vec(any::<u8>(), 0..256)) {
        assert_consistent(&bytes)?;
    }

    #[test]
    fn decode_never_panics_on_resp_like_bytes(bytes in resp_like_bytes()) {
        assert_consistent(&bytes)?;
    }

    #[test]
    fn decode_never_panics_on_damaged_replies(
        reply in any_reply(3, 16),
        at in any::<prop::sample::Index>(),
        byte in any::<u8>(),
        how in 0..3u8,
    ) {
        let mut bytes = Vec::new();
        encode_reply(&mut bytes, &reply);
        let i = at.index(bytes.len());
        match how {
            0 => bytes[i] = byte,
            1 => bytes.insert(i, byte),
            _ => { bytes.remove(i); }
        }
        assert_consistent(&bytes)?;
    }

    #[test]
    fn encode_reply_then_decode_round_trips(reply in any_reply(4, 64)) {
        let mut bytes = Vec::new();
        encode_reply(&mut bytes, &reply);
        prop_assert_eq!(check(&bytes), Ok(Some(bytes.len())));
        prop_assert_eq!(decode(&bytes), Ok(Some((reply, bytes.len()))));
    }

    #[test]
    fn encode_command_decodes_as_array_of_bulks(
        args in proptest::collection::vec(proptest::collection::vec(any::<u8>(), 0..64), 0..8),
    ) {
        let arg_slices: Vec<&[u8]> = args.iter().map(Vec::as_slice).collect();
        let mut bytes = Vec::new();
        encode_command(&mut bytes, &arg_slices);
        let bulks = args.iter().map(|arg| Reply::Bulk(Some(arg.clone()))).collect();
        prop_assert_eq!(decode(&bytes), Ok(Some((Reply::Array(Some(bulks)), bytes.len()))));
    }
}

proptest! {
    // Quadratic in the reply's size, so fewer and smaller cases.
    #![proptest_config(ProptestConfig::with_cases(cases(500)))]

    #[test]
    fn strict_prefixes_of_encoded_replies_need_more(reply in any_reply(3, 16)) {
        let mut bytes = Vec::new();
        encode_reply(&mut bytes, &reply);
        for cut in 0..bytes.len() {
            prop_assert_eq!(check(&bytes[..cut]), Ok(None), "cut at {}", cut);
            prop_assert_eq!(decode(&bytes[..cut]), Ok(None), "cut at {}", cut);
        }
    }
}

proptest! {
    // Several replies per case: fewer cases.
    #![proptest_config(ProptestConfig::with_cases(cases(1_000)))]

    #[test]
    fn a_stream_of_encoded_replies_decodes_back_in_order(
        replies in proptest::collection::vec(any_reply(2, 32), 1..6),
    ) {
        // Pipelined replies arrive back to back: each decode takes exactly its own bytes.
        let mut bytes = Vec::new();
        for reply in &replies {
            encode_reply(&mut bytes, reply);
        }
        let mut rest = &bytes[..];
        for reply in &replies {
            let decoded = decode(rest);
            let Ok(Some((got, used))) = decoded else {
                return Err(TestCaseError::fail(format!("{decoded:?} for {reply:?}")));
            };
            prop_assert_eq!(&got, reply);
            rest = &rest[used..];
        }
        prop_assert!(rest.is_empty());
    }
}

#[test]
fn encode_set_writes_what_the_codec_writes() {
    let long = vec![b'\n'; 12345];
    for (key, value) in [(&b"foo"[..], &b"bar"[..]), (b"", b""), (b"k\r\n", &long)] {
        let (mut fast, mut codec) = (Vec::new(), Vec::new());
        encode_set(&mut fast, key, value);
        encode_command(&mut codec, &[b"SET", key, value]);
        assert_eq!(fast, codec);
    }
}

#[test]
fn encode_get_and_the_codec_write_the_commands_bytes() {
    for len in (0..=12).chain([99, 100, 12345]) {
        let key = vec![b'k'; len];
        let expected = [
            format!("*2\r\n$3\r\nGET\r\n${len}\r\n").as_bytes(),
            &key,
            b"\r\n",
        ]
        .concat();
        let (mut fast, mut codec) = (Vec::new(), Vec::new());
        encode_get(&mut fast, &key);
        encode_command(&mut codec, &[b"GET", &key]);
        assert_eq!(fast, expected, "encode_get, key of {len} bytes");
        assert_eq!(codec, expected, "encode_command, key of {len} bytes");
    }
}

/// A one-digit header is read without looking for its CRLF; it must read as any other.
#[test]
fn one_digit_headers_read_as_longer_ones_do() {
    for n in 0..=20_i64 {
        let len = usize::try_from(n).unwrap();
        let line = |type_byte: char| format!("{type_byte}{n}\r\n").into_bytes();
        let consumed = line('$').len();
        assert_eq!(
            parse_header(&line('$')),
            Ok(Some((Header::Bulk(Some(len)), consumed)))
        );
        assert_eq!(
            parse_header(&line('*')),
            Ok(Some((Header::Array(Some(len)), consumed)))
        );
        assert_eq!(
            parse_header(&line(':')),
            Ok(Some((Header::Integer(n), consumed)))
        );
        let negative = format!(":-{n}\r\n").into_bytes();
        let expected = (n > 0).then_some((Header::Integer(-n), negative.len()));
        assert_eq!(parse_header(&negative).ok().flatten(), expected);
    }
    // A digit whose line goes on, or whose LF has not come, is not a one-digit header.
    assert_eq!(
        parse_header(b"$3\rx"),
        Err(DecodeError::new(DecodeErrorKind::MissingCrlf, 2))
    );
    assert_eq!(parse_header(b"$3\r"), Ok(None));
    assert_eq!(parse_header(b"$3"), Ok(None));
    assert!(parse_header(b"+3\r\n").is_ok_and(|h| h == Some((Header::Simple(b"3"), 4))));
}
