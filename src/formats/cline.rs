//! Cline task logs: `ui_messages.json` (what the extension shows: a JSON array of `say`/`ask`
//! events) and, when it sits beside it, `api_conversation_history.json` (the Anthropic-shaped
//! messages Cline sent).
//!
//! Each `say: api_req_started` event is one model call; its `text` is JSON with the request's new
//! user content (`request`) and the usage (`tokensIn`, `tokensOut`, `cacheWrites`, `cacheReads`,
//! `cost`). With the conversation history beside it, the messages come from there and the k-th
//! assistant message is the reply of the k-th call. Without it, the context is rebuilt from the UI
//! log: the request text is the user turn, and the reasoning, text and tool events that follow are
//! the reply. Both files are JSON documents and are read whole.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use serde_json::value::RawValue;
use serde_json::Value;

use super::claude_code::{push_blocks, user_role, Block};
use super::de::{bad_usage_values, StrOrBlocks};
use super::utf8::{read_lossy, Lossy};
use crate::model::*;
use crate::{Error, Result};

pub const ID: &str = "cline";

pub(crate) const HISTORY: &str = "api_conversation_history.json";
pub(crate) const UI: &str = "ui_messages.json";
/// Cline's per-task metadata (files in context, model usage per mode): not a log.
pub(crate) const TASK_METADATA: &str = "task_metadata.json";

/// A file of a task folder that is read with `ui_messages.json`, never on its own.
pub(crate) fn is_task_companion(path: &Path) -> bool {
    path.file_name()
        .is_some_and(|n| n == HISTORY || n == TASK_METADATA)
        && path.with_file_name(UI).is_file()
}

/// A Cline task file: one JSON array, read whole (invalid UTF-8 repaired, see `utf8`).
fn read_doc(path: &Path, hasher: &mut blake3::Hasher) -> Result<(Lossy, Vec<Value>)> {
    let doc = read_lossy(path, hasher)?;
    let v: Vec<Value> = serde_json::from_str(&doc.text).map_err(|e| Error::Parse {
        path: path.to_path_buf(),
        line: e.line() as u32,
        message: format!("expected a JSON array of Cline messages: {e}"),
    })?;
    Ok((doc, v))
}

struct ApiReq {
    /// `Err`: the warning for a figure that is not a token count.
    usage: std::result::Result<Usage, String>,
    cost: Option<f64>,
    request: String,
    model: Option<String>,
    ts: Option<i64>,
    /// `conversationHistoryIndex`: the history held this index + 2 messages when the reply came
    /// (the request's user message is appended at index + 1, the reply at index + 2).
    history_index: Option<i64>,
    /// `conversationHistoryDeletedRange` in force for this request (stamped on the UI messages
    /// written while it ran).
    deleted: Option<(u64, u64)>,
    /// `cancelReason`: the stream broke off (`streaming_failed`) or the user stopped it; its
    /// `tokensOut` is then what had arrived, not the reply's size.
    cancel: Option<String>,
}

fn api_req(e: &Value) -> Option<ApiReq> {
    let info: Value = serde_json::from_str(e["text"].as_str()?).ok()?;
    let n = |k: &str| info[k].as_u64().unwrap_or(0);
    let keys = ["tokensIn", "tokensOut", "cacheReads", "cacheWrites"];
    let usage = match bad_usage_values(keys.map(|k| (k, &info[k]))) {
        Some(why) => Err(format!("{UI} api_req_started: {why}")),
        None => Ok(Usage {
            input: n("tokensIn"),
            output: n("tokensOut"),
            cache_read: n("cacheReads"),
            cache_write_5m: n("cacheWrites"),
            cache_write_1h: 0,
        }),
    };
    Some(ApiReq {
        usage,
        cost: info["cost"].as_f64().filter(|c| c.is_finite()),
        request: info["request"].as_str().unwrap_or("").to_string(),
        model: e["modelInfo"]["modelId"].as_str().map(String::from),
        ts: e["ts"].as_i64(),
        history_index: e["conversationHistoryIndex"].as_i64(),
        deleted: None,
        cancel: info["cancelReason"].as_str().map(String::from),
    })
}

