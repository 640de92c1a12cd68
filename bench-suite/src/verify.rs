//! Verify before timing: a fast wrong client must fail, not win.
//!
//! Every (cell, client) pair does the cell's work once and the result is checked through an
//! independent reference connection ([`kvbench_conformance::Reference`]).

use std::time::{Duration, Instant};

use kvbench_conformance::Reference;
use kvbench_core::{Backend, Client, ClientSpec};

use crate::drivers::Workload;
use crate::matrix::{Op, SET_EX_TTL};

/// Depth at which a client whose `set_many` is the contract's default loop is verified: the
/// loop's correctness does not depend on depth, and a million round trips would cost a minute.
pub const DEFAULT_LOOP_VERIFY_DEPTH: usize = 1_000;

fn expect(got: Option<Vec<u8>>, want: Option<&[u8]>, what: &str) -> Result<(), String> {
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

/// Puts the server in the state the cell reads: the GET key holds the value, the miss key is
/// absent.
pub fn prepare(reference: &mut Reference, w: &Workload) -> Result<(), String> {
    match w.cell.op {
        Op::Get => reference.set(&w.key, &w.value),
        Op::GetMiss => reference.delete_many(std::slice::from_ref(&w.key)),
        _ => Ok(()),
    }
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

/// Runs the cell's work once through `client` and checks the outcome. Returns how long the
/// client's own call took (checks excluded): the runner uses it to choose how to time the pair.
pub fn verify(
    client: &mut dyn Client,
    reference: &mut Reference,
    spec: &ClientSpec,
    w: &Workload,
) -> Result<Duration, Rejection> {
    let mut took = Duration::ZERO;
    match check(client, reference, spec, w, &mut took) {
        Ok(()) => Ok(took),
        Err(Ok(
            kvbench_core::Error::InvalidInput(reason) | kvbench_core::Error::Unsupported(reason),
        )) => Err(Rejection::Refused(reason)),
        Err(Ok(err)) => Err(Rejection::Failed(format!("client error: {err}"))),
        Err(Err(msg)) => Err(Rejection::Failed(msg)),
    }
}

/// `Err(Ok(_))` is an error of the client; `Err(Err(_))` a wrong answer or a reference failure.
type Checked = Result<(), Result<kvbench_core::Error, String>>;

fn check(
    client: &mut dyn Client,
    reference: &mut Reference,
    spec: &ClientSpec,
    w: &Workload,
    took: &mut Duration,
) -> Checked {
    let client_err = Ok;
    let start = Instant::now();
    match w.cell.op {
        Op::Get => {
            let got = client.get(&w.key).map_err(client_err)?;
            *took = start.elapsed();
            expect(got, Some(&w.value), "GET").map_err(Err)
        }
        Op::GetMiss => {
            let got = client.get(&w.key).map_err(client_err)?;
            *took = start.elapsed();
            expect(got, None, "GET of a missing key").map_err(Err)
        }
        Op::Set => {
            client.set(&w.key, &w.value).map_err(client_err)?;
            *took = start.elapsed();
            expect(
                reference.get(&w.key).map_err(Err)?,
                Some(&w.value),
                "reference GET after SET",
            )
            .map_err(Err)
        }
        Op::SetEx => {
            client
                .set_ex(&w.key, &w.value, SET_EX_TTL)
                .map_err(client_err)?;
            *took = start.elapsed();
            expect(
                reference.get(&w.key).map_err(Err)?,
                Some(&w.value),
                "reference GET after SET EX",
            )
            .map_err(Err)?;
            if w.cell.backend == Backend::Redis {
                let ttl = reference.ttl(&w.key).map_err(Err)?;
                if !(1..=i64::from(SET_EX_TTL)).contains(&ttl) {
                    return Err(Err(format!("TTL after SET EX {SET_EX_TTL} is {ttl}")));
                }
            }
            Ok(())
        }
        Op::PipelineSet => verify_pipeline(client, reference, spec, w, took),
    }
}

/// Items in the pipeline [`verify`] writes: the cell's depth, or at most
/// [`DEFAULT_LOOP_VERIFY_DEPTH`] for a client without pipelining.
pub fn pipeline_depth(spec: &ClientSpec, w: &Workload) -> usize {
    if spec.pipelines() {
        w.cell.pipeline
    } else {
        w.cell.pipeline.min(DEFAULT_LOOP_VERIFY_DEPTH)
    }
}

/// A pipeline of distinct keys, each with its own value, then every key read back through the
/// reference: the count and every value must match. The keys are deleted afterwards.
fn verify_pipeline(
    client: &mut dyn Client,
    reference: &mut Reference,
    spec: &ClientSpec,
    w: &Workload,
    took: &mut Duration,
) -> Checked {
    let depth = pipeline_depth(spec, w);
    let keys: Vec<Vec<u8>> = (0..depth)
        .map(|i| [&w.key[..], format!(":verify:{i}").as_bytes()].concat())
        .collect();
    let values: Vec<Vec<u8>> = (0..depth)
        .map(|i| format!("bar:{i}").into_bytes())
        .collect();
    let items: Vec<(&[u8], &[u8])> = keys
        .iter()
        .zip(&values)
        .map(|(k, v)| (&k[..], &v[..]))
        .collect();
    let start = Instant::now();
    let written = client.set_many(&items);
    *took = start.elapsed();
    if let Err(err) = written {
        reference.delete_many(&keys).map_err(Err)?;
        return Err(Ok(err));
    }
    let outcome = (|| {
        let mut found = 0usize;
        // 1,000 keys a read: MGET for Redis, one `gets` line for memcached.
        let chunk = 1_000;
        for (key_chunk, value_chunk) in keys.chunks(chunk).zip(values.chunks(chunk)) {
            for (got, want) in reference.get_many(key_chunk)?.into_iter().zip(value_chunk) {
                if got.as_deref() == Some(&want[..]) {
                    found += 1;
                }
            }
        }
        if found == depth {
            Ok(())
        } else {
            Err(format!(
                "after set_many of {depth} items, {found} hold the value written"
            ))
        }
    })();
    reference.delete_many(&keys).map_err(Err)?;
    outcome.map_err(Err)
}
