//! A run whose Redis is on another host: its cells carry the network floor where the loopback
//! floor's row would be, the report shows it in the same places and says what it is, and the
//! environment gives the server's placement as unknown and the floor's round trip.

mod common;

use common::{fixture, rendered};
use kvbench_report::check::{scan, well_formed};
use serde_json::{Value, json};

/// The fixture with Redis remote: its loopback floor rows become network floor rows.
fn remote_redis() -> Value {
    let mut value = fixture();
    let redis = &mut value["run"]["servers"]["redis"];
    redis["external"] = json!(true);
    redis["config"] = json!("redis://cache.example:6379/");
    redis["remote"] = json!(true);
    redis["network_floor"] = json!({
        "address": "192.0.2.7:6379",
        "command": "PING",
        "warm_up": 200,
        "calls": 10000,
        "median_ns": 412000,
        "p99_ns": 1250000
    });
    for row in value["rows"].as_array_mut().unwrap() {
        if row["backend"] == "redis" && row["client"] == "loopback-floor" {
            row["client"] = json!("network-floor");
        }
    }
    value
}

/// The cost table of `cell` in the page.
fn cost_table<'p>(page: &'p str, cell: &str) -> &'p str {
    let start = page
        .find(&format!("Cost per operation · <code>{cell}</code>"))
        .unwrap();
    let end = start + page[start..].find("</details>").unwrap();
    &page[start..end]
}

#[test]
fn the_network_floor_stands_where_the_loopback_floor_stood() {
    let (_dir, page, summary) = rendered(&remote_redis());
    well_formed(&scan(&page).unwrap()).unwrap();

    // The same ratios as against the loopback floor (same numbers, another name).
    let table = cost_table(&page, "redis/get/3B/tcp");
    let first = table.lines().find(|l| l.starts_with("<tr><td>")).unwrap();
    assert!(first.starts_with("<tr><td>network-floor</td>"), "{first}");
    assert!(!table.contains("loopback-floor"));
    let raw_tcp = (table.lines())
        .find(|l| l.starts_with("<tr><td>raw-tcp</td>"))
        .unwrap();
    assert!(raw_tcp.contains(">1.40×<"), "time × floor: {raw_tcp}");
    // Never named fastest: it is no client.
    let headline = &page[page.find("id=\"headline-table\"").unwrap()..];
    let headline = &headline[..headline.find("</table>").unwrap()];
    assert!(!headline.contains("network-floor"), "{headline}");

    // What it is, in words: under the table, and with the headline.
    assert!(
        table.contains(
            "<strong>network-floor</strong>: the network floor: the round trip of the server"
        ),
        "{table}"
    );
    assert!(page.contains("<p id=\"network-floor\">Redis is on another host: in its cells"));
    assert!(summary.contains("Redis is on another host: in its cells the floor is the network"));
    assert!(summary.contains("network-floor: the network floor: the round trip"));

    // memcached is on this machine (the fixture has no floor there): nothing of the network.
    let memcached = cost_table(&page, "memcached/get/3B/tcp");
    assert!(!memcached.contains("network"), "{memcached}");
}

#[test]
fn the_environment_gives_the_remote_placement_as_unknown_and_the_floor() {
    let (_dir, page, summary) = rendered(&remote_redis());
    for text in [&page, &summary] {
        assert!(
            text.contains(
                "same-core (redis: unknown, a remote host; memcached on CPU 1; bench on CPU 1)"
            ),
            "placement"
        );
        assert!(
            text.contains(
                "redis at 192.0.2.7:6379: PING round trip median 412 µs, p99 1.25 ms (10,000 \
                 calls after 200 untimed)"
            ),
            "network floor"
        );
    }
    assert!(page.contains("yes, on another host (REDIS_URL / MEMCACHED_URL)"));
    assert!(summary.contains("| Redis | 7.0.15 (external, on another host) — "));
}

#[test]
fn a_run_on_this_machine_says_nothing_of_a_network_floor() {
    let (_dir, page, summary) = rendered(&fixture());
    for text in [&page, &summary] {
        assert!(!text.contains("network floor"));
        assert!(!text.contains("remote host"));
    }
}
