//! The meta-protocol reply reader on byte literals: one test per reply form, one per malformed
//! form, every valid reply split at every offset, and properties that no input panics.

use kvbench_memcached_reply::meta::{
    DATA_TRAILER, MetaReply, Refusal, Status, decode, trailer_complete,
};
use kvbench_memcached_reply::{MAX_LINE_LEN, MAX_VALUE_LEN, ReplyError};
use proptest::prelude::*;

fn show(bytes: &[u8]) -> String {
    bytes.escape_ascii().to_string()
}

/// Decodes a reply that must be complete and exactly `buf` long.
fn complete(buf: &[u8]) -> MetaReply {
    match decode(buf) {
        Ok(Some((reply, len))) if len == buf.len() => reply,
        other => panic!("{:?}: want one whole reply, got {other:?}", show(buf)),
    }
}

/// Decodes bytes that must be rejected.
fn error_of(buf: &[u8]) -> ReplyError {
    let want = format!("{:?} must be rejected", show(buf));
    decode(buf).expect_err(&want)
}

/// The bytes a reply's opaque and key flags point at.
fn flags<'a>(buf: &'a [u8], reply: &MetaReply) -> (Option<&'a [u8]>, Option<&'a [u8]>) {
    let at = |range: &Option<std::ops::Range<usize>>| range.clone().map(|r| &buf[r]);
    (at(&reply.opaque), at(&reply.key))
}

#[test]
fn decode_value_hit_with_key_and_opaque() {
    // VA <size> <flags>*\r\n<data>\r\n, flags in the order the command asked for them.
    let buf = b"VA 3 kfoo O17\r\nbar\r\n";
    let reply = complete(buf);
    let Status::Value(data) = reply.status.clone() else {
        panic!("not VA: {reply:?}")
    };
    assert_eq!(&buf[data], b"bar");
    assert_eq!(flags(buf, &reply), (Some(&b"17"[..]), Some(&b"foo"[..])));
}

#[test]
fn decode_value_without_flags_and_empty_value() {
    let reply = complete(b"VA 0\r\n\r\n");
    assert_eq!(reply.status, Status::Value(6..6));
    assert_eq!((reply.opaque, reply.key), (None, None));
}

#[test]
fn value_data_may_hold_crlf_and_reply_codes() {
    // Found by count, not by scanning: CRLF, MN and EN inside the data are just data.
    let buf = b"VA 10 O1\r\n\r\nMN\r\nEN\r\n\r\n";
    let Status::Value(data) = complete(buf).status else {
        panic!("not VA")
    };
    assert_eq!(&buf[data], b"\r\nMN\r\nEN\r\n");
}

#[test]
fn decode_status_codes() {
    assert_eq!(complete(b"HD\r\n").status, Status::Done);
    assert_eq!(complete(b"EN\r\n").status, Status::Miss);
    assert_eq!(
        complete(b"NS\r\n").status,
        Status::Refused(Refusal::NotStored)
    );
    assert_eq!(complete(b"EX\r\n").status, Status::Refused(Refusal::Exists));
    assert_eq!(
        complete(b"NF\r\n").status,
        Status::Refused(Refusal::NotFound)
    );
    assert_eq!(complete(b"MN\r\n").status, Status::NoOp);
}

#[test]
fn status_codes_carry_their_flags() {
    let buf = b"NS O2\r\n";
    let reply = complete(buf);
    assert_eq!(reply.status, Status::Refused(Refusal::NotStored));
    assert_eq!(flags(buf, &reply), (Some(&b"2"[..]), None));

    let buf = b"EN kmissing O0\r\n";
    let reply = complete(buf);
    assert_eq!(reply.status, Status::Miss);
    assert_eq!(flags(buf, &reply), (Some(&b"0"[..]), Some(&b"missing"[..])));
}

