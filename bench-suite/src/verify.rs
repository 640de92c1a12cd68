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
/// absent, the counter is stored (at 0), each `get_many` key holds its value.
pub fn prepare(reference: &mut Reference, w: &Workload) -> Result<(), String> {
    match w.cell.op {
        Op::Get | Op::Incr if w.names.is_empty() => reference.set(&w.key, &w.value),
        Op::GetMiss => reference.delete_many(std::slice::from_ref(&w.key)),
        Op::Get | Op::GetMany | Op::GetManyPipelined => {
            (w.names.iter().zip(&w.values)).try_for_each(|(key, value)| reference.set(key, value))
        }
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
        Op::Get if w.names.is_empty() => {
            let got = client.get(&w.key).map_err(client_err)?;
            *took = start.elapsed();
            expect(got, Some(&w.value), "GET").map_err(Err)
        }
        // A cluster's GET cell reads its keys in turn: each must hold its own value.
        Op::Get => {
            for (key, value) in w.names.iter().zip(&w.values) {
                let got = client.get(key).map_err(client_err)?;
                expect(got, Some(value), "GET").map_err(Err)?;
            }
            *took = start.elapsed() / w.names.len() as u32;
            Ok(())
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
        Op::PipelineSet | Op::PipelineSetDistinct => {
            verify_pipeline(client, reference, spec, w, took)
        }
        Op::Incr => verify_incr(client, reference, w, took),
        Op::GetMany | Op::GetManyPipelined => {
            let keys: Vec<&[u8]> = w.names.iter().map(Vec::as_slice).collect();
            let got = match w.cell.op {
                Op::GetMany => client.get_many(&keys),
                _ => client.get_many_pipelined(&keys),
            }
            .map_err(client_err)?;
            *took = start.elapsed();
            expect_values(&got, &w.values, w.cell.op.as_str()).map_err(Err)
        }
        Op::Hash => verify_hash(client, reference, w, took),
        Op::TransactionPlain | Op::TransactionMulti | Op::TransactionPipeline => {
            verify_transaction(client, reference, w, took)
        }
    }
}

/// `got` holds `want`, value for value, in order.
fn expect_values(got: &[Option<Vec<u8>>], want: &[Vec<u8>], what: &str) -> Result<(), String> {
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

/// The counter set to a known value through the reference, then one INCR: the client must
/// return the next value, and the server must hold it.
fn verify_incr(
    client: &mut dyn Client,
    reference: &mut Reference,
    w: &Workload,
    took: &mut Duration,
) -> Checked {
    const START: i64 = 41;
    reference
        .set(&w.key, START.to_string().as_bytes())
        .map_err(Err)?;
    let start = Instant::now();
    let got = client.incr(&w.key).map_err(Ok)?;
    *took = start.elapsed();
    if got != START + 1 {
        return Err(Err(format!("INCR of {START} returned {got}")));
    }
    let held = (START + 1).to_string();
    expect(
        reference.get(&w.key).map_err(Err)?,
        Some(held.as_bytes()),
        "reference GET after INCR",
    )
    .map_err(Err)
}

/// A hash's (field, value) pairs.
type Fields = Vec<(Vec<u8>, Vec<u8>)>;

/// Every field and value of the hash at `key`, through the reference connection's redis-rs
/// (the kit's reference has no hash command of its own), sorted.
fn reference_hash(reference: &mut Reference, key: &[u8]) -> Result<Fields, String> {
    let Reference::Redis(con) = reference else {
        return Err("memcached has no hashes".into());
    };
    let mut fields: Fields = redis::cmd("HGETALL")
        .arg(key)
        .query(con)
        .map_err(|err| format!("reference HGETALL: {err}"))?;
    fields.sort();
    Ok(fields)
}

/// From an absent hash: HSET of the cell's fields, read back through the reference, then the
/// client's HGETALL must return the same fields and values (in any order).
fn verify_hash(
    client: &mut dyn Client,
    reference: &mut Reference,
    w: &Workload,
    took: &mut Duration,
) -> Checked {
    reference
        .delete_many(std::slice::from_ref(&w.key))
        .map_err(Err)?;
    let mut want: Fields = (w.names.iter().cloned())
        .zip(w.values.iter().cloned())
        .collect();
    want.sort();
    let items: Vec<(&[u8], &[u8])> = (w.names.iter().zip(&w.values))
        .map(|(field, value)| (&field[..], &value[..]))
        .collect();
    let start = Instant::now();
    client.hset_many(&w.key, &items).map_err(Ok)?;
    let mut got = client.hgetall(&w.key).map_err(Ok)?;
    *took = start.elapsed();
    let fields = want.len();
    if reference_hash(reference, &w.key).map_err(Err)? != want {
        return Err(Err(format!(
            "after hset_many of {fields} fields the server's hash holds other fields or values"
        )));
    }
    got.sort();
    if got != want {
        return Err(Err(format!(
            "hgetall returned {} fields, not the {fields} fields and values written",
            got.len()
        )));
    }
    Ok(())
}

/// From absent keys: the cell's way of writing its SETs once, then every key read back through
/// the reference.
fn verify_transaction(
    client: &mut dyn Client,
    reference: &mut Reference,
    w: &Workload,
    took: &mut Duration,
) -> Checked {
    reference.delete_many(&w.names).map_err(Err)?;
    let args = w.args();
    let start = Instant::now();
    crate::drivers::run_sync(client, w, &args).map_err(Ok)?;
    *took = start.elapsed();
    let held = reference.get_many(&w.names).map_err(Err)?;
    expect_values(
        &held,
        &w.values,
        &format!("reference MGET after {}", w.cell.op),
    )
    .map_err(Err)
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
