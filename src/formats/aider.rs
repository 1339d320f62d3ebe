//! Aider's `.aider.chat.history.md`: a markdown log appended to by every aider run.
//!
//! `# aider chat started at <time>` opens a run (its own agent: aider starts each run with a fresh
//! chat); `#### ` lines are the user's messages; lines quoted with `> ` are aider's own output
//! (settings, commands, file additions), among them `> Tokens: 3.7k sent, 1.2k received. Cost: …`
//! which closes one model call; everything else is the assistant's reply. Token counts are rounded
//! by aider (`3.7k`): the usage is as precise as the log. The repo map and file contents aider sends
//! are not in the log; calibration accounts for them as overhead.

use std::collections::{BTreeSet, HashMap};
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
    /// The agent of the last call (an edit error's reflection goes back to it).
    last_call: Option<AgentIdx>,
    /// The file keeps aider's markdown line breaks (`"  "` ending its `>` and `####` lines):
    /// only then does a `>` line without one open a quote of several lines.
    breaks: bool,
    /// Inside aider output of several lines (only its first line is quoted).
    in_quote: bool,
    /// `The LLM did not conform to the edit format.` was seen: the error aider sends back follows.
    reflect_armed: bool,
    /// The edit error being read, sent back to the model as a user message.
    reflect: Option<Vec<String>>,
    /// The previous quoted line: the subject of a confirmation prompt.
    last_quote: String,
    /// Files in the run's chat (`/add`, `Added … to the chat.`, mentions confirmed).
    chat: BTreeSet<String>,
    /// The content of each file as the log shows it whole (whole-file edits aider applied).
    contents: HashMap<String, String>,
    /// Whole files of the last reply, kept once aider says `Applied edit to` them.
    pending: HashMap<String, String>,
    /// Files added to the chat after the last reply mentioned them (aider asks again).
    mentioned: Vec<String>,
    /// Files in the chat whose content the log never shows.
    unknown: BTreeSet<String>,
    /// Per agent: its current conversation (where it starts, the message holding its chat files).
    convs: HashMap<AgentIdx, Conv>,
    /// Bumped whenever the chat's files or a file's content change: a call whose agent synced
    /// at this revision has its files already (their text is not rebuilt for every call).
    files_rev: u64,
}

#[derive(Default)]
struct Conv {
    start: MsgIdx,
    files: Option<(MsgIdx, String)>,
    /// `files_rev + 1` when the files were last brought up to date (0: never).
    synced: u64,
}

/// What stands for the chat files once none whose content is known is left.
const NO_FILES: &str = "No files are in the chat.";

/// Aider's fences (`coders/base_coder.py`, `all_fences`), longest opening first.
const FENCES: [(&str, &str); 7] = [
    ("````", "````"),
    ("```", "```"),
    ("<sourcecode>", "</sourcecode>"),
    ("<source>", "</source>"),
    ("<codeblock>", "</codeblock>"),
    ("<code>", "</code>"),
    ("<pre>", "</pre>"),
];

/// A path as aider prints it, with `/` separators (Windows logs print `backend\\app.py`).
fn norm_path(p: &str) -> String {
    p.trim()
        .trim_matches(|c| c == '`' || c == '*')
        .trim_end_matches(':')
        .replace('\\', "/")
}

/// The whole files a reply writes (whole-file edit formats: the path on its own line, then the
/// file in a fence); blocks holding SEARCH/REPLACE edits are not whole files.
fn whole_files(text: &str) -> Vec<(String, String)> {
    let lines: Vec<&str> = text.lines().collect();
    let mut out = Vec::new();
    // A fence with no closing line after some point has none after any later point either:
    // searched once (a reply of many unclosed fences stays linear).
    let mut unclosed = [false; FENCES.len()];
    let mut i = 0;
    while i + 1 < lines.len() {
        let path = norm_path(lines[i]);
        let open = lines[i + 1].trim_start();
        let fence = FENCES
            .iter()
            .position(|(o, _)| open.starts_with(o))
            .filter(|&f| !unclosed[f])
            .map(|f| (f, FENCES[f]));
        let is_path = !path.is_empty()
            && path.len() < 256
            && !path.contains(char::is_whitespace)
            && !path.starts_with('#');
        if let (Some((f, (_, close))), true) = (fence, is_path) {
            let end = (i + 2..lines.len()).find(|&j| lines[j].trim() == close);
            if end.is_none() {
                unclosed[f] = true;
            }
            if let Some(end) = end {
                let body = &lines[i + 2..end];
                if !body.iter().any(|l| l.starts_with("<<<<<<< SEARCH")) {
                    let mut content = body.join("\n");
                    content.push('\n');
                    out.push((path, content));
                }
                i = end + 1;
                continue;
            }
        }
        i += 1;
    }
    out
}

