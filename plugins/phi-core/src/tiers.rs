//! `compact_messages` (phi-core 0.15.2 src/context/compact_messages.rs): three levels tried in
//! order over phi-core's messages, stopping at the first whose estimate fits
//! `budget = max_context_tokens − system_prompt_tokens`. The levels work on a list of phi-core
//! messages (`Item`s), each either one of a host message's phi-core messages or a user message
//! phi-core writes; `fates` then turns the final list into what happens to each host message.

use crate::estimate::{text_tokens, user_text_tokens, Body, Shape, UnitKind};
use crate::mirror::{Mirror, L1};
use ctxlab_plugin_api::{Call, Msg};

/// `truncate_text_head_tail`: the first N/2 and last N − N/2 lines (`str::lines`, so "\r\n" and
/// a final newline go) joined by "\n", with `[... K lines truncated ...]` between; the text as it
/// is when it has N lines or fewer.
pub fn head_tail(text: &str, max_lines: usize) -> Option<String> {
    let lines: Vec<&str> = text.lines().collect();
    if lines.len() <= max_lines {
        return None;
    }
    let head = max_lines / 2;
    let tail = max_lines - head;
    let omitted = lines.len() - head - tail;
    let mut out = lines[..head].join("\n");
    out.push_str(&format!("\n\n[... {omitted} lines truncated ...]\n\n"));
    out.push_str(&lines[lines.len() - tail..].join("\n"));
    Some(out)
}

/// `level1_truncate_tool_outputs` on one host message: every text block of each of its
/// `ToolResult`s cut on its own, whether or not that saves anything (phi-core always cuts, and
/// re-cuts its own output). The new text, the same as the host's parts of a message of several
/// results (NUL-separated, `OP_MASK` of ABI 1.4), and the estimates of its phi-core messages; or
/// `None` when the text stays the same.
pub fn level1(
    m: &Msg<'_>,
    shape: &Shape,
    max_lines: usize,
) -> Option<(String, Option<String>, Vec<u64>)> {
    let Shape::Results { body, extra } = shape else {
        return None;
    };
    let text = m.text();
    let images = crate::estimate::image_tokens(m.images() as u64, m.image_bytes());
    let results: Vec<_> = m.tools().filter(|t| t.is_result()).collect();
    let name = |k: usize| results.get(k).map_or(0, |t| t.name().len());
    let (new, parts, ests) = match body {
        Body::Whole => {
            let cut = head_tail(text, max_lines)?;
            let mut ests = vec![text_tokens(cut.len()) + text_tokens(name(0)) + 8 + images];
            for k in 1..results.len() {
                ests.push(text_tokens(name(k)) + 8);
            }
            (cut, None, ests)
        }
        Body::Tools => {
            let mut new = String::with_capacity(text.len());
            let mut parts = String::with_capacity(text.len());
            let mut ests = Vec::with_capacity(results.len() + 1);
            for (k, t) in results.iter().enumerate() {
                if k > 0 {
                    new.push('\n');
                    parts.push('\0');
                }
                let cut = head_tail(t.body(), max_lines);
                let b = cut.as_deref().unwrap_or(t.body());
                new.push_str(b);
                parts.push_str(b);
                ests.push(
                    text_tokens(b.len())
                        + text_tokens(name(k))
                        + 8
                        + if k == 0 { images } else { 0 },
                );
            }
            if let Some(e) = extra {
                new.push('\n');
                new.push_str(&text[*e..]);
                parts.push('\0');
                parts.push_str(&text[*e..]);
                ests.push(text_tokens(text.len() - e) + 4);
            }
            let several = ests.len() > 1;
            (new, several.then_some(parts), ests)
        }
    };
    (new != text).then_some((new, parts, ests))
}

/// The `[Summary] …` user message `level2_summarize_old_turns` writes for an assistant message:
/// its text blocks of at most 200 bytes joined by " ", else `[Assistant used N tool(s)]`, else
/// `[Assistant response]`.
pub fn summary_text(m: &Msg<'_>, shape: &Shape) -> String {
    let (prefix, calls) = match shape {
        Shape::Assistant { prefix, calls } => (*prefix, *calls),
        _ => (m.text().len(), 0),
    };
    if prefix > 0 && prefix <= 200 {
        format!("[Summary] {}", &m.text()[..prefix])
    } else if calls > 0 {
        format!("[Summary] [Assistant used {calls} tool(s)]")
    } else {
        "[Summary] [Assistant response]".to_string()
    }
}

