//! Aider's `.aider.chat.history.md`: a markdown log appended to by every aider run.
//!
//! `# aider chat started at <time>` opens a run (its own agent: aider starts each run with a fresh
//! chat); `#### ` lines are the user's messages; lines quoted with `> ` are aider's own output
//! (settings, commands, file additions), among them `> Tokens: 3.7k sent, 1.2k received. Cost: …`
//! which closes one model call; everything else is the assistant's reply. Token counts are rounded
//! by aider (`3.7k`): the usage is as precise as the log. The repo map and file contents aider sends
//! are not in the log; calibration accounts for them as overhead.

use std::io::BufRead;
use std::path::Path;

use super::lines::{LineReader, Next};
use super::time::parse_ms;
use crate::model::*;
use crate::{Error, Result};

pub const ID: &str = "aider";

/// The name Aider gives its history in the folder it runs in.
pub const HISTORY_FILE: &str = ".aider.chat.history.md";

const RUN: &str = "# aider chat started at ";

struct Reader {
    s: Session,
    agent: Option<AgentIdx>,
    runs: usize,
    user: Vec<String>,
    user_pos: SourcePos,
    reply: Vec<String>,
    reply_pos: SourcePos,
    ts: Option<i64>,
    model: Option<String>,
    /// Architect mode (`--architect`): the run's editor agent, and its model.
    architect: bool,
    editor: Option<AgentIdx>,
    editor_model: Option<String>,
    /// The reply of the architect's last call: the editor is sent it as its message.
    plan: Option<String>,
    /// The agent of the exchange being read (the editor's, else the run's).
    current: Option<AgentIdx>,
}

/// Text compared line by line without the markdown line breaks (`"  "`) aider appends.
fn same_text(a: &str, b: &str) -> bool {
    let lines = |t: &str| {
        t.lines()
            .map(str::trim)
            .filter(|l| !l.is_empty())
            .map(String::from)
            .collect::<Vec<_>>()
    };
    lines(a) == lines(b)
}

impl Reader {
    fn flush_user(&mut self) {
        if self.user.is_empty() {
            return;
        }
        let text = std::mem::take(&mut self.user).join("\n");
        let agent = if self.plan.take().is_some_and(|p| same_text(&p, &text)) {
            self.editor_turn()
        } else {
            self.agent()
        };
        self.current = Some(agent);
        self.s.push_message(
            agent,
            Role::User,
            vec![Part::Text { text }],
            self.ts,
            self.user_pos,
        );
    }

    fn agent(&mut self) -> AgentIdx {
        match self.agent {
            Some(a) => a,
            None => {
                self.runs += 1;
                let a = self.s.agent_index(&format!("run-{}", self.runs));
                self.agent = Some(a);
                a
            }
        }
    }

    /// Architect mode (aider `coders/architect_coder.py`, `ArchitectCoder.reply_completed`, at
    /// v0.85.2): the architect's reply is sent to a new editor coder with `cur_messages` and
    /// `done_messages` emptied and no repo map, as its only message (aider logs it as a `####`
    /// message). So each editor call starts a fresh context: one editor agent per run, whose
    /// earlier exchanges are behind a recorded compaction (trigger `new conversation`).
    fn editor_turn(&mut self) -> AgentIdx {
        let run = self.agent();
        let editor = match self.editor {
            Some(e) => e,
            None => {
                let id = format!("{} editor", self.s.agents[run].id);
                let e = self.s.agent_index(&id);
                self.s.agents[e].name = format!("{} (editor)", self.s.agents[run].name);
                self.s.agents[e].parent = Some(run);
                self.s.agents[e].model = self.editor_model.clone();
                self.editor = Some(e);
                e
            }
        };
        if self.s.messages.iter().any(|m| m.agent == editor) {
            self.s.compactions.push(RecordedCompaction {
                agent: editor,
                at_message: self.s.messages.len(),
                trigger: "new conversation".into(),
                pre_tokens: None,
                summary: None,
                kept_from: None,
                timestamp: self.ts,
                inferred: false,
                source: self.user_pos,
            });
        }
        editor
    }

