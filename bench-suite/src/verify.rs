//! Verify before timing: a fast wrong client must fail, not win.
//!
//! Every (cell, client) pair does the cell's work once and the result is checked through an
//! independent reference connection ([`kvbench_conformance::Reference`]); each operation's own
//! check is in [`crate::ops`].

use std::time::{Duration, Instant};

use kvbench_conformance::Reference;
use kvbench_core::{Client, ClientSpec};

use crate::drivers::Workload;

/// Depth at which a client whose `set_many` is the contract's default loop is verified: the
/// loop's correctness does not depend on depth, and a million round trips would cost a minute.
pub const DEFAULT_LOOP_VERIFY_DEPTH: usize = 1_000;

/// `got` is `want` (a value, or a miss); `what` names the read in the error.
pub(crate) fn expect(got: Option<Vec<u8>>, want: Option<&[u8]>, what: &str) -> Result<(), String> {
    if got.as_deref() == want {
        return Ok(());
    }
    let show = |v: Option<&[u8]>| match v {
        None => "a miss".to_string(),
        Some(bytes) => format!("{} bytes", bytes.len()),
    };
    Err(format!(
        "{what}: got {}, want {}",
        show(got.as_deref()),
        show(want)
    ))
}

/// How many items [`verify`] writes through a pipeline.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Depth {
    /// The cell's own depth (at most [`DEFAULT_LOOP_VERIFY_DEPTH`] for a client without
    /// pipelining): a cell's first part.
    Cell,
    /// At most [`DEFAULT_LOOP_VERIFY_DEPTH`]: a cell's later parts, whose clients the first part
    /// of the same run verified at the cell's depth. A pipeline of a million written, read back
    /// and deleted took about 2 s a client, 24 s of each later visit of Redis's million over TCP.
    Short,
}

/// Why a pair cannot be timed.
#[derive(Debug)]
pub enum Rejection {
    /// The client refused the cell's input before sending anything (`InvalidInput` or
    /// `Unsupported`): the pair is reported as unsupported, with the client's reason.
    Refused(String),
    /// The client answered wrongly or failed: the pair is reported as failed.
    Failed(String),
}

/// One pair's verification: the client under test, the independent connection that checks
/// what it did, the client's spec and the cell's work. Each operation's check
/// ([`crate::ops`]) times the client's own calls through [`Verification::timed`].
pub(crate) struct Verification<'a> {
    /// The client under test.
    pub client: &'a mut dyn Client,
    /// The connection that sets up and reads back the server's state.
    pub reference: &'a mut Reference,
    /// The client's spec.
    pub spec: &'a ClientSpec,
    /// The cell's work.
    pub w: &'a Workload,
    /// How deep a pipeline is verified.
    pub depth: Depth,
    /// How long the client's own calls took, checks excluded.
    pub took: Duration,
}

impl Verification<'_> {
    /// Runs `call` on the client and adds its time to [`Verification::took`].
    pub fn timed<T>(&mut self, call: impl FnOnce(&mut dyn Client) -> T) -> T {
        let start = Instant::now();
        let outcome = call(&mut *self.client);
        self.took += start.elapsed();
        outcome
    }
}

/// Runs the cell's work once through `client` and checks the outcome, a pipeline at `depth`.
/// Returns how long the client's own call took (checks excluded): the runner uses it to choose
/// how to time the pair.
pub fn verify(
    client: &mut dyn Client,
    reference: &mut Reference,
    spec: &ClientSpec,
    w: &Workload,
    depth: Depth,
) -> Result<Duration, Rejection> {
    let mut v = Verification {
        client,
        reference,
        spec,
        w,
        depth,
        took: Duration::ZERO,
    };
    match crate::ops::verify(&mut v) {
        Ok(()) => Ok(v.took),
        Err(Ok(
            kvbench_core::Error::InvalidInput(reason) | kvbench_core::Error::Unsupported(reason),
        )) => Err(Rejection::Refused(reason)),
        Err(Ok(err)) => Err(Rejection::Failed(format!("client error: {err}"))),
        Err(Err(msg)) => Err(Rejection::Failed(msg)),
    }
}

/// `Err(Ok(_))` is an error of the client; `Err(Err(_))` a wrong answer or a reference failure.
pub(crate) type Checked = Result<(), Result<kvbench_core::Error, String>>;

/// `got` holds `want`, value for value, in order.
pub(crate) fn expect_values(
    got: &[Option<Vec<u8>>],
    want: &[Vec<u8>],
    what: &str,
) -> Result<(), String> {
    if got.len() != want.len() {
        return Err(format!(
            "{what} of {} keys returned {} values",
            want.len(),
            got.len()
        ));
    }
    for (i, (got, want)) in got.iter().zip(want).enumerate() {
        expect(got.clone(), Some(want), &format!("{what}: key {i}"))?;
    }
    Ok(())
}

/// Items in the pipeline [`verify`] writes: the cell's depth, or at most
/// [`DEFAULT_LOOP_VERIFY_DEPTH`] for a client without pipelining or at a [`Depth::Short`].
pub fn pipeline_depth(spec: &ClientSpec, w: &Workload, depth: Depth) -> usize {
    if spec.pipelines() && depth == Depth::Cell {
        w.cell.pipeline
    } else {
        w.cell.pipeline.min(DEFAULT_LOOP_VERIFY_DEPTH)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_later_part_verifies_a_short_pipeline() {
        let cell = (crate::matrix::full_matrix(&[1]).into_iter())
            .find(|cell| cell.id() == "redis/pipeline_set/1000000/tcp")
            .expect("the cell of a million");
        let w = Workload::new(cell, |key| key.to_vec());
        let spec = |name: &str| {
            (kvbench_clients::all().into_iter())
                .find(|spec| spec.name == name)
                .expect("the client")
        };
        let (buffered, raw_tcp) = (spec("buffered"), spec("raw-tcp"));
        assert_eq!(pipeline_depth(&buffered, &w, Depth::Cell), 1_000_000);
        assert_eq!(pipeline_depth(&buffered, &w, Depth::Short), 1_000);
        assert_eq!(pipeline_depth(&raw_tcp, &w, Depth::Cell), 1_000);
    }
}