/// A request's usage, or a warning at `pos` and none.
fn recorded(
    s: &mut Session,
    usage: &std::result::Result<Usage, String>,
    pos: SourcePos,
) -> Option<Usage> {
    match usage {
        Ok(u) => Some(*u),
        Err(why) => {
            s.warn(pos, why.clone());
            None
        }
    }
}

fn deleted_range(e: &Value) -> Option<(u64, u64)> {
    let r = e.get("conversationHistoryDeletedRange")?.as_array()?;
    Some((r.first()?.as_u64()?, r.get(1)?.as_u64()?))
}

/// Reads a task: `ui_messages.json`, with `api_conversation_history.json` beside it when there is
/// one. Either file may be the one opened.
pub fn read(path: &Path) -> Result<Session> {
    let (ui, history) = if path.file_name().is_some_and(|n| n == HISTORY)
        || (!path.with_file_name(UI).eq(path) && sniff_history_file(path))
    {
        (path.with_file_name(UI), path.to_path_buf())
    } else {
        (path.to_path_buf(), path.with_file_name(HISTORY))
    };
    let mut s = Session::default();
    s.source.format = ID.into();
    s.id = path
        .parent()
        .and_then(|p| p.file_name())
        .map(|x| x.to_string_lossy().into_owned())
        .unwrap_or_default();
    let agent = s.agent_index("main");
    let mut hasher = blake3::Hasher::new();
    let mut calls = Vec::new();
    let mut events = Vec::new();
    let has_ui = ui.is_file();
    if has_ui {
        let (doc, ev) = read_doc(&ui, &mut hasher)?;
        s.source.bytes = doc.bytes;
        s.source.files.push(ui.display().to_string());
        doc.fix.warn(&mut s, 0);
        s.title = ev
            .iter()
            .find(|e| e["say"] == "task")
            .and_then(|e| e["text"].as_str())
            .map(|t| t.lines().next().unwrap_or("").chars().take(80).collect());
        let mut range = None;
        for e in &ev {
            if e["say"] == "api_req_started" {
                if let Some(last) = calls.last_mut() {
                    let last: &mut ApiReq = last;
                    last.deleted = range;
                }
                if let Some(c) = api_req(e) {
                    calls.push(c);
                }
            }
            if e.get("conversationHistoryDeletedRange").is_some() {
                range = deleted_range(e);
            }
        }
        if let Some(last) = calls.last_mut() {
            last.deleted = range;
        }
        events = ev;
    }
    if history.is_file() {
        let file = s.source.files.len() as u32;
        s.source.files.push(history.display().to_string());
        let (bytes, hash) = from_history(&mut s, agent, &history, file, &calls, has_ui, hasher)?;
        s.source.bytes += bytes;
        s.source.hash = hash;
    } else if has_ui {
        from_ui(&mut s, agent, &events, &calls);
        s.source.hash = hasher.finalize().to_hex().to_string();
    } else {
        return Err(Error::Invalid(format!(
            "{}: a Cline task needs {UI} or {HISTORY}",
            path.display()
        )));
    }
    if s.id.is_empty() {
        s.id = "cline-task".into();
    }
    Ok(s)
}

/// A user text block that reports a tool's result as Cline writes it:
/// `[read_file for 'x'] Result:` or `Tool [read_file] was not executed because …`.
fn text_tool_result(text: &str) -> Option<(&str, bool)> {
    let first = text.lines().next()?;
    if let Some(rest) = first.strip_prefix('[') {
        let end = rest.find(']')?;
        if !rest[end..].starts_with("] Result:") {
            return None;
        }
        let name = rest[..end].split(' ').next()?;
        return Some((name, false));
    }
    let rest = first.strip_prefix("Tool [")?;
    let end = rest.find(']')?;
    rest[end..]
        .starts_with("] was not executed")
        .then(|| (&rest[..end], true))
}

