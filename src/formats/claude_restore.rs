//! The files Claude Code re-attaches after a compaction, rebuilt from the log when the log does
//! not write them (2.1.3x; 2.1.1xx writes them as `file` attachments, read as such).
//!
//! After a compaction Claude Code re-reads from disk the 5 files its read-file state touched last
//! (`createPostCompactFileAttachments`: plan files and CLAUDE.md excluded, files whose Read result
//! the kept tail still shows skipped), each sent as a Read call and its result when it holds at
//! most 5,000 tokens, else as a one-line note (`compact_file_reference`). The file's text on disk
//! at that moment is in the log when the agent read it whole (a Read without offset or limit) or
//! wrote it whole (Write) and every later change is an Edit (or MultiEdit) the log holds: the
//! edits' `old_string` → `new_string` applied in order rebuild it. A file the log shows only in
//! pieces is not rebuilt (left out): its text is not in the log.
//!
//! The same compaction also sends the agent's plan file when it exists (`plan_file_reference`,
//! Claude Code 2.1.37's cli.js, minified `AP6`, called by the compaction: the file `plans/<slug>.md`, or
//! `<slug>-agent-<id>.md` for a subagent, read from disk whatever the permission mode). Its text
//! at that moment is the plan as the log last showed it whole: a Read without offset or limit, a
//! Write, the edits after either, or the `plan` an `ExitPlanMode` call carries (Claude Code fills
//! that input from the plan file on disk when the call is made, `normalizeToolInput`).
//!
//! Looks at each of the agent's messages once, when a compaction first needs them (`Files`):
//! no cost while reading a log without compactions, linear in a log with many.

use std::sync::Arc;

use rustc_hash::FxHashMap as HashMap;

use crate::model::{Message, Part, Role};

/// Files Claude Code restores after a compaction (`POST_COMPACT_MAX_FILES_TO_RESTORE`).
const MAX_FILES: usize = 5;
/// Tokens above which a restored file is only named (`POST_COMPACT_MAX_TOKENS_PER_FILE`),
/// estimated as Claude Code's rough count does: 4 bytes a token.
const MAX_FILE_TOKENS: usize = 5_000;

/// How the log's Read results number their lines: `     1→text` (2.1.3x) or `1\ttext`.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Numbering {
    Arrow,
    Tab,
}

#[derive(Default)]
struct Track {
    /// The file's whole text as the log last showed it, when it can be known, before `edits`.
    text: Option<Text>,
    /// The inputs of the Edit (`false`) and MultiEdit (`true`) calls made to `text` since, applied
    /// when the text is needed (`settle`): most edited files are read or written again, or
    /// never re-attached, before a compaction needs them.
    edits: Vec<(bool, Arc<serde_json::Value>)>,
    /// Order of the last successful Read, Edit or Write of it.
    last: usize,
}

/// A file's text: as such, or the Read result that lists it, whose line numbers are taken off
/// only when the text is needed (an edit, a compaction): most listings are read again or never
/// re-attached.
enum Text {
    Plain(String),
    Listing(String),
}

impl Track {
    /// The text with its listing's numbers off and its edits applied.
    fn settle(&mut self) -> Option<&str> {
        if !self.edits.is_empty() || matches!(self.text, Some(Text::Listing(_))) {
            let mut text = self.text.take().and_then(Text::into_plain);
            for (multi, input) in self.edits.drain(..) {
                text = text.and_then(|s| apply_input(s, multi, &input));
            }
            self.text = text.map(Text::Plain);
        }
        self.text.as_ref().map(|t| match t {
            Text::Plain(s) | Text::Listing(s) => s.as_str(),
        })
    }

    fn set(&mut self, text: Option<Text>) {
        self.text = text;
        self.edits.clear();
    }
}

/// An Edit's or a MultiEdit's input applied to `text`; `None` when one of its old texts is not
/// in it.
fn apply_input(mut text: String, multi: bool, input: &serde_json::Value) -> Option<String> {
    if !multi {
        return apply(&text, input);
    }
    let edits = input.get("edits").and_then(|v| v.as_array());
    for e in edits.into_iter().flatten() {
        text = apply(&text, e)?;
    }
    Some(text)
}

impl Text {
    fn into_plain(self) -> Option<String> {
        match self {
            Text::Plain(s) => Some(s),
            Text::Listing(l) => strip_numbers(&l).map(|(t, _)| t),
        }
    }
}

