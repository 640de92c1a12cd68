//! A scripted fake server, for the faults a real server cannot be made to produce: a reply cut
//! short, a length no server would send, bytes dripped one at a time, a peer that never reads.
//!
//! It listens on `127.0.0.1:0` or a Unix socket in a fresh directory, answers the handshake a
//! library sends on connect (`CLIENT SETINFO`, `version`, ...) the way a real server would, and
//! answers the first other request with the scripted [`Answer`]. It counts, on the server side,
//! every byte and every connection that arrives after that answer: a client that marked its
//! connection broken sends nothing more.
// Each test binary uses a different subset of these helpers.
#![allow(dead_code)]

use std::io::{self, Read, Write};
use std::net::{Shutdown, TcpListener};
use std::os::unix::net::UnixListener;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::{self, JoinHandle};
use std::time::Duration;

use kvbench_core::{ClientSpec, Endpoint, Options, Stream, Transport};

/// How long a connection handler waits for bytes before it checks whether the test is over.
const POLL: Duration = Duration::from_millis(20);

/// The wire protocol the fake speaks (only as much of it as a handshake and one request need).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Dialect {
    /// Redis: multi-bulk or inline requests, RESP replies.
    Resp,
    /// memcached's text protocol.
    MemcachedText,
    /// memcached's meta protocol (`mg`, `ms`, `md`, `mn`). The fake parses requests the same way
    /// in both dialects; the cases differ in what they answer.
    MemcachedMeta,
    /// memcached's binary protocol (24-byte headers).
    MemcachedBinary,
}

/// What the fake sends in answer to the first request that is not part of a handshake.
#[derive(Debug, Clone)]
pub enum Answer {
    /// These bytes, then silence: the fake keeps reading (and counting) but never writes again.
    ThenSilence(Vec<u8>),
    /// These bytes, then the fake closes the connection.
    ThenClose(Vec<u8>),
    /// These bytes one at a time, `every` apart, then silence.
    Drip { bytes: Vec<u8>, every: Duration },
    /// `reply` to this request, and `next` to the request after it: for a case whose first call
    /// must leave the connection usable, shown by the second call's reply, or whose first call
    /// sends several commands (a transaction). An empty `reply` leaves a request unanswered.
    Then { reply: Vec<u8>, next: Box<Answer> },
}

/// How the fake treats each connection.
#[derive(Debug, Clone)]
pub enum Behaviour {
    /// Answers handshakes like a real server and the first other request with the [`Answer`].
    Hostile(Answer),
    /// Writes `prefill` at once, then never reads a byte: the client's writes pile up in the
    /// socket buffers until they are full.
    NeverReads { prefill: Vec<u8> },
}

/// What the server side saw, once the test is over.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Report {
    /// Connections accepted in all.
    pub connections: usize,
    /// Connections accepted after the scripted answer was sent (a client that reconnected).
    pub connections_after_answer: usize,
    /// Bytes received, on any connection, after the scripted answer was sent.
    pub bytes_after_answer: usize,
    /// Whether a request ever triggered the scripted answer.
    pub answered: bool,
    /// The name of the first request the script answered (upper case), if any.
    pub first_request: Option<String>,
    /// The name of the request the scripted [`Answer`] went to (the last of a chain), if any.
    pub answered_request: Option<String>,
}

#[derive(Default)]
struct Shared {
    stop: AtomicBool,
    answered: AtomicBool,
    connections: AtomicUsize,
    connections_after_answer: AtomicUsize,
    bytes_after_answer: AtomicUsize,
    first_request: Mutex<Option<String>>,
    answered_request: Mutex<Option<String>>,
    handlers: Mutex<Vec<JoinHandle<()>>>,
}

/// A running fake server. [`FakeServer::finish`] stops it and says what it saw.
pub struct FakeServer {
    endpoint: Endpoint,
    shared: Arc<Shared>,
    acceptor: Option<JoinHandle<()>>,
    /// Holds the Unix socket's directory until the server is gone.
    _dir: Option<tempfile::TempDir>,
}

enum Listener {
    Tcp(TcpListener),
    Unix(UnixListener),
}

impl FakeServer {
    /// Starts listening on `transport` and serving every connection with `behaviour`.
    pub fn start(dialect: Dialect, transport: Transport, behaviour: Behaviour) -> FakeServer {
        let (listener, endpoint, dir) = match transport {
            Transport::Tcp => {
                let listener = TcpListener::bind("127.0.0.1:0").expect("bind fake tcp");
                let addr = listener.local_addr().expect("fake tcp address").to_string();
                (Listener::Tcp(listener), Endpoint::Tcp(addr), None)
            }
            Transport::Unix => {
                let dir = tempfile::tempdir().expect("fake socket dir");
                let path = dir.path().join("fake.sock");
                let listener = UnixListener::bind(&path).expect("bind fake unix");
                (Listener::Unix(listener), Endpoint::Unix(path), Some(dir))
            }
        };
        let shared = Arc::new(Shared::default());
        let acceptor = {
            let shared = Arc::clone(&shared);
            thread::spawn(move || accept_loop(listener, dialect, behaviour, shared))
        };
        FakeServer {
            endpoint,
            shared,
            acceptor: Some(acceptor),
            _dir: dir,
        }
    }

