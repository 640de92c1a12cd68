//! Every hand-written client has a connect, a read and a write timeout, set from [`Options`] and
//! 5 s by default, and each one fires: one test per client, transport and timeout, named
//! `client/transport/case`.
//!
//! - **read**: a fake server that accepts and never answers.
//! - **write**: a fake server that never reads. It queues a few thousand replies up front, so
//!   every command whose bytes the kernel accepts gets its reply at once; the client keeps
//!   sending 60 KB values until the socket buffers on both sides are full and a `write` makes no
//!   progress. (60 KB, because `inline` cannot send a command line over 64 KiB.)
//! - **connect**: a TCP listener whose accept backlog is full. Linux then drops the SYNs of new
//!   connections, so a connect neither succeeds nor fails until its timeout: the local stand-in
//!   for a black-holed address, without sending a packet anywhere else. Unix sockets have no
//!   connect timeout in `std`; the clients document that instead (a local connect fails at once
//!   when nothing listens and only waits while a live server's backlog is full).
//! - **defaults**: `Options::default()` reaches the socket (`SO_RCVTIMEO`, `SO_SNDTIMEO`), read
//!   back from the socket the spec's `connect` opened (found by its peer, the fake server).

mod fake;

use std::ffi::OsString;
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::os::fd::{AsRawFd, RawFd};
use std::os::unix::ffi::OsStringExt;
use std::process::ExitCode;
use std::time::{Duration, Instant};

use fake::{Answer, Behaviour, Dialect, FakeServer};
use kvbench_core::{Backend, Client, ClientSpec, Endpoint, Error, Kind, Options, Transport};
use libtest_mimic::{Arguments, Failed, Trial};

/// The timeout under test, for all three.
const TIMEOUT: Duration = Duration::from_millis(300);

/// How far past its timeout a call may return: a hang guard, not a performance claim.
const MARGIN: Duration = Duration::from_millis(1500);

/// A timeout that fired after less than this fired for some other reason.
const TOO_SOON: Duration = Duration::from_millis(150);

/// Size of each value sent to the server that never reads.
const VALUE_LEN: usize = 60_000;

/// Values sent at most before the test gives up on filling the buffers (about 120 MB).
const MAX_VALUES: usize = 2_000;

/// Replies the never-reading server queues up front: more than the values that fit in the
/// socket buffers.
const PREFILLED_REPLIES: usize = 4_000;

fn options() -> Options {
    Options {
        connect_timeout: TIMEOUT,
        read_timeout: TIMEOUT,
        write_timeout: TIMEOUT,
    }
}

fn dialect(spec: &ClientSpec) -> Dialect {
    match spec.backend {
        Backend::Redis => Dialect::Resp,
        Backend::Memcached => fake::memcached_dialect(spec),
        Backend::RedisCluster => unreachable!("cluster clients are not in kvbench_clients::all()"),
    }
}

/// Checks that `result` is a timeout that took about [`TIMEOUT`], no less and not much more.
fn expect_timeout<T: std::fmt::Debug>(
    result: kvbench_core::Result<T>,
    elapsed: Duration,
) -> Result<(), String> {
    match result {
        Err(Error::Timeout(_)) => {}
        other => {
            return Err(format!(
                "want Err(Timeout), got {other:?} after {elapsed:?}"
            ));
        }
    }
    if elapsed < TOO_SOON || elapsed > TIMEOUT + MARGIN {
        return Err(format!(
            "timed out after {elapsed:?}, want about {TIMEOUT:?}"
        ));
    }
    Ok(())
}

/// After a timeout the connection is out of step: the next call must fail without waiting.
fn expect_broken(client: &mut dyn Client) -> Result<(), String> {
    let started = Instant::now();
    match client.get(b"k") {
        Err(err) if err.breaks_connection() && started.elapsed() < TOO_SOON => Ok(()),
        other => Err(format!(
            "after a timeout the next call should fail at once, got {other:?} after {:?}",
            started.elapsed()
        )),
    }
}

fn connect(spec: &ClientSpec, server: &FakeServer) -> Result<Box<dyn Client>, String> {
    (spec.connect)(server.endpoint(), &options()).map_err(|err| format!("connect: {err}"))
}

