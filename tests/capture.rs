//! `ctxlab capture` on loopback: a stand-in provider on 127.0.0.1 answers with response bodies
//! written here after the providers' documented formats (Anthropic Messages, OpenAI Chat
//! Completions, Gemini generateContent; JSON and SSE); the proxy sits between it and a client.
//! Every wait is bounded, so a proxy that buffers or hangs fails the test instead of blocking it.

use std::collections::HashMap;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use std::time::Duration;

use bytes::Bytes;
use ctxlab::capture::{self, Options};
use http_body::{Body, Frame};
use http_body_util::{BodyExt, Full};
use hyper::body::Incoming;
use hyper::{Request, Response};
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::client::legacy::Client;
use hyper_util::rt::{TokioExecutor, TokioIo};
use serde_json::{json, Value};
use tokio::sync::{mpsc, Notify};

const LIMIT: Duration = Duration::from_secs(20);

// ---- response bodies after the providers' documented formats ----------------------------------

fn anthropic_json(text: &str, input: u64, output: u64) -> String {
    json!({"id": "msg_1", "type": "message", "role": "assistant", "model": "claude-sonnet-4-5",
        "content": [{"type": "text", "text": text}], "stop_reason": "end_turn",
        "usage": {"input_tokens": input, "output_tokens": output,
                  "cache_read_input_tokens": 0, "cache_creation_input_tokens": 0}})
    .to_string()
}

/// Anthropic's stream as SSE events, one chunk per event (what the stand-in sends one by one).
fn anthropic_sse(text: &str, input: u64, output: u64) -> Vec<String> {
    let (a, b) = text.split_at(text.len() / 2);
    let ev = |name: &str, data: Value| format!("event: {name}\ndata: {data}\n\n");
    vec![
        ev(
            "message_start",
            json!({"type": "message_start", "message": {"id": "msg_2",
            "type": "message", "role": "assistant", "model": "claude-sonnet-4-5", "content": [],
            "usage": {"input_tokens": input, "output_tokens": 1,
                      "cache_read_input_tokens": 0, "cache_creation_input_tokens": 0}}}),
        ),
        ev(
            "content_block_start",
            json!({"type": "content_block_start", "index": 0,
            "content_block": {"type": "text", "text": ""}}),
        ),
        ev(
            "content_block_delta",
            json!({"type": "content_block_delta", "index": 0,
            "delta": {"type": "text_delta", "text": a}}),
        ),
        ev(
            "content_block_delta",
            json!({"type": "content_block_delta", "index": 0,
            "delta": {"type": "text_delta", "text": b}}),
        ),
        ev(
            "content_block_stop",
            json!({"type": "content_block_stop", "index": 0}),
        ),
        ev(
            "message_delta",
            json!({"type": "message_delta",
            "delta": {"stop_reason": "end_turn"}, "usage": {"output_tokens": output}}),
        ),
        ev("message_stop", json!({"type": "message_stop"})),
    ]
}

fn openai_json(text: &str, input: u64, output: u64) -> String {
    json!({"id": "chatcmpl-1", "object": "chat.completion", "model": "gpt-4.1",
        "choices": [{"index": 0, "message": {"role": "assistant", "content": text},
                     "finish_reason": "stop"}],
        "usage": {"prompt_tokens": input, "completion_tokens": output,
                  "total_tokens": input + output}})
    .to_string()
}

fn openai_sse(text: &str, input: u64, output: u64) -> Vec<String> {
    let (a, b) = text.split_at(text.len() / 2);
    let chunk = |delta: Value, finish: Value, usage: Value| {
        format!(
            "data: {}\n\n",
            json!({"id": "chatcmpl-2", "object": "chat.completion.chunk", "model": "gpt-4.1",
                "choices": if usage.is_null() { json!([{"index": 0, "delta": delta,
                    "finish_reason": finish}]) } else { json!([]) },
                "usage": usage})
        )
    };
    vec![
        chunk(
            json!({"role": "assistant", "content": ""}),
            Value::Null,
            Value::Null,
        ),
        chunk(json!({"content": a}), Value::Null, Value::Null),
        chunk(json!({"content": b}), json!("stop"), Value::Null),
        chunk(
            json!({}),
            Value::Null,
            json!({"prompt_tokens": input, "completion_tokens": output,
                   "total_tokens": input + output}),
        ),
        "data: [DONE]\n\n".to_string(),
    ]
}