/// Streams the history, pairing text tool results with their `tool_use`, giving each reply its
/// call, and turning each change of the deleted range into a recorded compaction.
fn from_history(
    s: &mut Session,
    agent: AgentIdx,
    history: &PathBuf,
    file: u32,
    calls: &[ApiReq],
    has_ui: bool,
    hasher: blake3::Hasher,
) -> Result<(u64, String)> {
    // The reply of each request: by its history index, else the k-th reply.
    let by_index = calls.iter().all(|c| c.history_index.is_some());
    let mut replies: HashMap<usize, Vec<usize>> = HashMap::new();
    if by_index {
        for (k, c) in calls.iter().enumerate() {
            let at = (c.history_index.unwrap_or(-2) + 2).max(0) as usize;
            replies.entry(at).or_default().push(k);
        }
    }
    let mut k_next = 0usize;
    // History index → the message holding it now (copies after a truncation move it).
    let mut at_index: Vec<Option<MsgIdx>> = Vec::new();
    let mut open_calls: Vec<(String, String)> = Vec::new();
    let mut range_now: Option<(u64, u64)> = None;
    let mut used = 0usize;
    let mut each = |raw: Box<RawValue>, pos: SourcePos| {
        let i = at_index.len();
        let m: Value = match serde_json::from_str(raw.get()) {
            Ok(v) => v,
            Err(e) => {
                s.warn(pos, format!("expected a Cline history message: {e}"));
                return;
            }
        };
        let raw_content = m["content"].to_string();
        let content: StrOrBlocks<Block<'_>> =
            serde_json::from_str(&raw_content).unwrap_or_default();
        let mut parts = Vec::new();
        push_blocks(content, &mut parts);
        let role = match m["role"].as_str() {
            Some("assistant") => Role::Assistant,
            Some("user") => {
                pair_text_results(&mut parts, &mut open_calls);
                user_role(&parts)
            }
            other => {
                s.warn(
                    pos,
                    format!(
                        "message {i}: role {} is not user or assistant; skipped",
                        other.map_or("missing or not a string".to_string(), |r| format!("{r:?}"))
                    ),
                );
                at_index.push(None);
                return;
            }
        };
        // Calls answered by this message (by index), in order.
        let mine: Vec<usize> = if role != Role::Assistant {
            Vec::new()
        } else if by_index {
            replies.remove(&i).unwrap_or_default()
        } else if has_ui && k_next < calls.len() {
            k_next += 1;
            vec![k_next - 1]
        } else {
            Vec::new()
        };
        // A truncation decided while this request was prepared: the history it sent is the kept
        // messages, copied after a boundary.
        if let Some(&k) = mine.first() {
            let range = calls[k].deleted;
            if range != range_now {
                if range.is_some() {
                    let none = HashMap::new();
                    truncate(
                        s,
                        agent,
                        &mut at_index,
                        range,
                        true,
                        &none,
                        calls[k].ts,
                        pos,
                    );
                }
                range_now = range;
            }
        }
        let mi = s.messages.len();
        if role == Role::Assistant {
            open_calls = parts
                .iter()
                .filter_map(|p| match p {
                    Part::ToolCall { id, name, .. } => Some((id.clone(), name.clone())),
                    _ => None,
                })
                .collect();
        }
        s.push_message(agent, role, parts, m["ts"].as_i64(), pos);
        at_index.push(Some(mi));
        if role != Role::Assistant {
            return;
        }
        // Without usage from the UI log, Cline's own per-message metrics: `prompt` uncached,
        // `cached` the cache reads and writes together.
        let t = &m["metrics"]["tokens"];
        let metrics = |s: &mut Session| {
            if !t.is_object() {
                return None;
            }
            let keys = ["prompt", "completion", "cached"];
            if let Some(why) = bad_usage_values(keys.map(|k| (k, &t[k]))) {
                s.warn(pos, format!("metrics.tokens: {why}"));
                return None;
            }
            Some(Usage {
                input: t["prompt"].as_u64().unwrap_or(0),
                output: t["completion"].as_u64().unwrap_or(0),
                cache_read: t["cached"].as_u64().unwrap_or(0),
                ..Usage::default()
            })
        };
        let model = m["modelInfo"]["modelId"].as_str().map(String::from);
        if mine.is_empty() {
            let usage = if has_ui { None } else { metrics(s) };
            s.calls.push(Call {
                agent,
                context_end: mi,
                reply: Some(mi),
                usage,
                model,
                timestamp: m["ts"].as_i64(),
                request_id: None,
                source: pos,
            });
            return;
        }
        let last = mine.len() - 1;
        for (j, &k) in mine.iter().enumerate() {
            let c = &calls[k];
            used += 1;
            let usage = recorded(s, &c.usage, pos);
            // The request's `tokensOut` is its final output: the reply weighs it (hidden
            // thinking included), as every reader with final usage does.
            // A request whose stream broke off: the history holds what Cline kept of it.
            if let (true, None, Some(u)) = (j == last, &c.cancel, usage) {
                s.messages[mi].flags.recorded_tokens = Some(u.output);
            }
            s.calls.push(Call {
                agent,
                context_end: mi,
                // A retried request: only the last attempt's reply is in the history.
                reply: (j == last).then_some(mi),
                usage,
                model: c.model.clone().or(model.clone()),
                timestamp: c.ts,
                request_id: None,
                source: pos,
            });
            if let Some(usd) = c.cost {
                s.recorded_costs.push(RecordedCost {
                    call: s.calls.len() - 1,
                    usd,
                });
            }
        }
    };
    let (bytes, hash, broken, fix) = super::doc::each_element(history, file, hasher, &mut each)?;
    fix.warn(s, file);
    let pos = SourcePos { file, line: 0 };
    if let Some((line, e)) = broken {
        if s.messages.is_empty() {
            return Err(Error::Parse {
                path: history.clone(),
                line,
                message: format!("expected a JSON array of Cline history messages: {e}"),
            });
        }
        s.warn(
            SourcePos { file, line },
            format!("the JSON document breaks off here ({e}); the messages before it are kept"),
        );
    }
    if used < calls.len() {
        s.warn(
            pos,
            format!(
                "{} api_req_started events but only {used} found their reply in {HISTORY}: the others are not calls",
                calls.len()
            ),
        );
    }
    set_model(s, agent);
    Ok((bytes, hash))
}