#[derive(Debug, Clone, PartialEq)]
pub enum What {
    /// Phi-core message `unit` of the host message at `slot`.
    Unit { slot: u32, unit: u32 },
    /// The summary level 2 wrote for the assistant message at `slot`.
    Summary { slot: u32, text: String },
    /// A `[Context compacted: …]` marker of level 3.
    Marker(String),
}

#[derive(Debug, Clone)]
pub struct Item {
    pub est: u64,
    pub what: What,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Level {
    TruncateToolOutputs,
    SummarizeOldTurns,
    DropMiddle,
}

impl Level {
    pub fn code(self) -> &'static str {
        match self {
            Level::TruncateToolOutputs => "level1_truncate_tool_outputs",
            Level::SummarizeOldTurns => "level2_summarize_old_turns",
            Level::DropMiddle => "level3_drop_middle",
        }
    }
}

/// One level that ran: phi-core's estimate before and after it, and what it did in words.
#[derive(Debug, Clone)]
pub struct Step {
    pub level: Level,
    pub before: u64,
    pub after: u64,
    pub changed: bool,
    pub what: String,
}

pub struct Settings {
    pub budget: u64,
    pub keep_recent: usize,
    pub keep_first: usize,
    pub tool_output_max_lines: usize,
}

pub struct Outcome {
    /// phi-core's messages after compaction.
    pub items: Vec<Item>,
    pub steps: Vec<Step>,
    pub after: u64,
    /// Host messages level 1 cut (their slots' `L1::Cut` holds the new text).
    pub cut: Vec<bool>,
}

fn total(items: &[Item]) -> u64 {
    items.iter().map(|i| i.est).sum()
}

