//! `ctxlab capture`: a local reverse proxy between an agent and its model provider that records
//! exactly what each call sends and what comes back.
//!
//! The agent points its base URL at the proxy (`ANTHROPIC_BASE_URL`, `OPENAI_BASE_URL`,
//! `GOOGLE_GEMINI_BASE_URL`, …). Each request is forwarded unchanged to the provider (TLS through
//! rustls with the system's root certificates), and the response is passed back frame by frame as
//! it arrives — a streamed (SSE) reply reaches the agent while the provider is still writing it;
//! the proxy only keeps a copy for the record. When the response ends, one line is appended to the
//! capture in the HTTP-capture format ctxlab reads (`formats::http_capture`): `{id, timestamp,
//! duration_ms, method, path, status, headers, request, response, error}`, the response as its
//! JSON body or, for a stream, `{stream: true, sse_lines}`.
//!
//! What is never written: credentials. Request headers are recorded only from an allow-list
//! ([`RECORDED_HEADERS`]: API version and beta flags, content type, user agent), query parameters
//! that carry keys are dropped ([`is_credential_name`]), and so are top-level request-body fields
//! with a credential's name. The response's headers are not recorded.
//!
//! Sessions: one capture file per agent conversation, `<dir>/<key>.jsonl`, where the key is the
//! conversation id the client sends ([`session_key`]: Claude Code's `metadata.user_id` session
//! part, the `session_id` / `conversation_id` / `x-session-id` headers Codex and others send), or
//! else one file for the whole proxy run. Within a file the HTTP-capture reader splits requests
//! into agents (main, subagents, side calls) by their shared prefixes.
//!
//! Everything the proxy does not understand it still forwards: only POST requests with a JSON
//! body are recorded (model calls, token counts); other requests (model lists, health checks) pass
//! through unrecorded.

use std::collections::HashMap;
use std::convert::Infallible;
use std::fs::{File, OpenOptions};
use std::io::Write;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{mpsc, Arc, Mutex};
use std::task::{Context, Poll};
use std::time::{Instant, SystemTime, UNIX_EPOCH};

use bytes::Bytes;
use http_body::{Body, Frame, SizeHint};
use http_body_util::combinators::BoxBody;
use http_body_util::{BodyExt, Full, Limited};
use hyper::body::Incoming;
use hyper::header::{HeaderMap, HeaderName, HeaderValue};
use hyper::{Method, Request, Response, StatusCode, Uri};
use hyper_rustls::HttpsConnector;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::client::legacy::Client;
use hyper_util::rt::{TokioExecutor, TokioIo};
use serde_json::value::RawValue;
use serde_json::{json, Map, Value};

use crate::formats::time::format_ms;
use crate::{Error, Result};

/// Request headers copied into the capture. Everything else — `authorization`, `x-api-key`,
/// `x-goog-api-key`, cookies, organisation and project ids — is forwarded but never written.
pub const RECORDED_HEADERS: &[&str] = &[
    "anthropic-version",
    "anthropic-beta",
    "openai-beta",
    "content-type",
    "user-agent",
    "x-stainless-lang",
    "x-stainless-package-version",
];

/// The largest request body the proxy accepts (a request above it is refused with 413, not
/// forwarded): a model call's context, images included, is far below it.
pub const MAX_REQUEST_BYTES: usize = 64 << 20;
/// The largest response copy kept for the record; the response itself is passed on whole, the
/// record says `truncated`.
pub const MAX_RECORDED_RESPONSE_BYTES: usize = 64 << 20;

/// How the proxy is set up.
#[derive(Debug, Clone)]
pub struct Options {
    /// Where the proxy listens. Loopback unless `allow_remote`.
    pub listen: SocketAddr,
    /// Every request goes to this base URL (its path prefixes the request's). `None`: the provider
    /// is chosen from the request's path ([`default_upstream`]).
    pub upstream: Option<String>,
    /// Folder of the capture files (created if missing).
    pub out_dir: PathBuf,
    /// Accept a listen address that is not loopback: the proxy sees every prompt and forwards
    /// with the client's credentials, so this must be asked for.
    pub allow_remote: bool,
}

/// The provider of a request when no `--upstream` is given, from the path the agent's SDK uses.
pub fn default_upstream(path: &str) -> Option<&'static str> {
    if path.starts_with("/v1/messages") || path.starts_with("/v1/complete") {
        Some("https://api.anthropic.com")
    } else if path.starts_with("/v1beta/")
        || path.starts_with("/v1alpha/")
        || path.starts_with("/upload/")
    {
        Some("https://generativelanguage.googleapis.com")
    } else if path.starts_with("/v1/") {
        Some("https://api.openai.com")
    } else {
        None
    }
}

