use std::io;
use std::time::Duration;

use super::*;

struct Counting {
    sets: usize,
}

impl Client for Counting {
    fn get(&mut self, _key: &[u8]) -> Result<Option<Vec<u8>>> {
        Ok(None)
    }
    fn set(&mut self, _key: &[u8], _value: &[u8]) -> Result<()> {
        self.sets += 1;
        Ok(())
    }
    fn set_ex(&mut self, key: &[u8], value: &[u8], _ttl: u32) -> Result<()> {
        self.set(key, value)
    }
    fn delete(&mut self, _key: &[u8]) -> Result<bool> {
        Ok(false)
    }
}

#[test]
fn default_set_many_sets_each_item_once() {
    let mut client = Counting { sets: 0 };
    let items: Vec<(&[u8], &[u8])> = vec![(b"a", b"1"), (b"b", b"2"), (b"c", b"3")];
    client.set_many(&items).unwrap();
    assert_eq!(client.sets, 3);
}

#[test]
fn socket_timeouts_become_timeout_errors() {
    for kind in [io::ErrorKind::WouldBlock, io::ErrorKind::TimedOut] {
        let err = Error::from(io::Error::from(kind));
        assert!(matches!(err, Error::Timeout(_)), "{kind:?} gave {err:?}");
        assert!(err.breaks_connection());
    }
    let reset = Error::from(io::Error::from(io::ErrorKind::ConnectionReset));
    assert!(matches!(reset, Error::Io(_)));
    assert!(!Error::Server("WRONGTYPE".into()).breaks_connection());
}

#[test]
fn failures_while_connecting_are_connect_errors() {
    let endpoint = Endpoint::Tcp("127.0.0.1:1".into());
    let timeout = Error::Timeout("handshake".into()).while_connecting(&endpoint);
    assert!(
        matches!(&timeout, Error::Connect { endpoint, source }
            if endpoint == "tcp://127.0.0.1:1" && source.kind() == io::ErrorKind::TimedOut),
        "{timeout:?}"
    );
    let refused = Error::Io(io::ErrorKind::ConnectionRefused.into()).while_connecting(&endpoint);
    assert!(matches!(refused, Error::Connect { .. }), "{refused:?}");
    let reply = Error::Server("NOAUTH".into()).while_connecting(&endpoint);
    assert!(matches!(reply, Error::Server(_)), "{reply:?}");
}

#[test]
fn a_reply_deadline_expires_only_once_started_and_late() {
    let mut unlimited = ReplyDeadline::default();
    assert!(unlimited.check().is_ok() && unlimited.check().is_ok());
    let mut deadline = ReplyDeadline::new(Some(Duration::ZERO));
    assert!(deadline.check().is_ok(), "the first check starts the clock");
    let err = Error::from(deadline.check().unwrap_err());
    assert!(matches!(err, Error::Timeout(_)), "{err:?}");
    deadline.start();
    assert!(deadline.check().is_ok(), "a new reply gets a new clock");
}

#[test]
fn only_errors_that_break_the_stream_break_the_connection() {
    let mut broken = Broken::default();
    assert!(broken.note::<()>(Err(Error::Server("ERR".into()))).is_err());
    assert!(broken.check().is_ok() && !broken.is_broken());
    let _ = broken.note::<()>(Err(Error::Protocol("first".into())));
    let _ = broken.note::<()>(Err(Error::Protocol("second".into())));
    let err = broken.check().unwrap_err();
    assert!(err.to_string().contains("first"), "{err}");
}

#[test]
fn endpoints_name_their_transport() {
    assert_eq!(
        Endpoint::Tcp("127.0.0.1:1".into()).transport(),
        Transport::Tcp
    );
    let unix = Endpoint::Unix("/tmp/s.sock".into());
    assert_eq!(unix.transport(), Transport::Unix);
    assert_eq!(unix.to_string(), "unix:///tmp/s.sock");
}