// ---------------------------------------------------------------------------------------------
// Read
// ---------------------------------------------------------------------------------------------

fn read_timeout_on_a_silent_server(spec: &ClientSpec, transport: Transport) -> Result<(), String> {
    let silent = Behaviour::Hostile(Answer::ThenSilence(Vec::new()));
    let server = FakeServer::start(dialect(spec), transport, silent);
    let mut client = connect(spec, &server)?;
    let started = Instant::now();
    let result = client.get(b"k");
    expect_timeout(result, started.elapsed())?;
    expect_broken(&mut *client)
}

// ---------------------------------------------------------------------------------------------
// Write
// ---------------------------------------------------------------------------------------------

fn never_reading_server(spec: &ClientSpec, transport: Transport) -> FakeServer {
    let dialect = dialect(spec);
    let reply: &[u8] = match dialect {
        Dialect::Resp => b"+OK\r\n",
        Dialect::MemcachedMeta => b"HD O0\r\n",
        Dialect::MemcachedText | Dialect::MemcachedBinary => b"STORED\r\n",
    };
    let prefill = reply.repeat(PREFILLED_REPLIES);
    FakeServer::start(dialect, transport, Behaviour::NeverReads { prefill })
}

fn write_timeout_on_a_server_that_never_reads(
    spec: &ClientSpec,
    transport: Transport,
) -> Result<(), String> {
    let server = never_reading_server(spec, transport);
    let mut client = connect(spec, &server)?;
    let value = vec![b'v'; VALUE_LEN];
    for sent in 0..MAX_VALUES {
        let started = Instant::now();
        let result = client.set(format!("k{sent}").as_bytes(), &value);
        if result.is_err() {
            expect_timeout(result, started.elapsed())
                .map_err(|err| format!("after {sent} values were accepted: {err}"))?;
            return expect_broken(&mut *client);
        }
    }
    Err(format!(
        "{MAX_VALUES} values of {VALUE_LEN} bytes written to a server that reads nothing"
    ))
}

fn write_timeout_in_set_many(spec: &ClientSpec, transport: Transport) -> Result<(), String> {
    let server = never_reading_server(spec, transport);
    let mut client = connect(spec, &server)?;
    let value = vec![b'v'; VALUE_LEN];
    let keys: Vec<String> = (0..MAX_VALUES).map(|i| format!("k{i}")).collect();
    let items: Vec<(&[u8], &[u8])> = keys.iter().map(|k| (k.as_bytes(), &value[..])).collect();
    let started = Instant::now();
    let result = client.set_many(&items);
    let elapsed = started.elapsed();
    match result {
        Err(Error::Timeout(_)) => {}
        other => {
            return Err(format!(
                "want Err(Timeout), got {other:?} after {elapsed:?}"
            ));
        }
    }
    // The batch takes a while to fill the buffers before the write that times out, so only the
    // hang guard applies here: the whole batch cannot take much longer than one timeout.
    if elapsed > TIMEOUT + MARGIN {
        return Err(format!("set_many timed out after {elapsed:?}"));
    }
    expect_broken(&mut *client)
}

// ---------------------------------------------------------------------------------------------
// Connect
// ---------------------------------------------------------------------------------------------

/// A TCP listener on 127.0.0.1 that never accepts, with a full accept backlog.
struct FullBacklog {
    listener: TcpListener,
    /// Connections that fill the queue; held open so that it stays full.
    _queued: Vec<TcpStream>,
}

impl FullBacklog {
    fn new() -> Result<FullBacklog, String> {
        let listener = TcpListener::bind("127.0.0.1:0").map_err(|err| err.to_string())?;
        // std listens with a backlog of SOMAXCONN (4096 here). Listening again on a listening
        // socket only changes its backlog: 0 lets exactly one connection wait in the queue.
        // SAFETY: `listen` on a file descriptor this listener owns; no memory is involved.
        if unsafe { libc::listen(listener.as_raw_fd(), 0) } != 0 {
            return Err(format!("listen: {}", std::io::Error::last_os_error()));
        }
        let addr = listener.local_addr().map_err(|err| err.to_string())?;
        let mut queued = Vec::new();
        // Connect until one connect hangs: from then on the kernel drops every new SYN.
        for _ in 0..8 {
            match TcpStream::connect_timeout(&addr, Duration::from_millis(200)) {
                Ok(stream) => queued.push(stream),
                Err(err) if err.kind() == std::io::ErrorKind::TimedOut => {
                    return Ok(FullBacklog {
                        listener,
                        _queued: queued,
                    });
                }
                Err(err) => return Err(format!("filling the backlog: {err}")),
            }
        }
        Err("the backlog never filled: every connect was queued".into())
    }

