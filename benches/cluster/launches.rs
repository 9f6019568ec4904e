//! Part 2: many idle fake-CLI sessions. Launch throughput (POST until idle, `concurrency` in
//! flight) and memory per idle session, on a single service (the baseline, on a PostgreSQL
//! database of its own on the same server) and then over the three nodes (launches asked of the
//! nodes in turn, each placed by the cluster's placement, which may forward it).
//!
//! Memory: each node's RSS after a warm-up (a few sessions launched and closed there) and once
//! all sessions are idle; the growth divided by the sessions that node owns.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use futures_util::StreamExt;

use crate::node::{fresh_database, Cluster, Node};

/// Sessions a project may hold at most.
const PER_PROJECT: usize = 1000;

/// What one run of launches gave.
pub struct Launched {
    pub sessions: usize,
    pub elapsed: Duration,
    /// (node, sessions it owns, RSS before in KiB, RSS after in KiB).
    pub per_node: Vec<(String, usize, u64, u64)>,
    /// Launches placed on another node than the one asked.
    pub forwarded: usize,
    /// Launches refused: (seconds into the run, what the asked node answered). Not retried:
    /// a client would see each of them.
    pub refused: Vec<(f64, String)>,
}

impl Launched {
    /// Sessions launched (and idle) per second.
    pub fn rate(&self) -> f64 {
        self.launched() as f64 / self.elapsed.as_secs_f64()
    }

    fn launched(&self) -> usize {
        self.per_node.iter().map(|(_, owned, _, _)| owned).sum()
    }

    /// Growth per owned session, in KiB, per node.
    fn per_session(&self) -> Vec<(String, f64)> {
        self.per_node
            .iter()
            .map(|(name, owned, before, after)| {
                (name.clone(), after.saturating_sub(*before) as f64 / (*owned).max(1) as f64)
            })
            .collect()
    }

    /// All nodes' growth over all sessions, in KiB.
    fn overall(&self) -> f64 {
        let growth: u64 = self.per_node.iter().map(|(_, _, before, after)| after.saturating_sub(*before)).sum();
        growth as f64 / self.launched().max(1) as f64
    }
}

/// Launches a few sessions on each node and closes them: allocators, pools and caches warm.
async fn warm_up(nodes: &[&Node], project: &str) {
    for node in nodes {
        for _ in 0..5 {
            let (id, _) = node.launch(project, "", true).await;
            node.wait_idle(&id, Duration::from_millis(5)).await;
            node.close(&id).await;
        }
    }
    tokio::time::sleep(Duration::from_secs(1)).await;
}

/// `n` launches, the i-th asked of `nodes[i % len]` in `projects[i / 1000]`, `concurrency` at a
/// time, each until its session is idle; then every node's RSS once all are idle.
async fn launch_all(nodes: &[&Node], projects: &[String], n: usize, concurrency: usize, pinned: bool) -> Launched {
    let before: Vec<u64> = nodes.iter().map(|node| node.rss_kib()).collect();
    let started = Instant::now();
    let results: Vec<Result<(String, String, usize), (f64, String)>> = futures_util::stream::iter(0..n)
        .map(|i| async move {
            let asked = nodes[i % nodes.len()];
            let (id, owner) = asked
                .try_launch(&projects[i / PER_PROJECT], "", pinned)
                .await
                .map_err(|e| (started.elapsed().as_secs_f64(), e))?;
            asked.wait_idle(&id, Duration::from_millis(10)).await;
            Ok((id, owner, i % nodes.len()))
        })
        .buffer_unordered(concurrency)
        .collect()
        .await;
    let elapsed = started.elapsed();
    let (mut launched, mut refused) = (Vec::new(), Vec::new());
    for result in results {
        match result {
            Ok(ok) => launched.push(ok),
            Err(e) => refused.push(e),
        }
    }
    refused.sort_by(|a, b| a.0.total_cmp(&b.0));
    // Whatever settles after the last idle (buffers freed, the janitor's first pass) settles.
    tokio::time::sleep(Duration::from_secs(2)).await;
    let mut owned: BTreeMap<&str, usize> = BTreeMap::new();
    for (_, owner, _) in &launched {
        *owned.entry(owner.as_str()).or_default() += 1;
    }
    let forwarded = launched.iter().filter(|(_, owner, asked)| *owner != nodes[*asked].name).count();
    let per_node = nodes
        .iter()
        .zip(before)
        .map(|(node, before)| {
            (node.name.clone(), owned.get(node.name.as_str()).copied().unwrap_or(0), before, node.rss_kib())
        })
        .collect();
    // Closed 16 at a time, through the node each was asked of (forwarded to its owner).
    futures_util::stream::iter(launched.iter()).for_each_concurrent(16, |(id, _, asked)| nodes[*asked].close(id)).await;
    Launched { sessions: n, elapsed, per_node, forwarded, refused }
}

