//! What the text protocol cannot carry, refused before anything is written, and the expiry it
//! understands: the checks `memcached-meta` and `multiplexed` share.

use std::time::{SystemTime, UNIX_EPOCH};

use kvbench_core::{Error, Result};

use crate::reply::MAX_VALUE_LEN;

/// Longest key memcached accepts (`KEY_MAX_LENGTH` in its source).
pub const MAX_KEY_LEN: usize = 250;

/// Largest expiry memcached treats as relative; above it, an exptime is an absolute Unix time.
const MAX_RELATIVE_EXPTIME: u32 = 60 * 60 * 24 * 30;

// ANCHOR: text_check_key
/// Refuses keys the text protocol cannot carry: see "Why keys are restricted" in the crate docs.
pub fn check_key(key: &[u8]) -> Result<()> {
    if key.is_empty() || key.len() > MAX_KEY_LEN {
        let msg = format!("key of {} bytes, not 1..={MAX_KEY_LEN}", key.len());
        return Err(Error::InvalidInput(msg));
    }
    match key.iter().find(|&&byte| byte <= b' ' || byte == 0x7f) {
        Some(byte) => Err(Error::InvalidInput(format!(
            "key holds space/control byte {byte:#04x}"
        ))),
        None => Ok(()),
    }
}
// ANCHOR_END: text_check_key

/// Refuses values above [`MAX_VALUE_LEN`]: memcached answers a count above `INT_MAX - 2` with
/// `CLIENT_ERROR` and then reads the data as commands. Smaller values over the server's item limit
/// get `SERVER_ERROR object too large for cache`, the data is skipped, and the stream stays in step.
pub fn check_value(value: &[u8]) -> Result<()> {
    match value.len() {
        0..=MAX_VALUE_LEN => Ok(()),
        len => Err(Error::InvalidInput(format!(
            "value of {len} bytes, over {MAX_VALUE_LEN}"
        ))),
    }
}

/// memcached's exptime for a TTL. 0 would mean "never expires", so it is refused; above 30 days
/// memcached reads the number as an absolute Unix time, so such a TTL is sent as now + TTL (which
/// assumes client and server clocks agree).
pub fn exptime(ttl_secs: u32) -> Result<u64> {
    match ttl_secs {
        0 => Err(Error::InvalidInput("ttl 0 would mean: never expire".into())),
        1..=MAX_RELATIVE_EXPTIME => Ok(u64::from(ttl_secs)),
        _ => {
            let now = SystemTime::now()
                .duration_since(UNIX_EPOCH)
                .unwrap_or_default();
            Ok(now.as_secs() + u64::from(ttl_secs))
        }
    }
}