/// Whether a query parameter or body field with this name carries a credential.
pub fn is_credential_name(name: &str) -> bool {
    let n = name.to_ascii_lowercase().replace(['-', '_'], "");
    n == "key"
        || n == "token"
        || n == "authorization"
        || n == "auth"
        || n == "sig"
        || n.contains("apikey")
        || n.contains("accesstoken")
        || n.contains("secret")
        || n.contains("password")
        || n.contains("credential")
        || n.contains("bearer")
}

/// The conversation a request belongs to, from what the client sends, as a file-name-safe key;
/// `None` when the client sends no conversation id.
pub fn session_key(headers: &HeaderMap, body: Option<&Value>) -> Option<String> {
    for h in [
        "x-claude-code-session-id",
        "session_id",
        "conversation_id",
        "x-session-id",
    ] {
        if let Some(v) = headers.get(h).and_then(|v| v.to_str().ok()) {
            if let Some(k) = safe_key(v) {
                return Some(k);
            }
        }
    }
    // Claude Code: metadata.user_id = "user_<hash>_account_<uuid>_session_<uuid>" (or a JSON
    // object with a session_id in newer versions).
    let user = body?.get("metadata")?.get("user_id")?.as_str()?;
    if let Ok(Value::Object(o)) = serde_json::from_str::<Value>(user) {
        if let Some(s) = o.get("session_id").and_then(Value::as_str) {
            return safe_key(s);
        }
    }
    let (_, session) = user.rsplit_once("_session_")?;
    safe_key(session)
}