    /// Where clients connect.
    pub fn endpoint(&self) -> &Endpoint {
        &self.endpoint
    }

    /// Stops accepting, waits for every connection to end (close the client first: a handler
    /// reads until end of stream, so nothing the client sent goes uncounted), and reports.
    pub fn finish(mut self) -> Report {
        self.stop_and_join();
        Report {
            connections: self.shared.connections.load(Ordering::SeqCst),
            connections_after_answer: self.shared.connections_after_answer.load(Ordering::SeqCst),
            bytes_after_answer: self.shared.bytes_after_answer.load(Ordering::SeqCst),
            answered: self.shared.answered.load(Ordering::SeqCst),
            first_request: self.shared.first_request.lock().unwrap().clone(),
            answered_request: self.shared.answered_request.lock().unwrap().clone(),
        }
    }

    fn stop_and_join(&mut self) {
        self.shared.stop.store(true, Ordering::SeqCst);
        if let Some(acceptor) = self.acceptor.take() {
            let _ = acceptor.join();
        }
        let handlers = std::mem::take(&mut *self.shared.handlers.lock().unwrap());
        for handler in handlers {
            let _ = handler.join();
        }
    }
}

impl Drop for FakeServer {
    fn drop(&mut self) {
        self.stop_and_join();
    }
}

fn accept_loop(listener: Listener, dialect: Dialect, behaviour: Behaviour, shared: Arc<Shared>) {
    // Non-blocking, so that the loop notices `stop` instead of sitting in accept().
    match &listener {
        Listener::Tcp(l) => l.set_nonblocking(true),
        Listener::Unix(l) => l.set_nonblocking(true),
    }
    .expect("non-blocking listener");
    while !shared.stop.load(Ordering::SeqCst) {
        let accepted = match &listener {
            Listener::Tcp(l) => l.accept().and_then(|(s, _)| {
                s.set_nonblocking(false)?;
                s.set_nodelay(true)?;
                Ok(Stream::Tcp(s))
            }),
            Listener::Unix(l) => l.accept().and_then(|(s, _)| {
                s.set_nonblocking(false)?;
                Ok(Stream::Unix(s))
            }),
        };
        match accepted {
            Ok(conn) => {
                shared.connections.fetch_add(1, Ordering::SeqCst);
                if shared.answered.load(Ordering::SeqCst) {
                    shared
                        .connections_after_answer
                        .fetch_add(1, Ordering::SeqCst);
                }
                let (shared2, behaviour) = (Arc::clone(&shared), behaviour.clone());
                let handler = thread::spawn(move || serve(conn, dialect, behaviour, &shared2));
                shared.handlers.lock().unwrap().push(handler);
            }
            Err(err) if err.kind() == io::ErrorKind::WouldBlock => {
                thread::sleep(Duration::from_millis(2))
            }
            Err(err) => panic!("fake server accept: {err}"),
        }
    }
}

