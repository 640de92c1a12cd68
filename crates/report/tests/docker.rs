//! docker/compose.yaml against docker/README.md and the suite: Docker is not available on the
//! project's machines, so this is what keeps the compose file honest. It checks that every image
//! is pinned to the version the suite measures, that every published port and socket path in the
//! compose file is the one a URL in the README names (and the other way round), that those URLs
//! parse as `REDIS_URL` / `MEMCACHED_URL` do (`kvbench_servers::External::parse`), and that the
//! servers run with the settings the suite's cells need.

use std::collections::BTreeSet;
use std::fs;
use std::path::{Path, PathBuf};

use kvbench_servers::{Backend, Endpoint, External};
use yaml_rust2::{Yaml, YamlLoader};

/// Images the suite's numbers are comparable with (Debian 12's packages: redis 7.0.15, memcached 1.6.18).
const REDIS_IMAGE: &str = "redis:7.0.15";
const MEMCACHED_IMAGE: &str = "memcached:1.6.18";

fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../..")
        .canonicalize()
        .unwrap()
}

fn compose_text() -> String {
    fs::read_to_string(repo_root().join("docker/compose.yaml")).unwrap()
}

fn parse(text: &str) -> Yaml {
    let mut documents = YamlLoader::load_from_str(text).expect("compose.yaml is valid YAML");
    assert_eq!(documents.len(), 1, "one YAML document");
    documents.remove(0)
}

/// What one service serves, as seen from the host.
#[derive(Debug)]
struct Service {
    name: String,
    backend: Backend,
    command: Vec<String>,
    endpoints: Vec<Endpoint>,
}

fn strings(node: &Yaml, what: &str) -> Vec<String> {
    match node {
        Yaml::BadValue => Vec::new(),
        Yaml::Array(items) => items
            .iter()
            .map(|item| {
                item.as_str()
                    .unwrap_or_else(|| panic!("{what}: {item:?} is not a string (quote it)"))
                    .to_string()
            })
            .collect(),
        other => panic!("{what} must be a list, got {other:?}"),
    }
}

/// The value after `flag` in a command line.
fn flag_value<'a>(command: &'a [String], flag: &str) -> Option<&'a str> {
    let at = command.iter().position(|arg| arg == flag)?;
    command.get(at + 1).map(String::as_str)
}

fn services(text: &str) -> Vec<Service> {
    let root = repo_root();
    let compose = parse(text);
    let services = compose["services"].as_hash().expect("a services mapping");
    let mut out = Vec::new();
    for (name, service) in services {
        let name = name.as_str().unwrap().to_string();
        let image = service["image"].as_str().expect("an image");
        let backend = match image {
            REDIS_IMAGE => Backend::Redis,
            MEMCACHED_IMAGE => Backend::Memcached,
            other => panic!("{name}: image {other:?} is not {REDIS_IMAGE} or {MEMCACHED_IMAGE}"),
        };
        let command = strings(&service["command"], &format!("{name}.command"));
        assert_eq!(
            command.first().map(String::as_str),
            Some(match backend {
                Backend::Redis | Backend::RedisCluster => "redis-server",
                Backend::Memcached => "memcached",
            }),
            "{name}: the command starts with the server"
        );
        assert_eq!(
            service["user"].as_str(),
            Some("${KVBENCH_UID:-1000}:${KVBENCH_GID:-1000}"),
            "{name}: runs as the invoking user, so its socket is the user's"
        );

        let (port_flag, socket_flag) = match backend {
            Backend::Redis | Backend::RedisCluster => ("--port", "--unixsocket"),
            Backend::Memcached => ("-p", "-s"),
        };
        let mut endpoints = Vec::new();
        // Published ports: 127.0.0.1:<host>:<container>, the container side being the port
        // the server listens on.
        for mapping in strings(&service["ports"], &format!("{name}.ports")) {
            let parts: Vec<&str> = mapping.split(':').collect();
            let [ip, host, container] = parts[..] else {
                panic!("{name}: port {mapping:?} is not 127.0.0.1:<host>:<container>");
            };
            assert_eq!(ip, "127.0.0.1", "{name}: publish on loopback only");
            let listening = flag_value(&command, port_flag)
                .unwrap_or_else(|| panic!("{name}: publishes {mapping} but sets no {port_flag}"));
            assert_eq!(
                container, listening,
                "{name}: {mapping} vs {port_flag} {listening}"
            );
            let host: u16 = host.parse().expect("a host port");
            assert!(
                host != 6379 && host != 11211,
                "{name}: {host} would collide with a local server"
            );
            endpoints.push(Endpoint::Tcp(format!("127.0.0.1:{host}")));
        }
        // Sockets: the path must lie on a bind mount, which gives its host path.
        let mounts: Vec<(String, String)> =
            strings(&service["volumes"], &format!("{name}.volumes"))
                .into_iter()
                .map(|volume| {
                    let (source, target) = volume.split_once(':').unwrap_or_else(|| {
                        panic!("{name}: volume {volume:?} is not source:target")
                    });
                    assert!(
                        source.starts_with("./"),
                        "{name}: {source} is not a bind mount"
                    );
                    (source.to_string(), target.to_string())
                })
                .collect();
        if let Some(socket) = flag_value(&command, socket_flag) {
            let (source, rest) = mounts
                .iter()
                .find_map(|(source, target)| {
                    socket
                        .strip_prefix(target.as_str())
                        .and_then(|rest| rest.strip_prefix('/'))
                        .map(|rest| (source, rest))
                })
                .unwrap_or_else(|| panic!("{name}: socket {socket} is on no bind mount"));
            let host_dir = root.join("docker").join(source.trim_start_matches("./"));
            assert!(
                host_dir.is_dir(),
                "{}: must exist in the repository, or Docker creates it owned by root",
                host_dir.display()
            );
            endpoints.push(Endpoint::Unix(host_dir.join(rest)));
        } else {
            assert!(mounts.is_empty(), "{name}: a mount without a socket on it");
        }
        assert!(!endpoints.is_empty(), "{name}: serves nothing to the host");
        out.push(Service {
            name,
            backend,
            command,
            endpoints,
        });
    }
    out
}