    fn addr(&self) -> SocketAddr {
        self.listener.local_addr().expect("listener address")
    }
}

fn connect_timeout_on_a_full_backlog(spec: &ClientSpec) -> Result<(), String> {
    let backlog = FullBacklog::new()?;
    let endpoint = Endpoint::Tcp(backlog.addr().to_string());
    let started = Instant::now();
    let result = (spec.connect)(&endpoint, &options());
    let elapsed = started.elapsed();
    match &result {
        Err(Error::Connect { source, .. }) if source.kind() == std::io::ErrorKind::TimedOut => {}
        Err(other) => return Err(format!("want a connect timeout, got {other:?}")),
        Ok(_) => return Err("connected to a listener whose backlog is full".into()),
    }
    if elapsed < TOO_SOON || elapsed > TIMEOUT + MARGIN {
        return Err(format!(
            "connect timed out after {elapsed:?}, want about {TIMEOUT:?}"
        ));
    }
    Ok(())
}

// ---------------------------------------------------------------------------------------------
// Defaults
// ---------------------------------------------------------------------------------------------

type SocketTimeouts = (Option<Duration>, Option<Duration>);

/// One of `SO_RCVTIMEO`, `SO_SNDTIMEO` on `fd`; `None` inside when unset, `Err` when `fd` is
/// not a socket (or was closed meanwhile: every fd of the process is looked at).
fn socket_timeout(fd: RawFd, option: libc::c_int) -> std::io::Result<Option<Duration>> {
    let mut value = libc::timeval {
        tv_sec: 0,
        tv_usec: 0,
    };
    let mut len = size_of::<libc::timeval>() as libc::socklen_t;
    // SAFETY: getsockopt writes at most `len` bytes into `value` and only reads the fd; on an fd
    // that is not a socket, or no longer open, it fails without side effects.
    let rc = unsafe {
        libc::getsockopt(
            fd,
            libc::SOL_SOCKET,
            option,
            (&raw mut value).cast(),
            &mut len,
        )
    };
    if rc != 0 {
        return Err(std::io::Error::last_os_error());
    }
    let timeout = Duration::new(value.tv_sec as u64, value.tv_usec as u32 * 1_000);
    Ok((!timeout.is_zero()).then_some(timeout))
}

/// The peer of the socket `fd`, as an [`Endpoint`]: `None` for anything else (a listener, an
/// unnamed Unix peer, not a socket).
fn peer(fd: RawFd) -> Option<Endpoint> {
    // SAFETY: all-zero is a valid `sockaddr_storage`; getpeername writes at most `len` bytes of
    // the address into it and only reads the fd.
    let mut address: libc::sockaddr_storage = unsafe { std::mem::zeroed() };
    let mut len = size_of::<libc::sockaddr_storage>() as libc::socklen_t;
    // SAFETY: as above.
    let rc = unsafe { libc::getpeername(fd, (&raw mut address).cast(), &mut len) };
    if rc != 0 {
        return None;
    }
    match libc::c_int::from(address.ss_family) {
        libc::AF_INET => {
            // SAFETY: the family says the storage holds a `sockaddr_in`, which it is large
            // enough and aligned for.
            let v4 = unsafe { &*(&raw const address).cast::<libc::sockaddr_in>() };
            let ip = std::net::Ipv4Addr::from(u32::from_be(v4.sin_addr.s_addr));
            let port = u16::from_be(v4.sin_port);
            Some(Endpoint::Tcp(SocketAddr::from((ip, port)).to_string()))
        }
        libc::AF_UNIX => {
            // SAFETY: as above, for a `sockaddr_un`.
            let unix = unsafe { &*(&raw const address).cast::<libc::sockaddr_un>() };
            let path: Vec<u8> = unix
                .sun_path
                .iter()
                .take_while(|&&byte| byte != 0)
                .map(|&byte| byte as u8)
                .collect();
            (!path.is_empty()).then(|| Endpoint::Unix(OsString::from_vec(path).into()))
        }
        _ => None,
    }
}