/// Cline's truncation (`ContextManager.getNextTruncationRange`): the history it sends is the
/// messages outside the deleted range `[start, end]` (inclusive; the task and its first reply,
/// indices 0 and 1, always stay), with the texts `rewrite` gives (history index → text: the file
/// reads Cline deduplicated). `new_range`: the range is new here (a truncation), else only the
/// texts changed (a deduplication, inferred). Recorded as a compaction at the end of the messages read so far,
/// after which the kept ones are copied; `at_index` maps each history index to the message
/// holding it now.
fn truncate(
    s: &mut Session,
    agent: AgentIdx,
    at_index: &mut [Option<MsgIdx>],
    range: Option<(u64, u64)>,
    new_range: bool,
    rewrite: &HashMap<usize, String>,
    timestamp: Option<i64>,
    source: SourcePos,
) {
    let pre_tokens = s
        .calls
        .iter()
        .rev()
        .find_map(|c| c.usage.map(|u| u.context_tokens() + u.output));
    let at = s.messages.len();
    s.compactions.push(RecordedCompaction {
        agent,
        at_message: at,
        trigger: if new_range {
            "truncation"
        } else {
            "file-read dedup"
        }
        .into(),
        pre_tokens,
        summary: None,
        kept_from: None,
        timestamp,
        inferred: !new_range,
        source,
    });
    for (h, slot) in at_index.iter_mut().enumerate() {
        if range.is_some_and(|(start, end)| (h as u64) >= start && (h as u64) <= end) {
            continue;
        }
        if let Some(from) = *slot {
            let mut copy = s.messages[from].clone();
            if let Some(text) = rewrite.get(&h) {
                copy.parts = vec![Part::Text { text: text.clone() }];
            }
            // `applyStandardContextTruncationNoticeChange`: the first truncation sets the first
            // assistant message's block 0 to the notice, which `applyContextHistoryUpdates`
            // applies only where that block is text (a reply opening with its thinking keeps it).
            if new_range && h == 1 && copy.role == Role::Assistant {
                if let Some(Part::Text { text }) = copy.parts.first_mut() {
                    if text != TRUNCATION_NOTICE {
                        *text = TRUNCATION_NOTICE.to_string();
                        copy.flags.recorded_tokens = None;
                    }
                }
            }
            s.messages.push(copy);
            *slot = Some(s.messages.len() - 1);
        }
    }
}

