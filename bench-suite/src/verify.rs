//! Verify before timing: a fast wrong client must fail, not win.
//!
//! Every (cell, client) pair does the cell's work once and the result is checked through an
//! independent reference connection ([`kvbench_conformance::Reference`]).

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

/// Runs the cell's work once through `client` and checks the outcome.
pub fn verify(
    client: &mut dyn Client,
    reference: &mut Reference,
    spec: &ClientSpec,
    w: &Workload,
) -> Result<(), Rejection> {
    match check(client, reference, spec, w) {
        Ok(()) => Ok(()),
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
) -> Checked {
    let client_err = Ok;
    match w.cell.op {
        Op::Get => expect(
            client.get(&w.key).map_err(client_err)?,
            Some(&w.value),
            "GET",
        )
        .map_err(Err),
        Op::GetMiss => expect(
            client.get(&w.key).map_err(client_err)?,
            None,
            "GET of a missing key",
        )
        .map_err(Err),
        Op::Set => {
            client.set(&w.key, &w.value).map_err(client_err)?;
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
        Op::PipelineSet => verify_pipeline(client, reference, spec, w),
    }
}

/// A pipeline of distinct keys, each with its own value, then every key read back through the
/// reference: the count and every value must match. The keys are deleted afterwards.
fn verify_pipeline(
    client: &mut dyn Client,
    reference: &mut Reference,
    spec: &ClientSpec,
    w: &Workload,
) -> Checked {
    let depth = if spec.pipelines() {
        w.cell.pipeline
    } else {
        w.cell.pipeline.min(DEFAULT_LOOP_VERIFY_DEPTH)
    };
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
    if let Err(err) = client.set_many(&items) {
        reference.delete_many(&keys).map_err(Err)?;
        return Err(Ok(err));
    }
    let outcome = (|| {
        let mut found = 0usize;
        // Chunks of 100: the memcache crate writes a whole multi-get before reading it.
        for (key_chunk, value_chunk) in keys.chunks(100).zip(values.chunks(100)) {
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