fn serve(mut conn: Stream, dialect: Dialect, behaviour: Behaviour, shared: &Shared) {
    conn.set_read_timeout(Some(POLL))
        .expect("handler read timeout");
    let mut answer = match behaviour {
        Behaviour::NeverReads { prefill } => {
            // Replies for requests not yet sent: the client finds each reply waiting as long as
            // its request could be written.
            let _ = conn.write_all(&prefill);
            while !shared.stop.load(Ordering::SeqCst) {
                thread::sleep(POLL);
            }
            return;
        }
        Behaviour::Hostile(answer) => answer,
    };
    let mut pending = Vec::new();
    let mut answered_here = false;
    let mut buf = [0u8; 16 * 1024];
    loop {
        let n = match conn.read(&mut buf) {
            Ok(0) => return,
            Ok(n) => n,
            Err(err)
                if matches!(
                    err.kind(),
                    io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut
                ) =>
            {
                if shared.stop.load(Ordering::SeqCst) {
                    return;
                }
                continue;
            }
            Err(err) if err.kind() == io::ErrorKind::Interrupted => continue,
            // Reset by the peer: the connection is over.
            Err(_) => return,
        };
        if answered_here || shared.answered.load(Ordering::SeqCst) {
            shared.bytes_after_answer.fetch_add(n, Ordering::SeqCst);
            continue;
        }
        pending.extend_from_slice(&buf[..n]);
        while let Some((request, used)) = parse_request(dialect, &pending) {
            if let Some(reply) = handshake_reply(dialect, &request) {
                pending.drain(..used);
                if conn.write_all(&reply).is_err() {
                    return;
                }
                continue;
            }
            (shared.first_request.lock().unwrap()).get_or_insert(request.name.clone());
            if let Answer::Then { reply, next } = &answer {
                // A request answered on the way to the last one: the connection goes on.
                pending.drain(..used);
                if conn.write_all(reply).is_err() {
                    return;
                }
                answer = (**next).clone();
                continue;
            }
            // The request the script answers. Bytes already behind it were sent after it.
            *shared.answered_request.lock().unwrap() = Some(request.name);
            shared.answered.store(true, Ordering::SeqCst);
            answered_here = true;
            shared
                .bytes_after_answer
                .fetch_add(pending.len() - used, Ordering::SeqCst);
            pending.clear();
            match &answer {
                Answer::ThenSilence(bytes) => {
                    let _ = conn.write_all(bytes);
                }
                Answer::ThenClose(bytes) => {
                    let _ = conn.write_all(bytes);
                    // The peer may be gone already; either way the connection is over.
                    let _ = conn.shutdown(Shutdown::Both);
                    return;
                }
                Answer::Then { .. } => unreachable!("answered above"),
                Answer::Drip { bytes, every } => {
                    // A second handle writes, so that this one keeps reading (and counting).
                    let mut writer = conn.try_clone().expect("clone fake connection");
                    let (bytes, every) = (bytes.clone(), *every);
                    let dripper = thread::spawn(move || {
                        for byte in bytes {
                            if writer.write_all(&[byte]).is_err() {
                                return;
                            }
                            thread::sleep(every);
                        }
                    });
                    shared.handlers.lock().unwrap().push(dripper);
                }
            }
            break;
        }
    }
}

/// A request, as far as the fake needs to know it.
#[derive(Debug)]
struct Request {
    /// Command name (upper case for Redis, as sent for memcached text).
    name: String,
    /// Redis: the first argument, upper case (`ID` in `CLIENT ID`).
    subcommand: String,
    /// memcached binary: the opcode and the opaque to echo.
    opcode: u8,
    opaque: [u8; 4],
}

/// The first complete request in `buf` and its length, or `None` if it is not complete yet.
fn parse_request(dialect: Dialect, buf: &[u8]) -> Option<(Request, usize)> {
    let named = |name: &[u8], subcommand: &[u8]| Request {
        name: String::from_utf8_lossy(&name.to_ascii_uppercase()).into_owned(),
        subcommand: String::from_utf8_lossy(&subcommand.to_ascii_uppercase()).into_owned(),
        opcode: 0,
        opaque: [0; 4],
    };
    match dialect {
        Dialect::Resp if buf.first() == Some(&b'*') => {
            // *<n>\r\n$<len>\r\n<name>\r\n... — a multi-bulk command.
            match kvbench_resp::decode(buf) {
                Ok(Some((kvbench_resp::Reply::Array(Some(args)), used))) => {
                    let arg = |i: usize| match args.get(i) {
                        Some(kvbench_resp::Reply::Bulk(Some(arg))) => arg.as_slice(),
                        _ => b"",
                    };
                    Some((named(arg(0), arg(1)), used))
                }
                Ok(None) => None,
                // Not a command: treat all of it as one request (the script answers it).
                _ => Some((named(b"", b""), buf.len())),
            }
        }
        Dialect::Resp => {
            // GET key\r\n — an inline command.
            let end = buf.iter().position(|&b| b == b'\n')? + 1;
            let mut words = buf[..end].split(u8::is_ascii_whitespace);
            let name = words.next().unwrap_or_default();
            Some((named(name, words.next().unwrap_or_default()), end))
        }
        Dialect::MemcachedText | Dialect::MemcachedMeta => {
            // Quiet meta commands (flag `q`) get no reply of their own: with the commands after
            // them, up to the first one that is not quiet (`mn`), they are one request, which
            // the server answers as one.
            let mut used = 0;
            let mut first = None;
            loop {
                let (name, len, quiet) = memcached_command(&buf[used..])?;
                used += len;
                let name = *first.get_or_insert(name);
                if !quiet {
                    return Some((named(name, b""), used));
                }
            }
        }
        Dialect::MemcachedBinary => {
            // A 24-byte header whose bytes 8..12 give the body length, then the body.
            let header = buf.get(..24)?;
            let body = u32::from_be_bytes(header[8..12].try_into().unwrap()) as usize;
            let used = 24 + body;
            (buf.len() >= used).then(|| {
                let request = Request {
                    name: String::new(),
                    subcommand: String::new(),
                    opcode: header[1],
                    opaque: header[12..16].try_into().unwrap(),
                };
                (request, used)
            })
        }
    }
}