/// `REDIS_URL=…` / `MEMCACHED_URL=…` in docker/README.md, `$PWD` being the repository root.
fn readme_urls() -> Vec<(Backend, String)> {
    let text = fs::read_to_string(repo_root().join("docker/README.md")).unwrap();
    let root = repo_root();
    let mut urls = Vec::new();
    for word in text.split(|c: char| c.is_whitespace() || c == '`') {
        for (variable, backend) in [
            ("REDIS_URL=", Backend::Redis),
            ("MEMCACHED_URL=", Backend::Memcached),
        ] {
            if let Some(url) = word.strip_prefix(variable) {
                urls.push((backend, url.replace("$PWD", &root.to_string_lossy())));
            }
        }
    }
    urls
}

/// (backend, endpoint) the compose file serves to the host.
fn published(text: &str) -> BTreeSet<(Backend, String)> {
    services(text)
        .into_iter()
        .flat_map(|s| {
            let backend = s.backend;
            s.endpoints
                .into_iter()
                .map(move |e| (backend, e.to_string()))
        })
        .collect()
}

/// (backend, endpoint) the README's URLs name, parsed as the suite parses them.
fn documented() -> BTreeSet<(Backend, String)> {
    let urls = readme_urls();
    assert!(
        !urls.is_empty(),
        "the README gives REDIS_URL / MEMCACHED_URL examples"
    );
    urls.iter()
        .map(|(backend, url)| {
            let external = External::parse(*backend, url)
                .unwrap_or_else(|e| panic!("README URL {url} does not parse: {e}"));
            (*backend, external.endpoint().to_string())
        })
        .collect()
}

#[test]
fn images_are_pinned_to_the_measured_versions() {
    // `services` refuses any image but the two pinned ones; both must be there.
    let services = services(&compose_text());
    let backends: BTreeSet<Backend> = services.iter().map(|s| s.backend).collect();
    assert_eq!(backends.len(), 2, "both servers: {services:?}");
}

#[test]
fn every_port_and_socket_is_a_url_in_the_readme_and_back() {
    let published = published(&compose_text());
    assert_eq!(
        published,
        documented(),
        "compose publishes exactly what the README tells the suite to use"
    );
    // Both transports of both servers.
    assert_eq!(published.len(), 4, "{published:?}");
}

#[test]
fn a_port_or_socket_changed_on_one_side_only_is_caught() {
    let text = compose_text();
    for (from, to) in [
        ("127.0.0.1:16379:6379", "127.0.0.1:16380:6379"),
        ("/sockets/memcached.sock", "/sockets/mc.sock"),
    ] {
        assert!(text.contains(from), "{from}");
        let changed = text.replace(from, to);
        assert_ne!(
            published(&changed),
            documented(),
            "{from} -> {to} went unnoticed"
        );
    }
}

#[test]
fn servers_run_with_the_settings_the_cells_need() {
    for service in services(&compose_text()) {
        let Service { name, command, .. } = &service;
        match service.backend {
            Backend::Redis | Backend::RedisCluster => {
                // No persistence, as the private servers: a save would stall a measurement.
                assert_eq!(flag_value(command, "--save"), Some(""), "{name}");
                assert_eq!(flag_value(command, "--appendonly"), Some("no"), "{name}");
                assert_eq!(
                    flag_value(command, "--unixsocketperm"),
                    Some("700"),
                    "{name}"
                );
            }
            Backend::Memcached => {
                // The 1 MiB cells need an item limit above the 1 MiB default.
                assert_eq!(flag_value(command, "-I"), Some("2m"), "{name}");
                assert_eq!(flag_value(command, "-m"), Some("256"), "{name}");
                if let Some(perm) = flag_value(command, "-a") {
                    assert_eq!(perm, "700", "{name}");
                }
                if command.iter().any(|a| a == "-p") {
                    assert_eq!(flag_value(command, "-U"), Some("0"), "{name}: no UDP");
                }
                // -s turns TCP off: a service is one or the other.
                assert!(
                    !(command.iter().any(|a| a == "-s") && command.iter().any(|a| a == "-p")),
                    "{name}: memcached cannot serve TCP and a Unix socket in one process"
                );
            }
        }
    }
}