#[test]
fn flags_this_reader_has_no_use_for_are_skipped() {
    let buf = b"HD b W t-1 O9 c123\r\n";
    let reply = complete(buf);
    assert_eq!(reply.status, Status::Done);
    assert_eq!(flags(buf, &reply), (Some(&b"9"[..]), None));
}

#[test]
fn decode_error_lines() {
    assert_eq!(complete(b"ERROR\r\n").status, Status::Error);
    let buf = b"CLIENT_ERROR bad data chunk\r\n";
    let Status::ClientError(msg) = complete(buf).status else {
        panic!("not CLIENT_ERROR")
    };
    assert_eq!(&buf[msg], b"bad data chunk");
    let buf = b"SERVER_ERROR object too large for cache\r\n";
    let Status::ServerError(msg) = complete(buf).status else {
        panic!("not SERVER_ERROR")
    };
    assert_eq!(&buf[msg], b"object too large for cache");
    let reply = complete(b"SERVER_ERROR\r\n");
    assert_eq!(reply.status, Status::ServerError(12..12));
    // An error line has no flags: whatever follows is its message.
    assert_eq!(complete(b"SERVER_ERROR O1\r\n").opaque, None);
}

#[test]
fn a_reply_ends_where_it_ends_even_with_more_bytes_behind_it() {
    // A quiet batch's failure, then the no-op's MN.
    let buf = b"NS O2\r\nMN\r\n";
    let (reply, len) = decode(buf).unwrap().unwrap();
    assert_eq!(
        (reply.status, len),
        (Status::Refused(Refusal::NotStored), 7)
    );
    assert_eq!(decode(&buf[len..]).unwrap().unwrap().0.status, Status::NoOp);
    let buf = b"VA 1\r\nx\r\nHD\r\n";
    assert_eq!(decode(buf).unwrap().unwrap().1, 9);
}

#[test]
fn rejects_a_size_that_disagrees_with_the_data() {
    // Smaller than the data: the byte after the count is not the CR of the trailer.
    assert_eq!(error_of(b"VA 3\r\nhello\r\n"), ReplyError::MissingDataEnd);
    // Larger than the data: the count runs into the next line.
    assert_eq!(
        error_of(b"VA 8\r\nhello\r\nEN\r\n"),
        ReplyError::MissingDataEnd
    );
}

#[test]
fn rejects_malformed_lines() {
    // (bytes, the ReplyError variant they must fail with)
    let cases: &[(&[u8], &str)] = &[
        // VA without a size, or with one that is not a decimal number.
        (b"VA\r\n", "BadMetaLine"),
        (b"VA -5\r\n", "BadMetaLine"),
        (b"VA x O1\r\n", "BadMetaLine"),
        (b"VA 5x\r\n", "BadMetaLine"),
        (b"VA  5\r\n", "BadMetaLine"),
        // An empty flag: two spaces, or a space at the end.
        (b"HD  O1\r\n", "BadMetaLine"),
        (b"HD \r\n", "BadMetaLine"),
        (b"NS O1 \r\n", "BadMetaLine"),
        // No meta reply starts like these, text-protocol replies included.
        (b"XX\r\n", "UnknownLine"),
        (b"hd\r\n", "UnknownLine"),
        (b"HDX\r\n", "UnknownLine"),
        (b"\r\n", "UnknownLine"),
        (b"STORED\r\n", "UnknownLine"),
        (b"VALUE k 0 1\r\nx\r\nEND\r\n", "UnknownLine"),
        (b"$5\r\nhello\r\n", "UnknownLine"),
        // A line ended by LF alone.
        (b"HD\n", "BareLineFeed"),
        (b"VA 1 O1\nx\r\n", "BareLineFeed"),
    ];
    for (buf, variant) in cases {
        let err = error_of(buf);
        let got = format!("{err:?}");
        assert!(got.starts_with(variant), "{:?}: got {got}", show(buf));
    }
}