    /// The reply written since the last call; `None` when there is no text.
    fn flush_reply(&mut self) -> Option<MsgIdx> {
        let text = std::mem::take(&mut self.reply).join("\n");
        let text = text.trim();
        if text.is_empty() {
            return None;
        }
        let agent = match self.current {
            Some(a) => a,
            None => self.agent(),
        };
        let parts = vec![Part::Text {
            text: text.to_string(),
        }];
        Some(
            self.s
                .push_message(agent, Role::Assistant, parts, self.ts, self.reply_pos),
        )
    }

    fn line(&mut self, line: &str, pos: SourcePos) {
        if let Some(when) = line.strip_prefix(RUN) {
            self.flush_user();
            // A reply with no token line after it (an interrupted run) is still the agent's.
            self.flush_reply();
            self.agent = None;
            (self.architect, self.editor, self.plan, self.current) = (false, None, None, None);
            self.editor_model = None;
            self.ts = parse_ms(when.trim());
            let a = self.agent();
            self.s.agents[a].name = format!("aider {}", when.trim());
            return;
        }
        if let Some(text) = line.strip_prefix("####") {
            self.flush_reply();
            if self.user.is_empty() {
                self.user_pos = pos;
            }
            self.user.push(
                text.strip_prefix(' ')
                    .unwrap_or(text)
                    .trim_end()
                    .to_string(),
            );
            return;
        }
        if let Some(quoted) = line.strip_prefix('>') {
            let q = quoted.trim();
            if let Some(m) = q
                .strip_prefix("Main model:")
                .or_else(|| q.strip_prefix("Model:"))
            {
                let model = m.split_whitespace().next().map(String::from);
                self.architect = m.contains("with architect edit format");
                let a = self.agent();
                self.s.agents[a].model = model.clone();
                self.model = model;
            } else if let Some(m) = q.strip_prefix("Editor model:") {
                self.editor_model = m.split_whitespace().next().map(String::from);
            } else if let Some(t) = q.strip_prefix("Tokens:") {
                self.call(t, pos);
            }
            return;
        }
        self.flush_user();
        if self.reply.is_empty() {
            if line.trim().is_empty() {
                return;
            }
            self.reply_pos = pos;
        }
        self.reply.push(line.trim_end().to_string());
    }

    fn call(&mut self, text: &str, pos: SourcePos) {
        self.flush_user();
        let Some(usage) = parse_tokens(text) else {
            self.s.warn(
                pos,
                format!("expected `Tokens: N sent, M received`, found {text:?}; skipped"),
            );
            return;
        };
        let reply = self.flush_reply();
        let run = self.agent();
        let agent = self.current.take().unwrap_or(run);
        let editing = Some(agent) == self.editor;
        self.s.calls.push(Call {
            agent,
            context_end: reply.unwrap_or(self.s.messages.len()),
            reply,
            usage: Some(usage),
            model: if editing {
                self.editor_model.clone().or(self.model.clone())
            } else {
                self.model.clone()
            },
            timestamp: self.ts,
            request_id: None,
            source: pos,
        });
        if editing {
            // `move_back_cur_messages`: the architect's history gets this exchange instead of
            // the editor's.
            for (role, text) in [
                (Role::User, "I made those changes to the files."),
                (Role::Assistant, "Ok."),
            ] {
                let parts = vec![Part::Text { text: text.into() }];
                self.s.push_message(run, role, parts, self.ts, pos);
            }
        } else if self.architect {
            self.plan = reply.and_then(|r| match self.s.messages[r].parts.first() {
                Some(Part::Text { text }) => Some(text.clone()),
                _ => None,
            });
        }
    }
}

