//! OpenCode sessions (sst/opencode), in the three shapes OpenCode keeps them:
//! - the `opencode export` JSON `{info: <session>, messages: [{info: <message>, parts: [...]}]}`,
//!   streamed message by message;
//! - the SQLite store `~/.local/share/opencode/opencode.db` (the default of current versions:
//!   tables `session`, `message` and `part`, each row's object in a JSON `data` column), read row
//!   by row; a database holds many sessions;
//! - the older JSON-file storage `storage/session/<project>/<session>.json`,
//!   `storage/message/<session>/<message>.json`, `storage/part/<message>/<part>.json`.
//!
//! All three hold the same objects (`packages/opencode/src/session/message-v2.ts`), and one
//! builder turns them into the session: a user message is a user turn; an assistant message holds
//! one or more **steps**, each `step-start` … `step-finish` pair being one model call whose usage
//! and cost are on the `step-finish`; the tool parts of a step are its calls, and their outputs are
//! sent with the next request. A user message with a `compaction` part followed by an assistant
//! message with `summary: true` is a recorded compaction (`filterCompacted`). Child sessions
//! (`parentID`, started by the `task` tool) are agents of their parent where the store has them.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use serde_json::Value;

use super::de::bad_usage_values;
use super::time::parse_ms;
use crate::model::*;
use crate::{Error, Result};

pub const ID: &str = "opencode";

/// What OpenCode sends for a compaction part (`MessageV2.toModelMessages`).
const COMPACTION_TEXT: &str = "What did we do so far?";
/// What OpenCode sends for a tool output pruned by `SessionCompaction.prune`.
const PRUNED_TEXT: &str = "[Old tool result content cleared]";

/// One message and its parts, as every shape gives them.
struct Msg {
    info: Value,
    parts: Vec<Value>,
    pos: SourcePos,
}

fn ms(v: &Value) -> Option<i64> {
    v.as_i64().or_else(|| v.as_str().and_then(parse_ms))
}

/// Usage of a step (`step-finish.tokens`) or of a message (`info.tokens`). `input` is the
/// uncached input in every version; `output` excludes the reasoning in current versions
/// (`getUsage`: `outputTokens - reasoningTokens`) and included it in older ones, so the output is
/// taken from `total` (always input + cache + all output) when it adds up.
/// `Some(Err)`: the warning for a figure that is not a token count (`de::bad_usage`).
fn usage(t: &Value) -> Option<std::result::Result<Usage, String>> {
    if !t.is_object() {
        return None;
    }
    if let Some(why) = bad_usage_values([
        ("tokens.input", &t["input"]),
        ("tokens.output", &t["output"]),
        ("tokens.reasoning", &t["reasoning"]),
        ("tokens.total", &t["total"]),
        ("tokens.cache.read", &t["cache"]["read"]),
        ("tokens.cache.write", &t["cache"]["write"]),
    ]) {
        return Some(Err(why));
    }
    let n = |v: &Value| v.as_u64().unwrap_or(0);
    let input = n(&t["input"]);
    let cache_read = n(&t["cache"]["read"]);
    let cache_write = n(&t["cache"]["write"]);
    let counted = input.saturating_add(cache_read).saturating_add(cache_write);
    let output = match t["total"].as_u64() {
        Some(total) if total >= counted && total > 0 => total - counted,
        _ => n(&t["output"]).saturating_add(n(&t["reasoning"])),
    };
    if counted == 0 && output == 0 {
        return None;
    }
    Some(Ok(Usage {
        input,
        output,
        cache_read,
        cache_write_5m: cache_write,
        cache_write_1h: 0,
    }))
}

/// The reasoning tokens a step recorded (`tokens.reasoning`; 0 where the provider does not split
/// them out of the output, as Anthropic's does not).
fn reasoning_tokens(t: &Value) -> u64 {
    t["reasoning"].as_u64().unwrap_or(0)
}