/// What a compaction re-attached, as the texts of injected messages; the paths the log does not
/// hold whole.
pub(crate) struct Restored {
    pub texts: Vec<String>,
    pub unknown: Vec<String>,
    /// The agent's plan file: its path (when the log names the session's slug), and its text
    /// when the log shows it whole.
    pub plan_path: Option<String>,
    pub plan: Option<String>,
    /// The agent entered or left plan mode, or touched its plan file, before the compaction:
    /// a plan file may exist though the log does not show its text.
    pub plan_seen: bool,
}

/// The `plan` an `ExitPlanMode` call carries: the plan file's text when the call was made.
pub(crate) fn exit_plan_text(name: &str, args: &str) -> Option<String> {
    if name != "ExitPlanMode" {
        return None;
    }
    let v: serde_json::Value = serde_json::from_str(args).ok()?;
    v.get("plan")?.as_str().map(String::from)
}

/// Where a plan file whose path the log never wrote is: Claude Code's default plans folder,
/// beside the other plan files the log names when it names any.
fn default_plan_path<'a>(name: &str, seen: impl Iterator<Item = &'a String>) -> String {
    for p in seen {
        if let Some(i) = p.find("/.claude/plans/") {
            return format!("{}{name}", &p[..i + "/.claude/plans/".len()]);
        }
    }
    format!("~/.claude/plans/{name}")
}

fn excluded(path: &str) -> bool {
    let p = path.replace('\\', "/");
    let name = p.rsplit('/').next().unwrap_or(&p);
    p.contains("/.claude/plans/") || name == "CLAUDE.md" || name == "CLAUDE.local.md"
}

/// The text of a Read result without its line numbers, and their style; `None` when it is not
/// a numbered file listing.
fn strip_numbers(content: &str) -> Option<(String, Numbering)> {
    let mut out = String::with_capacity(content.len());
    let mut style = None;
    for line in content.split('\n') {
        let t = line.trim_start_matches(' ');
        let digits = t.bytes().take_while(u8::is_ascii_digit).count();
        if digits == 0 {
            break;
        }
        let rest = &t[digits..];
        let (text, s) = if let Some(r) = rest.strip_prefix('→') {
            (r, Numbering::Arrow)
        } else if let Some(r) = rest.strip_prefix('\t') {
            (r, Numbering::Tab)
        } else {
            break;
        };
        if style.is_some() {
            out.push('\n');
        }
        out.push_str(text);
        style.get_or_insert(s);
    }
    style.map(|s| (out, s))
}

/// The numbering of a Read result's first line (`strip_numbers`'s style, without the text).
fn listing_style(content: &str) -> Option<Numbering> {
    let first = content.split('\n').next().unwrap_or("");
    let t = first.trim_start_matches(' ');
    let digits = t.bytes().take_while(u8::is_ascii_digit).count();
    if digits == 0 {
        return None;
    }
    let rest = &t[digits..];
    if rest.starts_with('→') {
        Some(Numbering::Arrow)
    } else if rest.starts_with('\t') {
        Some(Numbering::Tab)
    } else {
        None
    }
}

fn number(text: &str, style: Numbering) -> String {
    let mut out = String::with_capacity(text.len() + text.len() / 4);
    for (i, line) in text.split('\n').enumerate() {
        if i > 0 {
            out.push('\n');
        }
        match style {
            Numbering::Arrow => {
                push_decimal(&mut out, i + 1, 6);
                out.push('→');
            }
            Numbering::Tab => {
                push_decimal(&mut out, i + 1, 0);
                out.push('\t');
            }
        }
        out.push_str(line);
    }
    out
}

/// `n` in decimal, right-aligned in `width` with spaces (`format!("{n:>width$}")`, with no
/// string made per line).
fn push_decimal(out: &mut String, n: usize, width: usize) {
    let mut buf = [0u8; 20];
    let (mut i, mut n) = (buf.len(), n);
    loop {
        i -= 1;
        buf[i] = b'0' + (n % 10) as u8;
        n /= 10;
        if n == 0 {
            break;
        }
    }
    for _ in buf.len() - i..width {
        out.push(' ');
    }
    out.extend(buf[i..].iter().map(|&d| d as char));
}

fn reminder(t: &str) -> String {
    format!("<system-reminder>\n{t}\n</system-reminder>")
}