/// What Cline puts in place of the first assistant message's text once it truncates
/// (`formatResponse.contextTruncationNotice`, cline/cline `src/core/prompts/responses.ts`).
const TRUNCATION_NOTICE: &str = "[NOTE] Some previous conversation history with the user has been removed to maintain optimal context window length. The initial user task has been retained for continuity, while intermediate conversation history has been removed. Keep this in mind as you continue assisting the user. Pay special attention to the user's latest messages.";

/// What Cline puts in place of a file's content read again later
/// (`formatResponse.duplicateFileReadNotice`).
const DUPLICATE_READ_NOTICE: &str = "[[NOTE] This file read has been removed to save space in the context window. Refer to the latest file read for the most up to date version of this file.]";

/// `[tool for 'path'] Result:` — the line that opens a tool result in a request.
fn result_header(line: &str) -> Option<(&str, &str)> {
    let rest = line.strip_prefix('[')?.strip_suffix("] Result:")?;
    let (tool, path) = rest.split_once(" for '")?;
    let path = path.strip_suffix('\'')?;
    (!tool.contains(char::is_whitespace)).then_some((tool, path))
}

/// A request text with the content of its first tool result — a `read_file` result's text, or
/// the `<final_file_content>` of a `write_to_file` / `replace_in_file` result — replaced by
/// Cline's notice; with the path it read. `None` for any other request.
fn dedup_text(text: &str) -> Option<(String, String)> {
    let (first, body) = text.split_once('\n')?;
    let (tool, path) = result_header(first.trim_end_matches('\r'))?;
    // The first result's block ends where the next result or the environment details begin.
    let end = body
        .match_indices('\n')
        .map(|(i, _)| i + 1)
        .find(|&i| {
            let line = body[i..].lines().next().unwrap_or("");
            result_header(line.trim_end_matches('\r')).is_some()
                || line.starts_with("<environment_details>")
        })
        .unwrap_or(body.len());
    let (block, rest) = body.split_at(end);
    let replaced = match tool {
        "read_file" => format!("{first}\n{DUPLICATE_READ_NOTICE}\n\n{rest}"),
        "write_to_file" | "replace_in_file" => {
            let open = block.find("<final_file_content path=\"")?;
            let inner = open + block[open..].find('>')? + 1;
            let close = inner + block[inner..].find("</final_file_content>")?;
            format!(
                "{first}\n{} {DUPLICATE_READ_NOTICE} {}{rest}",
                &block[..inner],
                &block[close..]
            )
        }
        _ => return None,
    };
    Some((path.to_string(), replaced))
}

/// Cline's file-read deduplication (`ContextManager.applyContextOptimizations`, run when the
/// previous request reached the model's `maxAllowedSize`): of the messages from `from` on and the
/// request being sent, every read of a file but the last has its content replaced by the notice.
/// A message changed once is not looked at again (`done`). Returns history index → new text.
fn dedup_reads(
    s: &Session,
    at_index: &[Option<MsgIdx>],
    from: usize,
    current: (usize, &str),
    done: &mut std::collections::HashSet<usize>,
) -> HashMap<usize, String> {
    let mut reads: Vec<(String, usize, String)> = Vec::new();
    let texts = (from..at_index.len())
        .filter(|h| !done.contains(h))
        .filter_map(|h| {
            let m = &s.messages[at_index[h]?];
            match (m.role, m.parts.as_slice()) {
                (Role::User, [Part::Text { text }]) => Some((h, text.as_str())),
                _ => None,
            }
        })
        .chain(std::iter::once(current));
    for (h, text) in texts {
        if let Some((path, replaced)) = dedup_text(text) {
            reads.push((path, h, replaced));
        }
    }
    let mut out = HashMap::new();
    for (i, (path, h, replaced)) in reads.iter().enumerate() {
        if reads[i + 1..].iter().any(|(p, _, _)| p == path) {
            done.insert(*h);
            out.insert(*h, replaced.clone());
        }
    }
    out
}

