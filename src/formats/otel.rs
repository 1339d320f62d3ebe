//! OpenTelemetry GenAI spans: OTLP JSON exports (`{"resourceSpans": [...]}`, one per line or one
//! document) and the Python console exporter's dump (pretty-printed span objects separated by
//! blank lines, each span printed when it starts and again when it ends).
//!
//! Spans are deduplicated by span id, keeping the ended print. A `chat` (or `text_completion`,
//! `generate_content`) span is one call with `gen_ai.usage.input_tokens` / `output_tokens`; its
//! agent is `gen_ai.agent.name` of the nearest `invoke_agent` span above it. `invoke_agent` usage
//! is the sum of its calls and is not counted again. When the spans carry
//! `gen_ai.input.messages` / `gen_ai.output.messages`, the messages are read (a call whose input
//! does not extend what its agent last sent restarts the agent's context); otherwise the session is
//! usage-only.

use std::collections::HashMap;
use std::path::Path;

use serde_json::{Map, Value};

use super::de::bad_usage_values;
use super::time::parse_ms;
use crate::model::*;
use crate::Result;

pub const ID: &str = "otel-genai";

const CALL_OPS: &[&str] = &["chat", "text_completion", "generate_content"];

struct Span {
    id: String,
    parent: Option<String>,
    start: Option<i64>,
    ended: bool,
    attrs: Map<String, Value>,
    line: u32,
}

fn nanos_ms(v: &Value) -> Option<i64> {
    let n = v
        .as_str()
        .and_then(|s| s.parse::<u64>().ok())
        .or_else(|| v.as_u64())?;
    i64::try_from(n / 1_000_000).ok()
}

/// OTLP attribute lists `[{key, value: {stringValue|intValue|...}}]` as a plain map.
fn otlp_attrs(list: &Value) -> Map<String, Value> {
    let mut out = Map::new();
    for a in list.as_array().into_iter().flatten() {
        let Some(k) = a["key"].as_str() else { continue };
        let v = &a["value"];
        let val = if let Some(s) = v["stringValue"].as_str() {
            Value::String(s.into())
        } else if let Some(i) = v["intValue"].as_str().and_then(|s| s.parse::<u64>().ok()) {
            Value::from(i)
        } else if let Some(i) = v["intValue"].as_str().and_then(|s| s.parse::<i64>().ok()) {
            // Negative: kept, so that a usage attribute holding it is reported.
            Value::from(i)
        } else if v["intValue"].is_number() {
            v["intValue"].clone()
        } else if let Some(f) = v["intValue"].as_str().and_then(|s| s.parse::<f64>().ok()) {
            // Not an integer: kept as a number, for the same reason.
            Value::from(f)
        } else if let Some(d) = v.get("doubleValue") {
            d.clone()
        } else {
            continue;
        };
        out.insert(k.to_string(), val);
    }
    out
}

fn collect(v: Value, line: u32, spans: &mut Vec<Span>) -> bool {
    if let Some(rs) = v.get("resourceSpans").and_then(Value::as_array) {
        for r in rs {
            for ss in r["scopeSpans"].as_array().into_iter().flatten() {
                for sp in ss["spans"].as_array().into_iter().flatten() {
                    spans.push(Span {
                        id: sp["spanId"].as_str().unwrap_or("").to_string(),
                        parent: sp["parentSpanId"]
                            .as_str()
                            .filter(|p| !p.is_empty())
                            .map(String::from),
                        start: nanos_ms(&sp["startTimeUnixNano"]),
                        ended: nanos_ms(&sp["endTimeUnixNano"]).is_some_and(|t| t > 0),
                        attrs: otlp_attrs(&sp["attributes"]),
                        line,
                    });
                }
            }
        }
        return true;
    }
    if let Some(ctx) = v.get("context").filter(|c| c.get("span_id").is_some()) {
        spans.push(Span {
            id: ctx["span_id"].as_str().unwrap_or("").to_string(),
            parent: v["parent_id"].as_str().map(String::from),
            start: v["start_time"].as_str().and_then(parse_ms),
            ended: v["end_time"].as_str().is_some(),
            attrs: v["attributes"].as_object().cloned().unwrap_or_default(),
            line,
        });
        return true;
    }
    false
}

