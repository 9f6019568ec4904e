//! The HTTP server: the API's middleware, in order, around the routes and the dashboard. With a
//! TLS configuration it serves HTTPS only on its one listener (no plain HTTP beside it).

use std::net::TcpListener;

use actix_web::dev::Server;
use actix_web::middleware::from_fn;
use actix_web::{web, App, HttpServer};

use super::StartupError;
use crate::http::{self, errors, guard::AccessPolicy, AppState};
use crate::telemetry;

pub(super) fn http(
    state: web::Data<AppState>,
    policy: web::Data<AccessPolicy>,
    (listener, channel): (TcpListener, std::os::unix::net::UnixListener),
    tls: Option<rustls::ServerConfig>,
    addr: &str,
) -> Result<Server, StartupError> {
    let server = HttpServer::new(move || {
        App::new()
            .app_data(state.clone())
            .app_data(policy.clone())
            .app_data(errors::json_config())
            .app_data(errors::query_config())
            .app_data(errors::path_config())
            // Inside the guard: only an admitted request is forwarded to another node.
            .wrap(from_fn(http::forward::to_owner))
            .wrap(from_fn(http::scrub::answers))
            .wrap(from_fn(errors::objects_only))
            .wrap(from_fn(http::guard::enforce))
            // Outside the guard: the requests it refuses are audited too.
            .wrap(from_fn(http::audit::record))
            .wrap(from_fn(telemetry::request_span))
            // Outermost: every answer is counted, refusals included.
            .wrap(from_fn(http::metrics::count))
            .configure(http::configure)
            // Last, so the dashboard's catch-all never shadows an API route.
            .default_service(web::to(http::dashboard::serve))
    })
    // Streams send many small frames: Nagle's algorithm would hold one back until the
    // client's delayed ACK (about 40 ms) whenever a ping or reply is in flight.
    .tcp_nodelay(true)
    // What came over the session channel's socket is marked, so the guard answers it as the
    // channel (a session's token, a session's routes) whatever it carries.
    .on_connect(http::channel::mark);
    let server = match tls {
        Some(config) => server.listen_rustls_0_23(listener, config),
        None => server.listen(listener),
    };
    let server = server.and_then(|s| s.listen_uds(channel));
    Ok(server
        .map_err(|source| StartupError::Bind { addr: addr.to_string(), source })?
        .shutdown_timeout(5)
        .disable_signals()
        .run())
}