/// `3.7k sent, 1.2k received. Cost: …` (newer aider adds `, 2.1k cache write, 3k cache hit`).
fn parse_tokens(text: &str) -> Option<Usage> {
    let counts = text.split(". Cost").next()?;
    let mut u = Usage::default();
    let mut sent = None;
    for item in counts.split(',') {
        let item = item.trim().trim_end_matches('.');
        let (num, what) = item.split_once(' ')?;
        let n = parse_count(num)?;
        match what.trim() {
            "sent" => sent = Some(n),
            "received" => u.output = n,
            "cache write" => u.cache_write_5m = n,
            "cache hit" => u.cache_read = n,
            _ => {}
        }
    }
    // `sent` counts every prompt token, cached ones included.
    u.input = sent?.saturating_sub(u.cache_read + u.cache_write_5m);
    Some(u)
}

/// `21`, `3.7k`, `1.2M`, `12,345`.
fn parse_count(s: &str) -> Option<u64> {
    let s = s.replace(',', "");
    let (num, mult) = match s.chars().last()? {
        'k' | 'K' => (&s[..s.len() - 1], 1e3),
        'm' | 'M' => (&s[..s.len() - 1], 1e6),
        _ => (s.as_str(), 1.0),
    };
    let v: f64 = num.parse().ok()?;
    (v.is_finite() && v >= 0.0).then(|| (v * mult).round() as u64)
}

pub fn read(path: &Path) -> Result<Session> {
    let f = std::fs::File::open(path).map_err(|e| Error::io(path, e))?;
    let mut hasher = blake3::Hasher::new();
    let mut lines = LineReader::new(std::io::BufReader::new(f), &mut hasher);
    let mut s = Session::default();
    s.source.format = ID.into();
    s.source.files.push(path.display().to_string());
    let mut r = Reader {
        s,
        agent: None,
        runs: 0,
        user: Vec::new(),
        user_pos: SourcePos::default(),
        reply: Vec::new(),
        reply_pos: SourcePos::default(),
        ts: None,
        model: None,
        architect: false,
        editor: None,
        editor_model: None,
        plan: None,
        current: None,
    };
    let mut fix = super::utf8::Utf8Fix::default();
    loop {
        match lines.next_line().map_err(|e| Error::io(path, e))? {
            Next::Eof => break,
            Next::TooLong(n) => {
                let pos = SourcePos {
                    file: 0,
                    line: lines.line_no(),
                };
                r.s.warn(pos, format!("line of {n} bytes is too long; skipped"));
            }
            Next::Line => {
                let pos = SourcePos {
                    file: 0,
                    line: lines.line_no(),
                };
                let text = fix.line(lines.line(), pos.line).into_owned();
                r.line(&text, pos);
            }
        }
    }
    r.flush_user();
    r.flush_reply();
    fix.warn(&mut r.s, 0);
    let bytes = lines.bytes();
    drop(lines);
    let mut s = r.s;
    s.id = path
        .parent()
        .and_then(|p| p.file_name())
        .or_else(|| path.file_name())
        .map(|x| x.to_string_lossy().into_owned())
        .unwrap_or_default();
    s.source.bytes = bytes;
    s.source.hash = hasher.finalize().to_hex().to_string();
    Ok(s)
}

/// The file's first non-blank line opens an aider run.
pub(crate) fn sniff_text(head: &[u8]) -> bool {
    head.lines()
        .map_while(|l| l.ok())
        .find(|l| !l.trim().is_empty())
        .is_some_and(|l| l.starts_with(RUN))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn token_lines_of_every_aider_version() {
        let u =
            parse_tokens("3.7k sent, 1.2k received. Cost: $0.02 message, $0.05 session.").unwrap();
        assert_eq!((u.input, u.output), (3700, 1200));
        let u = parse_tokens("12k sent, 2.1k cache write, 9.5k cache hit, 301 received.").unwrap();
        assert_eq!(
            (u.input, u.cache_write_5m, u.cache_read, u.output),
            (400, 2100, 9500, 301)
        );
        assert_eq!(parse_count("1,234"), Some(1234));
        assert_eq!(parse_count("2.5M"), Some(2_500_000));
        assert!(parse_tokens("lots sent").is_none());
    }
}