pub fn read(path: &Path) -> Result<Session> {
    // Newlines are counted as serde_json pulls bytes (positions inside a stream of multi-line
    // objects); invalid UTF-8 is repaired on the way (`utf8`).
    let mut src = super::doc::Src::open(path)?;
    let newlines = src.newlines();
    let mut s = Session::default();
    s.source.format = ID.into();
    s.source.files.push(path.display().to_string());
    let mut spans = Vec::new();
    {
        let mut stream = serde_json::Deserializer::from_reader(&mut src).into_iter::<Value>();
        loop {
            match stream.next() {
                None => break,
                Some(Ok(v)) => {
                    // serde_json reads byte by byte: the count stands at the object's last line.
                    let line = newlines.get() + 1;
                    if !collect(v, line, &mut spans) {
                        s.warn(
                            SourcePos { file: 0, line },
                            "expected a span or an OTLP export (`resourceSpans`); skipped",
                        );
                    }
                }
                Some(Err(e)) => {
                    s.warn(
                        SourcePos {
                            file: 0,
                            line: e.line() as u32,
                        },
                        format!("expected a span object: {e}; the rest of the file is not read"),
                    );
                    break;
                }
            }
        }
    }
    let (bytes, hash, fix) = src.finish();
    s.source.bytes = bytes;
    s.source.hash = hash;
    fix.warn(&mut s, 0);
    s.id = path
        .file_stem()
        .map(|x| x.to_string_lossy().into_owned())
        .unwrap_or_default();
    build(&mut s, spans);
    Ok(s)
}

fn build(s: &mut Session, spans: Vec<Span>) {
    // The ended print of a span wins over its start print.
    let mut by_id: HashMap<String, Span> = HashMap::new();
    let mut order: Vec<String> = Vec::new();
    for sp in spans {
        match by_id.get(&sp.id) {
            Some(old) if old.ended && !sp.ended => {}
            Some(_) => {
                by_id.insert(sp.id.clone(), sp);
            }
            None => {
                order.push(sp.id.clone());
                by_id.insert(sp.id.clone(), sp);
            }
        }
    }
    let op = |sp: &Span| {
        sp.attrs
            .get("gen_ai.operation.name")
            .and_then(Value::as_str)
            .map(String::from)
    };
    let mut calls: Vec<&Span> = order
        .iter()
        .filter_map(|i| by_id.get(i))
        .filter(|sp| op(sp).is_some_and(|o| CALL_OPS.contains(&o.as_str())))
        .collect();
    calls.sort_by_key(|sp| sp.start);
    // Some frameworks (Microsoft Agent Framework) make `chat` a sibling of `invoke_agent`, not its
    // child: the agent is then the invocation under the same parent that started last before it.
    let mut invocations: HashMap<&str, Vec<(Option<i64>, String)>> = HashMap::new();
    for sp in by_id.values() {
        if let (Some(p), Some(n)) = (
            sp.parent.as_deref(),
            sp.attrs.get("gen_ai.agent.name").and_then(Value::as_str),
        ) {
            invocations
                .entry(p)
                .or_default()
                .push((sp.start, n.to_string()));
        }
    }
    for list in invocations.values_mut() {
        list.sort();
    }
    let mut with_text = false;
    let mut contexts: HashMap<AgentIdx, Vec<(Role, Vec<Part>)>> = HashMap::new();
    for sp in calls {
        let name = agent_name(&by_id, &sp.id)
            .or_else(|| sibling_agent(&invocations, sp))
            .unwrap_or_else(|| "main".into());
        let agent = s.agent_index(&name);
        let pos = SourcePos {
            file: 0,
            line: sp.line,
        };
        let n = |k: &str| sp.attrs.get(k).and_then(Value::as_u64);
        const USAGE: [&str; 4] = [
            "gen_ai.usage.input_tokens",
            "gen_ai.usage.output_tokens",
            "gen_ai.usage.cache_read_input_tokens",
            "gen_ai.usage.cached_tokens",
        ];
        let bad = bad_usage_values(
            USAGE
                .iter()
                .filter_map(|&k| sp.attrs.get(k).map(|v| (k, v))),
        );
        if let Some(why) = &bad {
            s.warn(pos, why.clone());
        }
        let usage = n("gen_ai.usage.input_tokens")
            .filter(|_| bad.is_none())
            .map(|input| {
                let cached = n("gen_ai.usage.cache_read_input_tokens")
                    .or_else(|| n("gen_ai.usage.cached_tokens"))
                    .unwrap_or(0)
                    .min(input);
                Usage {
                    input: input - cached,
                    output: n("gen_ai.usage.output_tokens").unwrap_or(0),
                    cache_read: cached,
                    ..Usage::default()
                }
            });
        let model = sp
            .attrs
            .get("gen_ai.response.model")
            .or_else(|| sp.attrs.get("gen_ai.request.model"))
            .and_then(Value::as_str)
            .map(String::from);
        if s.agents[agent].model.is_none() {
            s.agents[agent].model = model.clone();
        }
        let input = messages_attr(sp.attrs.get("gen_ai.input.messages"));
        if let Some(input) = input {
            with_text = true;
            let ctx = contexts.entry(agent).or_default();
            let extends = input.len() >= ctx.len() && input[..ctx.len()] == ctx[..];
            let from = if extends {
                ctx.len()
            } else {
                s.compactions.push(RecordedCompaction {
                    agent,
                    at_message: s.messages.len(),
                    trigger: "restart".into(),
                    pre_tokens: None,
                    summary: None,
                    kept_from: None,
                    timestamp: sp.start,
                    inferred: false,
                    source: pos,
                });
                0
            };
            for (role, parts) in &input[from..] {
                s.push_message(agent, *role, parts.clone(), sp.start, pos);
            }
            *ctx = input;
        }
        let context_end = s.messages.len();
        let output = messages_attr(sp.attrs.get("gen_ai.output.messages"));
        let reply = match output.and_then(|o| o.into_iter().next()) {
            Some((_, parts)) => {
                if let Some(ctx) = contexts.get_mut(&agent) {
                    ctx.push((Role::Assistant, parts.clone()));
                }
                Some(parts)
            }
            // Without text, an empty placeholder reply keeps calls in order.
            None => (!with_text).then(Vec::new),
        };
        let reply = reply.map(|parts| {
            s.messages.push(Message {
                agent,
                role: Role::Assistant,
                flags: MessageFlags {
                    meta: parts.is_empty(),
                    ..MessageFlags::default()
                },
                parts,
                timestamp: sp.start,
                source: pos,
            });
            context_end
        });
        s.calls.push(Call {
            agent,
            context_end,
            reply,
            usage,
            model,
            timestamp: sp.start,
            request_id: sp
                .attrs
                .get("gen_ai.response.id")
                .and_then(Value::as_str)
                .map(String::from),
            source: pos,
        });
    }
    s.usage_only = !with_text;
}