async fn projects(node: &Node, root: &std::path::Path, n: usize, prefix: &str) -> Vec<String> {
    let mut out = Vec::new();
    for p in 0..n.div_ceil(PER_PROJECT) {
        out.push(node.project(root, &format!("{prefix}-{p}"), PER_PROJECT).await);
    }
    out
}

/// The baseline: a single service (not a cluster) launching `n` sessions alone.
pub async fn single(n: usize, concurrency: usize) -> Launched {
    let root = tempfile::tempdir().expect("root");
    let node = Node::start("single", &fresh_database("single"), root.path(), n + 50, false);
    let projects = projects(&node, root.path(), n, "single").await;
    warm_up(&[&node], &projects[0]).await;
    launch_all(&[&node], &projects, n, concurrency, false).await
}

/// The same `n` launches asked of the three nodes in turn, placed by the cluster.
pub async fn over_cluster(cluster: &Cluster, n: usize, concurrency: usize) -> Launched {
    let nodes: Vec<&Node> = cluster.nodes.iter().collect();
    let projects = projects(nodes[0], cluster.root.path(), n, "spread").await;
    warm_up(&nodes, &projects[0]).await;
    launch_all(&nodes, &projects, n, concurrency, false).await
}

fn refusals(run: &Launched) -> String {
    match run.refused.first() {
        None => "none refused".to_string(),
        Some((_, first)) => {
            let times: Vec<String> = run.refused.iter().take(20).map(|(t, _)| format!("{t:.1}")).collect();
            format!(
                "{} of {} REFUSED (at {} s into the run); the first: {first}",
                run.refused.len(),
                run.sessions,
                times.join(", ")
            )
        }
    }
}

pub fn report_single(single: &Launched, concurrency: usize) {
    let (_, owned, before, after) = &single.per_node[0];
    println!(
        "launches, single service: {} sessions, {concurrency} in flight, POST until idle: {:.1} sessions/s ({:.1} s); {}",
        single.sessions,
        single.rate(),
        single.elapsed.as_secs_f64(),
        refusals(single)
    );
    println!(
        "  memory, single service: RSS {before} KiB -> {after} KiB with {owned} idle sessions: {:.1} KiB per idle session",
        single.overall()
    );
}

pub fn report(single: &Launched, cluster: &Launched, concurrency: usize) {
    let n = cluster.sessions;
    println!(
        "launches, three nodes: {n} sessions, {concurrency} in flight, asked of a, b, c in turn, POST until idle: {:.1} sessions/s ({:.1} s), single service {:.1} sessions/s; cluster/single {:.2}x; {}",
        cluster.rate(),
        cluster.elapsed.as_secs_f64(),
        single.rate(),
        cluster.rate() / single.rate(),
        refusals(cluster)
    );
    let owners: Vec<String> = cluster.per_node.iter().map(|(name, owned, _, _)| format!("{name} {owned}")).collect();
    println!(
        "  placement: sessions per node {}; {} of them placed on another node than the one asked (forwarded)",
        owners.join(", "),
        cluster.forwarded
    );
    let single_per = single.overall();
    for ((name, owned, before, after), (_, per)) in cluster.per_node.iter().zip(cluster.per_session()) {
        println!(
            "  memory, node {name}: RSS {before} KiB -> {after} KiB with {owned} idle sessions: {per:.1} KiB per idle session ({:.2}x the single service's)",
            per / single_per.max(1e-9)
        );
    }
    println!(
        "  memory, three nodes together: {:.1} KiB per idle session, {:.2}x the single service's {single_per:.1} KiB",
        cluster.overall(),
        cluster.overall() / single_per.max(1e-9)
    );
}
