//! Part 2: many idle fake-CLI sessions. Launch throughput (POST until idle, `concurrency` in
//! flight) and memory per idle session, on a single service (the baseline: cluster mode off, a
//! PostgreSQL database of its own on the same server) and over the three nodes (launches asked
//! of the nodes in turn, each placed by the cluster's placement, which may forward it).
//!
//! The two sides take turns, a round each (N / rounds launches), so what else the shared
//! machine does at the time weighs on both alike; their sessions stay until both have all N.
//! Memory: each node's RSS after a warm-up (a few sessions launched and closed there) and once
//! all sessions are idle; the growth divided by the sessions that node owns.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use futures_util::StreamExt;

use crate::node::{fresh_database, Cluster, Node};

/// Sessions a project may hold at most.
const PER_PROJECT: usize = 1000;

/// A launched session: its id, its owner, the index of the node asked.
type Launch = (String, String, usize);
/// A refused launch: seconds into the comparison, what the asked node answered.
type Refusal = (f64, String);

/// One side of the comparison: its nodes and what their launches gave.
struct Side<'a> {
    nodes: Vec<&'a Node>,
    projects: Vec<String>,
    /// Each node's RSS after the warm-up, in KiB.
    before: Vec<u64>,
    launched: Vec<Launch>,
    /// Not retried: a client would see each of them.
    refused: Vec<Refusal>,
    /// Time spent launching, all rounds together.
    elapsed: Duration,
}