fn sibling_agent(
    invocations: &HashMap<&str, Vec<(Option<i64>, String)>>,
    sp: &Span,
) -> Option<String> {
    let list = invocations.get(sp.parent.as_deref()?)?;
    list.iter()
        .rev()
        .find(|(start, _)| *start <= sp.start)
        .or(list.first())
        .map(|(_, n)| n.clone())
}

/// `gen_ai.agent.name` of the span or its nearest ancestor that has one.
fn agent_name(by_id: &HashMap<String, Span>, id: &str) -> Option<String> {
    let mut id = Some(id);
    // A bound on the walk: a parent cycle in a corrupt file must not hang the reader.
    for _ in 0..1000 {
        let sp = by_id.get(id?)?;
        if let Some(n) = sp.attrs.get("gen_ai.agent.name").and_then(Value::as_str) {
            return Some(n.to_string());
        }
        id = sp.parent.as_deref();
    }
    None
}

/// `gen_ai.input.messages` / `gen_ai.output.messages`: a JSON string (or array) of
/// `{role, parts: [{type: text, content} | {type: tool_call, id, name, arguments} |
/// {type: tool_call_response, id, response}]}`.
fn messages_attr(v: Option<&Value>) -> Option<Vec<(Role, Vec<Part>)>> {
    let v = v?;
    let parsed;
    let list = match v {
        Value::String(s) => {
            parsed = serde_json::from_str::<Value>(s).ok()?;
            parsed.as_array()?
        }
        Value::Array(a) => a,
        _ => return None,
    };
    let mut out = Vec::new();
    for m in list {
        let mut parts = Vec::new();
        for p in m["parts"].as_array().into_iter().flatten() {
            let text = |k: &str| match &p[k] {
                Value::String(s) => s.clone(),
                Value::Null => String::new(),
                other => other.to_string(),
            };
            match p["type"].as_str().unwrap_or("") {
                "text" => parts.push(Part::Text {
                    text: text("content"),
                }),
                "reasoning" => parts.push(Part::Thinking {
                    text: text("content"),
                }),
                "tool_call" => parts.push(Part::ToolCall {
                    id: text("id"),
                    name: text("name"),
                    args: text("arguments"),
                }),
                "tool_call_response" => parts.push(Part::ToolResult {
                    call_id: text("id"),
                    content: text("response"),
                    is_error: false,
                }),
                _ => {}
            }
        }
        let role = match m["role"].as_str().unwrap_or("") {
            "system" => Role::System,
            "assistant" => Role::Assistant,
            "tool" => Role::Tool,
            _ if parts.iter().all(|p| matches!(p, Part::ToolResult { .. }))
                && !parts.is_empty() =>
            {
                Role::Tool
            }
            _ => Role::User,
        };
        out.push((role, parts));
    }
    Some(out)
}

/// A JSON line that is an OTLP export or a console-exporter span.
pub(crate) fn sniff(o: &Map<String, Value>) -> bool {
    o.contains_key("resourceSpans")
        || (o.get("context").is_some_and(|c| c.get("span_id").is_some()) && o.contains_key("name"))
}

/// The start of a pretty-printed span dump or OTLP document.
pub(crate) fn sniff_head(head: &str) -> bool {
    head.contains("\"resourceSpans\"")
        || (head.contains("\"span_id\"") && head.contains("\"trace_id\""))
}
