//! The RESP decoder on arbitrary bytes: no panic, no claim beyond the input, the three entry
//! points agree, and whatever decodes re-encodes to bytes that decode to the same reply.
#![no_main]

use kvbench_resp::{check, decode, encode_reply, parse_header};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|bytes: &[u8]| {
    let checked = check(bytes);
    let decoded = decode(bytes);
    if let Ok(Some((_, used))) = parse_header(bytes) {
        assert!(used <= bytes.len());
    }
    match (&checked, &decoded) {
        (Ok(Some(len)), Ok(Some((reply, used)))) => {
            assert_eq!(len, used);
            assert!(*len <= bytes.len());
            let mut again = Vec::new();
            encode_reply(&mut again, reply);
            assert_eq!(decode(&again), Ok(Some((reply.clone(), again.len()))));
        }
        (Ok(None), Ok(None)) => {}
        (Err(a), Err(b)) => assert_eq!(a, b),
        _ => panic!("check {checked:?} but decode {decoded:?}"),
    }
});