/// A usage read by `usage`, or a warning at `pos` and none.
fn recorded(
    s: &mut Session,
    u: Option<std::result::Result<Usage, String>>,
    pos: SourcePos,
) -> Option<Usage> {
    match u? {
        Ok(u) => Some(u),
        Err(why) => {
            s.warn(pos, why);
            None
        }
    }
}

/// What a step's reply holds that the export does not show.
#[derive(Clone, Copy)]
struct Hidden {
    signature: u64,
    reasoning: u64,
    anthropic: bool,
}

/// Builds one agent's messages and calls from OpenCode messages in order.
struct Builder<'s> {
    s: &'s mut Session,
    agent: AgentIdx,
    /// The compaction request (`compaction` part) waiting for its summary, and its tail start.
    compaction: Option<(MsgIdx, Option<String>, bool, SourcePos)>,
    /// Message id → index of its first model message (for `tail_start_id`).
    by_id: HashMap<String, MsgIdx>,
    /// Child sessions started by `task` calls: child session id → the call id.
    pub children: Vec<(String, String)>,
}

impl<'s> Builder<'s> {
    fn new(s: &'s mut Session, agent: AgentIdx) -> Self {
        Builder {
            s,
            agent,
            compaction: None,
            by_id: HashMap::new(),
            children: Vec::new(),
        }
    }

    fn push(&mut self, role: Role, parts: Vec<Part>, ts: Option<i64>, pos: SourcePos) -> MsgIdx {
        self.s.push_message(self.agent, role, parts, ts, pos)
    }

    fn message(&mut self, m: Msg) {
        let info = &m.info;
        let id = info["id"].as_str().unwrap_or("").to_string();
        let ts = ms(&info["time"]["created"]);
        let first = self.s.messages.len();
        match info["role"].as_str() {
            Some("user") => self.user(&m, ts),
            Some("assistant") => self.assistant(&m, ts),
            other => {
                self.s.warn(
                    m.pos,
                    format!(
                        "message {id}: role {} is not user or assistant; skipped",
                        other.map_or("missing or not a string".to_string(), |r| format!("{r:?}"))
                    ),
                );
                return;
            }
        }
        if self.s.messages.len() > first {
            self.by_id.entry(id).or_insert(first);
        }
    }

    fn user(&mut self, m: &Msg, ts: Option<i64>) {
        let mut parts = Vec::new();
        let mut compaction = None;
        for p in &m.parts {
            match p["type"].as_str().unwrap_or("") {
                "text" if p["ignored"].as_bool() != Some(true) => {
                    if let Some(t) = p["text"].as_str() {
                        parts.push(Part::Text { text: t.into() });
                    }
                }
                "file" => {
                    let mime = p["mime"].as_str().unwrap_or("");
                    if mime.starts_with("image/") || mime == "application/pdf" {
                        let url = p["url"].as_str().unwrap_or("");
                        let (media_type, bytes) = super::de::data_url_image(url);
                        parts.push(Part::Image {
                            media_type: if media_type.is_empty() {
                                mime.into()
                            } else {
                                media_type
                            },
                            bytes,
                        });
                    }
                }
                "compaction" => {
                    parts.push(Part::Text {
                        text: COMPACTION_TEXT.into(),
                    });
                    compaction = Some((
                        p["tail_start_id"].as_str().map(String::from),
                        p["auto"].as_bool().unwrap_or(false),
                    ));
                }
                _ => {}
            }
        }
        let i = self.push(Role::User, parts, ts, m.pos);
        if let Some((tail, auto)) = compaction {
            self.compaction = Some((i, tail, auto, m.pos));
        }
    }

