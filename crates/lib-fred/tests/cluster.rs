//! fred in clustered mode against a private Redis Cluster of three primaries, connected by one
//! seed node (`cluster_scenarios`, shared with the redis-rs tests): round trips on every node,
//! 100,000 items in one `set_many`, a slot migrated during the test, and a node stopped. What
//! it does in the last two, defects included, is pinned here: a change fails the test until the
//! spec's known defects are updated.

use std::time::Duration;

use kvbench_core::HostileOutcome;
use kvbench_lib_fred::SPEC_CLUSTER;

#[path = "../../lib-redis/tests/cluster_scenarios/mod.rs"]
mod cluster_scenarios;

/// The timeout of the migration and node-stop scenarios: every call after fred stops serving
/// waits it out, so short.
const TIMEOUT: Duration = Duration::from_secs(1);

/// How much later than its timeout a call may end, on two shared CPUs.
const MARGIN: Duration = Duration::from_millis(1500);

const TIMED_OUT: &str = HostileOutcome::TIMED_OUT;

fn lists_defect(input: &str) -> bool {
    SPEC_CLUSTER
        .known_defects
        .iter()
        .any(|defect| defect.input == input)
}

#[test]
fn round_trips_on_every_node() {
    cluster_scenarios::round_trips_on_every_node(&SPEC_CLUSTER);
}

#[test]
fn set_many_spread_over_the_nodes() {
    // fred's command timeout bounds a pipeline as a whole: 100,000 commands take it about 11 s
    // in an unoptimised build (7 s on a single server), past the default 5 s.
    cluster_scenarios::set_many_spread_over_the_nodes(&SPEC_CLUSTER, Duration::from_secs(60));
}

/// The first command that meets ASK fails, and fred serves nothing after it. The keys all end
/// up where they belong (the migration is the test's, not fred's).
#[test]
fn a_slot_migration_fails_the_first_asked_command_then_every_call() {
    assert!(lists_defect("cluster_slot_migration"));
    let seen = cluster_scenarios::a_slot_migration(&SPEC_CLUSTER, TIMEOUT);
    let expected = [
        ("half-way", "get_many_pipelined", HostileOutcome::IO),
        ("half-way", "get", TIMED_OUT),
        ("half-way", "set", TIMED_OUT),
        ("half-way", "set_many", TIMED_OUT),
        ("handed over", "get_many_pipelined", TIMED_OUT),
        ("handed over", "get", TIMED_OUT),
        ("handed over", "set", TIMED_OUT),
        ("handed over", "set_many", TIMED_OUT),
    ];
    assert_eq!(seen.calls, expected, "first error: {:?}", seen.first_error);
    let first = seen.first_error.unwrap_or_default();
    assert!(first.contains("Max attempts reached"), "{first}");
}

/// The GET in flight to the stopped node fails at once; then every call times out, on the
/// nodes that still run too.
#[test]
fn a_stopped_node_fails_its_key_then_every_call() {
    assert!(lists_defect("cluster_node_stopped"));
    let seen = cluster_scenarios::after_a_node_stops(&SPEC_CLUSTER, TIMEOUT, 3);
    let outcomes = |calls: &[(&'static str, Duration)]| -> Vec<&str> {
        calls.iter().map(|&(outcome, _)| outcome).collect()
    };
    assert_eq!(
        outcomes(&seen.stopped),
        [HostileOutcome::IO, TIMED_OUT, TIMED_OUT],
        "{seen:?}"
    );
    assert_eq!(outcomes(&seen.running), [TIMED_OUT, TIMED_OUT], "{seen:?}");
    assert!(seen.stopped[0].1 < TIMEOUT, "{seen:?}");
    let waited = seen.stopped[1..]
        .iter()
        .chain(&seen.running)
        .map(|&(_, took)| took);
    assert!(
        waited
            .into_iter()
            .all(|took| (TIMEOUT..TIMEOUT + MARGIN).contains(&took)),
        "{seen:?}"
    );
}

/// 64 callers get their own values back over one connection per node; the seed also accepts
/// fred's backchannel, the connection it reads `CLUSTER SLOTS` over.
#[test]
fn callers_share_one_connection_per_node() {
    let opened = cluster_scenarios::callers_share_the_cluster(&SPEC_CLUSTER, 64);
    assert_eq!(
        opened,
        [2, 1, 1],
        "connections each node accepted, the seed first"
    );
}