fn safe_key(s: &str) -> Option<String> {
    let k: String = s
        .chars()
        .filter(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'))
        .take(80)
        .collect();
    let k = k.trim_start_matches('.').to_string();
    (!k.is_empty()).then_some(k)
}

/// A request's path and query as recorded: query parameters that carry credentials removed.
pub fn recorded_path(uri: &Uri) -> String {
    let path = uri.path().to_string();
    let Some(q) = uri.query() else {
        return path;
    };
    let kept: Vec<&str> = q
        .split('&')
        .filter(|p| {
            let name = p.split('=').next().unwrap_or("");
            !name.is_empty() && !is_credential_name(name)
        })
        .collect();
    if kept.is_empty() {
        path
    } else {
        format!("{path}?{}", kept.join("&"))
    }
}

/// The request body as recorded: top-level fields named like credentials removed.
fn scrub_body(mut v: Value) -> Value {
    if let Value::Object(o) = &mut v {
        o.retain(|k, _| !is_credential_name(k));
    }
    v
}

/// One finished exchange, on its way to the writer.
struct Record {
    session: Option<String>,
    line: Map<String, Value>,
    /// The request body as sent (on one line), or with credential fields taken out.
    request: Box<RawValue>,
    response: Option<Box<RawValue>>,
}

/// A JSON text as one line, its bytes otherwise as they were: a line break in valid JSON can only
/// be whitespace between tokens (inside strings it is escaped), so it becomes a space. `None`
/// when the bytes are not one JSON value.
fn one_line(bytes: &[u8]) -> Option<Box<RawValue>> {
    let text = std::str::from_utf8(bytes).ok()?.trim();
    if text.contains(['\n', '\r']) {
        serde_json::from_str(&text.replace(['\n', '\r'], " ")).ok()
    } else {
        serde_json::from_str(text).ok()
    }
}

fn raw(v: &Value) -> Box<RawValue> {
    RawValue::from_string(v.to_string()).expect("a serialized Value is JSON")
}

/// Counters of a running proxy.
#[derive(Debug, Default)]
pub struct Stats {
    /// Requests forwarded.
    pub forwarded: AtomicU64,
    /// Exchanges written to a capture file.
    pub recorded: AtomicU64,
    /// Exchanges that failed (upstream unreachable, stream cut).
    pub failed: AtomicU64,
}

type Upstream = Client<HttpsConnector<HttpConnector>, Full<Bytes>>;
type ProxyBody = BoxBody<Bytes, hyper::Error>;

struct Shared {
    client: Upstream,
    upstream: Option<Uri>,
    records: Mutex<Option<mpsc::Sender<Record>>>,
    next_id: AtomicU64,
    run_key: String,
    stats: Arc<Stats>,
}

impl Shared {
    fn send(&self, r: Record) {
        if let Some(tx) = self
            .records
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .as_ref()
        {
            let _ = tx.send(r);
        }
    }
}

/// A proxy listening in the background (on the runtime it was started on).
pub struct Running {
    /// The address it listens on (the port chosen by the system when 0 was asked).
    pub addr: SocketAddr,
    pub stats: Arc<Stats>,
    /// The capture file of requests that carry no conversation id.
    pub run_file: PathBuf,
    stop: tokio::sync::watch::Sender<bool>,
    server: tokio::task::JoinHandle<()>,
    shared: Arc<Shared>,
    writer: Option<std::thread::JoinHandle<()>>,
}

impl Running {
    /// Stops accepting, waits for the open exchanges to end, writes what remains and closes the
    /// capture files.
    pub async fn shutdown(mut self) {
        let _ = self.stop.send(true);
        let _ = (&mut self.server).await;
        self.shared
            .records
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .take();
        if let Some(w) = self.writer.take() {
            let _ = tokio::task::spawn_blocking(move || w.join()).await;
        }
    }
}

/// Checks the options, binds the listen address and starts serving on the current tokio runtime.
pub async fn start(opts: Options) -> Result<Running> {
    if !opts.listen.ip().is_loopback() && !opts.allow_remote {
        return Err(Error::Invalid(format!(
            "capture: refusing to listen on {}: the proxy sees every prompt and forwards the \
             agent's credentials; listen on 127.0.0.1, or pass --allow-remote to accept \
             connections from other machines",
            opts.listen
        )));
    }
    let upstream = match &opts.upstream {
        Some(u) => Some(parse_upstream(u)?),
        None => None,
    };
    std::fs::create_dir_all(&opts.out_dir).map_err(|e| Error::io(&opts.out_dir, e))?;
    let listener = tokio::net::TcpListener::bind(opts.listen)
        .await
        .map_err(|e| Error::Invalid(format!("capture: cannot listen on {}: {e}", opts.listen)))?;
    let addr = listener
        .local_addr()
        .map_err(|e| Error::Invalid(format!("capture: {e}")))?;
    let client = Client::builder(TokioExecutor::new()).build(connector()?);
    let run_key = format!("capture-{}", format_ms(now_ms()).replace([':', '.'], "-"));
    let run_file = opts.out_dir.join(format!("{run_key}.jsonl"));
    let (tx, rx) = mpsc::channel::<Record>();
    let stats = Arc::new(Stats::default());
    let writer = {
        let dir = opts.out_dir.clone();
        let run_key = run_key.clone();
        let stats = stats.clone();
        std::thread::Builder::new()
            .name("capture-writer".into())
            .spawn(move || write_records(rx, &dir, &run_key, &stats))
            .map_err(|e| Error::Invalid(format!("capture: {e}")))?
    };
    let shared = Arc::new(Shared {
        client,
        upstream,
        records: Mutex::new(Some(tx)),
        next_id: AtomicU64::new(1),
        run_key,
        stats: stats.clone(),
    });
    let (stop, stopped) = tokio::sync::watch::channel(false);
    let server = tokio::spawn(serve(listener, shared.clone(), stopped));
    Ok(Running {
        addr,
        stats,
        run_file,
        stop,
        server,
        shared,
        writer: Some(writer),
    })
}

fn parse_upstream(u: &str) -> Result<Uri> {
    let uri: Uri = u
        .parse()
        .map_err(|e| Error::Invalid(format!("capture: --upstream {u:?} is not a URL: {e}")))?;
    match uri.scheme_str() {
        Some("http") | Some("https") if uri.authority().is_some() => Ok(uri),
        _ => Err(Error::Invalid(format!(
            "capture: --upstream {u:?} must be an http:// or https:// URL with a host"
        ))),
    }
}

/// TLS to the providers with the system's root certificates. A machine without any (no
/// ca-certificates) can still proxy to a plain-HTTP upstream; an HTTPS upstream then fails per
/// request with the reason.
fn connector() -> Result<HttpsConnector<HttpConnector>> {
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let builder = hyper_rustls::HttpsConnectorBuilder::new();
    let with_roots = match builder.with_provider_and_native_roots(provider.clone()) {
        Ok(b) => b,
        Err(_) => {
            let config = rustls::ClientConfig::builder_with_provider(provider)
                .with_safe_default_protocol_versions()
                .map_err(|e| Error::Invalid(format!("capture: TLS set-up: {e}")))?
                .with_root_certificates(rustls::RootCertStore::empty())
                .with_no_client_auth();
            hyper_rustls::HttpsConnectorBuilder::new().with_tls_config(config)
        }
    };
    Ok(with_roots
        .https_or_http()
        .enable_http1()
        .enable_http2()
        .build())
}

async fn serve(
    listener: tokio::net::TcpListener,
    shared: Arc<Shared>,
    mut stopped: tokio::sync::watch::Receiver<bool>,
) {
    let graceful = hyper_util::server::graceful::GracefulShutdown::new();
    let builder = hyper_util::server::conn::auto::Builder::new(TokioExecutor::new());
    loop {
        tokio::select! {
            _ = stopped.changed() => break,
            accepted = listener.accept() => {
                let Ok((stream, _)) = accepted else { continue };
                let shared = shared.clone();
                let svc = hyper::service::service_fn(move |req| handle(req, shared.clone()));
                let conn = builder.serve_connection(TokioIo::new(stream), svc).into_owned();
                let conn = graceful.watch(conn);
                tokio::spawn(async move {
                    let _ = conn.await;
                });
            }
        }
    }
    drop(listener);
    // Idle keep-alive connections close at once; exchanges in flight run to their end (bounded,
    // so a client that never reads cannot hold the shutdown forever).
    tokio::select! {
        _ = graceful.shutdown() => {}
        _ = tokio::time::sleep(std::time::Duration::from_secs(30)) => {}
    }
}

/// Hop-by-hop headers (RFC 9110 §7.6.1): they concern one connection, never forwarded.
fn hop_by_hop(name: &HeaderName) -> bool {
    matches!(
        name.as_str(),
        "connection"
            | "keep-alive"
            | "proxy-connection"
            | "proxy-authenticate"
            | "proxy-authorization"
            | "te"
            | "trailer"
            | "transfer-encoding"
            | "upgrade"
    )
}

/// Request headers passed to the provider: all but hop-by-hop ones, `host` (the client's computed
/// for the upstream) and `accept-encoding` (dropped so the reply comes uncompressed and the
/// record can read it; the client gets the same uncompressed bytes).
fn forwarded(name: &HeaderName) -> bool {
    !hop_by_hop(name) && !matches!(name.as_str(), "host" | "accept-encoding")
}

fn error_response(status: StatusCode, msg: String) -> Response<ProxyBody> {
    let body = json!({"error": {"type": "ctxlab_capture", "message": msg}}).to_string();
    let mut r = Response::new(Full::new(Bytes::from(body)).map_err(|n| match n {}).boxed());
    *r.status_mut() = status;
    r.headers_mut().insert(
        hyper::header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    r
}

fn target(shared: &Shared, uri: &Uri) -> std::result::Result<Uri, String> {
    let pq = uri.path_and_query().map(|p| p.as_str()).unwrap_or("/");
    let base = match &shared.upstream {
        Some(u) => u.to_string(),
        None => default_upstream(uri.path())
            .ok_or_else(|| {
                format!(
                    "no provider is known for the path {}; start `ctxlab capture` with \
                     --upstream URL",
                    uri.path()
                )
            })?
            .to_string(),
    };
    format!("{}{pq}", base.trim_end_matches('/'))
        .parse()
        .map_err(|e| format!("bad upstream URL: {e}"))
}

async fn handle(
    req: Request<Incoming>,
    shared: Arc<Shared>,
) -> std::result::Result<Response<ProxyBody>, Infallible> {
    let started = Instant::now();
    let timestamp = format_ms(now_ms());
    let (parts, body) = req.into_parts();
    let body = match Limited::new(body, MAX_REQUEST_BYTES).collect().await {
        Ok(b) => b.to_bytes(),
        Err(e) => {
            return Ok(error_response(
                StatusCode::PAYLOAD_TOO_LARGE,
                format!("request body not read: {e} (limit {MAX_REQUEST_BYTES} bytes)"),
            ))
        }
    };
    let url = match target(&shared, &parts.uri) {
        Ok(u) => u,
        Err(e) => return Ok(error_response(StatusCode::BAD_GATEWAY, e)),
    };
    let object = (parts.method == Method::POST)
        .then(|| serde_json::from_slice::<Map<String, Value>>(&body).ok())
        .flatten();
    let pending = object.map(|request| {
        let request = Value::Object(request);
        let session = session_key(&parts.headers, Some(&request));
        let mut line = Map::new();
        let id = shared.next_id.fetch_add(1, Ordering::Relaxed);
        line.insert("id".into(), json!(format!("{}-{id}", shared.run_key)));
        line.insert("timestamp".into(), json!(timestamp));
        line.insert("method".into(), json!(parts.method.as_str()));
        line.insert("path".into(), json!(recorded_path(&parts.uri)));
        let headers: Map<String, Value> = RECORDED_HEADERS
            .iter()
            .filter_map(|h| {
                let v = parts.headers.get(*h)?.to_str().ok()?;
                Some((h.to_string(), json!(v)))
            })
            .collect();
        line.insert("headers".into(), Value::Object(headers));
        // The body as sent, unless it carries a credential field (then re-written without it).
        let credential = request
            .as_object()
            .is_some_and(|o| o.keys().any(|k| is_credential_name(k)));
        let request = match credential {
            false => one_line(&body).unwrap_or_else(|| raw(&request)),
            true => raw(&scrub_body(request)),
        };
        Record {
            session,
            line,
            request,
            response: None,
        }
    });

    let mut up = Request::builder().method(parts.method.clone()).uri(url);
    for (name, value) in parts.headers.iter() {
        if forwarded(name) {
            up = up.header(name, value);
        }
    }
    let up = match up.body(Full::new(body)) {
        Ok(r) => r,
        Err(e) => return Ok(error_response(StatusCode::BAD_REQUEST, format!("{e}"))),
    };
    shared.stats.forwarded.fetch_add(1, Ordering::Relaxed);
    let resp = match shared.client.request(up).await {
        Ok(r) => r,
        Err(e) => {
            let msg = format!("upstream request failed: {}", error_chain(&e));
            if let Some(mut p) = pending {
                p.line
                    .insert("duration_ms".into(), json!(elapsed_ms(started)));
                p.line.insert("status".into(), Value::Null);
                p.line.insert("error".into(), json!(msg));
                shared.stats.failed.fetch_add(1, Ordering::Relaxed);
                shared.send(p);
            }
            return Ok(error_response(StatusCode::BAD_GATEWAY, msg));
        }
    };
    let (mut rparts, rbody) = resp.into_parts();
    let hop: Vec<HeaderName> = rparts
        .headers
        .keys()
        .filter(|n| hop_by_hop(n))
        .cloned()
        .collect();
    for n in hop {
        rparts.headers.remove(n);
    }
    let Some(mut pending) = pending else {
        return Ok(Response::from_parts(rparts, rbody.boxed()));
    };
    let stream = rparts
        .headers
        .get(hyper::header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|c| c.starts_with("text/event-stream"));
    pending
        .line
        .insert("status".into(), json!(rparts.status.as_u16()));
    let tee = Tee {
        inner: rbody,
        copy: Vec::new(),
        truncated: false,
        stream,
        started,
        pending: Some(pending),
        shared,
    };
    Ok(Response::from_parts(rparts, tee.boxed()))
}

fn error_chain(e: &dyn std::error::Error) -> String {
    let mut s = e.to_string();
    let mut src = e.source();
    while let Some(c) = src {
        s.push_str(": ");
        s.push_str(&c.to_string());
        src = c.source();
    }
    s
}

/// The upstream's response body passed on frame by frame, with a copy kept for the record, which
/// is sent to the writer when the body ends (or is dropped before its end: the client went away).
struct Tee {
    inner: Incoming,
    copy: Vec<u8>,
    truncated: bool,
    stream: bool,
    started: Instant,
    pending: Option<Record>,
    shared: Arc<Shared>,
}

impl Tee {
    fn finish(&mut self, error: Option<String>) {
        let Some(mut rec) = self.pending.take() else {
            return;
        };
        let copy = std::mem::take(&mut self.copy);
        let response = recorded_response(&copy, self.stream, self.truncated);
        rec.line
            .insert("duration_ms".into(), json!(elapsed_ms(self.started)));
        rec.response = Some(response);
        if error.is_some() {
            self.shared.stats.failed.fetch_add(1, Ordering::Relaxed);
        }
        rec.line.insert("error".into(), json!(error));
        self.shared.send(rec);
    }
}

impl Body for Tee {
    type Data = Bytes;
    type Error = hyper::Error;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<std::result::Result<Frame<Bytes>, hyper::Error>>> {
        let this = &mut *self;
        match Pin::new(&mut this.inner).poll_frame(cx) {
            Poll::Ready(Some(Ok(frame))) => {
                if let Some(d) = frame.data_ref() {
                    if this.copy.len() + d.len() <= MAX_RECORDED_RESPONSE_BYTES {
                        this.copy.extend_from_slice(d);
                    } else {
                        this.truncated = true;
                    }
                }
                Poll::Ready(Some(Ok(frame)))
            }
            Poll::Ready(Some(Err(e))) => {
                this.finish(Some(format!(
                    "upstream response failed: {}",
                    error_chain(&e)
                )));
                Poll::Ready(Some(Err(e)))
            }
            Poll::Ready(None) => {
                this.finish(None);
                Poll::Ready(None)
            }
            Poll::Pending => Poll::Pending,
        }
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.inner.size_hint()
    }
}

impl Drop for Tee {
    fn drop(&mut self) {
        if self.pending.is_some() {
            if self.inner.is_end_stream() {
                self.finish(None);
            } else {
                self.finish(Some(
                    "the client closed the connection before the response ended".into(),
                ));
            }
        }
    }
}

/// The response as the HTTP-capture reader reads it: SSE as its lines, JSON as the value, any
/// other text as `{"text": …}`.
fn recorded_response(bytes: &[u8], stream: bool, truncated: bool) -> Box<RawValue> {
    if !stream && !truncated {
        if let Some(r) = one_line(bytes) {
            return r;
        }
    }
    let text = String::from_utf8_lossy(bytes);
    let mut v = if stream {
        let lines: Vec<&str> = text
            .split('\n')
            .map(|l| l.strip_suffix('\r').unwrap_or(l))
            .collect();
        json!({"stream": true, "sse_lines": lines})
    } else {
        json!({"text": text})
    };
    if truncated {
        v["truncated"] = json!(true);
    }
    raw(&v)
}

/// A capture line: `request` and `response` as recorded, then the exchange's other fields.
fn line_text(rec: Record) -> String {
    let mut line = String::with_capacity(rec.request.get().len() + 256);
    line.push_str("{\"request\":");
    line.push_str(rec.request.get());
    line.push_str(",\"response\":");
    line.push_str(rec.response.as_deref().map_or("null", RawValue::get));
    let rest = Value::Object(rec.line).to_string();
    match rest.strip_prefix('{') {
        Some(r) if r != "}" => {
            line.push(',');
            line.push_str(r);
        }
        _ => line.push('}'),
    }
    line.push('\n');
    line
}

/// The writer thread: one line per exchange, flushed as written (a follower sees whole lines
/// only), into the file of the exchange's conversation.
fn write_records(rx: mpsc::Receiver<Record>, dir: &Path, run_key: &str, stats: &Stats) {
    let mut files: HashMap<String, File> = HashMap::new();
    for rec in rx {
        let key = rec.session.clone().unwrap_or_else(|| run_key.to_string());
        if !files.contains_key(&key) {
            let path = dir.join(format!("{key}.jsonl"));
            match OpenOptions::new().create(true).append(true).open(&path) {
                Ok(f) => {
                    files.insert(key.clone(), f);
                }
                Err(e) => {
                    eprintln!("capture: cannot write {}: {e}", path.display());
                    continue;
                }
            }
        }
        let line = line_text(rec);
        let f = files.get_mut(&key).expect("opened above");
        match f.write_all(line.as_bytes()).and_then(|_| f.flush()) {
            Ok(()) => {
                stats.recorded.fetch_add(1, Ordering::Relaxed);
            }
            Err(e) => eprintln!("capture: cannot write {}/{key}.jsonl: {e}", dir.display()),
        }
    }
}

fn now_ms() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_millis() as i64)
        .unwrap_or(0)
}

fn elapsed_ms(t: Instant) -> u64 {
    t.elapsed().as_millis() as u64
}

/// The lines that point common agents at a proxy listening on `addr`.
pub fn setup_lines(addr: SocketAddr) -> Vec<(&'static str, String)> {
    vec![
        (
            "Claude Code",
            format!("ANTHROPIC_BASE_URL=http://{addr} claude"),
        ),
        (
            "Codex CLI (API key)",
            format!("OPENAI_BASE_URL=http://{addr}/v1 codex"),
        ),
        (
            "Gemini CLI (API key)",
            format!("GOOGLE_GEMINI_BASE_URL=http://{addr} gemini"),
        ),
        (
            "OpenCode / OpenAI SDKs",
            format!("OPENAI_BASE_URL=http://{addr}/v1 opencode"),
        ),
        (
            "Anthropic SDKs",
            format!("ANTHROPIC_BASE_URL=http://{addr}"),
        ),
    ]
}