    fn assistant(&mut self, m: &Msg, ts: Option<i64>) {
        let info = &m.info;
        let model = info["modelID"].as_str().map(String::from);
        let summary = info["summary"].as_bool() == Some(true);
        let first = self.s.messages.len();
        // The steps of the message; parts before any step-start (older versions write none)
        // form one step whose usage is the message's.
        let mut step: Vec<Part> = Vec::new();
        let mut results: Vec<Part> = Vec::new();
        let mut started = false;
        let mut steps = 0;
        let mut step_ts = ts;
        // Hidden reasoning of the open step: Anthropic signature characters, else the reasoning
        // tokens its step-finish records.
        let mut signature = 0u64;
        let provider = info["providerID"].as_str().unwrap_or("");
        for p in &m.parts {
            match p["type"].as_str().unwrap_or("") {
                "step-start" => {
                    if started || !step.is_empty() {
                        // A step without its step-finish (interrupted): a call without usage.
                        self.step(&mut step, &mut results, None, None, &model, step_ts, m.pos);
                        steps += 1;
                        signature = 0;
                    }
                    started = true;
                    step_ts = ms(&p["time"]["start"]).or(step_ts);
                }
                "step-finish" => {
                    let cost = p["cost"].as_f64().filter(|c| c.is_finite());
                    let u = recorded(self.s, usage(&p["tokens"]), m.pos);
                    let hidden = Hidden {
                        signature: std::mem::take(&mut signature),
                        reasoning: reasoning_tokens(&p["tokens"]),
                        anthropic: provider == "anthropic",
                    };
                    self.step(&mut step, &mut results, u, cost, &model, step_ts, m.pos);
                    self.size_reply(u, hidden, &model);
                    steps += 1;
                    started = false;
                }
                "text" => {
                    if let Some(t) = p["text"].as_str().filter(|t| !t.is_empty()) {
                        step.push(Part::Text { text: t.into() });
                    }
                }
                "reasoning" => {
                    signature += p["metadata"]["anthropic"]["signature"]
                        .as_str()
                        .map_or(0, |x| x.len() as u64);
                    if let Some(t) = p["text"].as_str().filter(|t| !t.is_empty()) {
                        step.push(Part::Thinking { text: t.into() });
                    }
                }
                "tool" => {
                    let call_id = p["callID"].as_str().unwrap_or("").to_string();
                    let state = &p["state"];
                    step.push(Part::ToolCall {
                        id: call_id.clone(),
                        name: p["tool"].as_str().unwrap_or("").into(),
                        args: if state["input"].is_null() {
                            "{}".into()
                        } else {
                            state["input"].to_string()
                        },
                    });
                    let status = state["status"].as_str().unwrap_or("");
                    let content = match status {
                        "completed" if !state["time"]["compacted"].is_null() => PRUNED_TEXT.into(),
                        "completed" => state["output"].as_str().unwrap_or("").to_string(),
                        "error" => state["error"].as_str().unwrap_or("").to_string(),
                        // Pending or running when the session stopped: OpenCode sends an error.
                        _ => "Tool execution was interrupted".into(),
                    };
                    results.push(Part::ToolResult {
                        call_id,
                        content,
                        is_error: status != "completed",
                    });
                    if p["tool"] == "task" {
                        if let Some(child) = state["metadata"]["sessionId"].as_str() {
                            let id = p["callID"].as_str().unwrap_or("").to_string();
                            self.children.push((child.to_string(), id));
                        }
                    }
                }
                _ => {}
            }
        }
        if !step.is_empty()
            || !results.is_empty()
            || (steps == 0 && usage(&info["tokens"]).is_some())
        {
            let (u, cost) = if steps == 0 {
                (
                    recorded(self.s, usage(&info["tokens"]), m.pos),
                    info["cost"].as_f64().filter(|c| c.is_finite() && *c > 0.0),
                )
            } else {
                (None, None)
            };
            self.step(&mut step, &mut results, u, cost, &model, step_ts, m.pos);
            if steps == 0 {
                let hidden = Hidden {
                    signature,
                    reasoning: reasoning_tokens(&info["tokens"]),
                    anthropic: provider == "anthropic",
                };
                self.size_reply(u, hidden, &model);
            }
        }
        if summary {
            self.summary(first);
        }
    }