fn responses_body(text: &str, input: u64, output: u64) -> Value {
    json!({"id": "resp_1", "object": "response", "status": "completed", "model": "gpt-5-codex",
        "output": [
            {"type": "reasoning", "id": "rs_1", "summary": []},
            {"type": "message", "id": "msg_1", "role": "assistant", "status": "completed",
             "content": [{"type": "output_text", "text": text, "annotations": []}]}],
        "usage": {"input_tokens": input, "input_tokens_details": {"cached_tokens": 0},
                  "output_tokens": output, "output_tokens_details": {"reasoning_tokens": 0},
                  "total_tokens": input + output}})
}

fn responses_sse(text: &str, input: u64, output: u64) -> Vec<String> {
    let (a, b) = text.split_at(text.len() / 2);
    let ev = |name: &str, data: Value| format!("event: {name}\ndata: {data}\n\n");
    vec![
        ev(
            "response.created",
            json!({"type": "response.created", "sequence_number": 0,
            "response": {"id": "resp_2", "object": "response", "status": "in_progress",
                         "model": "gpt-5-codex", "output": []}}),
        ),
        ev(
            "response.output_text.delta",
            json!({"type": "response.output_text.delta",
            "sequence_number": 1, "item_id": "msg_1", "output_index": 1, "content_index": 0,
            "delta": a}),
        ),
        ev(
            "response.output_text.delta",
            json!({"type": "response.output_text.delta",
            "sequence_number": 2, "item_id": "msg_1", "output_index": 1, "content_index": 0,
            "delta": b}),
        ),
        ev(
            "response.completed",
            json!({"type": "response.completed", "sequence_number": 3,
            "response": responses_body(text, input, output)}),
        ),
    ]
}

fn gemini_chunk(text: &str, usage: Option<(u64, u64)>) -> Value {
    let mut v = json!({"candidates": [{"content": {"role": "model", "parts": [{"text": text}]},
        "index": 0}], "modelVersion": "gemini-2.5-flash"});
    if let Some((i, o)) = usage {
        v["usageMetadata"] =
            json!({"promptTokenCount": i, "candidatesTokenCount": o, "totalTokenCount": i + o});
        v["candidates"][0]["finishReason"] = json!("STOP");
    }
    v
}

fn gemini_json(text: &str, input: u64, output: u64) -> String {
    gemini_chunk(text, Some((input, output))).to_string()
}

fn gemini_sse(text: &str, input: u64, output: u64) -> Vec<String> {
    let (a, b) = text.split_at(text.len() / 2);
    vec![
        format!("data: {}\r\n\r\n", gemini_chunk(a, None)),
        format!("data: {}\r\n\r\n", gemini_chunk(b, Some((input, output)))),
    ]
}

#[derive(Clone, Copy, Debug, PartialEq)]
enum Api {
    Anthropic,
    OpenAi,
    Responses,
    Gemini,
}

const APIS: [Api; 4] = [Api::Anthropic, Api::OpenAi, Api::Responses, Api::Gemini];

/// What the stand-in answers: the reply text holds the request's last user text, so an answer
/// mixed up with another request's shows.
fn reply_text(user: &str) -> String {
    format!("answer to <{user}>")
}

/// Chunks of the response body for a request, and whether it is SSE.
fn answer(api: Api, stream: bool, user: &str) -> (Vec<String>, bool) {
    let text = reply_text(user);
    let (input, output) = (100 + user.len() as u64, 7);
    let chunks = match (api, stream) {
        (Api::Anthropic, false) => vec![anthropic_json(&text, input, output)],
        (Api::Anthropic, true) => anthropic_sse(&text, input, output),
        (Api::OpenAi, false) => vec![openai_json(&text, input, output)],
        (Api::OpenAi, true) => openai_sse(&text, input, output),
        (Api::Responses, false) => vec![responses_body(&text, input, output).to_string()],
        (Api::Responses, true) => responses_sse(&text, input, output),
        (Api::Gemini, false) => vec![gemini_json(&text, input, output)],
        (Api::Gemini, true) => gemini_sse(&text, input, output),
    };
    (chunks, stream)
}

// ---- the stand-in provider ---------------------------------------------------------------------

/// A response body fed from a channel: each chunk is sent when the stand-in decides.
struct ChannelBody(mpsc::Receiver<Bytes>);

impl Body for ChannelBody {
    type Data = Bytes;
    type Error = std::convert::Infallible;
    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Self::Error>>> {
        self.0.poll_recv(cx).map(|c| c.map(|b| Ok(Frame::data(b))))
    }
}

#[derive(Default)]
struct Upstream {
    /// Credentials the stand-in received, by header or query name (the proxy must forward them).
    credentials: Mutex<Vec<String>>,
    /// Requests whose `x-test-gate` header is set hold their last chunk until this is notified.
    gate: Notify,
    /// Bodies exactly as sent, by the request's user text.
    sent: Mutex<HashMap<String, Vec<u8>>>,
    /// Recorded real responses, by the exact request body they answered (in order, for a request
    /// sent twice): when set, the stand-in answers with these instead of writing its own.
    recorded: Mutex<HashMap<Vec<u8>, std::collections::VecDeque<(bool, Vec<u8>)>>>,
}

