//! The dashboard: the React app built from `ui/` by `build.rs` and embedded in the binary.
//!
//! It is the service's default handler, so it never shadows an API route: anything under
//! `/api` that no route matched keeps its JSON 404. Other GETs get a file of the build, or
//! `index.html` for client-side routes (`/projects/…`, `/sessions/…`). Hashed files under
//! `/assets` never change and are cached for a year; `index.html` is revalidated every time,
//! so a new binary's dashboard is picked up at the next load.

use actix_web::http::{header, Method, StatusCode};
use actix_web::{HttpRequest, HttpResponse};

use super::errors;

include!(concat!(env!("OUT_DIR"), "/ui_assets.rs"));

const IMMUTABLE: &str = "public, max-age=31536000, immutable";

fn asset(name: &str) -> Option<&'static [u8]> {
    ASSETS.iter().find(|(n, _)| *n == name).map(|(_, bytes)| *bytes)
}

fn content_type(name: &str) -> &'static str {
    match name.rsplit_once('.').map(|(_, ext)| ext) {
        Some("html") => "text/html; charset=utf-8",
        Some("js" | "mjs") => "text/javascript; charset=utf-8",
        Some("css") => "text/css; charset=utf-8",
        Some("svg") => "image/svg+xml",
        Some("png") => "image/png",
        Some("ico") => "image/x-icon",
        Some("json" | "map") => "application/json",
        Some("woff2") => "font/woff2",
        Some("txt") => "text/plain; charset=utf-8",
        _ => "application/octet-stream",
    }
}

/// Shown at every dashboard URL when the binary was built without the UI.
const NOT_BUILT: &str = concat!(
    "<!doctype html><meta charset=utf-8><title>Conduit</title>",
    "<body style=\"font-family:system-ui,sans-serif;max-width:40rem;margin:4rem auto;line-height:1.5\">",
    "<h1>Conduit is running, but its dashboard was not built</h1>",
    "<p>The dashboard is built from <code>ui/</code> with npm while the service compiles. ",
    "This binary was compiled without it, most likely because <code>npm</code> was not found ",
    "(or the UI build failed: see the warnings of <code>cargo build</code>).</p>",
    "<p>To get it: install Node.js 20 or newer with npm, then run <code>cargo run --release</code> again.</p>",
    "<p>The API works meanwhile: it is described at <a href=\"/api/openapi.json\">/api/openapi.json</a>; ",
    "health is at <a href=\"/api/health\">/api/health</a>.</p>"
);

/// The service's default handler (see the module comment).
pub async fn serve(req: HttpRequest) -> HttpResponse {
    let path = req.path();
    if path == "/api" || path.starts_with("/api/") {
        return errors::route_not_found(req).await;
    }
    if req.method() != Method::GET && req.method() != Method::HEAD {
        return errors::method_not_allowed("GET, HEAD".to_string())(req).await;
    }
    let Some(index) = asset("index.html") else {
        return html(StatusCode::OK, NOT_BUILT.as_bytes());
    };
    let name = path.trim_start_matches('/');
    if let Some(bytes) = asset(name).filter(|_| name != "index.html") {
        let cache = if name.starts_with("assets/") { IMMUTABLE } else { "no-cache" };
        return HttpResponse::Ok()
            .content_type(content_type(name))
            .insert_header((header::CACHE_CONTROL, cache))
            .body(bytes);
    }
    // A missing hashed file is a stale page asking for an old build: a 404, not the app.
    if name.starts_with("assets/") {
        return errors::route_not_found(req).await;
    }
    html(StatusCode::OK, index)
}

fn html(status: StatusCode, body: &'static [u8]) -> HttpResponse {
    HttpResponse::build(status)
        .content_type("text/html; charset=utf-8")
        .insert_header((header::CACHE_CONTROL, "no-cache"))
        .body(body)
}