/// The read and write timeouts on the sockets of this process whose peer is `endpoint`: the
/// client's connection to a fake server, whoever wrote the client (the server's own sockets
/// have the client, not itself, as their peer). Found through `/proc/self/fd`, so that no
/// client's crate has to expose its socket for this test.
fn sockets_connected_to(endpoint: &Endpoint) -> Result<Vec<SocketTimeouts>, String> {
    let fds = std::fs::read_dir("/proc/self/fd").map_err(|err| format!("/proc/self/fd: {err}"))?;
    let mut found = Vec::new();
    for entry in fds.flatten() {
        let Ok(fd) = entry.file_name().to_string_lossy().parse::<RawFd>() else {
            continue;
        };
        if peer(fd).as_ref() != Some(endpoint) {
            continue;
        }
        let read = socket_timeout(fd, libc::SO_RCVTIMEO);
        let write = socket_timeout(fd, libc::SO_SNDTIMEO);
        if let (Ok(read), Ok(write)) = (read, write) {
            found.push((read, write));
        }
    }
    Ok(found)
}

fn default_timeouts_reach_the_socket(
    spec: &ClientSpec,
    transport: Transport,
) -> Result<(), String> {
    let defaults = Options::default();
    assert_eq!(defaults.read_timeout, Options::DEFAULT_TIMEOUT);
    let server = FakeServer::start(
        dialect(spec),
        transport,
        Behaviour::Hostile(Answer::ThenSilence(Vec::new())),
    );
    let client =
        (spec.connect)(server.endpoint(), &defaults).map_err(|err| format!("connect: {err}"))?;
    let sockets = sockets_connected_to(server.endpoint())?;
    drop(client);
    let [(read, write)] = sockets[..] else {
        return Err(format!(
            "want one socket connected to {}, found {}",
            server.endpoint(),
            sockets.len()
        ));
    };
    let want = Some(Options::DEFAULT_TIMEOUT);
    if (read, write) != (want, want) {
        return Err(format!(
            "socket timeouts read {read:?}, write {write:?}; want {want:?} for both"
        ));
    }
    Ok(())
}

// ---------------------------------------------------------------------------------------------
// The run
// ---------------------------------------------------------------------------------------------

fn trial(name: String, test: impl FnOnce() -> Result<(), String> + Send + 'static) -> Trial {
    Trial::test(name, move || test().map_err(Failed::from))
}

fn main() -> ExitCode {
    let mut args = Arguments::from_args();
    // The cases wait on timeouts rather than compute: run more at once than there are cores.
    args.test_threads.get_or_insert(8);
    let mut trials = Vec::new();
    for spec in kvbench_clients::all() {
        if spec.kind != Kind::HandWritten {
            continue;
        }
        for &transport in spec.transports {
            let name = |case: &str| format!("{}/{transport}/{case}", spec.name);
            trials.push(trial(name("read_timeout_on_a_silent_server"), move || {
                read_timeout_on_a_silent_server(&spec, transport)
            }));
            trials.push(trial(
                name("write_timeout_on_a_server_that_never_reads"),
                move || write_timeout_on_a_server_that_never_reads(&spec, transport),
            ));
            trials.push(trial(name("write_timeout_in_set_many"), move || {
                write_timeout_in_set_many(&spec, transport)
            }));
            trials.push(trial(
                name("default_timeouts_reach_the_socket"),
                move || default_timeouts_reach_the_socket(&spec, transport),
            ));
            if transport == Transport::Tcp {
                trials.push(trial(
                    name("connect_timeout_on_a_full_backlog"),
                    move || connect_timeout_on_a_full_backlog(&spec),
                ));
            }
        }
    }
    libtest_mimic::run(&args, trials).exit_code()
}
