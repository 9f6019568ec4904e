//! `GET /metrics`: the service in the Prometheus text format, for a scraper. Guarded like the
//! API (a `read` credential; a token bound to one project is refused: the figures span every
//! project).
//!
//! Encoded with `prometheus-client` (the Prometheus project's own Rust client). Most figures
//! are read at scrape time, from where they live (the store, the writer's counters, each live
//! session's latest reading), into a registry made for that scrape: nothing is copied into a
//! second place to drift. Only the HTTP request counts accumulate, in [`HttpCounts`], which
//! the [`count`] middleware feeds.

use std::sync::atomic::Ordering;

use actix_web::body::{BoxBody, MessageBody};
use actix_web::dev::{ServiceRequest, ServiceResponse};
use actix_web::middleware::Next;
use actix_web::{web, Error, HttpResponse};
use prometheus_client::encoding::prometheus_text::{encode, CONTENT_TYPE};
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::registry::Registry;

use super::AppState;
use crate::actors::registry::ReadLive;
use crate::error::{AppError, AppResult, ErrorBody};

/// Label pairs (a fixed handful of names per metric).
type Labels = Vec<(&'static str, String)>;

/// HTTP requests answered, by method, route and status. The route is the pattern that matched
/// (`/api/sessions/{id}`), never the path itself, so ids do not make a series each; anything
/// no route matched (the dashboard's pages, unknown paths) counts as `other`.
#[derive(Clone, Default, Debug)]
pub struct HttpCounts(Family<Labels, Counter>);

/// The middleware counting every answer (refusals included: it wraps the guard).
pub async fn count(
    req: ServiceRequest,
    next: Next<impl MessageBody + 'static>,
) -> Result<ServiceResponse<BoxBody>, Error> {
    let counts = req.app_data::<web::Data<AppState>>().map(|state| state.http_counts.clone());
    let res = next.call(req).await?.map_into_boxed_body();
    if let Some(counts) = counts {
        let route = res.request().match_pattern().unwrap_or_else(|| "other".to_string());
        let labels = vec![
            ("method", res.request().method().as_str().to_string()),
            ("route", route),
            ("status", res.status().as_u16().to_string()),
        ];
        counts.0.get_or_create(&labels).inc();
    }
    Ok(res)
}

/// The service's metrics.
#[utoipa::path(get, path = "/metrics", tag = "health",
    responses(
        (status = 200, description = "The Prometheus text format (0.0.4): `conduit_sessions{status}`, `conduit_session_turns`, `conduit_lines_relayed_total`, `conduit_lines_stored_total`, `conduit_write_queue_depth`, `conduit_unstored_lines`, per live session (`session`, `project` labels) `conduit_session_memory_bytes`, `conduit_session_memory_peak_bytes`, `conduit_session_cpu_seconds_total`, `conduit_session_pids`, `conduit_session_oom_kills_total`, and `conduit_http_requests_total{method,route,status}`", content_type = "text/plain", body = String),
        (status = 401, description = "No valid credential", body = ErrorBody),
        (status = 403, description = "A token bound to a project (`insufficient_scope`): the figures span every project", body = ErrorBody),
        (status = 503, description = "Storage fails (`storage_unavailable`, `database_busy`)", body = ErrorBody),
    ))]
pub async fn metrics(state: web::Data<AppState>) -> AppResult<HttpResponse> {
    let (by_status, turns) = state.store.run(crate::db::sessions::tally).await?;
    let live = state.registry.send(ReadLive(None)).await.unwrap_or_default();
    let mut registry = Registry::default();

    let sessions = Family::<Labels, Gauge>::default();
    for status in crate::domain::session::SessionStatus::ALL {
        let n = by_status.iter().find(|(s, _)| s == status).map_or(0, |(_, n)| *n);
        sessions.get_or_create(&vec![("status", status.as_str().to_string())]).set(n);
    }
    registry.register("conduit_sessions", "Sessions stored, by status", sessions);
    let gauge = |value: u64| {
        let g = Gauge::<i64>::default();
        g.set(i64::try_from(value).unwrap_or(i64::MAX));
        g
    };
    registry.register(
        "conduit_session_turns",
        "Turns run by the sessions stored (their num_turns summed; deleting a project takes its sessions' away)",
        gauge(u64::try_from(turns).unwrap_or(0)),
    );
    let stats = &state.writer.stats;
    let counter = |value: u64| {
        let c = Counter::<u64>::default();
        c.inc_by(value);
        c
    };
    registry.register(
        "conduit_lines_relayed",
        "Session lines read from the CLIs and relayed since the service started (each is stored write-behind)",
        counter(stats.relayed.load(Ordering::Relaxed)),
    );
    registry.register(
        "conduit_lines_stored",
        "Session lines committed to the store since the service started",
        counter(stats.stored.load(Ordering::Relaxed)),
    );
    registry.register(
        "conduit_write_queue_depth",
        "Writes queued for the store and not yet done (lines, events, row changes)",
        gauge(stats.queue_depth()),
    );
    registry.register(
        "conduit_unstored_lines",
        "Session lines relayed and not yet stored (the write backlog)",
        gauge(stats.pending.load(Ordering::Relaxed)),
    );
    per_session(&mut registry, &live);
    registry.register(
        "conduit_http_requests",
        "HTTP requests answered, by method, route and status",
        state.http_counts.0.clone(),
    );

    let mut text = String::new();
    encode(&mut text, &registry).map_err(|e| AppError::internal(format!("the metrics could not be written: {e}")))?;
    Ok(HttpResponse::Ok().content_type(CONTENT_TYPE).body(text))
}

/// What each live session uses (those with a reading: where the machine gives none, none).
fn per_session(registry: &mut Registry, live: &[crate::actors::registry::LiveReading]) {
    let memory = Family::<Labels, Gauge>::default();
    let peak = Family::<Labels, Gauge>::default();
    let pids = Family::<Labels, Gauge>::default();
    let cpu = Family::<Labels, Counter<f64, std::sync::atomic::AtomicU64>>::default();
    let oom = Family::<Labels, Counter>::default();
    let as_i64 = |v: u64| i64::try_from(v).unwrap_or(i64::MAX);
    for reading in live {
        let Some(r) = &reading.resources else { continue };
        let labels = vec![("session", reading.id.to_string()), ("project", reading.project_id.to_string())];
        if let Some(v) = r.memory_bytes {
            memory.get_or_create(&labels).set(as_i64(v));
        }
        if let Some(v) = r.memory_peak_bytes {
            peak.get_or_create(&labels).set(as_i64(v));
        }
        if let Some(v) = r.pids {
            pids.get_or_create(&labels).set(as_i64(v));
        }
        if let Some(usec) = r.cpu_usec {
            cpu.get_or_create(&labels).inc_by(usec as f64 / 1e6);
        }
        if let Some(v) = r.oom_kills {
            oom.get_or_create(&labels).inc_by(v);
        }
    }
    registry.register("conduit_session_memory_bytes", "Memory a live session's processes use now", memory);
    registry.register(
        "conduit_session_memory_peak_bytes",
        "The most memory a live session's processes used at once",
        peak,
    );
    registry.register("conduit_session_cpu_seconds", "CPU time a live session's processes used (user and system)", cpu);
    registry.register("conduit_session_pids", "Processes and threads of a live session", pids);
    registry.register("conduit_session_oom_kills", "Processes of a live session the kernel's OOM killer ended", oom);
}
