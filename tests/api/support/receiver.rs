//! A webhook receiver on 127.0.0.1 that keeps every request it gets.

use std::sync::{Arc, Mutex};

use actix_web::{web, App, HttpRequest, HttpResponse, HttpServer};

#[derive(Clone, Debug)]
pub struct Received {
    pub headers: Vec<(String, String)>,
    pub body: String,
}

impl Received {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers.iter().find(|(k, _)| k == name).map(|(_, v)| v.as_str())
    }
}

/// A receiver that answers each request with the next status of `script` (then 200).
pub struct Receiver {
    pub url: String,
    pub got: Arc<Mutex<Vec<Received>>>,
}

pub async fn receiver(script: Vec<u16>) -> Receiver {
    let got = Arc::new(Mutex::new(Vec::new()));
    let script = Arc::new(Mutex::new(script.into_iter().collect::<std::collections::VecDeque<u16>>()));
    let (g, s) = (got.clone(), script.clone());
    let server = HttpServer::new(move || {
        let (g, s) = (g.clone(), s.clone());
        App::new().default_service(web::to(move |req: HttpRequest, body: web::Bytes| {
            let (g, s) = (g.clone(), s.clone());
            async move {
                let headers = req
                    .headers()
                    .iter()
                    .map(|(k, v)| (k.as_str().to_string(), v.to_str().unwrap_or("").to_string()))
                    .collect();
                g.lock()
                    .expect("receiver")
                    .push(Received { headers, body: String::from_utf8_lossy(&body).into_owned() });
                let status = s.lock().expect("script").pop_front().unwrap_or(200);
                HttpResponse::build(actix_web::http::StatusCode::from_u16(status).expect("status")).finish()
            }
        }))
    })
    .workers(1)
    .disable_signals()
    .bind(("127.0.0.1", 0))
    .expect("bind receiver");
    let port = server.addrs()[0].port();
    actix_web::rt::spawn(server.run());
    Receiver { url: format!("http://127.0.0.1:{port}/hook"), got }
}
