//! The OpenAPI document lists every route the server actually serves.

use serde_json::Value;

use crate::helpers::spawn_app;

#[actix_web::test]
async fn every_route_in_the_table_is_documented() {
    let app = spawn_app().await;
    let res = app.get("/api/openapi.json").await;
    assert_eq!(res.status().as_u16(), 200);
    let doc: Value = res.json().await.expect("json");
    assert!(doc["openapi"].as_str().is_some_and(|v| v.starts_with("3.1")), "OpenAPI 3.1: {}", doc["openapi"]);

    let table = conduit::http::route_table();
    assert!(!table.is_empty());
    for spec in &table {
        let method = spec.method.as_str().to_ascii_lowercase();
        let operation = &doc["paths"][spec.path][&method];
        assert!(operation.is_object(), "{} {} is served but not in the OpenAPI document", spec.method, spec.path);
        assert!(operation["responses"].is_object(), "{} {} documents no responses", spec.method, spec.path);
    }

    // And nothing is documented that is not served.
    let paths = doc["paths"].as_object().expect("paths");
    for (path, item) in paths {
        for method in item.as_object().expect("path item").keys() {
            let served = table.iter().any(|s| s.path == path && s.method.as_str().eq_ignore_ascii_case(method));
            assert!(served, "{method} {path} is documented but not served");
        }
    }
}

#[actix_web::test]
async fn documented_error_responses_use_the_error_schema() {
    let app = spawn_app().await;
    let doc: Value = app.get("/api/openapi.json").await.json().await.expect("json");
    for (path, item) in doc["paths"].as_object().expect("paths") {
        for (method, op) in item.as_object().expect("item") {
            for (status, response) in op["responses"].as_object().expect("responses") {
                let code: u16 = status.parse().expect("numeric status");
                if code >= 400 && path != "/api/health" {
                    let schema = &response["content"]["application/json"]["schema"]["$ref"];
                    assert_eq!(schema, "#/components/schemas/ErrorBody", "{method} {path} {status}");
                }
            }
        }
    }
}