fn last_user_text(api: Api, body: &Value) -> String {
    let text = match api {
        Api::Gemini => body["contents"]
            .as_array()
            .and_then(|c| c.last())
            .map(|m| m["parts"][0]["text"].as_str().unwrap_or("").to_string()),
        Api::Responses => body["input"]
            .as_array()
            .and_then(|c| c.last())
            .map(|m| m["content"][0]["text"].as_str().unwrap_or("").to_string()),
        _ => body["messages"].as_array().and_then(|m| m.last()).map(|m| {
            m["content"]
                .as_str()
                .map(String::from)
                .or_else(|| m["content"][0]["text"].as_str().map(String::from))
                .unwrap_or_default()
        }),
    };
    text.unwrap_or_default()
}

async fn upstream_handle(
    req: Request<Incoming>,
    up: Arc<Upstream>,
) -> Result<Response<ChannelBody>, std::convert::Infallible> {
    let (parts, body) = req.into_parts();
    for h in ["authorization", "x-api-key", "x-goog-api-key"] {
        if let Some(v) = parts.headers.get(h) {
            up.credentials
                .lock()
                .unwrap()
                .push(v.to_str().unwrap().to_string());
        }
    }
    if let Some(q) = parts.uri.query() {
        up.credentials.lock().unwrap().push(q.to_string());
    }
    let gated = parts.headers.contains_key("x-test-gate");
    let body = body.collect().await.unwrap().to_bytes();
    let replayed = up
        .recorded
        .lock()
        .unwrap()
        .get_mut(body.as_ref())
        .and_then(|q| q.pop_front());
    if let Some((sse, bytes)) = replayed {
        let (tx, rx) = mpsc::channel(1);
        tx.send(Bytes::from(bytes)).await.unwrap();
        let mut r = Response::new(ChannelBody(rx));
        let ct = if sse {
            "text/event-stream"
        } else {
            "application/json"
        };
        r.headers_mut().insert("content-type", ct.parse().unwrap());
        return Ok(r);
    }
    let body: Value = serde_json::from_slice(&body).unwrap();
    let path = parts.uri.path();
    let api = if path.starts_with("/v1/messages") {
        Api::Anthropic
    } else if path.starts_with("/v1/chat/completions") {
        Api::OpenAi
    } else if path.starts_with("/v1/responses") {
        Api::Responses
    } else {
        Api::Gemini
    };
    let stream = match api {
        Api::Gemini => path.contains(":streamGenerateContent"),
        _ => body["stream"] == json!(true),
    };
    let user = last_user_text(api, &body);
    let (chunks, sse) = answer(api, stream, &user);
    up.sent
        .lock()
        .unwrap()
        .insert(user.clone(), chunks.concat().into_bytes());
    let (tx, rx) = mpsc::channel(16);
    let up2 = up.clone();
    tokio::spawn(async move {
        let n = chunks.len();
        for (i, c) in chunks.into_iter().enumerate() {
            if gated && i == n - 1 {
                up2.gate.notified().await;
            }
            if tx.send(Bytes::from(c)).await.is_err() {
                return;
            }
        }
    });
    let mut r = Response::new(ChannelBody(rx));
    r.headers_mut().insert(
        "content-type",
        if sse {
            "text/event-stream".parse().unwrap()
        } else {
            "application/json".parse().unwrap()
        },
    );
    Ok(r)
}

async fn start_upstream() -> (SocketAddr, Arc<Upstream>) {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let up = Arc::new(Upstream::default());
    let up2 = up.clone();
    tokio::spawn(async move {
        loop {
            let Ok((s, _)) = listener.accept().await else {
                return;
            };
            let up = up2.clone();
            tokio::spawn(async move {
                let svc = hyper::service::service_fn(move |r| upstream_handle(r, up.clone()));
                let _ = hyper::server::conn::http1::Builder::new()
                    .serve_connection(TokioIo::new(s), svc)
                    .await;
            });
        }
    });
    (addr, up)
}

async fn start_proxy(upstream: SocketAddr, dir: &Path) -> capture::Running {
    capture::start(Options {
        listen: "127.0.0.1:0".parse().unwrap(),
        upstream: Some(format!("http://{upstream}")),
        out_dir: dir.to_path_buf(),
        allow_remote: false,
    })
    .await
    .expect("proxy starts on loopback")
}

fn client() -> Client<HttpConnector, Full<Bytes>> {
    Client::builder(TokioExecutor::new()).build_http()
}

