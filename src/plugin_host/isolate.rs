//! The out-of-process runner (`--isolate`): a strategy the user does not trust runs in a child
//! process, which loads the plugin and speaks the same ABI to it as the host does in-process; the
//! host and the child exchange the call's view and the copied decision as JSON lines over the
//! child's stdin and stdout.
//!
//! What it protects against (docs/plugins.md, "Trust"): a plugin that aborts, exits, crashes,
//! loops or eats memory ends its child, not the host; the replay fails with the plugin's name and
//! what happened ("killed after 30 s without an answer", "ended by signal 6"), and the process
//! (a comparison of several strategies, the app) goes on. The child runs with an address-space
//! limit and no core dumps; the host gives each request a deadline and kills the child past it.
//! It does not sandbox: the child has the user's rights on files and the network.
//!
//! The cost: every call's whole view is copied to the child (in-process, the plugin reads the
//! host's array in place), so an isolated replay does work proportional to the history at each
//! call. It is for plugins one does not trust, not for speed.

use super::{Instance, RawDecision, StrategyEntry};
use crate::error::Error;
use ctxlab_plugin_api::abi::{
    BudgetView, CallView, MessageView, PartList, PartView, StrRef, ToolView, FLAG_PARTS,
};
use ctxlab_plugin_api::sdk::Threshold;
use serde::{Deserialize, Serialize};
use std::io::{BufRead, BufReader, Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc::{Receiver, RecvTimeoutError};
use std::time::Duration;

/// The hidden first argument that makes `ctxlab` the runner (`main` hands over to [`serve`]).
pub const RUNNER_ARG: &str = "__plugin-runner";

/// Largest line either side reads from the other: the in-process caps (ops, events, 16 MiB
/// strings) bound an honest answer far below it; a runaway child is cut off here.
const MAX_LINE: u64 = 512 << 20;

/// How an isolated strategy runs.
#[derive(Debug, Clone, PartialEq)]
pub struct Isolation {
    /// The executable that serves as runner: `ctxlab` itself (`--isolate` uses the running one).
    pub runner: PathBuf,
    /// The longest the host waits for any one answer (create, decide, thresholds, export).
    pub timeout: Duration,
    /// The child's address-space limit, in bytes (`RLIMIT_AS`).
    pub memory_bytes: u64,
}

impl Isolation {
    /// Defaults: 30 s per answer, 4 GiB of address space.
    pub fn new(runner: PathBuf) -> Isolation {
        Isolation {
            runner,
            timeout: Duration::from_secs(30),
            memory_bytes: 4 << 30,
        }
    }
}

#[derive(Debug, Serialize, Deserialize)]
struct WireTool {
    id: String,
    name: String,
    body: String,
    is_result: u8,
    is_error: u8,
}

#[derive(Debug, Serialize, Deserialize)]
struct WireMsg {
    id: u64,
    role: u32,
    flags: u32,
    agent: String,
    tokens: u64,
    chars: u64,
    text: String,
    tools: Vec<WireTool>,
    images: u32,
    content_ascii: u32,
    image_bytes: u64,
    request: u32,
    content_other: u32,
    timestamp_ms: i64,
    /// ABI 1.6: (kind, bytes) of each part, when the flags have FLAG_PARTS.
    #[serde(default)]
    parts: Vec<(u32, u64)>,
}

/// A `CallView` with its strings and arrays owned, to cross the pipe.
#[derive(Debug, Serialize, Deserialize)]
struct WireCall {
    agent: String,
    call_index: u64,
    agent_call_index: u64,
    timestamp_ms: i64,
    budget: (u64, u64, u64),
    overhead_tokens: u64,
    context_tokens: u64,
    prev_input_tokens: u64,
    prev_recorded_input_tokens: u64,
    prev_raw_tokens: u64,
    cumulative_input_tokens: u64,
    new_messages: u64,
    new_request: u8,
    assistant_turns: u64,
    messages: Vec<WireMsg>,
}

unsafe fn owned(s: StrRef) -> String {
    s.as_str().to_string()
}

impl WireCall {
    /// Copies the host's view (valid for the call).
    unsafe fn of(c: &CallView) -> WireCall {
        let msgs: &[MessageView] = if c.messages.is_null() || c.messages_len == 0 {
            &[]
        } else {
            std::slice::from_raw_parts(c.messages, c.messages_len)
        };
        WireCall {
            agent: owned(c.agent),
            call_index: c.call_index,
            agent_call_index: c.agent_call_index,
            timestamp_ms: c.timestamp_ms,
            budget: (
                c.budget.context_window,
                c.budget.max_output,
                c.budget.reserve,
            ),
            overhead_tokens: c.overhead_tokens,
            context_tokens: c.context_tokens,
            prev_input_tokens: c.prev_input_tokens,
            prev_recorded_input_tokens: c.prev_recorded_input_tokens,
            prev_raw_tokens: c.prev_raw_tokens,
            cumulative_input_tokens: c.cumulative_input_tokens,
            new_messages: c.new_messages,
            new_request: c.new_request,
            assistant_turns: c.assistant_turns,
            messages: msgs
                .iter()
                .enumerate()
                .map(|(i, m)| {
                    let parts: &[PartView] =
                        if m.flags & FLAG_PARTS == 0 || c.message_parts.is_null() {
                            &[]
                        } else {
                            let l = *c.message_parts.add(i);
                            if l.parts.is_null() || l.len == 0 {
                                &[]
                            } else {
                                std::slice::from_raw_parts(l.parts, l.len)
                            }
                        };
                    let tools: &[ToolView] = if m.tools.is_null() || m.tools_len == 0 {
                        &[]
                    } else {
                        std::slice::from_raw_parts(m.tools, m.tools_len)
                    };
                    WireMsg {
                        id: m.id,
                        role: m.role,
                        flags: m.flags,
                        agent: owned(m.agent),
                        tokens: m.tokens,
                        chars: m.chars,
                        text: owned(m.text),
                        tools: tools
                            .iter()
                            .map(|t| WireTool {
                                id: owned(t.id),
                                name: owned(t.name),
                                body: owned(t.body),
                                is_result: t.is_result,
                                is_error: t.is_error,
                            })
                            .collect(),
                        images: m.images,
                        content_ascii: m.content_ascii,
                        image_bytes: m.image_bytes,
                        request: m.request,
                        content_other: m.content_other,
                        timestamp_ms: m.timestamp_ms,
                        parts: parts.iter().map(|p| (p.kind, p.bytes)).collect(),
                    }
                })
                .collect(),
        }
    }

    /// The view of this call as the plugin expects it, valid while `f` runs.
    fn with_view<R>(&self, f: impl FnOnce(&CallView) -> R) -> R {
        let tools: Vec<Vec<ToolView>> = self
            .messages
            .iter()
            .map(|m| {
                m.tools
                    .iter()
                    .map(|t| ToolView {
                        id: StrRef::new(&t.id),
                        name: StrRef::new(&t.name),
                        body: StrRef::new(&t.body),
                        is_result: t.is_result,
                        is_error: t.is_error,
                    })
                    .collect()
            })
            .collect();
        let parts: Vec<Vec<PartView>> = self
            .messages
            .iter()
            .map(|m| {
                m.parts
                    .iter()
                    .map(|&(kind, bytes)| PartView {
                        kind,
                        reserved: 0,
                        bytes,
                    })
                    .collect()
            })
            .collect();
        let lists: Vec<PartList> = parts
            .iter()
            .map(|p| PartList {
                parts: if p.is_empty() {
                    std::ptr::null()
                } else {
                    p.as_ptr()
                },
                len: p.len(),
            })
            .collect();
        let views: Vec<MessageView> = self
            .messages
            .iter()
            .zip(&tools)
            .map(|(m, t)| MessageView {
                id: m.id,
                role: m.role,
                flags: m.flags,
                agent: StrRef::new(&m.agent),
                tokens: m.tokens,
                chars: m.chars,
                text: StrRef::new(&m.text),
                tools: if t.is_empty() {
                    std::ptr::null()
                } else {
                    t.as_ptr()
                },
                tools_len: t.len(),
                images: m.images,
                content_ascii: m.content_ascii,
                image_bytes: m.image_bytes,
                request: m.request,
                content_other: m.content_other,
                timestamp_ms: m.timestamp_ms,
            })
            .collect();
        let call = CallView {
            agent: StrRef::new(&self.agent),
            call_index: self.call_index,
            agent_call_index: self.agent_call_index,
            timestamp_ms: self.timestamp_ms,
            budget: BudgetView {
                context_window: self.budget.0,
                max_output: self.budget.1,
                reserve: self.budget.2,
            },
            overhead_tokens: self.overhead_tokens,
            context_tokens: self.context_tokens,
            prev_input_tokens: self.prev_input_tokens,
            prev_recorded_input_tokens: self.prev_recorded_input_tokens,
            prev_raw_tokens: self.prev_raw_tokens,
            cumulative_input_tokens: self.cumulative_input_tokens,
            new_messages: self.new_messages,
            new_request: self.new_request,
            assistant_turns: self.assistant_turns,
            messages: if views.is_empty() {
                std::ptr::null()
            } else {
                views.as_ptr()
            },
            messages_len: views.len(),
            message_parts: lists.as_ptr(),
        };
        f(&call)
    }
}

/// What the host asks the child.
#[derive(Debug, Serialize, Deserialize)]
#[serde(tag = "ask", rename_all = "snake_case")]
enum Ask {
    Create {
        params: serde_json::Value,
    },
    Decide {
        call: WireCall,
        /// The run's counter by name (`tokens::counter`), offered as `count_text`.
        counter: Option<String>,
    },
    Thresholds,
    Export {
        format: String,
    },
}

/// What the child answers.
#[derive(Debug, Serialize, Deserialize)]
#[serde(tag = "answer", rename_all = "snake_case")]
enum Answer {
    Created,
    Decision { decision: RawDecision },
    Thresholds { thresholds: Vec<Threshold> },
    Text { text: String },
    Error { message: String },
}

/// One line, at most `MAX_LINE` bytes; `None` at the end of the stream.
fn read_line(r: &mut impl BufRead) -> std::io::Result<Option<String>> {
    let mut buf = Vec::new();
    let n = r.by_ref().take(MAX_LINE).read_until(b'\n', &mut buf)?;
    if n == 0 {
        return Ok(None);
    }
    if buf.last() != Some(&b'\n') {
        return Err(std::io::Error::other(format!(
            "a message of more than {MAX_LINE} bytes, or cut off"
        )));
    }
    String::from_utf8(buf)
        .map(Some)
        .map_err(|_| std::io::Error::other("a message that is not UTF-8"))
}

/// A strategy instance living in a child process.
pub(crate) struct ChildInstance {
    child: Child,
    stdin: Option<ChildStdin>,
    answers: Receiver<std::result::Result<String, String>>,
    timeout: Duration,
    /// Once the child failed, every later request fails with the same words.
    dead: Option<String>,
}

impl ChildInstance {
    /// Starts the runner for `entry` and creates the instance in it.
    pub(crate) fn start(
        entry: &StrategyEntry,
        iso: &Isolation,
        params: &serde_json::Value,
    ) -> std::result::Result<ChildInstance, String> {
        if !entry.meta.path.is_file() {
            return Err(format!(
                "cannot run in a separate process: {} is not a library file (a plugin linked into this program runs in it)",
                entry.meta.path.display()
            ));
        }
        let mut child = Command::new(&iso.runner)
            .arg(RUNNER_ARG)
            .arg(&entry.meta.path)
            .arg(&entry.meta.id)
            .arg(iso.memory_bytes.to_string())
            // The runner is this binary, whose allocator (mimalloc) reserves address space 1 GiB
            // at a time: under the runner's address-space limit that reservation alone could
            // leave no room to map the plugin. In 32 MiB steps the limit counts what is used.
            // (A plugin with mimalloc of its own, LibreChat's, reads the same setting.)
            .env("MIMALLOC_ARENA_RESERVE", "32M")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .map_err(|e| format!("cannot start the runner {}: {e}", iso.runner.display()))?;
        let stdin = child.stdin.take();
        let mut stdout = BufReader::new(child.stdout.take().expect("piped"));
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::Builder::new()
            .name("ctxlab-isolated-plugin".into())
            .spawn(move || loop {
                let line = read_line(&mut stdout).map_err(|e| e.to_string());
                let end = !matches!(line, Ok(Some(_)));
                let sent = match line {
                    Ok(Some(l)) => tx.send(Ok(l)),
                    Ok(None) => break,
                    Err(e) => tx.send(Err(e)),
                };
                if sent.is_err() || end {
                    break;
                }
            })
            .map_err(|e| format!("cannot start a thread: {e}"))?;
        let mut inst = ChildInstance {
            child,
            stdin,
            answers: rx,
            timeout: iso.timeout,
            dead: None,
        };
        match inst.ask(&Ask::Create {
            params: params.clone(),
        })? {
            Answer::Created => Ok(inst),
            other => Err(unexpected(other)),
        }
    }

    /// Sends one request and waits for its answer, at most `timeout`.
    fn ask(&mut self, ask: &Ask) -> std::result::Result<Answer, String> {
        if let Some(d) = &self.dead {
            return Err(d.clone());
        }
        let r = self.exchange(ask);
        if let Err(e) = &r {
            self.dead = Some(e.clone());
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
        match r? {
            Answer::Error { message } => Err(message),
            a => Ok(a),
        }
    }

    fn exchange(&mut self, ask: &Ask) -> std::result::Result<Answer, String> {
        let mut line = serde_json::to_string(ask).map_err(|e| format!("cannot send: {e}"))?;
        line.push('\n');
        let wrote = self
            .stdin
            .as_mut()
            .map(|w| w.write_all(line.as_bytes()).and_then(|_| w.flush()));
        if !matches!(wrote, Some(Ok(()))) {
            return Err(self.ended());
        }
        match self.answers.recv_timeout(self.timeout) {
            Ok(Ok(text)) => serde_json::from_str(&text)
                .map_err(|e| format!("its process answered something unreadable ({e})")),
            Ok(Err(e)) => Err(format!("its process answered {e}")),
            Err(RecvTimeoutError::Timeout) => {
                let _ = self.child.kill();
                let _ = self.child.wait();
                Err(format!(
                    "no answer within {} s (an endless loop?): its process was killed",
                    self.timeout.as_secs_f64()
                ))
            }
            Err(RecvTimeoutError::Disconnected) => Err(self.ended()),
        }
    }

    /// Why the child is gone, from its exit status.
    fn ended(&mut self) -> String {
        let status = self.child.wait();
        let how = match status {
            Ok(s) => {
                #[cfg(unix)]
                {
                    use std::os::unix::process::ExitStatusExt;
                    match (s.code(), s.signal()) {
                        (_, Some(sig)) => format!("ended by signal {sig}{}", signal_name(sig)),
                        (Some(c), _) => format!("exited with code {c}"),
                        _ => s.to_string(),
                    }
                }
                #[cfg(not(unix))]
                {
                    s.to_string()
                }
            }
            Err(e) => format!("ended ({e})"),
        };
        format!("its process {how} before answering (the plugin aborted, exited or crashed, or ran out of its memory limit)")
    }

    pub(crate) fn decide(
        &mut self,
        call: &CallView,
        counter: Option<&dyn crate::tokens::TokenCounter>,
    ) -> std::result::Result<RawDecision, String> {
        // Safety: the view is valid for this call (the engine's contract with `decide`).
        let call = unsafe { WireCall::of(call) };
        match self.ask(&Ask::Decide {
            call,
            counter: counter.map(|c| c.name().to_string()),
        })? {
            Answer::Decision { decision } => Ok(decision),
            other => Err(unexpected(other)),
        }
    }

    pub(crate) fn thresholds(&mut self) -> Vec<Threshold> {
        match self.ask(&Ask::Thresholds) {
            Ok(Answer::Thresholds { thresholds }) => thresholds,
            _ => Vec::new(),
        }
    }

    pub(crate) fn export(&mut self, format: &str) -> std::result::Result<String, String> {
        match self.ask(&Ask::Export {
            format: format.to_string(),
        })? {
            Answer::Text { text } => Ok(text),
            other => Err(unexpected(other)),
        }
    }
}

impl Drop for ChildInstance {
    fn drop(&mut self) {
        // End of input: the runner destroys the instance and exits. One that does not is killed.
        drop(self.stdin.take());
        for _ in 0..50 {
            if !matches!(self.child.try_wait(), Ok(None)) {
                return;
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn unexpected(a: Answer) -> String {
    format!("its process answered out of turn ({a:?})")
}

#[cfg(unix)]
fn signal_name(sig: i32) -> &'static str {
    match sig {
        6 => " (SIGABRT)",
        9 => " (SIGKILL: killed, or over the memory limit)",
        7 => " (SIGBUS)",
        11 => " (SIGSEGV)",
        _ => "",
    }
}

/// Limits the runner's own address space and turns core dumps off, before the plugin loads.
#[cfg(unix)]
fn limit_memory(bytes: u64) -> std::result::Result<(), String> {
    let set = |res, cur: u64| {
        let lim = libc::rlimit {
            rlim_cur: cur as libc::rlim_t,
            rlim_max: cur as libc::rlim_t,
        };
        // Safety: setrlimit reads the struct only.
        (unsafe { libc::setrlimit(res, &lim) } == 0)
            .then_some(())
            .ok_or_else(|| std::io::Error::last_os_error().to_string())
    };
    set(libc::RLIMIT_CORE, 0)?;
    set(libc::RLIMIT_AS, bytes)
}

#[cfg(not(unix))]
fn limit_memory(_bytes: u64) -> std::result::Result<(), String> {
    Ok(())
}

/// The runner: `ctxlab __plugin-runner LIBRARY STRATEGY_ID MEMORY_BYTES`. Loads the library
/// under the memory limit, then answers requests on stdin until it closes. Returns the exit code.
pub fn serve(args: &[String]) -> i32 {
    let [path, id, memory] = args else {
        eprintln!("usage: ctxlab {RUNNER_ARG} LIBRARY STRATEGY_ID MEMORY_BYTES");
        return 2;
    };
    let out = std::io::stdout();
    let mut out = out.lock();
    let mut answer = |a: &Answer| -> bool {
        let Ok(mut line) = serde_json::to_string(a) else {
            return false;
        };
        line.push('\n');
        out.write_all(line.as_bytes())
            .and_then(|_| out.flush())
            .is_ok()
    };
    let start = || -> std::result::Result<StrategyEntry, String> {
        limit_memory(
            memory
                .parse()
                .map_err(|_| format!("memory limit {memory}"))?,
        )?;
        let mut reg = super::Registry::new();
        reg.load_path(Path::new(path)).map_err(|r| r.reason)?;
        reg.find(id)
            .cloned()
            .ok_or_else(|| format!("{path} has no strategy {id}"))
    };
    let entry = start();
    let mut input = BufReader::new(std::io::stdin().lock());
    let mut instance: Option<Instance> = None;
    let mut counters: std::collections::HashMap<
        String,
        std::sync::Arc<dyn crate::tokens::TokenCounter>,
    > = Default::default();
    loop {
        let line = match read_line(&mut input) {
            Ok(Some(l)) => l,
            Ok(None) => return 0,
            Err(e) => {
                eprintln!("ctxlab plugin runner: {e}");
                return 2;
            }
        };
        let reply = match (serde_json::from_str::<Ask>(&line), &entry) {
            (Err(e), _) => Answer::Error {
                message: format!("the runner could not read the request ({e})"),
            },
            (Ok(_), Err(e)) => Answer::Error { message: e.clone() },
            (Ok(Ask::Create { params }), Ok(entry)) => match entry.create(&params) {
                Ok(i) => {
                    instance = Some(i);
                    Answer::Created
                }
                Err(e) => Answer::Error {
                    message: plugin_message(e),
                },
            },
            (Ok(ask), Ok(_)) => match (&mut instance, ask) {
                (None, _) => Answer::Error {
                    message: "no instance was created".into(),
                },
                (Some(inst), Ask::Decide { call, counter }) => {
                    let counter = counter.and_then(|name| {
                        if !counters.contains_key(&name) {
                            let c = crate::tokens::counter(&name).ok()?;
                            counters.insert(name.clone(), c);
                        }
                        counters.get(&name).cloned()
                    });
                    match call.with_view(|v| inst.decide_counted(v, counter.as_deref(), None)) {
                        Ok(decision) => Answer::Decision { decision },
                        Err(e) => Answer::Error {
                            message: plugin_message(e),
                        },
                    }
                }
                (Some(inst), Ask::Thresholds) => Answer::Thresholds {
                    thresholds: inst.thresholds(),
                },
                (Some(inst), Ask::Export { format }) => match inst.export(&format) {
                    Ok(text) => Answer::Text { text },
                    Err(e) => Answer::Error {
                        message: plugin_message(e),
                    },
                },
                (Some(_), Ask::Create { .. }) => unreachable!("matched above"),
            },
        };
        if !answer(&reply) {
            return 0;
        }
    }
}

/// The plugin's own words, without the "plugin X (id):" the host adds again.
fn plugin_message(e: Error) -> String {
    match e {
        Error::Plugin { message, .. } => message,
        other => other.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::WireCall;
    use ctxlab_plugin_api::abi::{PART_TEXT, PART_THINKING, PART_TOOL_CALL};
    use ctxlab_plugin_api::testing::{TestCall, TestMsg};
    use ctxlab_plugin_api::{Call, PartKind};

    /// What `Call::parts` gives for each message of a view.
    fn parts(c: &Call<'_>) -> Vec<Option<Vec<(PartKind, Vec<u8>)>>> {
        (0..c.len())
            .map(|i| {
                c.parts(i)
                    .map(|p| p.map(|(k, b)| (k, b.to_vec())).collect())
            })
            .collect()
    }

    /// ABI 1.6: an isolated plugin is handed the same message parts as an in-process one.
    #[test]
    fn message_parts_cross_the_pipe() {
        let call = TestCall::new(vec![
            TestMsg::user("plain"),
            TestMsg::assistant("").parts(&[
                (PART_THINKING, "think"),
                (PART_TEXT, ""),
                (PART_TEXT, "two\nlines"),
            ]),
            TestMsg::tool_call("a", "read", "{}").parts(&[(PART_TOOL_CALL, "{}")]),
        ]);
        let (direct, wire) = call.with_view(|v| unsafe {
            let c = Call::from_raw(v);
            (parts(&c), serde_json::to_string(&WireCall::of(v)).unwrap())
        });
        assert_eq!(direct[0], None);
        assert_eq!(direct[1].as_ref().map(|p| p.len()), Some(3));
        let back: WireCall = serde_json::from_str(&wire).unwrap();
        let crossed = back.with_view(|v| parts(&unsafe { Call::from_raw(v) }));
        assert_eq!(crossed, direct);
    }
}