/// Turns Cline's text tool results into results of the `tool_use` they answer: the first call
/// of that tool not answered yet.
fn pair_text_results(parts: &mut [Part], open: &mut Vec<(String, String)>) {
    for p in parts.iter_mut() {
        let Part::Text { text } = p else { continue };
        let Some((name, is_error)) = text_tool_result(text) else {
            continue;
        };
        let Some(i) = open.iter().position(|(_, n)| n == name) else {
            continue;
        };
        let (id, _) = open.remove(i);
        *p = Part::ToolResult {
            call_id: id,
            content: std::mem::take(text),
            is_error,
        };
    }
}

/// Rebuilds the history from the UI log: request k is history message `conversationHistoryIndex
/// + 1` and its reply the next one, so the deleted range stamped on the events applies here as
/// it does to the history file (the UI log of a truncated task holds every message, the history
/// sent does not).
fn from_ui(s: &mut Session, agent: AgentIdx, events: &[Value], calls: &[ApiReq]) {
    let mut k = 0usize;
    let mut reply: Option<MsgIdx> = None;
    // History index → the message holding it now; the range in force.
    let mut at_index: Vec<Option<MsgIdx>> = Vec::new();
    let mut range_now: Option<(u64, u64)> = None;
    let mut deduped = std::collections::HashSet::new();
    // Cline optimizes when the previous request's total reached `maxAllowedSize`, which depends
    // on a window the log does not state: the lowest total that preceded a new deleted range is
    // at or above it, and is taken as the threshold.
    let total = |c: &ApiReq| {
        c.usage
            .as_ref()
            .map_or(0, |u| u.context_tokens() + u.output)
    };
    let threshold = (1..calls.len())
        .filter(|&j| calls[j].deleted.is_some() && calls[j].deleted != calls[j - 1].deleted)
        .map(|j| total(&calls[j - 1]))
        .min();
    let place = |at_index: &mut Vec<Option<MsgIdx>>, h: usize, m: MsgIdx| {
        if at_index.len() <= h {
            at_index.resize(h + 1, None);
        }
        at_index[h] = Some(m);
    };
    for (i, e) in events.iter().enumerate() {
        // Positions inside one JSON document: the event's index, 1-based, stands for the line.
        let pos = SourcePos {
            file: 0,
            line: i as u32 + 1,
        };
        let text = e["text"].as_str().unwrap_or("").to_string();
        let part = match e["say"].as_str().unwrap_or("") {
            "api_req_started" => {
                close(s, &mut reply, k.checked_sub(1).and_then(|j| calls.get(j)));
                let Some(c) = calls.get(k) else { continue };
                let h = c.history_index.map_or(2 * k, |x| (x + 1).max(0) as usize);
                let triggered =
                    k > 0 && threshold.is_some_and(|t| t > 0 && total(&calls[k - 1]) >= t);
                k += 1;
                at_index.truncate(h);
                let rewrite = if triggered {
                    let from = range_now.map_or(2, |(_, end)| end as usize + 1);
                    dedup_reads(s, &at_index, from, (h, &c.request), &mut deduped)
                } else {
                    HashMap::new()
                };
                let new_range = c.deleted.is_some() && c.deleted != range_now;
                if new_range || !rewrite.is_empty() {
                    truncate(
                        s,
                        agent,
                        &mut at_index,
                        c.deleted,
                        new_range,
                        &rewrite,
                        c.ts,
                        pos,
                    );
                }
                range_now = c.deleted;
                place(&mut at_index, h, s.messages.len());
                let text = c.request.clone();
                s.push_message(agent, Role::User, vec![Part::Text { text }], c.ts, pos);
                let usage = recorded(s, &c.usage, pos);
                s.calls.push(Call {
                    agent,
                    context_end: s.messages.len(),
                    reply: None,
                    usage,
                    model: c.model.clone(),
                    timestamp: c.ts,
                    request_id: None,
                    source: pos,
                });
                if let Some(usd) = c.cost {
                    s.recorded_costs.push(RecordedCost {
                        call: s.calls.len() - 1,
                        usd,
                    });
                }
                continue;
            }
            "reasoning" => Part::Thinking { text },
            "text" | "completion_result" => Part::Text { text },
            "tool" | "command" | "browser_action" | "use_mcp_server" => Part::ToolCall {
                id: format!("ui-{i}"),
                name: serde_json::from_str::<Value>(&text)
                    .ok()
                    .and_then(|v| v["tool"].as_str().map(String::from))
                    .unwrap_or_else(|| e["say"].as_str().unwrap_or("").to_string()),
                args: text,
            },
            _ => continue,
        };
        if s.calls.is_empty() || text_empty(&part) {
            continue;
        }
        let r = *reply.get_or_insert_with(|| {
            let m = s.push_message(agent, Role::Assistant, Vec::new(), e["ts"].as_i64(), pos);
            if let Some(c) = k.checked_sub(1).and_then(|j| calls.get(j)) {
                let h = c
                    .history_index
                    .map_or(2 * k - 1, |x| (x + 2).max(0) as usize);
                place(&mut at_index, h, m);
            }
            m
        });
        s.messages[r].parts.push(part);
    }
    close(s, &mut reply, k.checked_sub(1).and_then(|j| calls.get(j)));
    set_model(s, agent);
}