/// A request of `api` whose conversation is `history` (user, assistant, user, …) ending with a
/// user text, with the credentials each API's SDK sends.
fn request(proxy: SocketAddr, api: Api, stream: bool, history: &[&str]) -> Request<Full<Bytes>> {
    let role = |i: usize| if i % 2 == 0 { "user" } else { "assistant" };
    let (path, body, builder) = match api {
        Api::Anthropic => (
            "/v1/messages".to_string(),
            json!({"model": "claude-sonnet-4-5", "max_tokens": 1024, "stream": stream,
                "system": [{"type": "text", "text": "You are a test agent."}],
                "metadata": {"user_id": "user_0f1e_account_4a5b_session_conv-anthropic-1"},
                "api_key": "sk-ant-SECRET-in-body",
                "messages": history.iter().enumerate().map(|(i, t)|
                    json!({"role": role(i), "content": [{"type": "text", "text": t}]}))
                    .collect::<Vec<_>>()}),
            Request::post("/")
                .header("x-api-key", "sk-ant-SECRET-anthropic")
                .header("anthropic-version", "2023-06-01"),
        ),
        Api::OpenAi => (
            "/v1/chat/completions".to_string(),
            json!({"model": "gpt-4.1", "stream": stream,
                "messages": std::iter::once(json!({"role": "system", "content": "You are a test agent."}))
                    .chain(history.iter().enumerate().map(|(i, t)| json!({"role": role(i), "content": t})))
                    .collect::<Vec<_>>()}),
            Request::post("/").header("authorization", "Bearer sk-proj-SECRET-openai"),
        ),
        Api::Responses => (
            "/v1/responses".to_string(),
            json!({"model": "gpt-5-codex", "stream": stream, "store": false,
                "instructions": "You are a test agent.",
                "input": history.iter().enumerate().map(|(i, t)| json!({"type": "message",
                    "role": role(i),
                    "content": [{"type": if i % 2 == 0 { "input_text" } else { "output_text" },
                                 "text": t}]}))
                    .collect::<Vec<_>>()}),
            Request::post("/")
                .header("authorization", "Bearer sk-proj-SECRET-codex")
                .header("session_id", "codex-conversation-7"),
        ),
        Api::Gemini => (
            format!(
                "/v1beta/models/gemini-2.5-flash:{}?key=AIza-SECRET-gemini{}",
                if stream {
                    "streamGenerateContent"
                } else {
                    "generateContent"
                },
                if stream { "&alt=sse" } else { "" }
            ),
            json!({"systemInstruction": {"parts": [{"text": "You are a test agent."}]},
                "contents": history.iter().enumerate().map(|(i, t)| json!({
                    "role": if i % 2 == 0 { "user" } else { "model" }, "parts": [{"text": t}]}))
                    .collect::<Vec<_>>()}),
            Request::post("/").header("x-goog-api-key", "AIza-SECRET-gemini-header"),
        ),
    };
    builder
        .uri(format!("http://{proxy}{path}"))
        .header("content-type", "application/json")
        .body(Full::new(Bytes::from(body.to_string())))
        .unwrap()
}

async fn send(c: &Client<HttpConnector, Full<Bytes>>, r: Request<Full<Bytes>>) -> (u16, Vec<u8>) {
    let resp = tokio::time::timeout(LIMIT, c.request(r))
        .await
        .expect("the proxy answers within the limit")
        .expect("the proxy answers");
    let status = resp.status().as_u16();
    let body = tokio::time::timeout(LIMIT, resp.into_body().collect())
        .await
        .expect("the body ends within the limit")
        .unwrap()
        .to_bytes();
    (status, body.to_vec())
}

fn capture_files(dir: &Path) -> Vec<PathBuf> {
    let mut v: Vec<_> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "jsonl"))
        .collect();
    v.sort();
    v
}

/// No capture file under `dir` holds any part of a credential the tests send.
fn assert_no_credentials(dir: &Path) {
    for f in capture_files(dir) {
        let text = std::fs::read_to_string(&f).unwrap();
        for needle in ["SECRET", "sk-ant", "sk-proj", "AIza", "Bearer"] {
            assert!(
                !text.contains(needle),
                "{} holds a credential ({needle})",
                f.display()
            );
        }
    }
}

fn rt() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap()
}

