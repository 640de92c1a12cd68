//! The memcached reply reader on arbitrary bytes: no panic, a complete reply never claims more
//! bytes than it was given, every range it returns lies inside them, and `decode` agrees with
//! `parse_line` about the reply line.
#![no_main]

use kvbench_memcached_reply::{MAX_VALUE_LEN, Reply, VALUE_TRAILER, decode, parse_line};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|bytes: &[u8]| {
    let line = parse_line(bytes);
    match decode(bytes) {
        Ok(Some((reply, len))) => {
            assert!(len <= bytes.len());
            let Ok(Some((header, line_len))) = &line else {
                panic!("decode found {reply:?} but parse_line said {line:?}");
            };
            assert_eq!(header, &reply);
            match &reply {
                Reply::Value { key, data, .. } => {
                    assert!(key.end <= *line_len && data.start == *line_len);
                    assert!(data.len() <= MAX_VALUE_LEN);
                    assert_eq!(&bytes[data.end..len], VALUE_TRAILER);
                }
                Reply::ClientError(msg) | Reply::ServerError(msg) => assert!(msg.end <= *line_len),
                _ => assert_eq!(len, *line_len),
            }
        }
        Ok(None) => assert!(line.is_ok()),
        Err(err) => {
            // Either the line itself is bad, or a VALUE's data is not followed by its trailer.
            if line.is_ok() {
                assert!(
                    matches!(line, Ok(Some((Reply::Value { .. }, _)))),
                    "{err:?}"
                );
            }
        }
    }
});