/// Runs the levels on the mirrored context. `before` is phi-core's estimate of it.
pub fn compact(call: &Call<'_>, s: &Settings, before: u64, mirror: &mut Mirror) -> Outcome {
    let mut steps = Vec::new();

    // Level 1: every tool result's text cut to its head and tail lines.
    let mut items: Vec<Item> = Vec::with_capacity(mirror.slots.len());
    let mut cut = vec![false; mirror.slots.len()];
    let mut l1_count = 0;
    for i in 0..mirror.slots.len() {
        if mirror.slots[i].units.is_empty() {
            continue;
        }
        let cut_units = match mirror.l1(call, i, s.tool_output_max_lines) {
            L1::Cut { units, .. } => Some(units.clone()),
            _ => None,
        };
        let slot = &mirror.slots[i];
        if let Some(u) = &cut_units {
            cut[i] = true;
            l1_count += 1;
            debug_assert_eq!(u.len(), slot.units.len());
        }
        for (k, unit) in slot.units.iter().enumerate() {
            items.push(Item {
                est: cut_units.as_ref().map_or(unit.est, |u| u[k]),
                what: What::Unit {
                    slot: i as u32,
                    unit: k as u32,
                },
            });
        }
    }
    let after1 = total(&items);
    steps.push(Step {
        level: Level::TruncateToolOutputs,
        before,
        after: after1,
        changed: l1_count > 0,
        what: format!(
            "{l1_count} message(s) of tool output over {} lines cut to their first {} and last {} lines",
            s.tool_output_max_lines,
            s.tool_output_max_lines / 2,
            s.tool_output_max_lines - s.tool_output_max_lines / 2
        ),
    });
    if after1 <= s.budget {
        return Outcome {
            items,
            steps,
            after: after1,
            cut,
        };
    }

    // Level 2: before the last keep_recent messages, each assistant message becomes a `[Summary]`
    // user message and the tool results right after it go; other tool results there go too; user
    // messages stay.
    let kind = |it: &Item| match it.what {
        What::Unit { slot, unit } => Some(mirror.slots[slot as usize].units[unit as usize].kind),
        _ => None,
    };
    let len = items.len();
    let mut summaries = 0;
    let mut l2_changed = false;
    if len > s.keep_recent {
        let boundary = len - s.keep_recent;
        let mut out: Vec<Item> = Vec::with_capacity(len);
        let mut i = 0;
        while i < boundary {
            match (kind(&items[i]), &items[i].what) {
                (Some(UnitKind::Assistant), What::Unit { slot, .. }) => {
                    let slot = *slot;
                    let text =
                        summary_text(&call.msg(slot as usize), &mirror.slots[slot as usize].shape);
                    out.push(Item {
                        est: user_text_tokens(&text),
                        what: What::Summary { slot, text },
                    });
                    summaries += 1;
                    i += 1;
                    while i < boundary && kind(&items[i]) == Some(UnitKind::ToolResult) {
                        i += 1;
                    }
                }
                (Some(UnitKind::ToolResult), _) => i += 1,
                _ => {
                    out.push(items[i].clone());
                    i += 1;
                }
            }
        }
        l2_changed = summaries > 0 || out.len() != boundary;
        out.extend_from_slice(&items[boundary..]);
        items = out;
    }
    let after2 = total(&items);
    steps.push(Step {
        level: Level::SummarizeOldTurns,
        before: after1,
        after: after2,
        changed: l2_changed,
        what: format!(
            "{summaries} assistant message(s) older than the last {} messages became [Summary] messages",
            s.keep_recent
        ),
    });
    if after2 <= s.budget {
        return Outcome {
            items,
            steps,
            after: after2,
            cut,
        };
    }

    // Level 3: keep keep_first and keep_recent, a marker for the middle; if that is still over
    // the budget (or the ends overlap), only the newest messages that fit, behind a marker.
    let n = items.len();
    let first_end = s.keep_first.min(n);
    let recent_start = n.saturating_sub(s.keep_recent);
    let what;
    if first_end >= recent_start {
        let removed = keep_within_budget(&mut items, s.budget);
        what = format!(
            "too few messages to split: kept the last {} that fit, {removed} removed",
            items.len() - usize::from(removed > 0)
        );
    } else {
        let removed = recent_start - first_end;
        let text = format!("[Context compacted: {removed} messages removed to fit context window]");
        let marker = Item {
            est: user_text_tokens(&text),
            what: What::Marker(text),
        };
        let tail = items.split_off(recent_start);
        items.truncate(first_end);
        items.push(marker);
        items.extend(tail);
        if total(&items) > s.budget {
            let more = keep_within_budget(&mut items, s.budget);
            what = format!(
                "{removed} middle messages removed; still over budget, kept the last {} that fit ({more} more removed)",
                items.len() - usize::from(more > 0)
            );
        } else {
            what = format!(
                "kept the first {first_end} and last {} messages, {removed} removed",
                n - recent_start
            );
        }
    }
    let after3 = total(&items);
    steps.push(Step {
        level: Level::DropMiddle,
        before: after2,
        after: after3,
        changed: true,
        what,
    });
    Outcome {
        items,
        steps,
        after: after3,
        cut,
    }
}

/// `keep_within_budget_with_counter`: the newest messages whose estimates fit the budget, behind
/// `[Context compacted: N messages removed]` when any were removed. Returns N.
fn keep_within_budget(items: &mut Vec<Item>, budget: u64) -> usize {
    let mut remaining = budget;
    let mut k = items.len();
    while k > 0 && items[k - 1].est <= remaining {
        remaining -= items[k - 1].est;
        k -= 1;
    }
    if k == 0 {
        return 0;
    }
    let text = format!("[Context compacted: {k} messages removed]");
    items.drain(..k);
    items.insert(
        0,
        Item {
            est: user_text_tokens(&text),
            what: What::Marker(text),
        },
    );
    k
}

/// What happens to one host message.
#[derive(Debug, Clone, PartialEq)]
pub enum Fate {
    /// Stays (with level 1's cut when its slot is marked cut).
    Keep,
    Drop,
    /// Replaced by a user message with this text (a summary or a marker).
    Replace(String),
    /// Some of its phi-core messages stay: `true` for each that goes (its tool results, then
    /// the trailing user text), as the host's `DropResults` (ABI 1.5) removes them.
    Part(Vec<bool>),
}

