//! What fills the context: each call's context as the log recorded it (the `recorded` baseline's
//! reconstruction, uncalibrated: `recorded_raw_tokens`), broken down by kind of content: system
//! messages, user text, assistant text, reasoning, tool calls, tool results by tool name,
//! injected reminders and attachments, summaries, images. The kinds of a call add up to its
//! reconstructed context exactly; the calibrated overhead (system prompt and tool schemas the
//! log does not hold) is given per agent beside them, never mixed in.
//!
//! Each message is split once: a message whose parts are all of one kind goes whole to that kind
//! (no second count); a mixed one (an assistant turn with text, thinking and tool calls, a tool
//! message answering several tools) is split in proportion to the counter's count of each part,
//! by largest remainder so the integer split sums to the message's tokens. Hidden content the
//! log only sizes (signature-only thinking, encrypted reasoning: `MessageFlags::hidden_tokens`)
//! is reasoning on an assistant message, else its message's kind, and leaves with the transient
//! tokens the engine drops at the next human message.
//!
//! A log whose calls hold their whole request (an HTTP capture: `Session::whole_requests`) has
//! the system prompt and tool schemas as text: they are counted as `system` and `tools` like any
//! other content, and there is no calibrated overhead beside them (docs/capture.md).

use super::context::Context;
use super::prepared::Prepared;
use super::*;
use crate::model::{Message, Part};
use crate::tokens::{calibrate, calibrate::samples};
use serde::Serialize;

/// A kind of content in the context (`docs/cli.md`, "inspect --composition").
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Kind {
    /// System messages the log holds (most logs do not hold the system prompt itself: see the
    /// calibrated overhead; a capture does).
    System,
    /// Tool schemas the request declared, where the log holds them (an HTTP capture:
    /// `MessageFlags::tool_schemas`).
    Tools,
    /// What a person wrote (requests, their images).
    User,
    /// The assistant's visible text.
    Assistant,
    /// Thinking, visible or hidden (signature-only, encrypted).
    Reasoning,
    /// The assistant's tool calls (names and arguments).
    ToolCalls,
    /// Tool results, split by the name of the tool that produced them.
    ToolResults,
    /// Messages injected while the agent worked: reminders, attachments, queued prompts.
    Injected,
    /// Compaction summaries.
    Summaries,
}

impl Kind {
    /// Every kind, in the order charts stack them (bottom first).
    pub const ALL: [Kind; 9] = [
        Kind::System,
        Kind::Tools,
        Kind::User,
        Kind::Injected,
        Kind::Summaries,
        Kind::Assistant,
        Kind::Reasoning,
        Kind::ToolCalls,
        Kind::ToolResults,
    ];

    pub fn label(self) -> &'static str {
        match self {
            Kind::System => "system",
            Kind::Tools => "tool schemas",
            Kind::User => "user text",
            Kind::Assistant => "assistant text",
            Kind::Reasoning => "reasoning",
            Kind::ToolCalls => "tool calls",
            Kind::ToolResults => "tool results",
            Kind::Injected => "injected (reminders, attachments)",
            Kind::Summaries => "summaries",
        }
    }
}

/// Tokens of one kind (of one tool's results, for `ToolResults`) in a call's context.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Slice {
    pub kind: Kind,
    /// The tool, for `ToolResults` (`?` when the log has no call for the result).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tool: Option<String>,
    pub tokens: u64,
}

/// One call's context by kind.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct CallComposition {
    pub call: usize,
    pub agent: AgentIdx,
    /// The reconstructed context of the call (uncalibrated): the sum of `slices`.
    pub total: u64,
    /// Non-empty kinds in `Kind::ALL` order, tool results by tool name (largest first).
    pub slices: Vec<Slice>,
}

/// Every call's context by kind, with what the log does not hold.
#[derive(Debug, Clone, Serialize)]
pub struct Composition {
    /// The counter the tokens were counted with.
    pub counter: String,
    /// Per agent: the calibrated overhead (system prompt, tool schemas) every call of it carries
    /// on top of its `total`; `None` when the log cannot be calibrated, or holds whole requests.
    pub overhead: Vec<Option<u64>>,
    /// Every call's context is its whole request, system prompt and tool schemas included
    /// (`Session::whole_requests`): the kinds are the request's whole content, nothing is
    /// calibrated in.
    pub whole_requests: bool,
    /// `calls[i]` for `Session::calls[i]`; `None` for a usage-only session.
    pub calls: Vec<Option<CallComposition>>,
}

/// Slots of the accumulator: one per kind but tool results, then one per tool name.
const TOOL_SLOTS: usize = 9;

