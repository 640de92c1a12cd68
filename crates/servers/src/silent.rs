//! A server that accepts connections and never answers: what a client's timeouts are tested
//! against.

use std::io::{self, Read};
use std::net::TcpListener;
use std::os::unix::net::UnixListener;
use std::path::Path;
use std::thread;
use std::time::{Duration, Instant};

use kvbench_core::{ClientSpec, Endpoint, Error, Options};

/// How long a call against a silent server may take before it counts as hung: a guard, not a
/// performance claim, far above the 300 ms timeouts used against it, so that a loaded machine
/// does not trip it.
pub const HANG_GUARD: Duration = Duration::from_secs(10);

/// Listens on a loopback TCP port and on a Unix socket at `dir/silent.sock`, accepts every
/// connection, reads (and discards) what the client sends and never writes a byte. Returns the
/// two endpoints; the listener threads live as long as the process.
pub fn silent_endpoints(dir: &Path) -> io::Result<Vec<Endpoint>> {
    let tcp = TcpListener::bind("127.0.0.1:0")?;
    let tcp_addr = tcp.local_addr()?.to_string();
    let path = dir.join("silent.sock");
    let unix = UnixListener::bind(&path)?;
    // Hold every accepted socket open and drain it, so the client's writes never block.
    thread::spawn(move || {
        for mut stream in tcp.incoming().flatten() {
            thread::spawn(move || stream.read_to_end(&mut Vec::new()));
        }
    });
    thread::spawn(move || {
        for mut stream in unix.incoming().flatten() {
            thread::spawn(move || stream.read_to_end(&mut Vec::new()));
        }
    });
    Ok(vec![Endpoint::Tcp(tcp_addr), Endpoint::Unix(path)])
}

/// For clients that talk while connecting (a library's handshake): connecting each spec to a
/// silent server over each transport with 300 ms timeouts fails with [`Error::Connect`] of kind
/// `TimedOut`, within [`HANG_GUARD`].
pub fn connecting_times_out(specs: &[ClientSpec]) {
    let dir = tempfile::tempdir().expect("a directory for the silent socket");
    let options = Options::with_timeout(Duration::from_millis(300));
    for endpoint in silent_endpoints(dir.path()).expect("silent endpoints") {
        for spec in specs {
            let started = Instant::now();
            let err = (spec.connect)(&endpoint, &options).err();
            let elapsed = started.elapsed();
            assert!(
                matches!(&err, Some(Error::Connect { source, .. }) if source.kind() == io::ErrorKind::TimedOut),
                "{} on {endpoint}: {err:?}",
                spec.name
            );
            assert!(elapsed < HANG_GUARD, "{} took {elapsed:?}", spec.name);
        }
    }
}
