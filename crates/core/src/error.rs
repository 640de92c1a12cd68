//! What can go wrong ([`Error`]), and what a connection remembers of it ([`Broken`]).

use std::io;

use crate::Endpoint;

// ANCHOR: core_error
/// Everything that can go wrong talking to a server.
///
/// It is `Clone`, so that one failure can reach every caller it ends (a shared connection's):
/// a clone of an I/O error keeps its kind and its message.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The connection could not be established.
    #[error("cannot connect to {endpoint}: {source}")]
    Connect {
        /// Where we tried to connect.
        endpoint: String,
        /// What the operating system said.
        source: io::Error,
    },
    /// The connection failed or was closed by the peer after it was established.
    #[error("connection error: {0}")]
    Io(#[source] io::Error),
    /// A read or write made no progress within its timeout.
    #[error("timed out: {0}")]
    Timeout(String),
    /// The server sent bytes that are not a valid reply. The connection is out of step and is not
    /// reused.
    #[error("malformed reply: {0}")]
    Protocol(String),
    /// The server answered with an error reply (`-ERR ...`, `SERVER_ERROR ...`). The connection is
    /// still in step and can be used again.
    #[error("server error: {0}")]
    Server(String),
    /// The key or value cannot be carried by this client's protocol; nothing was sent.
    #[error("invalid input: {0}")]
    InvalidInput(String),
    /// The client cannot do this at all (for example, a library without the feature).
    #[error("unsupported: {0}")]
    Unsupported(String),
}
// ANCHOR_END: core_error

impl Error {
    /// True for errors after which the connection must not be used again.
    pub fn breaks_connection(&self) -> bool {
        matches!(
            self,
            Error::Connect { .. } | Error::Io(_) | Error::Timeout(_) | Error::Protocol(_)
        )
    }

    /// This error, with `peer` (one of several servers a client talks to) named in its message,
    /// for a broken connection, a timeout or a malformed reply: which of several servers failed
    /// is the first question. [`Error::Connect`] names its endpoint already, and an error reply
    /// stays as the server wrote it (a client may parse it).
    pub fn with_peer(self, peer: &str) -> Error {
        match self {
            Error::Io(source) => {
                Error::Io(io::Error::new(source.kind(), format!("{peer}: {source}")))
            }
            Error::Timeout(message) => Error::Timeout(format!("{peer}: {message}")),
            Error::Protocol(message) => Error::Protocol(format!("{peer}: {message}")),
            other => other,
        }
    }

    /// This error, met while connecting to `endpoint`, as the contract reports a connection
    /// that could not be established: a failed or timed-out connection (a library's handshake
    /// included) becomes [`Error::Connect`], a timeout with [`io::ErrorKind::TimedOut`]. Any
    /// other error (an error reply, a bad URL) stays as it is.
    pub fn while_connecting(self, endpoint: &Endpoint) -> Error {
        let source = match self {
            Error::Io(source) => source,
            Error::Timeout(message) => io::Error::new(io::ErrorKind::TimedOut, message),
            other => return other,
        };
        Error::Connect {
            endpoint: endpoint.to_string(),
            source,
        }
    }
}

impl Clone for Error {
    fn clone(&self) -> Self {
        let io = |err: &io::Error| io::Error::new(err.kind(), err.to_string());
        match self {
            Error::Connect { endpoint, source } => Error::Connect {
                endpoint: endpoint.clone(),
                source: io(source),
            },
            Error::Io(err) => Error::Io(io(err)),
            Error::Timeout(message) => Error::Timeout(message.clone()),
            Error::Protocol(message) => Error::Protocol(message.clone()),
            Error::Server(message) => Error::Server(message.clone()),
            Error::InvalidInput(message) => Error::InvalidInput(message.clone()),
            Error::Unsupported(message) => Error::Unsupported(message.clone()),
        }
    }
}

impl From<io::Error> for Error {
    /// Socket timeouts surface as `WouldBlock` or `TimedOut` depending on the platform; both mean
    /// [`Error::Timeout`]. Everything else is a broken connection.
    fn from(err: io::Error) -> Self {
        match err.kind() {
            io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut => Error::Timeout(err.to_string()),
            _ => Error::Io(err),
        }
    }
}

/// Result type of every contract method.
pub type Result<T, E = Error> = std::result::Result<T, E>;

// ANCHOR: core_broken
/// Whether a connection may still be used.
///
/// Requests and replies are matched by their order alone. After an error that may leave a reply
/// half read ([`Error::breaks_connection`]), the next bytes could belong to any reply, so the
/// first such error is kept and every later call fails with it at once, without touching the
/// socket. Errors that leave the stream in step (an error reply, refused input) change nothing.
#[derive(Debug, Default)]
pub struct Broken(Option<Error>);

impl Broken {
    /// `Err` once the connection is broken, naming the error that broke it.
    pub fn check(&self) -> Result<()> {
        match &self.0 {
            None => Ok(()),
            Some(reason) => Err(Error::Io(io::Error::new(
                io::ErrorKind::NotConnected,
                format!("connection unusable after an earlier error: {reason}"),
            ))),
        }
    }

    /// Passes `result` through, first remembering its error if that breaks the connection.
    pub fn note<T>(&mut self, result: Result<T>) -> Result<T> {
        if let Err(err) = &result
            && err.breaks_connection()
            && self.0.is_none()
        {
            self.0 = Some(err.clone());
        }
        result
    }

    /// The error that broke the connection, as it was (a caller that was waiting when it
    /// happened gets this error itself, not "unusable").
    pub fn error(&self) -> Option<&Error> {
        self.0.as_ref()
    }

    /// True once an error has left the connection out of step.
    pub fn is_broken(&self) -> bool {
        self.0.is_some()
    }
}
// ANCHOR_END: core_broken