/// Applies one edit; `None` when its old text is not in the file (the text is then unknown).
fn apply(text: &str, e: &serde_json::Value) -> Option<String> {
    let old = e.get("old_string")?.as_str()?;
    let new = e.get("new_string")?.as_str()?;
    if old.is_empty() {
        return None;
    }
    let at = text.find(old)?;
    let all = e.get("replace_all").and_then(|v| v.as_bool()) == Some(true);
    Some(if all {
        text.replace(old, new)
    } else {
        // `replacen(old, new, 1)`, from where the look-up found it.
        let mut s = String::with_capacity(text.len() - old.len() + new.len());
        s.push_str(&text[..at]);
        s.push_str(new);
        s.push_str(&text[at + old.len()..]);
        s
    })
}

/// What the log showed of the files one agent read, edited and wrote, up to a message: kept by
/// the reader between the agent's compactions, so each message is looked at once however many
/// compactions the log holds (a rescan from the start at each compaction made a log of many
/// compactions quadratic to read).
#[derive(Default)]
pub(crate) struct Files {
    /// Messages `..scanned` are taken in.
    scanned: usize,
    /// Read / Edit / Write / MultiEdit calls waiting for their result: (name, input).
    calls: HashMap<String, (&'static str, Arc<serde_json::Value>)>,
    files: HashMap<String, Track>,
    /// Where the last whole Read of each file was (message index): a kept tail that shows it is
    /// not re-attached.
    read_at: HashMap<String, usize>,
    style: Option<Numbering>,
    order: usize,
    /// The file name of the agent's plan file (`<slug>.md`), when the log names the session's
    /// slug; a path of that name is tracked as `plan`, not with the files.
    pub(crate) plan_name: Option<String>,
    plan: Track,
    /// The plan file's path as the log wrote it.
    plan_path: Option<String>,
    plan_seen: bool,
}

impl Files {
    /// Takes in `agent`'s messages of `messages[self.scanned..upto]`.
    fn advance(&mut self, messages: &[Message], agent: crate::model::AgentIdx, upto: usize) {
        let from = self.scanned.min(upto);
        for (i, m) in messages[from..upto].iter().enumerate() {
            let i = from + i;
            if m.agent != agent || m.flags.meta {
                continue;
            }
            for p in &m.parts {
                match p {
                    Part::ToolCall { name, .. }
                        if m.role == Role::Assistant && name == "EnterPlanMode" =>
                    {
                        self.plan_seen = true;
                    }
                    Part::ToolCall { name, args, .. }
                        if m.role == Role::Assistant && name == "ExitPlanMode" =>
                    {
                        self.plan_seen = true;
                        if let Some(text) = exit_plan_text(name, args) {
                            self.order += 1;
                            self.plan = Track {
                                text: Some(Text::Plain(text)),
                                edits: Vec::new(),
                                last: self.order,
                            };
                        }
                    }
                    Part::ToolCall { id, name, args } if m.role == Role::Assistant => {
                        let name = match name.as_str() {
                            "Read" => "Read",
                            "Edit" => "Edit",
                            "Write" => "Write",
                            "MultiEdit" => "MultiEdit",
                            _ => continue,
                        };
                        if let Ok(v) = serde_json::from_str::<serde_json::Value>(args) {
                            self.calls.insert(id.clone(), (name, Arc::new(v)));
                        }
                    }
                    Part::ToolResult {
                        call_id,
                        content,
                        is_error: false,
                    } => self.result(i, call_id, content),
                    _ => {}
                }
            }
        }
        self.scanned = self.scanned.max(upto);
    }

    /// A successful result of call `call_id` in message `i`.
    fn result(&mut self, i: usize, call_id: &str, content: &str) {
        let Some((name, input)) = self.calls.get(call_id) else {
            return;
        };
        let Some(path) = input.get("file_path").and_then(|v| v.as_str()) else {
            return;
        };
        if content.contains("<tool_use_error>") {
            return;
        }
        self.order += 1;
        let is_plan = self
            .plan_name
            .as_deref()
            .is_some_and(|n| path.replace('\\', "/").rsplit('/').next() == Some(n));
        let t = if is_plan {
            self.plan_seen = true;
            self.plan_path = Some(path.to_string());
            &mut self.plan
        } else {
            self.files.entry(path.to_string()).or_default()
        };
        t.last = self.order;
        match *name {
            "Read" => {
                let whole = input.get("offset").is_none() && input.get("limit").is_none();
                if whole {
                    if let Some(s) = listing_style(content) {
                        t.set(Some(Text::Listing(content.to_string())));
                        self.style = Some(s);
                    } else {
                        // An image, a notebook, an empty file: not a text listing.
                        t.set(None);
                    }
                }
                if !is_plan {
                    self.read_at.insert(path.to_string(), i);
                }
            }
            "Write" => {
                t.set(
                    input
                        .get("content")
                        .and_then(|v| v.as_str())
                        .map(|c| Text::Plain(c.to_string())),
                );
            }
            // An unknown text stays unknown; a known one takes the edit when it is needed.
            _ if t.text.is_none() => {}
            "Edit" => t.edits.push((false, input.clone())),
            _ => t.edits.push((true, input.clone())),
        }
    }