fn slot(k: Kind) -> usize {
    match k {
        Kind::System => 0,
        Kind::User => 1,
        Kind::Assistant => 2,
        Kind::Reasoning => 3,
        Kind::ToolCalls => 4,
        Kind::Injected => 5,
        Kind::Summaries => 6,
        Kind::Tools => 7,
        // Unnamed results; named ones have slots from TOOL_SLOTS on.
        Kind::ToolResults => 8,
    }
}

fn kind_of_slot(s: usize) -> Kind {
    match s {
        0 => Kind::System,
        1 => Kind::User,
        2 => Kind::Assistant,
        3 => Kind::Reasoning,
        4 => Kind::ToolCalls,
        5 => Kind::Injected,
        6 => Kind::Summaries,
        7 => Kind::Tools,
        _ => Kind::ToolResults,
    }
}

/// One message's split: `slices` (slot, tokens) plus `hidden` tokens in `hidden_slot`, summing
/// to `Prepared::tokens`.
#[derive(Default)]
struct Split {
    slices: Vec<(usize, u64)>,
    hidden_slot: usize,
    hidden: u64,
}

struct Splitter<'s> {
    session: &'s Session,
    prepared: &'s Prepared,
    counter: &'s dyn TokenCounter,
    tools: Vec<String>,
    tool_slot: std::collections::HashMap<&'s str, usize>,
    splits: Vec<Option<Split>>,
}

impl<'s> Splitter<'s> {
    fn tool(&mut self, name: &'s str) -> usize {
        if let Some(&s) = self.tool_slot.get(name) {
            return s;
        }
        let s = TOOL_SLOTS + self.tools.len();
        self.tools.push(name.to_string());
        self.tool_slot.insert(name, s);
        s
    }

    /// The kind every part of `m` falls in but its tool calls, results and thinking.
    fn main_kind(m: &Message) -> Kind {
        if m.flags.is_summary {
            Kind::Summaries
        } else if m.flags.injected {
            Kind::Injected
        } else {
            match m.role {
                Role::System => Kind::System,
                Role::User => Kind::User,
                Role::Assistant => Kind::Assistant,
                Role::Tool => Kind::ToolResults,
            }
        }
    }

    fn split(&mut self, mi: MsgIdx) -> &Split {
        if self.splits[mi].is_none() {
            let s = self.compute(mi);
            self.splits[mi] = Some(s);
        }
        self.splits[mi].as_ref().expect("just set")
    }