/// The commands aider runs itself; a `####` line opening an input with `/` is one of them (or
/// an invalid one): aider sends none to the model but the message after `/ask`, `/code`,
/// `/architect`, `/context` (`commands.py`, `Commands.run`).
const MESSAGE_COMMANDS: [&str; 4] = ["/ask", "/code", "/architect", "/context"];

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
                self.convs.insert(
                    a,
                    Conv {
                        start: self.s.messages.len(),
                        files: None,
                        synced: 0,
                    },
                );
                a
            }
        }
    }

    /// Architect mode (aider `coders/architect_coder.py`, `ArchitectCoder.reply_completed`, at
    /// v0.85.2): the architect's reply is sent to a new editor coder with `cur_messages` and
    /// `done_messages` emptied and no repo map, as its only message (aider logs it as a `####`
    /// message). So each editor call starts a fresh context: one editor agent per run, whose
    /// earlier exchanges are behind a recorded compaction (trigger `new conversation`). The
    /// editor is made `from_coder` the architect: it is sent the architect's chat files.
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
        // Each conversation is sent the files afresh; the last one's files leave (for a run
        // that does not follow the log's fresh contexts).
        let before = self
            .convs
            .get(&editor)
            .and_then(|c| c.files.as_ref())
            .map(|f| f.0);
        self.convs.insert(
            editor,
            Conv {
                start: self.s.messages.len(),
                files: None,
                synced: 0,
            },
        );
        let pos = self.user_pos;
        self.sync_files(editor, pos);
        if let Some((now, _)) = self.convs.get(&editor).and_then(|c| c.files.as_ref()) {
            self.s.messages[*now].flags.replaces = before;
        }
        editor
    }

    /// The chat files as aider sends them with every call (`get_chat_files_messages`: each
    /// file's path and current content in a fence), for the files whose content the log shows;
    /// `None` when there are none.
    fn files_text(&mut self) -> Option<String> {
        let mut out = String::new();
        for f in &self.chat {
            match self.contents.get(f) {
                Some(c) => {
                    out.push('\n');
                    out.push_str(f);
                    out.push_str("\n```\n");
                    out.push_str(c);
                    out.push_str("```\n");
                }
                None => {
                    self.unknown.insert(f.clone());
                }
            }
        }
        (!out.is_empty()).then_some(out)
    }

    /// Brings `agent`'s chat files up to date before its call: aider places them after the
    /// history (`format_chat_chunks`) with their content as it is now, so when a file changes
    /// (the editor rewrote it) or joins the chat, the new text takes the old one's place
    /// (`MessageFlags::replaces`): it is not history. With no file left whose content is known,
    /// a short note takes its place (aider then sends a line saying no file is shared).
    fn sync_files(&mut self, agent: AgentIdx, pos: SourcePos) {
        let rev = self.files_rev + 1;
        if self.convs.get(&agent).is_some_and(|c| c.synced == rev) {
            return;
        }
        let text = self.files_text();
        let conv = self.convs.entry(agent).or_default();
        let old = conv.files.take();
        let files = match (old, text) {
            (None, None) => None,
            (Some((i, old)), Some(new)) if old == new => Some((i, new)),
            (old, new) => {
                let replaces = old.map(|(i, _)| i);
                let new = new.unwrap_or_else(|| NO_FILES.to_string());
                let i = self.push_aider(agent, new.clone(), pos);
                self.s.messages[i].flags.replaces = replaces;
                Some((i, new))
            }
        };
        let conv = self.convs.entry(agent).or_default();
        conv.files = files;
        conv.synced = rev;
    }

    /// A user message aider writes itself (chat files, notes, an edit error sent back): not
    /// the human's request (`MessageFlags::injected`).
    fn push_aider(&mut self, agent: AgentIdx, text: String, pos: SourcePos) -> MsgIdx {
        let parts = vec![Part::Text { text }];
        let i = self.s.push_message(agent, Role::User, parts, self.ts, pos);
        self.s.messages[i].flags.injected = true;
        i
    }

    /// `/clear` (and `/reset`): aider empties the history (`done_messages`, `cur_messages`).
    fn clear(&mut self, pos: SourcePos) {
        let run = self.agent();
        let at = self.s.messages.len();
        let start = self.convs.get(&run).map_or(0, |c| c.start);
        if self.s.messages[start.min(at)..]
            .iter()
            .any(|m| m.agent == run)
        {
            self.s.compactions.push(RecordedCompaction {
                agent: run,
                at_message: at,
                trigger: "clear".into(),
                pre_tokens: None,
                summary: None,
                kept_from: None,
                timestamp: self.ts,
                inferred: false,
                source: pos,
            });
        }
        self.convs.insert(
            run,
            Conv {
                start: at,
                files: None,
                synced: 0,
            },
        );
    }

    /// A `####` line opening an input with `/`: the command aider runs (`commands.py`).
    fn command(&mut self, text: &str, pos: SourcePos) {
        let (cmd, rest) = text.split_once(char::is_whitespace).unwrap_or((text, ""));
        let rest = rest.trim();
        let files = || rest.split_whitespace().map(norm_path);
        match cmd {
            "/clear" => self.clear(pos),
            "/reset" => {
                self.clear(pos);
                self.chat.clear();
                self.files_rev += 1;
            }
            "/add" => {
                let add: Vec<String> = files().filter(|f| !f.contains('*')).collect();
                self.chat.extend(add);
                self.files_rev += 1;
            }
            "/drop" if rest.is_empty() => {
                self.chat.clear();
                self.files_rev += 1;
            }
            "/drop" => {
                for f in files().collect::<Vec<_>>() {
                    self.chat.remove(&f);
                }
                self.files_rev += 1;
            }
            c if MESSAGE_COMMANDS.contains(&c) && !rest.is_empty() => {
                self.user_pos = pos;
                self.user.push(rest.to_string());
            }
            _ => {}
        }
    }

    /// The reply written since the last call; `None` when there is no text.
    fn flush_reply(&mut self) -> Option<MsgIdx> {
        if self.reply.iter().all(|l| l.trim().is_empty()) {
            self.reply.clear();
            return None;
        }
        let agent = match self.current {
            Some(a) => a,
            None => self.agent(),
        };
        self.flush_reply_of(agent)
    }

    fn flush_reply_of(&mut self, agent: AgentIdx) -> Option<MsgIdx> {
        let text = std::mem::take(&mut self.reply).join("\n");
        let text = text.trim();
        if text.is_empty() {
            return None;
        }
        let parts = vec![Part::Text {
            text: text.to_string(),
        }];
        Some(
            self.s
                .push_message(agent, Role::Assistant, parts, self.ts, self.reply_pos),
        )
    }

    /// The edit error read so far goes back to the model as a user message (aider's
    /// `reflected_message`), to the agent whose reply failed.
    fn end_reflect(&mut self, pos: SourcePos) {
        self.in_quote = false;
        let Some(lines) = self.reflect.take() else {
            return;
        };
        let text = lines.join("\n").trim().to_string();
        if text.is_empty() {
            return;
        }
        self.flush_reply();
        let agent = match self.last_call {
            Some(a) => a,
            None => self.agent(),
        };
        self.push_aider(agent, text, pos);
        self.current = Some(agent);
    }

    fn line(&mut self, line: &str, pos: SourcePos) {
        let has_break = line.ends_with("  ");
        if self.in_quote {
            if line.starts_with(RUN) || line.starts_with("####") || line.starts_with("> ") {
                self.end_reflect(pos);
            } else {
                if let Some(r) = &mut self.reflect {
                    r.push(line.trim_end().to_string());
                }
                if has_break {
                    self.end_reflect(pos);
                }
                return;
            }
        }
        // aider quotes its own output with `> ` (`append_chat_history`); a reply's own lines may
        // start with `>` too (`>>>>>>> REPLACE`).
        let quoted = line == ">" || line.starts_with("> ");
        if has_break && (quoted || line.starts_with("####")) {
            self.breaks = true;
        }
        if !quoted {
            self.reflect_armed = false;
        }
        if let Some(when) = line.strip_prefix(RUN) {
            self.flush_user();
            // A reply with no token line after it (an interrupted run) is still the agent's.
            self.flush_reply();
            self.agent = None;
            (self.architect, self.editor, self.plan, self.current) = (false, None, None, None);
            self.editor_model = None;
            self.last_call = None;
            self.chat.clear();
            self.files_rev += 1;
            self.mentioned.clear();
            self.pending.clear();
            self.ts = parse_ms(when.trim());
            let a = self.agent();
            self.s.agents[a].name = format!("aider {}", when.trim());
            return;
        }
        if let Some(text) = line.strip_prefix("####") {
            self.flush_reply();
            let text = text.strip_prefix(' ').unwrap_or(text).trim_end();
            if self.user.is_empty() && text.starts_with('/') {
                self.command(text, pos);
                return;
            }
            if self.user.is_empty() {
                self.user_pos = pos;
            }
            self.user.push(text.to_string());
            return;
        }
        if let Some(q) = line.strip_prefix('>').filter(|_| quoted) {
            let q = q.trim();
            // Output of several lines: aider quotes only the first (`append_chat_history`). Only
            // between replies: within one, a `> ` line is the model's own markdown quote.
            let multi = self.breaks && !has_break && self.reply.is_empty();
            if self.reflect_armed && !q.starts_with("https://aider.chat/") && !q.is_empty() {
                self.reflect_armed = false;
                self.reflect = Some(vec![q.to_string()]);
                if multi {
                    self.in_quote = true;
                } else {
                    self.end_reflect(pos);
                }
                return;
            }
            self.in_quote = multi;
            if q == "The LLM did not conform to the edit format." {
                self.reflect_armed = true;
            } else if let Some(m) = q
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
            } else if let Some(f) = q.strip_prefix("Applied edit to ") {
                let f = norm_path(f);
                if let Some(c) = self.pending.remove(&f) {
                    self.contents.insert(f, c);
                    self.files_rev += 1;
                }
            } else if let Some(f) = q
                .strip_prefix("Added ")
                .and_then(|r| r.strip_suffix(" to the chat."))
                .filter(|f| !f.contains(" lines of output"))
            {
                self.chat.insert(norm_path(f));
                self.files_rev += 1;
            } else if let Some(answer) = q
                .strip_prefix("Add file to the chat?")
                .and_then(|r| r.rsplit_once("]:"))
                .map(|(_, a)| a.trim().to_ascii_lowercase())
            {
                // `check_for_file_mentions`: the subject is the line before.
                if matches!(answer.as_str(), "" | "y" | "yes" | "a" | "all") {
                    let f = norm_path(&self.last_quote);
                    self.chat.insert(f.clone());
                    self.files_rev += 1;
                    self.mentioned.push(f);
                }
            }
            self.last_quote = q.to_string();
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
        let run = self.agent();
        let agent = self.current.take().unwrap_or(run);
        let editing = Some(agent) == self.editor;
        if !editing {
            if !self.mentioned.is_empty() {
                // Files the reply mentioned were added: aider asks again, saying so.
                let text = format!(
                    "I added these files to the chat: {}",
                    std::mem::take(&mut self.mentioned).join(", ")
                );
                self.push_aider(agent, text, pos);
            }
            self.sync_files(agent, pos);
        }
        let reply = self.flush_reply_of(agent);
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
        self.last_call = Some(agent);
        self.pending = reply
            .and_then(|r| match self.s.messages[r].parts.first() {
                Some(Part::Text { text }) => Some(whole_files(text).into_iter().collect()),
                _ => None,
            })
            .unwrap_or_default();
        if editing {
            // `move_back_cur_messages`: the architect's history gets this exchange instead of
            // the editor's.
            self.push_aider(run, "I made those changes to the files.".into(), pos);
            let parts = vec![Part::Text { text: "Ok.".into() }];
            self.s
                .push_message(run, Role::Assistant, parts, self.ts, pos);
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
        last_call: None,
        breaks: false,
        in_quote: false,
        reflect_armed: false,
        reflect: None,
        last_quote: String::new(),
        chat: BTreeSet::new(),
        contents: HashMap::new(),
        pending: HashMap::new(),
        mentioned: Vec::new(),
        unknown: BTreeSet::new(),
        convs: HashMap::new(),
        files_rev: 0,
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
    r.end_reflect(SourcePos::default());
    r.flush_user();
    r.flush_reply();
    if !r.unknown.is_empty() {
        let names: Vec<&str> = r.unknown.iter().map(String::as_str).collect();
        let pos = SourcePos::default();
        r.s.warn(
            pos,
            format!(
                "the content of {} file(s) in the chat is not in the log (calibration's overhead holds it): {}",
                names.len(),
                names.join(", ")
            ),
        );
    }
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

    #[test]
    fn whole_files_of_a_reply() {
        let reply = "Here they are.\n\nsrc\\a.py\n```python\nx = 1\n```\n\nb.txt\n<source>\nhi\n</source>\nc.py\n```\n<<<<<<< SEARCH\n=======\ny\n>>>>>>> REPLACE\n```\nd.py\n````\nnever closed";
        assert_eq!(
            whole_files(reply),
            vec![
                ("src/a.py".to_string(), "x = 1\n".to_string()),
                ("b.txt".to_string(), "hi\n".to_string()),
            ]
        );
        // Many fences that never close: each kind is searched once.
        let hostile = "f.py\n<pre>\n".repeat(50_000);
        assert!(whole_files(&hostile).is_empty());
    }
}