/// Turns phi-core's resulting messages into a fate per host message. A host message some of
/// whose phi-core messages phi-core keeps and some it drops (a message of several tool results
/// cut by a boundary) loses the ones phi-core drops (`Fate::Part`), except that one whose results
/// all go and whose trailing user text stays becomes that text (a user message, as phi-core
/// holds it); a marker with no dropped host message to stand in for (phi-core puts it between
/// two tool results of one host message) is left out. Returns the fates and how many such
/// markers were left out.
pub fn fates(call: &Call<'_>, items: &[Item], mirror: &Mirror) -> (Vec<Fate>, usize) {
    let n = mirror.slots.len();
    let mut kept = vec![0u32; n];
    // Which phi-core messages of a message of several stay (filled for those only).
    let mut stays: Vec<Vec<bool>> = vec![Vec::new(); n];
    let mut fate: Vec<Fate> = mirror
        .slots
        .iter()
        .map(|s| {
            if s.units.is_empty() {
                Fate::Keep
            } else {
                Fate::Drop
            }
        })
        .collect();
    for it in items {
        match &it.what {
            What::Unit { slot, unit } => {
                let (slot, unit) = (*slot as usize, *unit as usize);
                let units = mirror.slots[slot].units.len();
                kept[slot] += 1;
                if units > 1 {
                    if stays[slot].is_empty() {
                        stays[slot] = vec![false; units];
                    }
                    stays[slot][unit] = true;
                }
            }
            What::Summary { slot, text } => fate[*slot as usize] = Fate::Replace(text.clone()),
            What::Marker(_) => {}
        }
    }
    for i in 0..n {
        if kept[i] == 0 {
            continue;
        }
        let units = mirror.slots[i].units.len();
        if kept[i] as usize == units {
            fate[i] = Fate::Keep;
            continue;
        }
        if let Shape::Results { extra: Some(e), .. } = mirror.slots[i].shape {
            if kept[i] == 1 && stays[i][units - 1] {
                fate[i] = Fate::Replace(call.msg(i).text()[e..].to_string());
                continue;
            }
        }
        fate[i] = Fate::Part(stays[i].iter().map(|&s| !s).collect());
    }
    // A marker stands in for the first dropped host message between the items around it.
    let slot_of = |it: &Item| match &it.what {
        What::Unit { slot, .. } | What::Summary { slot, .. } => Some(*slot as usize),
        What::Marker(_) => None,
    };
    let mut unplaced = 0;
    let mut from = 0usize;
    for (p, it) in items.iter().enumerate() {
        match (&it.what, slot_of(it)) {
            (_, Some(slot)) => from = slot + 1,
            (What::Marker(text), None) => {
                let to = items[p + 1..].iter().find_map(slot_of).unwrap_or(n);
                match (from..to).find(|&j| fate[j] == Fate::Drop) {
                    Some(j) => {
                        fate[j] = Fate::Replace(text.clone());
                        from = j + 1;
                    }
                    None => unplaced += 1,
                }
            }
            _ => {}
        }
    }
    (fate, unplaced)
}

/// The content of each phi-core message of the tool-result message at `slot` as level 1 left
/// it: each result's body (cut or not), then the trailing user text; for a message whose text
/// is not its results joined (`Body::Whole`), the whole text is the first result's and the
/// others are empty.
pub fn unit_contents(call: &Call<'_>, slot: usize, mirror: &Mirror, cut: bool) -> Vec<String> {
    let s = &mirror.slots[slot];
    let m = call.msg(slot);
    if cut {
        if let L1::Cut { text, parts, .. } = &s.l1 {
            return match parts {
                Some(p) => p.split('\0').map(str::to_string).collect(),
                None => {
                    let mut v = vec![String::new(); s.units.len()];
                    v[0] = text.clone();
                    v
                }
            };
        }
    }
    match s.shape {
        Shape::Results {
            body: Body::Tools,
            extra,
        } => {
            let mut v: Vec<String> = m
                .tools()
                .filter(|t| t.is_result())
                .map(|t| t.body().to_string())
                .collect();
            if let Some(e) = extra {
                v.push(m.text()[e..].to_string());
            }
            v
        }
        _ => {
            let mut v = vec![String::new(); s.units.len()];
            v[0] = m.text().to_string();
            v
        }
    }
}
