//! The dashboard: the React app built from `ui/` by `build.rs` and embedded in the binary.
//!
//! It is the service's default handler, so it never shadows an API route: anything under
//! `/api` that no route matched keeps its JSON 404. Other GETs get a file of the build, or
//! `index.html` for client-side routes (`/projects/…`, `/sessions/…`). Hashed files under
//! `/assets` never change and are cached for a year; `index.html` is revalidated every time,
//! so a new binary's dashboard is picked up at the next load.

use actix_web::http::{header, Method};
use actix_web::{HttpRequest, HttpResponse};

use super::errors;

include!(concat!(env!("OUT_DIR"), "/ui_assets.rs"));

const IMMUTABLE: &str = "public, max-age=31536000, immutable";

type Assets = [(&'static str, &'static [u8])];

fn asset(assets: &Assets, name: &str) -> Option<&'static [u8]> {
    assets.iter().find(|(n, _)| *n == name).map(|(_, bytes)| *bytes)
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
    match page(ASSETS, path) {
        Some(response) => response,
        // A missing hashed file is a stale page asking for an old build: a 404, not the app.
        None => errors::route_not_found(req).await,
    }
}

/// What a GET of `path` (not under /api) answers from `assets`; `None` for a 404.
fn page(assets: &Assets, path: &str) -> Option<HttpResponse> {
    let Some(index) = asset(assets, "index.html") else {
        return Some(html(NOT_BUILT.as_bytes()));
    };
    let name = path.trim_start_matches('/');
    if let Some(bytes) = asset(assets, name).filter(|_| name != "index.html") {
        let cache = if name.starts_with("assets/") { IMMUTABLE } else { "no-cache" };
        return Some(
            HttpResponse::Ok()
                .content_type(content_type(name))
                .insert_header((header::CACHE_CONTROL, cache))
                .body(bytes),
        );
    }
    if name.starts_with("assets/") {
        return None;
    }
    Some(html(index))
}

fn html(body: &'static [u8]) -> HttpResponse {
    HttpResponse::Ok()
        .content_type("text/html; charset=utf-8")
        .insert_header((header::CACHE_CONTROL, "no-cache"))
        .body(body)
}

#[cfg(test)]
mod tests {
    use actix_web::body::MessageBody;

    use super::*;

    const BUILT: &Assets = &[
        ("index.html", b"<div id=root></div>"),
        ("assets/index-abc123.js", b"console.log(1)"),
        ("favicon.svg", b"<svg/>"),
    ];

    fn answer(assets: &Assets, path: &str) -> Option<(String, String, String)> {
        let res = page(assets, path)?;
        let header = |name| res.headers().get(name).and_then(|v| v.to_str().ok()).unwrap_or_default().to_string();
        let (kind, cache) = (header(header::CONTENT_TYPE), header(header::CACHE_CONTROL));
        let body =
            res.into_body().try_into_bytes().map(|b| String::from_utf8_lossy(&b).into_owned()).unwrap_or_default();
        Some((kind, cache, body))
    }

    #[test]
    fn without_a_build_every_page_says_how_to_build_the_dashboard() {
        for path in ["/", "/projects/x", "/assets/index-abc123.js"] {
            let (kind, _, body) = answer(&[], path).expect("a page");
            assert!(kind.starts_with("text/html"), "{path}");
            assert!(body.contains("dashboard was not built") && body.contains("npm"), "{path}: {body}");
        }
    }

    #[test]
    fn hashed_assets_are_immutable_and_everything_else_revalidates() {
        let (kind, cache, body) = answer(BUILT, "/assets/index-abc123.js").expect("the asset");
        assert_eq!(
            (kind.as_str(), cache.as_str(), body.as_str()),
            ("text/javascript; charset=utf-8", IMMUTABLE, "console.log(1)")
        );
        let (kind, cache, _) = answer(BUILT, "/favicon.svg").expect("a root file");
        assert_eq!((kind.as_str(), cache.as_str()), ("image/svg+xml", "no-cache"));
        for path in ["/", "/index.html", "/sessions/abc", "/a/b/c"] {
            let (kind, cache, body) = answer(BUILT, path).expect("the app");
            assert_eq!(
                (kind.as_str(), cache.as_str(), body.as_str()),
                ("text/html; charset=utf-8", "no-cache", "<div id=root></div>"),
                "{path}"
            );
        }
        assert!(answer(BUILT, "/assets/index-old999.js").is_none(), "a stale hashed file is a 404");
    }
}
