//! A server that accepts connections and never answers: what a client's timeouts are tested
//! against.

use std::io::{self, Read};
use std::net::TcpListener;
use std::os::unix::net::UnixListener;
use std::path::Path;
use std::thread;

use kvbench_core::Endpoint;

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