    /// The size of the reply of the step just closed (its call is the last one): the output its
    /// step-finish recorded, which is final usage (OpenCode writes it once the stream ends), so
    /// everything the reply holds counts, the full thinking included where the export shows
    /// only its summary (the real sonnet-5 export: a reply cut at 32,000 output tokens shows
    /// ~25k characters, and the next call's input grew by 32.1k). Its hidden reasoning leaves
    /// the context at the next human message on the Claude models that keep only the current
    /// turn's thinking (`data/thinking.toml`) and on the other providers (reasoning kept until
    /// the next user message, as Codex does).
    fn size_reply(&mut self, usage: Option<Usage>, hidden: Hidden, model: &Option<String>) {
        let Some(u) = usage else { return };
        let Some(reply) = self.s.calls.last().and_then(|c| c.reply) else {
            return;
        };
        let m = &mut self.s.messages[reply];
        if hidden.anthropic {
            let turn_only = model.as_deref().is_some_and(|m| {
                super::claude_code::thinking_retention(m)
                    == super::claude_code::ThinkingRetention::Turn
            });
            super::claude_code::set_reply_size(m, hidden.signature, Some(u.output), turn_only);
        } else {
            m.flags.recorded_tokens = Some(u.output);
            m.flags.hidden_tokens = hidden.reasoning.min(u.output);
            m.flags.hidden_until_user = m.flags.hidden_tokens > 0;
        }
    }

    /// Closes a step: its assistant message, its call, then its tool results.
    #[allow(clippy::too_many_arguments)]
    fn step(
        &mut self,
        parts: &mut Vec<Part>,
        results: &mut Vec<Part>,
        usage: Option<Usage>,
        cost: Option<f64>,
        model: &Option<String>,
        ts: Option<i64>,
        pos: SourcePos,
    ) {
        let reply = self.push(Role::Assistant, std::mem::take(parts), ts, pos);
        self.s.calls.push(Call {
            agent: self.agent,
            context_end: reply,
            reply: Some(reply),
            usage,
            model: model.clone(),
            timestamp: ts,
            request_id: None,
            source: pos,
        });
        if let Some(usd) = cost {
            self.s.recorded_costs.push(RecordedCost {
                call: self.s.calls.len() - 1,
                usd,
            });
        }
        if !results.is_empty() {
            let r = std::mem::take(results);
            self.push(Role::Tool, r, ts, pos);
        }
    }

    /// The summary message (`summary: true`) after a compaction request: calls after it see the
    /// tail (from `tail_start_id`, else the request itself), the request and the summary.
    fn summary(&mut self, first: MsgIdx) {
        let last = self.s.messages.len();
        if first == last {
            return;
        }
        for m in &mut self.s.messages[first..last] {
            m.flags.is_summary = true;
        }
        let Some((request, tail, auto, pos)) = self.compaction.take() else {
            return;
        };
        let kept_from = tail
            .and_then(|t| self.by_id.get(&t).copied())
            .filter(|&k| k <= request)
            .unwrap_or(request);
        let pre_tokens = self
            .s
            .calls
            .iter()
            .rev()
            .filter(|c| c.agent == self.agent && c.context_end < first)
            .find_map(|c| c.usage.map(|u| u.context_tokens() + u.output));
        self.s.compactions.push(RecordedCompaction {
            agent: self.agent,
            at_message: last,
            trigger: if auto { "auto" } else { "manual" }.into(),
            pre_tokens,
            summary: Some(first),
            kept_from: Some(kept_from),
            timestamp: self.s.messages[first].timestamp,
            inferred: false,
            source: pos,
        });
    }
}

fn session_meta(s: &mut Session, info: &Value) {
    if let Some(id) = info["id"].as_str() {
        s.id = id.into();
    }
    if let Some(t) = info["title"].as_str() {
        s.title = Some(t.into());
    }
}