    fn compute(&mut self, mi: MsgIdx) -> Split {
        let session = self.session;
        let m = &session.messages[mi];
        let total = self.prepared.tokens(mi);
        let main = Self::main_kind(m);
        // Summaries and injected messages are one kind whatever their parts hold.
        let whole = matches!(main, Kind::Summaries | Kind::Injected);
        let answers = self.prepared.answers(mi);
        let mut result_i = 0;
        let mut parts: Vec<(usize, &'s Part)> = Vec::with_capacity(m.parts.len());
        let schemas_from = m.parts.len().saturating_sub(m.flags.tool_schemas as usize);
        for (i, p) in m.parts.iter().enumerate() {
            let s = match p {
                _ if whole => slot(main),
                _ if i >= schemas_from => slot(Kind::Tools),
                Part::Thinking { .. } => slot(Kind::Reasoning),
                Part::ToolCall { .. } => slot(Kind::ToolCalls),
                Part::ToolResult { .. } => {
                    let name = answers.get(result_i).and_then(|a| {
                        match session.messages.get(a.msg)?.parts.get(a.part as usize)? {
                            Part::ToolCall { name, .. } => Some(name.as_str()),
                            _ => None,
                        }
                    });
                    result_i += 1;
                    self.tool(name.unwrap_or("?"))
                }
                Part::Text { .. } | Part::Image { .. } if main == Kind::ToolResults => {
                    slot(Kind::ToolResults)
                }
                Part::Text { .. } | Part::Image { .. } => slot(main),
            };
            parts.push((s, p));
        }
        let hidden_slot = if m.role == Role::Assistant && !whole {
            slot(Kind::Reasoning)
        } else {
            parts.first().map_or(slot(main), |p| p.0)
        };
        let hidden = match m.flags.recorded_tokens {
            Some(r) => m.flags.hidden_tokens.min(r),
            None => self.prepared.known(mi),
        }
        .min(total);
        let rest = total - hidden;
        let mut slices = Vec::new();
        let first = parts.first().map_or(hidden_slot, |p| p.0);
        if parts.iter().all(|p| p.0 == first) {
            if rest > 0 {
                slices.push((first, rest));
            }
        } else {
            let weights: Vec<(usize, u64)> = parts
                .iter()
                .map(|&(s, p)| (s, self.part_tokens(p)))
                .collect();
            apportion(rest, &weights, &mut slices);
        }
        Split {
            slices,
            hidden_slot,
            hidden,
        }
    }

    fn part_tokens(&self, p: &Part) -> u64 {
        let c = self.counter;
        match p {
            Part::Text { text } | Part::Thinking { text } => c.count_text(text),
            Part::ToolCall { name, args, .. } => c.count_text(name) + c.count_text(args),
            Part::ToolResult { content, .. } => c.count_text(content),
            Part::Image { .. } => c.count_parts(std::slice::from_ref(p)),
        }
    }
}

/// Splits `total` over `weights` (slot, weight) in proportion, by largest remainder (ties to the
/// first), merging slots; all of it to the first slot when every weight is 0.
fn apportion(total: u64, weights: &[(usize, u64)], out: &mut Vec<(usize, u64)>) {
    let mut merged: Vec<(usize, u64)> = Vec::new();
    for &(s, w) in weights {
        match merged.iter_mut().find(|m| m.0 == s) {
            Some(m) => m.1 += w,
            None => merged.push((s, w)),
        }
    }
    let sum: u128 = merged.iter().map(|m| m.1 as u128).sum();
    if total == 0 || merged.is_empty() {
        return;
    }
    if sum == 0 {
        out.push((merged[0].0, total));
        return;
    }
    let mut shares: Vec<(usize, u64, u128)> = merged
        .iter()
        .map(|&(s, w)| {
            let exact = total as u128 * w as u128;
            (s, (exact / sum) as u64, exact % sum)
        })
        .collect();
    let mut left = total - shares.iter().map(|s| s.1).sum::<u64>();
    let mut order: Vec<usize> = (0..shares.len()).collect();
    order.sort_by(|&a, &b| shares[b].2.cmp(&shares[a].2).then(a.cmp(&b)));
    for i in order {
        if left == 0 {
            break;
        }
        shares[i].1 += 1;
        left -= 1;
    }
    out.extend(shares.into_iter().filter(|s| s.1 > 0).map(|s| (s.0, s.1)));
}

/// Every call's context by kind (module docs), counted with `counter` (which `prepared` must
/// have been made with: `Prepared::counts` is enough).
pub fn composition(
    session: &Session,
    prepared: &Prepared,
    counter: &dyn TokenCounter,
) -> Result<Composition> {
    prepared.check(session, counter)?;
    let n = session.calls.len();
    if session.usage_only {
        return Ok(Composition {
            counter: counter.name().to_string(),
            overhead: vec![None; session.agents.len()],
            whole_requests: session.whole_requests,
            calls: vec![None; n],
        });
    }
    let mut splitter = Splitter {
        session,
        prepared,
        counter,
        tools: Vec::new(),
        tool_slot: Default::default(),
        splits: (0..session.messages.len()).map(|_| None).collect(),
    };
    let mut calls: Vec<Option<CallComposition>> = Vec::with_capacity(n);
    let mut acc: Vec<u64> = Vec::new();
    let mut observe = |ci: usize, ctx: &Context<'_>| {
        acc.clear();
        acc.resize(TOOL_SLOTS + splitter.tools.len(), 0);
        for (e, v) in ctx.entries.iter().zip(&ctx.views) {
            let tokens = v.tokens;
            let Some(m) = e.msg else {
                add(&mut acc, slot(Kind::Summaries), tokens);
                continue;
            };
            let full = prepared.tokens(m);
            let split = splitter.split(m);
            let listed: u64 = split.slices.iter().map(|s| s.1).sum();
            // The engine drops transient hidden tokens at the next human message.
            let hidden = split.hidden.saturating_sub(full.saturating_sub(tokens));
            if listed + hidden == tokens {
                for &(s, t) in &split.slices {
                    add(&mut acc, s, t);
                }
                add(&mut acc, split.hidden_slot, hidden);
            } else {
                // Edited by a strategy: the split's shape at the entry's size.
                let mut w = split.slices.clone();
                w.push((split.hidden_slot, split.hidden));
                let mut out = Vec::new();
                apportion(tokens, &w, &mut out);
                for (s, t) in out {
                    add(&mut acc, s, t);
                }
            }
        }
        let mut slices: Vec<Slice> = Kind::ALL
            .iter()
            .filter(|&&k| k != Kind::ToolResults)
            .filter_map(|&k| {
                let t = acc.get(slot(k)).copied().unwrap_or(0);
                (t > 0).then_some(Slice {
                    kind: k,
                    tool: None,
                    tokens: t,
                })
            })
            .collect();
        let mut tools: Vec<Slice> = acc
            .iter()
            .enumerate()
            .skip(slot(Kind::ToolResults))
            .filter(|(_, &t)| t > 0)
            .map(|(s, &t)| Slice {
                kind: kind_of_slot(s),
                tool: Some(if s < TOOL_SLOTS {
                    "?".to_string()
                } else {
                    splitter.tools[s - TOOL_SLOTS].clone()
                }),
                tokens: t,
            })
            .collect();
        tools.sort_by(|a, b| b.tokens.cmp(&a.tokens).then(a.tool.cmp(&b.tool)));
        slices.extend(tools);
        calls.push(Some(CallComposition {
            call: ci,
            agent: session.calls[ci].agent,
            total: slices.iter().map(|s| s.tokens).sum(),
            slices,
        }));
    };
    let raw = run_recorded_raw(session, prepared, counter, Some(&mut observe))?;
    let overhead = if session.whole_requests {
        vec![None; session.agents.len()]
    } else {
        let calibration = calibrate(&samples(session, &raw));
        (0..session.agents.len())
            .map(|a| {
                calibration
                    .as_ref()
                    .map(|c| c.fit_for(a).overhead.round() as u64)
            })
            .collect()
    };
    Ok(Composition {
        counter: counter.name().to_string(),
        overhead,
        whole_requests: session.whole_requests,
        calls,
    })
}

