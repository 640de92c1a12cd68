//! Both redis-rs cluster clients against a private Redis Cluster of three primaries, connected
//! by one seed node (`cluster_scenarios`): round trips on every node, 100,000 items in one
//! `set_many`, a slot migrated during the test, and a node stopped. What each client does in
//! the last two, defects included, is pinned here: a change fails the test until the spec's
//! known defects are updated.

use std::time::Duration;

use kvbench_core::{ClientSpec, HostileOutcome, Options};
use kvbench_lib_redis::{SPEC_CLUSTER_ASYNC, SPEC_CLUSTER_SYNC};

mod cluster_scenarios;

use cluster_scenarios::{AfterAStop, a_slot_migration, after_a_node_stops};

/// The timeout of the migration and node-stop scenarios: short, so that a call that waits it
/// out costs a second, yet long for a round trip on loopback.
const TIMEOUT: Duration = Duration::from_secs(1);

/// How much later than its timeout a call may end, on two shared CPUs.
const MARGIN: Duration = Duration::from_millis(1500);

const OK: &str = "Ok";
const SERVER: &str = HostileOutcome::SERVER;

/// True if `spec` lists a known defect met by `input`.
fn lists_defect(spec: &ClientSpec, input: &str) -> bool {
    spec.known_defects
        .iter()
        .any(|defect| defect.input == input)
}

#[test]
fn sync_round_trips_on_every_node() {
    cluster_scenarios::round_trips_on_every_node(&SPEC_CLUSTER_SYNC);
}

#[test]
fn async_round_trips_on_every_node() {
    cluster_scenarios::round_trips_on_every_node(&SPEC_CLUSTER_ASYNC);
}

#[test]
fn sync_set_many_spread_over_the_nodes() {
    let timeout = Options::default().read_timeout;
    cluster_scenarios::set_many_spread_over_the_nodes(&SPEC_CLUSTER_SYNC, timeout);
}

#[test]
fn async_set_many_spread_over_the_nodes() {
    // Each request's timeout runs from when it is made; at most `IN_FLIGHT` wait at a time.
    let timeout = Options::default().read_timeout;
    cluster_scenarios::set_many_spread_over_the_nodes(&SPEC_CLUSTER_ASYNC, timeout);
}

/// Single commands follow ASK and MOVED; batches do not, and `get_many` panics inside redis-rs
/// on the slot's redirection (or `TRYAGAIN`), unless that slot's reply happens to come first in
/// redis-rs's (hash map) order of the slots, when it fails with `Err(Protocol)` instead. The keys
/// all end up where they belong.
#[test]
fn sync_slot_migration_fails_its_batches_and_panics_in_get_many() {
    assert!(lists_defect(
        &SPEC_CLUSTER_SYNC,
        "cluster_migration_pipeline"
    ));
    assert!(lists_defect(
        &SPEC_CLUSTER_SYNC,
        "cluster_migration_get_many"
    ));
    let seen = a_slot_migration(&SPEC_CLUSTER_SYNC, TIMEOUT);
    let get_many: &[&str] = &["panicked", HostileOutcome::PROTOCOL];
    let expected: [(&str, &str, &[&str]); 10] = [
        ("half-way", "get_many_pipelined", &[SERVER]),
        ("half-way", "get_many", get_many),
        ("half-way", "get", &[OK]),
        ("half-way", "set", &[OK]),
        ("half-way", "set_many", &[SERVER]),
        // The batches meet MOVED before any single command has refreshed the slot map.
        ("handed over", "get_many_pipelined", &[SERVER]),
        ("handed over", "get_many", get_many),
        ("handed over", "get", &[OK]),
        ("handed over", "set", &[OK]),
        ("handed over", "set_many", &[OK]),
    ];
    let matches = seen.calls.len() == expected.len()
        && (seen.calls.iter().zip(&expected)).all(|(&(stage, call, outcome), &(s, c, o))| {
            (stage, call) == (s, c) && o.contains(&outcome)
        });
    assert!(
        matches,
        "{:?}, first error: {:?}",
        seen.calls, seen.first_error
    );
}

/// Single commands and a handed-over slot are followed; ASK is not, for requests redirected at
/// the same time: 20 of the keys a batch reads or writes are redirected at once, which makes
/// the race all but certain. `get_many` of the migrating slot meets `TRYAGAIN` (some of its
/// keys have left), which redis-rs retries after waits longer than the timeout.
#[test]
fn async_slot_migration_fails_requests_asked_at_the_same_time() {
    assert!(lists_defect(
        &SPEC_CLUSTER_ASYNC,
        "cluster_migration_concurrent_ask"
    ));
    let seen = a_slot_migration(&SPEC_CLUSTER_ASYNC, TIMEOUT);
    let expected = [
        ("half-way", "get_many_pipelined", SERVER),
        ("half-way", "get_many", HostileOutcome::TIMED_OUT),
        ("half-way", "get", OK),
        ("half-way", "set", OK),
        ("half-way", "set_many", SERVER),
        ("handed over", "get_many_pipelined", OK),
        ("handed over", "get_many", OK),
        ("handed over", "get", OK),
        ("handed over", "set", OK),
        ("handed over", "set_many", OK),
    ];
    assert_eq!(seen.calls, expected, "first error: {:?}", seen.first_error);
}

/// Every call of `seen` ended as `stopped` (for the stopped node's key) or `Ok` (the others),
/// within `within`.
fn assert_stop(seen: &AfterAStop, stopped: &str, within: std::ops::Range<Duration>) {
    for &(outcome, took) in &seen.stopped {
        assert_eq!(outcome, stopped, "{seen:?}");
        assert!(
            within.contains(&took),
            "took {took:?}, want {within:?}: {seen:?}"
        );
    }
    assert!(
        seen.running.iter().all(|&(outcome, _)| outcome == OK),
        "{seen:?}"
    );
}

#[test]
fn sync_a_stopped_nodes_keys_fail_at_once_and_the_others_go_on() {
    let seen = after_a_node_stops(&SPEC_CLUSTER_SYNC, TIMEOUT, 3);
    assert_stop(&seen, HostileOutcome::IO, Duration::ZERO..TIMEOUT);
}

#[test]
fn async_a_stopped_nodes_keys_fail_by_the_timeout_and_the_others_go_on() {
    assert!(lists_defect(&SPEC_CLUSTER_ASYNC, "cluster_node_stopped"));
    let seen = after_a_node_stops(&SPEC_CLUSTER_ASYNC, TIMEOUT, 3);
    assert_stop(&seen, HostileOutcome::TIMED_OUT, TIMEOUT..TIMEOUT + MARGIN);
}

/// 64 callers get their own values back over one connection per node: the seed's, opened to
/// read the slot map, is kept for its own slots.
#[test]
fn callers_of_the_async_client_share_one_connection_per_node() {
    let opened = cluster_scenarios::callers_share_the_cluster(&SPEC_CLUSTER_ASYNC, 64);
    assert_eq!(opened, [1, 1, 1], "connections each node accepted");
}