/// Two calls of one conversation through each API, JSON and SSE: the client receives exactly
/// the bytes the provider sent, the capture is read by ctxlab's reader with both calls of the
/// conversation and their usage, and no credential is written.
#[test]
fn every_api_json_and_sse_forwarded_byte_for_byte_and_read_back_with_usage() {
    for api in APIS {
        for stream in [false, true] {
            let dir = tempfile::tempdir().unwrap();
            rt().block_on(async {
                let (up_addr, up) = start_upstream().await;
                let proxy = start_proxy(up_addr, dir.path()).await;
                let c = client();
                let first = "list the files";
                let (status, body) = send(&c, request(proxy.addr, api, stream, &[first])).await;
                assert_eq!(status, 200, "{api:?} stream={stream}");
                assert_eq!(
                    body,
                    up.sent.lock().unwrap()[first],
                    "{api:?} stream={stream}: the client gets the provider's bytes unchanged"
                );
                let reply = reply_text(first);
                let second = "now count them";
                let (status, _) = send(
                    &c,
                    request(proxy.addr, api, stream, &[first, &reply, second]),
                )
                .await;
                assert_eq!(status, 200);
                // The provider received the credentials: the proxy forwards them, it only never
                // writes them.
                assert!(up
                    .credentials
                    .lock()
                    .unwrap()
                    .iter()
                    .any(|c| c.contains("SECRET")));
                proxy.shutdown().await;
            });
            let files = capture_files(dir.path());
            assert_eq!(
                files.len(),
                1,
                "{api:?}: one conversation, one file: {files:?}"
            );
            let named = match api {
                Api::Anthropic => Some("conv-anthropic-1.jsonl"),
                Api::Responses => Some("codex-conversation-7.jsonl"),
                _ => None,
            };
            if let Some(name) = named {
                assert_eq!(
                    files[0].file_name().unwrap(),
                    name,
                    "named by the conversation id the client sends"
                );
            }
            let session = ctxlab::formats::load_file(&files[0]).expect("the capture reads");
            assert_eq!(session.source.format, "http-capture");
            assert_eq!(
                session.agents.len(),
                1,
                "{api:?} stream={stream}: one agent"
            );
            assert_eq!(session.calls.len(), 2, "{api:?} stream={stream}: two calls");
            for (call, user) in session
                .calls
                .iter()
                .zip(["list the files", "now count them"])
            {
                let u = call.usage.as_ref().expect("every call has its usage");
                assert_eq!(u.output, 7, "{api:?} stream={stream}");
                assert_eq!(
                    u.input + u.cache_read + u.cache_write(),
                    100 + user.len() as u64,
                    "{api:?} stream={stream}: the provider's input count"
                );
            }
            let last = session.messages.last().unwrap();
            assert!(
                format!("{:?}", last.parts).contains(&reply_text("now count them")),
                "{api:?} stream={stream}: the reply is in the context: {:?}",
                last.parts
            );
            assert_no_credentials(dir.path());
        }
    }
}

/// A streamed reply reaches the client while the provider is still writing it: the stand-in
/// holds its last event until the client has the first bytes. A proxy that buffered the whole
/// response would leave the client waiting (and fail at the bound).
#[test]
fn streams_pass_through_before_the_response_ends() {
    let dir = tempfile::tempdir().unwrap();
    rt().block_on(async {
        let (up_addr, up) = start_upstream().await;
        let proxy = start_proxy(up_addr, dir.path()).await;
        let mut r = request(proxy.addr, Api::Anthropic, true, &["stream slowly"]);
        r.headers_mut().insert("x-test-gate", "1".parse().unwrap());
        let resp = tokio::time::timeout(LIMIT, client().request(r))
            .await
            .unwrap()
            .unwrap();
        let mut body = resp.into_body();
        let first = tokio::time::timeout(LIMIT, body.frame())
            .await
            .expect("the first bytes arrive while the provider holds its last event")
            .unwrap()
            .unwrap();
        let mut got = first.into_data().unwrap().to_vec();
        assert!(String::from_utf8_lossy(&got).contains("message_start"));
        assert!(up.credentials.lock().unwrap().len() == 1);
        // Only now may the provider end its response.
        up.gate.notify_one();
        let rest = tokio::time::timeout(LIMIT, body.collect())
            .await
            .unwrap()
            .unwrap()
            .to_bytes();
        got.extend_from_slice(&rest);
        assert_eq!(got, up.sent.lock().unwrap()["stream slowly"]);
        proxy.shutdown().await;
    });
    let session = ctxlab::formats::load_file(&capture_files(dir.path())[0]).unwrap();
    assert_eq!(session.calls.len(), 1);
}