fn finish(s: &mut Session) {
    for a in 0..s.agents.len() {
        s.agents[a].model = s
            .calls
            .iter()
            .filter(|c| c.agent == a)
            .find_map(|c| c.model.clone());
    }
    if s.agents.len() > 1 {
        let order = super::claude_code::sort_calls_by_time(s);
        let mut new_of = vec![0; order.len()];
        for (new, old) in order.iter().enumerate() {
            new_of[*old] = new;
        }
        for c in &mut s.recorded_costs {
            c.call = new_of[c.call];
        }
        s.recorded_costs.sort_by_key(|c| c.call);
    }
}

// ------------------------------------------------------------------------------------------
// The export document

pub fn read(path: &Path) -> Result<Session> {
    if is_db(path) {
        return read_db(path, None);
    }
    let head = head(path)?;
    if sniff_session_file(&head) {
        return read_storage(path);
    }
    read_export(path)
}

fn head(path: &Path) -> Result<String> {
    use std::io::Read;
    let mut head = Vec::with_capacity(4096);
    std::fs::File::open(path)
        .and_then(|f| f.take(4096).read_to_end(&mut head))
        .map_err(|e| Error::io(path, e))?;
    Ok(String::from_utf8_lossy(&head).into_owned())
}

fn read_export(path: &Path) -> Result<Session> {
    use super::doc::Field;
    const WHAT: &str = "an OpenCode export {info, messages}";
    let mut s = Session::default();
    s.source.format = ID.into();
    s.source.files.push(path.display().to_string());
    let agent = s.agent_index("main");
    let mut b = Builder::new(&mut s, agent);
    let doc = super::doc::each_in_object(path, WHAT, "messages", &["info"], |f| match f {
        Field::Element(raw, pos) => match serde_json::from_str::<Value>(raw.get()) {
            Ok(mut v) if v["info"].is_object() => b.message(Msg {
                parts: match v["parts"].take() {
                    Value::Array(a) => a,
                    _ => Vec::new(),
                },
                info: v["info"].take(),
                pos,
            }),
            Ok(_) => {
                b.s.warn(pos, "expected an OpenCode message {info, parts}: no `info`")
            }
            Err(e) => b.s.warn(
                pos,
                format!("expected an OpenCode message {{info, parts}}: {e}"),
            ),
        },
        Field::Value(_, info) => session_meta(b.s, &info),
    })?;
    doc.settle(path, WHAT, "messages", &mut s)?;
    s.source.bytes = doc.bytes;
    s.source.hash = doc.hash;
    doc.fix.warn(&mut s, 0);
    finish(&mut s);
    Ok(s)
}

// ------------------------------------------------------------------------------------------
// The JSON-file storage

/// `storage/session/<project>/<session>.json` → the storage root.
fn storage_root(session_file: &Path) -> Option<PathBuf> {
    let root = session_file.parent()?.parent()?.parent()?;
    (root.join("message").is_dir()).then(|| root.to_path_buf())
}

fn sorted_json(dir: &Path) -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = std::fs::read_dir(dir)
        .map(|rd| {
            rd.filter_map(|e| e.ok().map(|e| e.path()))
                .filter(|p| p.extension().is_some_and(|x| x == "json"))
                .collect()
        })
        .unwrap_or_default();
    // OpenCode ids sort in creation order.
    v.sort();
    v
}

fn read_json(path: &Path) -> Result<(Vec<u8>, Value)> {
    let bytes = std::fs::read(path).map_err(|e| Error::io(path, e))?;
    let v = serde_json::from_slice(&bytes).map_err(|e| Error::Parse {
        path: path.to_path_buf(),
        line: e.line() as u32,
        message: format!("expected an OpenCode JSON object: {e}"),
    })?;
    Ok((bytes, v))
}

