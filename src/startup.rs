//! Builds the application: database, shared state, HTTP server. Tests call
//! [`Application::build`] with port 0 and read the bound port back.

use std::net::TcpListener;
use std::sync::Arc;
use std::time::Instant;

use actix_web::dev::Server;
use actix_web::middleware::from_fn;
use actix_web::{web, App, HttpServer};

use crate::config::Settings;
use crate::db::Store;
use crate::domain::folders::ProjectRoot;
use crate::http::{self, errors, guard::AccessPolicy, AppState};
use crate::telemetry;

#[derive(Debug, thiserror::Error)]
pub enum StartupError {
    #[error("refusing to listen on {0} without CONDUIT_AUTH_TOKEN: anyone who can reach it could run commands on this machine. Set CONDUIT_AUTH_TOKEN, or pass --insecure if the network is trusted")]
    TokenRequired(String),
    #[error("cannot listen on {addr}: {source}")]
    Bind { addr: String, source: std::io::Error },
    #[error("{0}")]
    Database(#[from] crate::db::StoreError),
}

/// Options that come from the command line rather than settings.
#[derive(Debug, Clone, Copy, Default)]
pub struct ServeOptions {
    /// Allow a non-loopback address without a token.
    pub insecure: bool,
}

pub struct Application {
    port: u16,
    server: Server,
}

impl Application {
    pub async fn build(settings: Settings, options: ServeOptions) -> Result<Application, StartupError> {
        let addr = format!("{}:{}", settings.host, settings.port);
        if !settings.binds_loopback() && settings.auth_token.is_none() && !options.insecure {
            return Err(StartupError::TokenRequired(addr));
        }
        if !settings.binds_loopback() && settings.auth_token.is_none() {
            tracing::warn!(%addr, "listening off loopback with no token (--insecure)");
        }

        let store = Store::open_blocking(&settings.db_path, settings.db_pool_size, settings.db_busy_timeout_ms).await?;
        let listener = TcpListener::bind(&addr).map_err(|source| StartupError::Bind { addr: addr.clone(), source })?;
        let port = listener.local_addr().map_err(|source| StartupError::Bind { addr: addr.clone(), source })?.port();

        let policy = web::Data::new(AccessPolicy::from_settings(&settings));
        let root = ProjectRoot::new(&settings.project_root);
        if !root.path().is_dir() {
            tracing::warn!(root = %root.path().display(), "the project root does not exist; browsing and projects will fail until it does");
        }
        let state = web::Data::new(AppState { settings: Arc::new(settings), store, root, started: Instant::now() });

        let server = HttpServer::new(move || {
            App::new()
                .app_data(state.clone())
                .app_data(policy.clone())
                .app_data(errors::json_config())
                .app_data(errors::query_config())
                .app_data(errors::path_config())
                .wrap(from_fn(http::guard::enforce))
                .wrap(from_fn(telemetry::request_span))
                .configure(http::configure)
                .default_service(web::to(errors::route_not_found))
        })
        .listen(listener)
        .map_err(|source| StartupError::Bind { addr: addr.clone(), source })?
        .shutdown_timeout(5)
        .run();
        tracing::info!(%addr, port, "conduit listening");
        Ok(Application { port, server })
    }

    pub fn port(&self) -> u16 {
        self.port
    }

    /// Serves until SIGINT/SIGTERM (graceful) or until the server handle is stopped.
    pub async fn run_until_stopped(self) -> std::io::Result<()> {
        self.server.await
    }

    pub fn server_handle(&self) -> actix_web::dev::ServerHandle {
        self.server.handle()
    }
}
