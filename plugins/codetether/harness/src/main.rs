//! `codetether-schedule <native.jsonl> <model> [system-prompt-tokens]`: for every call of every
//! agent of a ctxlab-native session, build the history CodeTether would hold (the agent's
//! messages before the call, tool results in `Role::Tool` messages) and run codetether-agent
//! 4.7.4's `derive_context` on it with a system prompt of that many tokens (ctxlab's calibrated
//! overhead; 0 by default), no tools and a provider that always fails (so summaries come from the
//! chunker). Prints one line per call: `call <index> agent <a> messages <n> started <0|1>
//! estimate <CodeTether's request estimate>`, then the calls that triggered.

use anyhow::{bail, Result};
use codetether_agent::provider::{
    CompletionRequest, CompletionResponse, ContentPart, Message, ModelInfo, Provider, Role,
    StreamChunk,
};
use codetether_agent::session::{derive_context, Session, SessionEvent};
use serde_json::Value;
use std::sync::Arc;

struct Offline;

#[async_trait::async_trait]
impl Provider for Offline {
    fn name(&self) -> &str {
        "offline"
    }
    async fn list_models(&self) -> Result<Vec<ModelInfo>> {
        Ok(Vec::new())
    }
    async fn complete(&self, _: CompletionRequest) -> Result<CompletionResponse> {
        bail!("offline")
    }
    async fn complete_stream(
        &self,
        _: CompletionRequest,
    ) -> Result<futures::stream::BoxStream<'static, StreamChunk>> {
        bail!("offline")
    }
}

fn part(p: &Value) -> Option<ContentPart> {
    let s = |k: &str| p[k].as_str().unwrap_or_default().to_string();
    Some(match p["type"].as_str()? {
        "text" => ContentPart::Text { text: s("text") },
        "thinking" => ContentPart::Thinking {
            text: s("text"),
            signature: None,
        },
        "tool_call" => ContentPart::ToolCall {
            id: s("id"),
            name: s("name"),
            arguments: s("args"),
            thought_signature: None,
        },
        "tool_result" => ContentPart::ToolResult {
            tool_call_id: s("call_id"),
            content: s("content"),
        },
        "image" => ContentPart::Image {
            url: String::new(),
            mime_type: p["media_type"].as_str().map(str::to_string),
        },
        _ => return None,
    })
}

fn message(m: &Value) -> Message {
    let content: Vec<ContentPart> = m["parts"]
        .as_array()
        .map(|a| a.iter().filter_map(part).collect())
        .unwrap_or_default();
    let results_only = !content.is_empty()
        && content
            .iter()
            .all(|p| matches!(p, ContentPart::ToolResult { .. }));
    let role = match m["role"].as_str() {
        _ if results_only => Role::Tool,
        Some("system") => Role::System,
        Some("assistant") => Role::Assistant,
        Some("tool") => Role::Tool,
        _ => Role::User,
    };
    Message { role, content }
}

#[tokio::main]
async fn main() -> Result<()> {
    let args: Vec<String> = std::env::args().collect();
    let (path, model, system) = match args.as_slice() {
        [_, path, model] => (path, model, 0),
        [_, path, model, n] => (path, model, n.parse::<usize>()?),
        _ => bail!("usage: codetether-schedule <native.jsonl> <model> [system-prompt-tokens]"),
    };
    // A system prompt CodeTether estimates at exactly `system` tokens (4 bytes, one a space).
    let system_prompt = "abc ".repeat(system);
    let mut messages = Vec::new();
    let mut calls = Vec::new();
    let mut summaries = std::collections::HashSet::new();
    for line in std::fs::read_to_string(path)?.lines().skip(1) {
        let v: Value = serde_json::from_str(line)?;
        if let Some(m) = v.get("message") {
            messages.push(m.clone());
        } else if let Some(c) = v.get("call") {
            calls.push(c.clone());
        } else if let Some(c) = v.get("compaction") {
            if let Some(s) = c["summary"].as_u64() {
                summaries.insert(s as usize);
            }
        }
    }
    let provider: Arc<dyn Provider> = Arc::new(Offline);
    let mut session = Session::new().await?;
    let mut started = Vec::new();
    for (ci, c) in calls.iter().enumerate() {
        let agent = c["agent"].as_u64().unwrap_or(0);
        let end = c["context_end"].as_u64().unwrap_or(0) as usize;
        session.messages = messages[..end.min(messages.len())]
            .iter()
            .enumerate()
            .filter(|(i, m)| {
                m["agent"].as_u64() == Some(agent)
                    && !m["flags"]["meta"].as_bool().unwrap_or(false)
                    && !summaries.contains(i)
            })
            .map(|(_, m)| message(m))
            .collect();
        // The estimate check_budget compares (after the experimental passes, as derive_context runs
        // them), printed for every call.
        let mut passed = session.messages.clone();
        codetether_agent::session::helper::experimental::apply_all(&mut passed);
        let estimate = codetether_agent::session::helper::token::estimate_request_tokens(
            &system_prompt,
            &passed,
            &[],
        );
        let (tx, mut rx) = tokio::sync::mpsc::channel(64);
        derive_context(
            &session,
            provider.clone(),
            model,
            &system_prompt,
            &[],
            Some(&tx),
            None,
        )
        .await?;
        drop(tx);
        let mut fired = None;
        while let Some(ev) = rx.recv().await {
            if let SessionEvent::CompactionStarted(s) = ev {
                fired = Some(s.before_tokens);
            }
        }
        println!(
            "call {ci} agent {agent} messages {} started {} estimate {}",
            session.messages.len(),
            fired.is_some() as u8,
            fired.unwrap_or(estimate)
        );
        if fired.is_some() {
            started.push(ci);
        }
    }
    println!("triggered {} {:?}", started.len(), started);
    Ok(())
}