fn read_storage(path: &Path) -> Result<Session> {
    let (bytes, info) = read_json(path)?;
    let mut s = Session::default();
    s.source.format = ID.into();
    s.source.files.push(path.display().to_string());
    let mut hasher = blake3::Hasher::new();
    hasher.update(&bytes);
    s.source.bytes = bytes.len() as u64;
    session_meta(&mut s, &info);
    let root = storage_root(path);
    // The session, then its children (sessions whose parentID is it), breadth first.
    let mut queue: Vec<(String, AgentIdx)> = vec![(s.id.clone(), s.agent_index("main"))];
    let children_of = |root: &Path, parent: &str| -> Vec<(String, String)> {
        let mut out = Vec::new();
        let Some(proj) = path.parent() else {
            return out;
        };
        let _ = root;
        for f in sorted_json(proj) {
            if let Ok((_, v)) = read_json(&f) {
                if v["parentID"].as_str() == Some(parent) {
                    out.push((
                        v["id"].as_str().unwrap_or("").to_string(),
                        v["title"].as_str().unwrap_or("").to_string(),
                    ));
                }
            }
        }
        out
    };
    let mut qi = 0;
    while qi < queue.len() {
        let (ses, agent) = queue[qi].clone();
        qi += 1;
        let Some(root) = &root else { break };
        let mut b = Builder::new(&mut s, agent);
        for mf in sorted_json(&root.join("message").join(&ses)) {
            let file = b.s.source.files.len() as u32;
            let pos = SourcePos { file, line: 1 };
            let (mbytes, info) = match read_json(&mf) {
                Ok(x) => x,
                Err(e) => {
                    b.s.source.files.push(mf.display().to_string());
                    b.s.warn(SourcePos { file, line: 0 }, e.to_string());
                    continue;
                }
            };
            b.s.source.files.push(mf.display().to_string());
            hasher.update(&mbytes);
            b.s.source.bytes += mbytes.len() as u64;
            let mut parts = Vec::new();
            let mid = info["id"].as_str().unwrap_or("").to_string();
            for pf in sorted_json(&root.join("part").join(&mid)) {
                match read_json(&pf) {
                    Ok((pbytes, p)) => {
                        hasher.update(&pbytes);
                        b.s.source.bytes += pbytes.len() as u64;
                        parts.push(p);
                    }
                    Err(e) => b.s.warn(pos, format!("part {}: {e}", pf.display())),
                }
            }
            b.message(Msg { info, parts, pos });
        }
        let spawned = std::mem::take(&mut b.children);
        for (child, title) in children_of(root, &ses) {
            let a = s.agent_index(&child);
            s.agents[a].parent = Some(agent);
            s.agents[a].name = if title.is_empty() {
                child.clone()
            } else {
                title
            };
            s.agents[a].spawned_by = spawned
                .iter()
                .find(|(c, _)| *c == child)
                .map(|(_, call)| call.clone());
            queue.push((child, a));
        }
    }
    if root.is_none() {
        s.warn(
            SourcePos { file: 0, line: 0 },
            "no storage/message folder beside storage/session: the session's messages are not here",
        );
    }
    s.source.hash = hasher.finalize().to_hex().to_string();
    finish(&mut s);
    Ok(s)
}

/// Root sessions of a `storage` folder (`session/`, `message/`, `part/` beside each other), or
/// None when `dir` is not one. Child sessions are read with their parent.
pub(crate) fn storage_sessions(dir: &Path) -> Option<Vec<PathBuf>> {
    if !(dir.join("session").is_dir() && dir.join("message").is_dir() && dir.join("part").is_dir())
    {
        return None;
    }
    let mut out = Vec::new();
    let Ok(projects) = std::fs::read_dir(dir.join("session")) else {
        return Some(out);
    };
    let mut projects: Vec<PathBuf> = projects.filter_map(|e| e.ok().map(|e| e.path())).collect();
    projects.sort();
    for p in projects.into_iter().filter(|p| p.is_dir()) {
        for f in sorted_json(&p) {
            let is_child = head(&f)
                .ok()
                .and_then(|h| serde_json::from_str::<Value>(&h).ok())
                .is_some_and(|v| v["parentID"].is_string());
            if !is_child {
                out.push(f);
            }
        }
    }
    Some(out)
}