impl<'a> Side<'a> {
    /// Projects for `n` sessions, created through the first node, and every node warmed up: a
    /// few sessions launched there and closed (allocators, pools and caches), then its RSS.
    async fn new(nodes: Vec<&'a Node>, root: &std::path::Path, n: usize, prefix: &str) -> Side<'a> {
        let mut projects = Vec::new();
        for p in 0..n.div_ceil(PER_PROJECT) {
            projects.push(nodes[0].project(root, &format!("{prefix}-{p}"), PER_PROJECT).await);
        }
        for node in &nodes {
            for _ in 0..5 {
                let (id, _) = node.launch(&projects[0], "", true).await;
                node.wait_idle(&id, Duration::from_millis(5)).await;
                node.close(&id).await;
            }
        }
        tokio::time::sleep(Duration::from_secs(1)).await;
        let before = nodes.iter().map(|node| node.rss_kib()).collect();
        Side { nodes, projects, before, launched: Vec::new(), refused: Vec::new(), elapsed: Duration::ZERO }
    }

    /// Launches `range` (the i-th asked of node i % nodes), `concurrency` at a time, each
    /// until its session is idle.
    async fn round(&mut self, range: std::ops::Range<usize>, concurrency: usize, since: Instant) {
        let started = Instant::now();
        let (nodes, projects) = (&self.nodes, &self.projects);
        let results: Vec<Result<Launch, Refusal>> = futures_util::stream::iter(range)
            .map(|i| async move {
                let asked = nodes[i % nodes.len()];
                let (id, owner) = asked
                    .try_launch(&projects[i / PER_PROJECT], "", false)
                    .await
                    .map_err(|e| (since.elapsed().as_secs_f64(), e))?;
                asked.wait_idle(&id, Duration::from_millis(10)).await;
                Ok((id, owner, i % nodes.len()))
            })
            .buffer_unordered(concurrency)
            .collect()
            .await;
        self.elapsed += started.elapsed();
        for result in results {
            match result {
                Ok(ok) => self.launched.push(ok),
                Err(e) => self.refused.push(e),
            }
        }
    }

    fn rate(&self) -> f64 {
        self.launched.len() as f64 / self.elapsed.as_secs_f64()
    }

    /// (node, sessions it owns, RSS before, RSS now), per node.
    fn memory(&self) -> Vec<(String, usize, u64, u64)> {
        let mut owned: BTreeMap<&str, usize> = BTreeMap::new();
        for (_, owner, _) in &self.launched {
            *owned.entry(owner.as_str()).or_default() += 1;
        }
        let nodes = self.nodes.iter().zip(&self.before);
        nodes
            .map(|(n, b)| (n.name.clone(), owned.get(n.name.as_str()).copied().unwrap_or(0), *b, n.rss_kib()))
            .collect()
    }

    /// Closes every session, 16 at a time, through the node asked (forwarded to its owner).
    async fn close(&self) {
        let nodes = &self.nodes;
        futures_util::stream::iter(self.launched.iter())
            .for_each_concurrent(16, |(id, _, asked)| nodes[*asked].close(id))
            .await;
    }

    fn refusals(&self, n: usize) -> String {
        match self.refused.first() {
            None => "none refused".to_string(),
            Some((_, first)) => {
                let times: Vec<String> = self.refused.iter().take(20).map(|(t, _)| format!("{t:.1}")).collect();
                format!("{} of {n} REFUSED (at {} s); the first: {first}", self.refused.len(), times.join(", "))
            }
        }
    }
}

/// Growth per owned session over all of a side's nodes, in KiB.
fn per_session(memory: &[(String, usize, u64, u64)]) -> f64 {
    let growth: u64 = memory.iter().map(|(_, _, before, after)| after.saturating_sub(*before)).sum();
    let owned: usize = memory.iter().map(|(_, owned, _, _)| owned).sum();
    growth as f64 / owned.max(1) as f64
}

/// `n` launches on a single service and over the cluster, in `rounds` alternated rounds.
pub async fn compare(cluster: &Cluster, n: usize, concurrency: usize, rounds: usize) {
    let root = tempfile::tempdir().expect("root");
    let single_node = Node::start("single", &fresh_database("single"), root.path(), n + 50, false);
    let mut single = Side::new(vec![&single_node], root.path(), n, "single").await;
    let mut spread = Side::new(cluster.nodes.iter().collect(), cluster.root.path(), n, "spread").await;
    let since = Instant::now();
    let rounds = rounds.clamp(1, n);
    for r in 0..rounds {
        let range = r * n / rounds..(r + 1) * n / rounds;
        single.round(range.clone(), concurrency, since).await;
        spread.round(range, concurrency, since).await;
    }
    // Whatever settles after the last idle (buffers freed, the janitor's first pass) settles.
    tokio::time::sleep(Duration::from_secs(2)).await;
    let (single_memory, spread_memory) = (single.memory(), spread.memory());
    single.close().await;
    spread.close().await;

    println!(
        "launches: {n} sessions, {concurrency} in flight, POST until idle, in {rounds} rounds taken in turn: single service {:.1} sessions/s ({:.1} s; {}), three nodes asked in turn {:.1} sessions/s ({:.1} s; {}); cluster/single {:.2}x",
        single.rate(),
        single.elapsed.as_secs_f64(),
        single.refusals(n),
        spread.rate(),
        spread.elapsed.as_secs_f64(),
        spread.refusals(n),
        spread.rate() / single.rate()
    );
    let forwarded = spread.launched.iter().filter(|(_, owner, asked)| *owner != spread.nodes[*asked].name).count();
    let owners: Vec<String> = spread_memory.iter().map(|(name, owned, _, _)| format!("{name} {owned}")).collect();
    println!(
        "  placement: sessions per node {}; {forwarded} placed on another node than the one asked (forwarded)",
        owners.join(", ")
    );
    let single_per = per_session(&single_memory);
    let (_, owned, before, after) = &single_memory[0];
    println!(
        "  memory, single service: RSS {before} KiB -> {after} KiB with {owned} idle sessions: {single_per:.1} KiB per idle session"
    );
    for (name, owned, before, after) in &spread_memory {
        let per = after.saturating_sub(*before) as f64 / (*owned).max(1) as f64;
        println!(
            "  memory, node {name}: RSS {before} KiB -> {after} KiB with {owned} idle sessions: {per:.1} KiB per idle session ({:.2}x the single service's)",
            per / single_per.max(1e-9)
        );
    }
    let together = per_session(&spread_memory);
    println!(
        "  memory, three nodes together: {together:.1} KiB per idle session, {:.2}x the single service's",
        together / single_per.max(1e-9)
    );
}