/// Twenty streamed conversations at once: all captured, none mixed up (each capture line's reply
/// answers its own request).
#[test]
fn twenty_parallel_streams_all_captured_none_mixed_up() {
    let dir = tempfile::tempdir().unwrap();
    rt().block_on(async {
        let (up_addr, _up) = start_upstream().await;
        let proxy = start_proxy(up_addr, dir.path()).await;
        let c = client();
        let mut tasks = tokio::task::JoinSet::new();
        for i in 0..20 {
            let c = c.clone();
            let api = APIS[i % 4];
            let addr = proxy.addr;
            tasks.spawn(async move {
                let user = format!("parallel request {i}");
                let (status, body) = send(&c, request(addr, api, true, &[&user])).await;
                assert_eq!(status, 200);
                assert!(String::from_utf8_lossy(&body).contains(&format!("request {i}>")));
            });
        }
        while let Some(r) = tasks.join_next().await {
            r.unwrap();
        }
        proxy.shutdown().await;
    });
    let mut seen = Vec::new();
    for f in capture_files(dir.path()) {
        for line in std::fs::read_to_string(&f).unwrap().lines() {
            let v: Value = serde_json::from_str(line).unwrap();
            let i: usize = v["request"]
                .to_string()
                .split("parallel request ")
                .nth(1)
                .and_then(|t| t.split(|c: char| !c.is_ascii_digit()).next())
                .and_then(|n| n.parse().ok())
                .expect("the request holds its number");
            let text = sse_text(&v["response"]);
            assert_eq!(
                text,
                reply_text(&format!("parallel request {i}")),
                "request {i}"
            );
            seen.push(i);
        }
    }
    seen.sort();
    assert_eq!(
        seen,
        (0..20).collect::<Vec<_>>(),
        "every request captured once"
    );
    assert_no_credentials(dir.path());
}

/// The reply text of a recorded SSE response of any of the three APIs.
fn sse_text(response: &Value) -> String {
    let mut out = String::new();
    for l in response["sse_lines"].as_array().unwrap() {
        let Some(d) = l.as_str().unwrap().strip_prefix("data: ") else {
            continue;
        };
        let Ok(v) = serde_json::from_str::<Value>(d) else {
            continue;
        };
        for t in [
            &v["delta"],
            &v["delta"]["text"],
            &v["choices"][0]["delta"]["content"],
            &v["candidates"][0]["content"]["parts"][0]["text"],
        ] {
            if let Some(s) = t.as_str() {
                out.push_str(s);
            }
        }
    }
    out
}

#[test]
fn a_non_loopback_listen_address_is_refused_unless_asked() {
    let dir = tempfile::tempdir().unwrap();
    rt().block_on(async {
        let err = capture::start(Options {
            listen: "0.0.0.0:0".parse().unwrap(),
            upstream: Some("http://127.0.0.1:9".into()),
            out_dir: dir.path().to_path_buf(),
            allow_remote: false,
        })
        .await
        .err()
        .expect("refused");
        assert!(err.to_string().contains("--allow-remote"), "{err}");
        let ok = capture::start(Options {
            listen: "0.0.0.0:0".parse().unwrap(),
            upstream: Some("http://127.0.0.1:9".into()),
            out_dir: dir.path().to_path_buf(),
            allow_remote: true,
        })
        .await
        .expect("allowed when asked");
        ok.shutdown().await;
    });
}

/// An unreachable provider: the agent gets a 502 naming the cause, the capture records the
/// request with the error, still without credentials.
#[test]
fn an_unreachable_provider_is_a_502_and_a_recorded_error() {
    let dir = tempfile::tempdir().unwrap();
    rt().block_on(async {
        // A port that was free a moment ago: nothing listens there.
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap();
        let proxy = start_proxy(port, dir.path()).await;
        let (status, body) = send(
            &client(),
            request(proxy.addr, Api::OpenAi, false, &["hello"]),
        )
        .await;
        assert_eq!(status, 502);
        assert!(String::from_utf8_lossy(&body).contains("upstream request failed"));
        proxy.shutdown().await;
    });
    let files = capture_files(dir.path());
    let text = std::fs::read_to_string(&files[0]).unwrap();
    let v: Value = serde_json::from_str(text.lines().next().unwrap()).unwrap();
    assert!(v["error"]
        .as_str()
        .unwrap()
        .contains("upstream request failed"));
    assert_no_credentials(dir.path());
}

#[test]
fn credential_names_and_query_parameters_are_recognised() {
    for n in [
        "key",
        "api_key",
        "apiKey",
        "x-api-key",
        "access_token",
        "client_secret",
        "Authorization",
    ] {
        assert!(capture::is_credential_name(n), "{n}");
    }
    for n in [
        "alt",
        "model",
        "max_tokens",
        "messages",
        "metadata",
        "stream",
    ] {
        assert!(!capture::is_credential_name(n), "{n}");
    }
    let uri: hyper::Uri = "/v1beta/models/m:streamGenerateContent?key=AIza123&alt=sse"
        .parse()
        .unwrap();
    assert_eq!(
        capture::recorded_path(&uri),
        "/v1beta/models/m:streamGenerateContent?alt=sse"
    );
    assert_eq!(
        capture::default_upstream("/v1/messages"),
        Some("https://api.anthropic.com")
    );
    assert_eq!(
        capture::default_upstream("/v1/responses"),
        Some("https://api.openai.com")
    );
    assert_eq!(
        capture::default_upstream("/v1beta/models/gemini-2.5-pro:generateContent"),
        Some("https://generativelanguage.googleapis.com")
    );
    assert_eq!(capture::default_upstream("/metrics"), None);
}