// ------------------------------------------------------------------------------------------
// The SQLite store

const SQLITE_MAGIC: &[u8] = b"SQLite format 3\0";

/// A SQLite database with OpenCode's `session`, `message` and `part` tables.
pub(crate) fn is_db(path: &Path) -> bool {
    use std::io::Read;
    let mut magic = [0u8; 16];
    let ok = std::fs::File::open(path)
        .and_then(|mut f| f.read_exact(&mut magic))
        .is_ok();
    if !ok || magic != SQLITE_MAGIC {
        return false;
    }
    open_db(path).is_ok_and(|c| {
        let n: i64 = c
            .query_row(
                "SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name IN ('session', 'message', 'part')",
                [],
                |r| r.get(0),
            )
            .unwrap_or(0);
        n == 3
    })
}

/// Whether the head of a file is SQLite's.
pub(crate) fn sniff_sqlite(head: &[u8]) -> bool {
    head.starts_with(SQLITE_MAGIC)
}

fn open_db(path: &Path) -> rusqlite::Result<rusqlite::Connection> {
    rusqlite::Connection::open_with_flags(
        path,
        rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY | rusqlite::OpenFlags::SQLITE_OPEN_NO_MUTEX,
    )
}

fn db_err(path: &Path, e: rusqlite::Error) -> Error {
    Error::Invalid(format!(
        "{}: reading the OpenCode database: {e}",
        path.display()
    ))
}

/// Root sessions of the database, most recently updated first.
fn db_roots(c: &rusqlite::Connection) -> rusqlite::Result<Vec<String>> {
    let mut st = c.prepare(
        "SELECT id FROM session WHERE parent_id IS NULL ORDER BY time_updated DESC, id DESC",
    )?;
    let rows = st.query_map([], |r| r.get::<_, String>(0))?;
    rows.collect()
}

/// Every root session of an OpenCode database, each with its child sessions as agents.
pub fn read_db_all(path: &Path) -> Result<Vec<Session>> {
    let c = open_db(path).map_err(|e| db_err(path, e))?;
    let roots = db_roots(&c).map_err(|e| db_err(path, e))?;
    roots
        .into_iter()
        .map(|id| read_db(path, Some(&id)))
        .collect()
}

/// One session of the database: `id`, or the most recently updated root session.
pub fn read_db(path: &Path, id: Option<&str>) -> Result<Session> {
    let c = open_db(path).map_err(|e| db_err(path, e))?;
    let id = match id {
        Some(id) => id.to_string(),
        None => db_roots(&c)
            .map_err(|e| db_err(path, e))?
            .into_iter()
            .next()
            .ok_or_else(|| {
                Error::Invalid(format!(
                    "{}: the OpenCode database holds no session",
                    path.display()
                ))
            })?,
    };
    let mut s = Session::default();
    s.source.format = ID.into();
    s.source.files.push(path.display().to_string());
    s.source.bytes = std::fs::metadata(path).map(|m| m.len()).unwrap_or(0);
    let mut hasher = blake3::Hasher::new();
    let (title, _) = c
        .query_row("SELECT title, id FROM session WHERE id = ?1", [&id], |r| {
            Ok((r.get::<_, Option<String>>(0)?, r.get::<_, String>(1)?))
        })
        .map_err(|e| db_err(path, e))?;
    s.id = id.clone();
    s.title = title;
    let mut queue: Vec<(String, AgentIdx)> = vec![(id, s.agent_index("main"))];
    let mut qi = 0;
    while qi < queue.len() {
        let (ses, agent) = queue[qi].clone();
        qi += 1;
        let spawned =
            read_db_session(&c, &mut s, agent, &ses, &mut hasher).map_err(|e| db_err(path, e))?;
        let mut st = c
            .prepare("SELECT id, title FROM session WHERE parent_id = ?1 ORDER BY time_created, id")
            .map_err(|e| db_err(path, e))?;
        let kids: Vec<(String, Option<String>)> = st
            .query_map([&ses], |r| Ok((r.get(0)?, r.get(1)?)))
            .and_then(|rows| rows.collect())
            .map_err(|e| db_err(path, e))?;
        for (child, title) in kids {
            let a = s.agent_index(&child);
            s.agents[a].parent = Some(agent);
            s.agents[a].name = title.unwrap_or_else(|| child.clone());
            s.agents[a].spawned_by = spawned
                .iter()
                .find(|(c, _)| *c == child)
                .map(|(_, call)| call.clone());
            queue.push((child, a));
        }
    }
    // The hash covers what the session is made of (its rows), not the whole database, which
    // other sessions change.
    s.source.hash = hasher.finalize().to_hex().to_string();
    finish(&mut s);
    Ok(s)
}

