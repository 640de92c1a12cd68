//! [`Stream`]: one blocking socket type for either transport.

use std::io::{self, Read, Write};
use std::net::{Shutdown, TcpStream};
use std::os::unix::net::UnixStream;
use std::time::Duration;

use crate::{Endpoint, Options, Result, connect_tcp_stream, connect_unix_stream};

/// A blocking TCP or Unix socket, for code that serves both transports with one type: the
/// servers' probes, the bench's meters and the tests' scripted servers. The hand-written clients
/// do not use it: each names its own transport's `std` type, because that choice is part of what
/// it teaches. Readable and writable through `&Stream` too, as `TcpStream` is, so a reader thread
/// and a writer can share one.
#[derive(Debug)]
pub enum Stream {
    /// A TCP socket.
    Tcp(TcpStream),
    /// A Unix domain socket.
    Unix(UnixStream),
}

impl Stream {
    /// Connects to `endpoint` as the hand-written clients do: [`connect_tcp_stream`] (with
    /// `TCP_NODELAY`) or [`connect_unix_stream`], with `options`' timeouts.
    pub fn connect(endpoint: &Endpoint, options: &Options) -> Result<Stream> {
        match endpoint {
            Endpoint::Tcp(addr) => connect_tcp_stream(addr, options, true).map(Stream::Tcp),
            Endpoint::Unix(path) => connect_unix_stream(path, options).map(Stream::Unix),
        }
    }

    /// Sets the timeout of each `read` (`None`: block forever).
    pub fn set_read_timeout(&self, timeout: Option<Duration>) -> io::Result<()> {
        match self {
            Stream::Tcp(stream) => stream.set_read_timeout(timeout),
            Stream::Unix(stream) => stream.set_read_timeout(timeout),
        }
    }

    /// Sets the timeout of each `write` (`None`: block forever).
    pub fn set_write_timeout(&self, timeout: Option<Duration>) -> io::Result<()> {
        match self {
            Stream::Tcp(stream) => stream.set_write_timeout(timeout),
            Stream::Unix(stream) => stream.set_write_timeout(timeout),
        }
    }

    /// A second handle to the same socket.
    pub fn try_clone(&self) -> io::Result<Stream> {
        Ok(match self {
            Stream::Tcp(stream) => Stream::Tcp(stream.try_clone()?),
            Stream::Unix(stream) => Stream::Unix(stream.try_clone()?),
        })
    }

    /// Shuts down the read half, the write half or both.
    pub fn shutdown(&self, how: Shutdown) -> io::Result<()> {
        match self {
            Stream::Tcp(stream) => stream.shutdown(how),
            Stream::Unix(stream) => stream.shutdown(how),
        }
    }
}

impl Read for &Stream {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        match self {
            Stream::Tcp(stream) => (&*stream).read(buf),
            Stream::Unix(stream) => (&*stream).read(buf),
        }
    }
}

impl Write for &Stream {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        match self {
            Stream::Tcp(stream) => (&*stream).write(buf),
            Stream::Unix(stream) => (&*stream).write(buf),
        }
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

impl Read for Stream {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        (&*self).read(buf)
    }
}

impl Write for Stream {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        (&*self).write(buf)
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}