    /// The re-attached files of `agent`'s compaction whose summary follows `messages[..at]`; a
    /// file whose last Read result is in `messages[kept_from..at]` (a kept tail) is not
    /// re-attached.
    pub(crate) fn restore(
        &mut self,
        messages: &[Message],
        agent: crate::model::AgentIdx,
        at: usize,
        kept_from: Option<usize>,
    ) -> Restored {
        self.advance(messages, agent, at);
        let kept = |p: &str| {
            kept_from.is_some_and(|k| self.read_at.get(p).is_some_and(|&i| i >= k && i < at))
        };
        let mut recent: Vec<(&String, &Track)> = self
            .files
            .iter()
            .filter(|(p, _)| !excluded(p) && !kept(p))
            .collect();
        recent.sort_by_key(|(_, t)| std::cmp::Reverse(t.last));
        recent.truncate(MAX_FILES);
        let recent: Vec<String> = recent.into_iter().map(|(p, _)| p.clone()).collect();
        let style = self.style.unwrap_or(Numbering::Tab);
        let plan_path = self.plan_name.as_deref().map(|name| {
            self.plan_path
                .clone()
                .unwrap_or_else(|| default_plan_path(name, self.files.keys()))
        });
        let plan = self.plan.settle().map(String::from);
        let mut out = Restored {
            texts: Vec::new(),
            unknown: Vec::new(),
            plan: plan_path.as_ref().and(plan),
            plan_path,
            plan_seen: self.plan_seen,
        };
        for path in recent {
            let Some(t) = self.files.get_mut(&path) else {
                continue;
            };
            // A listing's numbers come off and its edits apply once; the file's text stays for
            // later compactions.
            match t.settle() {
                Some(text) if text.len() / 4 <= MAX_FILE_TOKENS => {
                    let input = serde_json::json!({ "file_path": path });
                    out.texts.push(format!(
                        "{}\n{}",
                        reminder(&format!(
                            "Called the Read tool with the following input: {input}"
                        )),
                        reminder(&format!(
                            "Result of calling the Read tool:\n{}",
                            number(text, style)
                        ))
                    ));
                }
                Some(_) => out.texts.push(reminder(&format!(
                    "Note: {path} was read before the last conversation was summarized, but the contents are too large to include. Use Read tool if you need to access it."
                ))),
                None => out.unknown.push(path),
            }
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_round_trip() {
        let (t, s) = strip_numbers("     1→a\n     2→  b\n\n<system-reminder>x").unwrap();
        assert_eq!((t.as_str(), s), ("a\n  b", Numbering::Arrow));
        assert_eq!(number("a\n  b", Numbering::Arrow), "     1→a\n     2→  b");
        let (t, s) = strip_numbers("1\tx\n2\ty").unwrap();
        assert_eq!((t.as_str(), s), ("x\ny", Numbering::Tab));
        assert!(strip_numbers("no listing").is_none());
    }

    #[test]
    fn numbers_as_format_writes_them() {
        for n in [1, 9, 10, 99_999, 999_999, 1_000_000, 12_345_678] {
            let (mut a, mut t) = (String::new(), String::new());
            push_decimal(&mut a, n, 6);
            push_decimal(&mut t, n, 0);
            assert_eq!(a, format!("{n:>6}"));
            assert_eq!(t, format!("{n}"));
        }
    }

    #[test]
    fn a_listing_style_is_its_first_line() {
        for c in [
            "     1→a\n     2→  b\n\nx",
            "1\tx\n2\ty",
            "no listing",
            "",
            "12",
            "  7\tq",
        ] {
            assert_eq!(listing_style(c), strip_numbers(c).map(|(_, s)| s), "{c:?}");
        }
    }
}