/// Adds `t` to slot `s`, growing the accumulator for a tool met for the first time.
fn add(acc: &mut Vec<u64>, s: usize, t: u64) {
    if s >= acc.len() {
        acc.resize(s + 1, 0);
    }
    acc[s] += t;
}

impl CallComposition {
    /// Tokens of `kind` (all tools together for `ToolResults`).
    pub fn tokens(&self, kind: Kind) -> u64 {
        self.slices
            .iter()
            .filter(|s| s.kind == kind)
            .map(|s| s.tokens)
            .sum()
    }
}

#[cfg(test)]
mod tests {
    use super::super::test_support::*;
    use super::*;

    #[test]
    fn apportion_sums_exactly_and_follows_the_weights() {
        let mut out = Vec::new();
        apportion(10, &[(1, 1), (2, 1), (3, 1)], &mut out);
        assert_eq!(out.iter().map(|s| s.1).sum::<u64>(), 10);
        assert_eq!(out, vec![(1, 4), (2, 3), (3, 3)]);
        out.clear();
        apportion(7, &[(4, 0), (5, 0)], &mut out);
        assert_eq!(out, vec![(4, 7)]);
        out.clear();
        apportion(100, &[(1, 30), (2, 10), (1, 10)], &mut out);
        assert_eq!(out, vec![(1, 80), (2, 20)]);
    }

    #[test]
    fn each_call_is_split_by_kind_and_tool_and_sums_to_its_context() {
        let mut s = SessionBuilder::new();
        let a = s.agent("main");
        s.msg(a, Role::System, "s".repeat(40));
        s.msg(a, Role::User, "u".repeat(80));
        s.push(
            a,
            Role::Assistant,
            vec![
                Part::Thinking {
                    text: "t".repeat(400),
                },
                Part::Text {
                    text: "a".repeat(40),
                },
                Part::ToolCall {
                    id: "c1".into(),
                    name: "Read".into(),
                    args: "{\"path\":\"x\"}".into(),
                },
            ],
        );
        s.call(a);
        s.tool_result(a, "c1", &"r".repeat(800));
        s.call(a);
        let session = s.session;
        let prepared = Prepared::counts(&session, &Chars4);
        let comp = composition(&session, &prepared, &Chars4).unwrap();
        let raw = recorded_raw_tokens(&session, &Chars4);
        assert_eq!(comp.calls.len(), 2);
        for (c, r) in comp.calls.iter().zip(&raw) {
            let c = c.as_ref().unwrap();
            assert_eq!(Some(c.total), *r);
            assert_eq!(c.slices.iter().map(|s| s.tokens).sum::<u64>(), c.total);
        }
        let last = comp.calls[1].as_ref().unwrap();
        assert_eq!(last.tokens(Kind::System), 14);
        assert_eq!(last.tokens(Kind::User), 24);
        // 400 chars of thinking weigh ten times the 40 of text.
        assert!(last.tokens(Kind::Reasoning) > 8 * last.tokens(Kind::Assistant));
        assert!(last.tokens(Kind::ToolCalls) > 0);
        let read = last
            .slices
            .iter()
            .find(|s| s.tool.as_deref() == Some("Read"))
            .expect("the result is named by its call's tool");
        assert_eq!(read.tokens, 204);
        assert_eq!(comp.calls[0].as_ref().unwrap().tokens(Kind::ToolResults), 0);
    }
}