/// Reads one session's messages and parts, row by row; returns the child sessions its `task`
/// calls started.
fn read_db_session(
    c: &rusqlite::Connection,
    s: &mut Session,
    agent: AgentIdx,
    ses: &str,
    hasher: &mut blake3::Hasher,
) -> rusqlite::Result<Vec<(String, String)>> {
    let mut msgs = c.prepare(
        "SELECT id, data, time_created FROM message WHERE session_id = ?1 ORDER BY time_created, id",
    )?;
    let mut parts = c.prepare("SELECT id, data FROM part WHERE message_id = ?1 ORDER BY id")?;
    let mut b = Builder::new(s, agent);
    let mut rows = msgs.query([ses])?;
    let mut n = 0u32;
    while let Some(row) = rows.next()? {
        n += 1;
        let mid: String = row.get(0)?;
        let data: String = row.get(1)?;
        hasher.update(data.as_bytes());
        // Rows have no lines: positions count the session's messages.
        let pos = SourcePos { file: 0, line: n };
        let mut info: Value = match serde_json::from_str(&data) {
            Ok(v) => v,
            Err(e) => {
                b.s.warn(
                    pos,
                    format!("message {mid}: expected an OpenCode message object: {e}"),
                );
                continue;
            }
        };
        if let Some(o) = info.as_object_mut() {
            o.insert("id".into(), Value::String(mid.clone()));
            if !o.contains_key("time") {
                let t: Option<i64> = row.get(2).ok();
                o.insert("time".into(), serde_json::json!({ "created": t }));
            }
        }
        let mut ps = Vec::new();
        let mut prow = parts.query([&mid])?;
        while let Some(p) = prow.next()? {
            let pid: String = p.get(0)?;
            let pdata: String = p.get(1)?;
            hasher.update(pdata.as_bytes());
            match serde_json::from_str::<Value>(&pdata) {
                Ok(mut v) => {
                    if let Some(o) = v.as_object_mut() {
                        o.insert("id".into(), Value::String(pid));
                    }
                    ps.push(v);
                }
                Err(e) => b.s.warn(
                    pos,
                    format!("part {pid}: expected an OpenCode part object: {e}"),
                ),
            }
        }
        b.message(Msg {
            info,
            parts: ps,
            pos,
        });
    }
    Ok(std::mem::take(&mut b.children))
}

// ------------------------------------------------------------------------------------------
// Sniffing

/// The start of an export: `{"info": {"id": "ses_…", …}, "messages": […]}`.
pub(crate) fn sniff_head(head: &str) -> bool {
    let compact: String = head
        .chars()
        .take(2048)
        .filter(|c| !c.is_whitespace())
        .collect();
    compact.starts_with("{\"info\":{\"id\":\"ses_") || sniff_session_file(head)
}

/// A `storage/session/<project>/<ses>.json` file: the session object itself.
fn sniff_session_file(head: &str) -> bool {
    let compact: String = head
        .chars()
        .take(2048)
        .filter(|c| !c.is_whitespace())
        .collect();
    compact.starts_with("{\"id\":\"ses_") && compact.contains("\"projectID\":")
}