/// One memcached command at the start of `buf`: its name, its length (for storage commands, its
/// data block included) and whether it is a quiet meta command; `None` if it is not all here.
fn memcached_command(buf: &[u8]) -> Option<(&[u8], usize, bool)> {
    // <command> <key> ...\r\n, and for storage commands <data>\r\n after it.
    let end = buf.iter().position(|&b| b == b'\n')? + 1;
    let words: Vec<&[u8]> = buf[..end]
        .split(u8::is_ascii_whitespace)
        .filter(|w| !w.is_empty())
        .collect();
    let name = words.first().copied().unwrap_or_default();
    // The word that holds the data's length: `set <key> <flags> <exptime> <bytes>`,
    // `ms <key> <bytes>`.
    let length_word = match name {
        b"set" | b"add" | b"replace" | b"append" | b"prepend" | b"cas" => Some(4),
        b"ms" => Some(2),
        _ => None,
    };
    let data_len = length_word
        .and_then(|i| words.get(i))
        .and_then(|n| std::str::from_utf8(n).ok()?.parse::<usize>().ok())
        .map_or(0, |n| n + 2);
    let quiet = matches!(name, b"mg" | b"ms" | b"md")
        && words.iter().skip(2).any(|&w| w == b"q".as_slice());
    let used = end + data_len;
    (buf.len() >= used).then_some((name, used, quiet))
}

/// The memcached dialect a hand-written client speaks, found by what it sends rather than by its
/// name: a fake server records the first command of a `get` (`get` in the text protocol, `mg` in
/// the meta protocol) and closes the connection at once.
pub fn memcached_dialect(spec: &ClientSpec) -> Dialect {
    let close = Behaviour::Hostile(Answer::ThenClose(Vec::new()));
    let server = FakeServer::start(Dialect::MemcachedText, spec.transports[0], close);
    let quick = Duration::from_millis(500);
    let options = Options {
        connect_timeout: quick,
        read_timeout: quick,
        write_timeout: quick,
    };
    if let Ok(mut client) = (spec.connect)(server.endpoint(), &options) {
        let _ = client.get(b"k");
    }
    match server.finish().first_request.as_deref() {
        Some("MG") => Dialect::MemcachedMeta,
        _ => Dialect::MemcachedText,
    }
}

/// The reply a real server gives to a request libraries send while connecting; `None` for any
/// other request (the script answers that one).
fn handshake_reply(dialect: Dialect, request: &Request) -> Option<Vec<u8>> {
    match dialect {
        Dialect::Resp => match (request.name.as_str(), request.subcommand.as_str()) {
            ("PING", _) => Some(b"+PONG\r\n".to_vec()),
            // Stay on RESP2, as a Redis that does not know HELLO would.
            ("HELLO", _) => Some(b"-ERR unknown command 'HELLO'\r\n".to_vec()),
            ("CLIENT", "ID") => Some(b":7\r\n".to_vec()),
            ("INFO", _) => {
                let mut reply = Vec::new();
                let info =
                    kvbench_resp::Reply::Bulk(Some(b"# Server\r\nredis_version:7.0.15".to_vec()));
                kvbench_resp::encode_reply(&mut reply, &info);
                Some(reply)
            }
            ("CLIENT" | "SELECT" | "AUTH" | "READONLY", _) => Some(b"+OK\r\n".to_vec()),
            _ => None,
        },
        Dialect::MemcachedText | Dialect::MemcachedMeta => match request.name.as_str() {
            "VERSION" => Some(b"VERSION 1.6.18\r\n".to_vec()),
            _ => None,
        },
        Dialect::MemcachedBinary => {
            const VERSION: u8 = 0x0b;
            const NOOP: u8 = 0x0a;
            let body: &[u8] = match request.opcode {
                VERSION => b"1.6.18",
                NOOP => b"",
                _ => return None,
            };
            Some(binary_response(
                request.opcode,
                0,
                0,
                body.len() as u32,
                request.opaque,
                body,
            ))
        }
    }
}

/// A binary-protocol response: magic 0x81, the opcode, no key, `extras` bytes of extras, the
/// status, a claimed total body length, the request's opaque, then `body` as given (which may
/// disagree with the claim: that is the point in a fault case).
pub fn binary_response(
    opcode: u8,
    extras: u8,
    status: u16,
    claimed_body_len: u32,
    opaque: [u8; 4],
    body: &[u8],
) -> Vec<u8> {
    let mut out = Vec::with_capacity(24 + body.len());
    out.extend_from_slice(&[0x81, opcode, 0, 0, extras, 0]);
    out.extend_from_slice(&status.to_be_bytes());
    out.extend_from_slice(&claimed_body_len.to_be_bytes());
    out.extend_from_slice(&opaque);
    out.extend_from_slice(&[0; 8]);
    out.extend_from_slice(body);
    out
}