fn text_empty(p: &Part) -> bool {
    matches!(p, Part::Text { text } | Part::Thinking { text } if text.trim().is_empty())
}

/// The reply written since the last call belongs to that call (`req`: its request).
fn close(s: &mut Session, reply: &mut Option<MsgIdx>, req: Option<&ApiReq>) {
    let Some(r) = reply.take() else { return };
    let Some(c) = s.calls.last_mut() else { return };
    if c.reply.is_some() {
        return;
    }
    c.reply = Some(r);
    if let Some(why) = req.and_then(|q| q.cancel.as_deref()) {
        // A stream that broke off (`Task.abortStream`): Cline keeps the text streamed so far,
        // without its thinking, followed by its interruption note; `tokensOut` is only what
        // had arrived, so the reply is counted from that text.
        let note = if why == "streaming_failed" {
            "Response interrupted by API Error"
        } else {
            "Response interrupted by user"
        };
        let m = &mut s.messages[r];
        m.parts.retain(|p| !matches!(p, Part::Thinking { .. }));
        m.parts.push(Part::Text {
            text: format!("[{note}]"),
        });
        return;
    }
    // Its request's final output is the reply's size (the UI events show its text, not its
    // thinking's full size nor the tool-call markup the model wrote).
    if let Some(u) = c.usage {
        s.messages[r].flags.recorded_tokens = Some(u.output);
    }
}

fn set_model(s: &mut Session, agent: AgentIdx) {
    s.agents[agent].model = s.calls.iter().find_map(|c| c.model.clone());
}

/// The start of a task's `api_conversation_history.json`: a JSON array of messages whose first
/// one is the user's `<task>` (Cline, Roo Code and Kilo Code all wrap the task so).
pub(crate) fn sniff_history_head(head: &str) -> bool {
    let compact: String = head
        .chars()
        .take(2048)
        .filter(|c| !c.is_whitespace())
        .collect();
    compact.starts_with("[{\"role\":\"user\",\"content\":[{\"type\":\"text\",\"text\":\"<task>")
}

fn sniff_history_file(path: &Path) -> bool {
    use std::io::Read;
    let mut head = Vec::with_capacity(4096);
    std::fs::File::open(path)
        .and_then(|f| f.take(4096).read_to_end(&mut head))
        .is_ok_and(|_| sniff_history_head(&String::from_utf8_lossy(&head)))
}

/// A JSON array whose first element is a Cline UI event (`ts` with `say` or `ask`).
pub(crate) fn sniff_head(head: &str) -> bool {
    let h = head.trim_start();
    h.starts_with('[')
        && h.contains("\"ts\"")
        && (h.contains("\"say\"") || h.contains("\"ask\""))
        && h.contains("\"type\"")
}