/// `ctxlab capture` as a user runs it: it prints where it listens and the line for each agent,
/// records two calls, stops by itself after them (`--exit-after`), and `ctxlab inspect` reads
/// the capture it wrote.
#[test]
fn the_cli_records_and_inspect_reads_what_it_wrote() {
    use std::io::{BufRead, BufReader};
    use std::process::{Command, Stdio};
    let dir = tempfile::tempdir().unwrap();
    let exe = env!("CARGO_BIN_EXE_ctxlab");
    let rt = rt();
    let (up_addr, _up) = rt.block_on(start_upstream());
    let mut child = Command::new(exe)
        .args([
            "capture",
            "--listen",
            "127.0.0.1:0",
            "--exit-after",
            "2",
            "--upstream",
        ])
        .arg(format!("http://{up_addr}"))
        .arg("-o")
        .arg(dir.path())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut out = BufReader::new(child.stdout.take().unwrap());
    let mut first = String::new();
    out.read_line(&mut first).unwrap();
    let addr: SocketAddr = first
        .trim()
        .strip_prefix("listening on http://")
        .unwrap_or_else(|| panic!("first line: {first:?}"))
        .parse()
        .unwrap();
    // The folder, a heading and one line per agent, the SDKs' last.
    let mut rest = String::new();
    while !rest.contains("Anthropic SDKs") {
        if out.read_line(&mut rest).unwrap() == 0 {
            panic!("capture stopped before printing its set-up lines: {rest}");
        }
    }
    assert!(
        rest.contains(&format!("ANTHROPIC_BASE_URL=http://{addr}")),
        "{rest}"
    );
    assert!(
        rest.contains(&format!("OPENAI_BASE_URL=http://{addr}/v1")),
        "{rest}"
    );
    rt.block_on(async {
        let c = client();
        send(&c, request(addr, Api::Anthropic, true, &["first"])).await;
        send(
            &c,
            request(
                addr,
                Api::Anthropic,
                true,
                &["first", &reply_text("first"), "second"],
            ),
        )
        .await;
    });
    // Bounded wait for the proxy to stop by itself.
    let deadline = std::time::Instant::now() + LIMIT;
    let status = loop {
        if let Some(s) = child.try_wait().unwrap() {
            break s;
        }
        if std::time::Instant::now() > deadline {
            child.kill().unwrap();
            panic!("ctxlab capture did not stop after --exit-after 2");
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    assert!(status.success());
    let mut tail = String::new();
    std::io::Read::read_to_string(&mut out, &mut tail).unwrap();
    assert!(tail.contains("stopped: 2 recorded"), "{tail}");
    let file = dir.path().join("conv-anthropic-1.jsonl");
    let o = Command::new(exe)
        .args(["inspect", "--json"])
        .arg(&file)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let v: Value = serde_json::from_slice(&o.stdout).unwrap();
    let stats = &v["sessions"][0]["agents"][0]["stats"];
    assert_eq!(stats["calls"], 2, "{stats}");
    assert_eq!(stats["calls_with_usage"], 2, "{stats}");
    assert_no_credentials(dir.path());
}

/// Real exchanges recorded by another proxy (../shared/real-logs/llm-trace-proxy_wang0618: Claude
/// Code's streamed Anthropic calls, nanobot's OpenAI chat calls, Google ADK's Gemini calls) sent
/// again through `ctxlab capture`, the stand-in answering each request with the response that was
/// recorded for it: the agent receives the recorded bytes, the new capture holds the same
/// requests and responses, and reads back into the same calls, usage and contexts as the original.
#[test]
fn real_recorded_exchanges_pass_through_and_read_back_the_same() {
    let real =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../shared/real-logs/llm-trace-proxy_wang0618");
    assert!(
        real.is_dir(),
        "{} is missing: the real logs must be beside the project",
        real.display()
    );
    for (name, api) in [
        ("claude-code.jsonl", Api::Anthropic),
        ("nanobot.jsonl", Api::OpenAi),
        ("adk-deepresearch.jsonl", Api::Gemini),
    ] {
        let original = real.join(name);
        let text = std::fs::read_to_string(&original).unwrap();
        let lines: Vec<Value> = text
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect();
        // The bodies as they were written (not re-serialized: spacing inside a tool call's JSON
        // is part of what the model was sent).
        #[derive(serde::Deserialize)]
        struct Raw<'a> {
            #[serde(borrow)]
            request: &'a serde_json::value::RawValue,
            #[serde(borrow)]
            response: &'a serde_json::value::RawValue,
        }
        let raws: Vec<Raw> = text
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect();
        let dir = tempfile::tempdir().unwrap();
        let out = dir.path().join("out");
        rt().block_on(async {
            let (up_addr, up) = start_upstream().await;
            let mut expected = Vec::new();
            for (l, raw) in lines.iter().zip(&raws) {
                let body = raw.request.get().as_bytes().to_vec();
                let (sse, bytes) = match l["response"]["sse_lines"].as_array() {
                    Some(sse) => (
                        true,
                        sse.iter()
                            .map(|x| x.as_str().unwrap())
                            .collect::<Vec<_>>()
                            .join("\n")
                            .into_bytes(),
                    ),
                    None => (false, raw.response.get().as_bytes().to_vec()),
                };
                expected.push(bytes.clone());
                up.recorded
                    .lock()
                    .unwrap()
                    .entry(body)
                    .or_default()
                    .push_back((sse, bytes));
            }
            let proxy = start_proxy(up_addr, &out).await;
            let c = client();
            let path = match api {
                Api::Anthropic => "/v1/messages",
                Api::OpenAi => "/v1/chat/completions",
                _ => "/v1beta/models/gemini-2.5-flash:generateContent",
            };
            for (raw, want) in raws.iter().zip(&expected) {
                let r = Request::post(format!("http://{}{path}", proxy.addr))
                    .header("content-type", "application/json")
                    .body(Full::new(Bytes::from(raw.request.get().to_string())))
                    .unwrap();
                let (status, got) = send(&c, r).await;
                assert_eq!(status, 200, "{name}");
                assert_eq!(&got, want, "{name}: the agent gets the recorded bytes");
            }
            proxy.shutdown().await;
        });
        // Every exchange recorded once, in order (by the proxy's sequence number), with the
        // request and response as they were.
        let mut recorded: Vec<(Value, String)> = capture_files(&out)
            .iter()
            .flat_map(|f| {
                std::fs::read_to_string(f)
                    .unwrap()
                    .lines()
                    .map(|l| (serde_json::from_str::<Value>(l).unwrap(), l.to_string()))
                    .collect::<Vec<_>>()
            })
            .collect();
        let seq = |v: &Value| -> u64 {
            v["id"]
                .as_str()
                .unwrap()
                .rsplit('-')
                .next()
                .unwrap()
                .parse()
                .unwrap()
        };
        recorded.sort_by_key(|(v, _)| seq(v));
        assert_eq!(recorded.len(), lines.len(), "{name}");
        for (i, (a, (b, _))) in lines.iter().zip(&recorded).enumerate() {
            assert_eq!(a["request"], b["request"], "{name} line {}", i + 1);
            assert_eq!(a["response"], b["response"], "{name} line {}", i + 1);
        }
        // The capture's lines, in the order they were recorded, as one file.
        let joined = dir.path().join(name);
        std::fs::write(
            &joined,
            recorded
                .iter()
                .map(|(_, l)| format!("{l}\n"))
                .collect::<String>(),
        )
        .unwrap();
        let a = ctxlab::formats::load_file(&original).unwrap();
        let b = ctxlab::formats::load_file(&joined).unwrap();
        assert_eq!(a.agents.len(), b.agents.len(), "{name}");
        assert_eq!(a.calls.len(), b.calls.len(), "{name}");
        for (x, y) in a.calls.iter().zip(&b.calls) {
            assert_eq!((x.agent, x.usage), (y.agent, y.usage), "{name}");
        }
        let context = |s: &ctxlab::model::Session| -> Vec<_> {
            s.messages
                .iter()
                .map(|m| (m.agent, m.role, m.parts.clone()))
                .collect()
        };
        let (ca, cb) = (context(&a), context(&b));
        let first = (0..ca.len().min(cb.len())).find(|&i| ca[i] != cb[i]);
        assert!(
            ca.len() == cb.len() && first.is_none(),
            "{name}: contexts differ: {} vs {} messages, first difference at {first:?}: {:?} vs {:?}",
            ca.len(),
            cb.len(),
            first.map(|i| (ca[i].0, ca[i].1, format!("{:?}", ca[i].2).chars().take(300).collect::<String>())),
            first.map(|i| (cb[i].0, cb[i].1, format!("{:?}", cb[i].2).chars().take(300).collect::<String>())),
        );
        assert_no_credentials(&out);
    }
}