#[test]
fn rejects_absurd_size_before_anything_is_allocated() {
    assert_eq!(error_of(b"VA 99999999999\r\n"), ReplyError::ValueTooLarge);
    let over = format!("VA {}\r\n", MAX_VALUE_LEN + 1);
    assert_eq!(error_of(over.as_bytes()), ReplyError::ValueTooLarge);
    let digits = format!("VA {}\r\n", "9".repeat(40));
    assert_eq!(error_of(digits.as_bytes()), ReplyError::ValueTooLarge);
    // The largest size allowed is a header like any other: the data is simply not here yet.
    let largest = format!("VA {MAX_VALUE_LEN}\r\nhello");
    assert_eq!(decode(largest.as_bytes()), Ok(None));
}

#[test]
fn rejects_overlong_line_at_the_limit() {
    let mut endless = b"HD O".to_vec();
    endless.resize(MAX_LINE_LEN - 1, b'1');
    assert_eq!(decode(&endless), Ok(None), "one byte short of the limit");
    endless.push(b'1');
    assert_eq!(error_of(&endless), ReplyError::LineTooLong);
}

#[test]
fn every_valid_reply_split_at_every_offset_needs_more_until_the_last_byte() {
    let replies: &[&[u8]] = &[
        b"VA 3 kfoo O17\r\nbar\r\n",
        b"VA 0\r\n\r\n",
        b"VA 10 O1\r\n\r\nMN\r\nEN\r\n\r\n",
        b"HD O0\r\n",
        b"HD\r\n",
        b"EN\r\n",
        b"EN kfoo O0\r\n",
        b"NS O2\r\n",
        b"EX O3\r\n",
        b"NF O0\r\n",
        b"MN\r\n",
        b"ERROR\r\n",
        b"CLIENT_ERROR bad data chunk\r\n",
        b"SERVER_ERROR object too large for cache\r\n",
    ];
    for reply in replies {
        let whole_too_soon = (0..reply.len()).find(|&cut| decode(&reply[..cut]) != Ok(None));
        assert_eq!(whole_too_soon, None, "{:?} cut there", show(reply));
        complete(reply);
    }
}

#[test]
fn trailer_is_checked_byte_by_byte_as_it_arrives() {
    assert_eq!(trailer_complete(b""), Ok(false));
    assert_eq!(trailer_complete(b"\r"), Ok(false));
    assert_eq!(trailer_complete(DATA_TRAILER), Ok(true));
    assert_eq!(trailer_complete(b"\r\nMN\r\n"), Ok(true));
    assert_eq!(trailer_complete(b"x"), Err(ReplyError::MissingDataEnd));
    assert_eq!(trailer_complete(b"\rx"), Err(ReplyError::MissingDataEnd));
}

proptest! {
    #[test]
    fn never_panics_and_never_claims_more_than_it_was_given(bytes in proptest::collection::vec(any::<u8>(), 0..2048)) {
        let claimed = |(_, len): (MetaReply, usize)| len;
        prop_assert!(decode(&bytes).map_or(0, |reply| reply.map_or(0, claimed)) <= bytes.len());
    }

    #[test]
    fn never_panics_on_meta_shaped_noise(size in any::<u64>(), tail in proptest::collection::vec(any::<u8>(), 0..64)) {
        let buf = [format!("VA {size} O").into_bytes(), tail].concat();
        let claimed = |(_, len): (MetaReply, usize)| len;
        prop_assert!(decode(&buf).map_or(0, |reply| reply.map_or(0, claimed)) <= buf.len());
    }

    #[test]
    fn any_value_round_trips(data in proptest::collection::vec(any::<u8>(), 0..600), opaque in any::<u32>()) {
        let header = format!("VA {} O{opaque}\r\n", data.len()).into_bytes();
        let buf = [header, data.clone(), b"\r\n".to_vec()].concat();
        let reply = complete(&buf);
        prop_assert_eq!(reply.status, Status::Value(buf.len() - 2 - data.len()..buf.len() - 2));
        let opaque = opaque.to_string();
        prop_assert_eq!(&buf[reply.opaque.unwrap()], opaque.as_bytes());
    }
}
