//! Owned messages and calls for testing a strategy through the `Strategy` trait, without FFI.
//! The views handed to `decide` are built exactly as the host builds them.

use crate::abi::*;
use crate::sdk::*;

#[derive(Debug, Clone)]
pub struct TestTool {
    pub id: String,
    pub name: String,
    pub body: String,
    pub is_result: bool,
    pub is_error: bool,
}

#[derive(Debug, Clone)]
pub struct TestMsg {
    pub id: u64,
    pub role: Role,
    pub flags: u32,
    pub agent: String,
    /// Tokens; `None` uses ceil(chars/4) + 4.
    pub tokens: Option<u64>,
    pub text: String,
    pub tools: Vec<TestTool>,
    pub images: u32,
    pub image_bytes: u64,
    pub request: u32,
    /// The message's content as the host counts it (FLAG_CONTENT); `None`: the text, or nothing
    /// for a message making tool calls (its text is their arguments).
    pub content: Option<String>,
    /// ABI 1.6: the message's parts as (kind, bytes of `text`) (`TestMsg::parts`); `None`: the
    /// view does not describe them (no FLAG_PARTS).
    pub parts: Option<Vec<PartView>>,
}

impl TestMsg {
    pub fn new(role: Role, text: &str) -> TestMsg {
        TestMsg {
            id: 0,
            role,
            flags: 0,
            agent: "main".into(),
            tokens: None,
            text: text.into(),
            tools: Vec::new(),
            images: 0,
            image_bytes: 0,
            request: 0,
            content: None,
            parts: None,
        }
    }
    pub fn system(text: &str) -> TestMsg {
        TestMsg::new(Role::System, text)
    }
    pub fn user(text: &str) -> TestMsg {
        TestMsg::new(Role::User, text)
    }
    pub fn assistant(text: &str) -> TestMsg {
        TestMsg::new(Role::Assistant, text)
    }
    /// An assistant message making one tool call.
    pub fn tool_call(id: &str, name: &str, args: &str) -> TestMsg {
        let mut m = TestMsg::new(Role::Assistant, args);
        m.flags |= FLAG_TOOL_CALL;
        m.tools.push(TestTool {
            id: id.into(),
            name: name.into(),
            body: args.into(),
            is_result: false,
            is_error: false,
        });
        m
    }
    /// A tool message answering call `id`.
    pub fn tool_result(id: &str, name: &str, content: &str) -> TestMsg {
        let mut m = TestMsg::new(Role::Tool, content);
        m.flags |= FLAG_TOOL_RESULT;
        m.tools.push(TestTool {
            id: id.into(),
            name: name.into(),
            body: content.into(),
            is_result: true,
            is_error: false,
        });
        m
    }
    pub fn tokens(mut self, n: u64) -> Self {
        self.tokens = Some(n);
        self
    }
    pub fn flag(mut self, f: u32) -> Self {
        self.flags |= f;
        self
    }
    pub fn pinned(self) -> Self {
        self.flag(FLAG_PINNED)
    }
    pub fn agent(mut self, a: &str) -> Self {
        self.agent = a.into();
        self
    }
    pub fn request(mut self, r: u32) -> Self {
        self.request = r;
        self
    }
    /// Sets the content the host would report (e.g. the text part of a message whose flattened
    /// text also holds thinking).
    pub fn content(mut self, c: &str) -> Self {
        self.content = Some(c.into());
        self
    }
    /// The message is these parts (ABI 1.6): its text becomes them joined by "\n" and the view
    /// describes them (FLAG_PARTS). Tool parts must match `tools` in order, as the host's do.
    pub fn parts(mut self, parts: &[(u32, &str)]) -> Self {
        self.text = parts.iter().map(|p| p.1).collect::<Vec<_>>().join("\n");
        self.parts = Some(
            parts
                .iter()
                .map(|&(kind, t)| PartView {
                    kind,
                    reserved: 0,
                    bytes: t.len() as u64,
                })
                .collect(),
        );
        self
    }
    pub fn image(mut self, bytes: u64) -> Self {
        self.images += 1;
        self.image_bytes += bytes;
        self.flags |= FLAG_IMAGE;
        self
    }
    pub fn token_count(&self) -> u64 {
        self.tokens
            .unwrap_or_else(|| (self.text.chars().count() as u64).div_ceil(4) + 4)
    }
}

/// The facts of one call plus the working context; `decide` runs a strategy on it.
#[derive(Debug, Clone, Default)]
pub struct TestCall {
    pub agent: String,
    pub call_index: u64,
    pub agent_call_index: u64,
    pub budget: BudgetView,
    pub overhead_tokens: u64,
    pub prev_input_tokens: u64,
    pub prev_recorded_input_tokens: u64,
    pub prev_raw_tokens: u64,
    pub cumulative_input_tokens: u64,
    pub new_messages: u64,
    pub new_request: bool,
    pub assistant_turns: Option<u64>,
    pub messages: Vec<TestMsg>,
    /// The run's token counter as the host would offer it (`Call::count_text`), and with it
    /// the count of cuts (ABI 1.8: every message flagged `FLAG_CUT`, `Call::count_cut` counts
    /// the text a cut makes); `None`: no counter, as a host without one.
    pub counter: Option<fn(&str) -> u64>,
}

impl TestCall {
    pub fn new(messages: Vec<TestMsg>) -> TestCall {
        TestCall {
            agent: "main".into(),
            budget: BudgetView {
                context_window: 200_000,
                max_output: 8_000,
                reserve: 0,
            },
            new_messages: messages.len() as u64,
            messages,
            ..TestCall::default()
        }
    }
    pub fn window(mut self, w: u64) -> Self {
        self.budget.context_window = w;
        self
    }
    pub fn context_tokens(&self) -> u64 {
        self.overhead_tokens + self.messages.iter().map(|m| m.token_count()).sum::<u64>()
    }

    /// Runs `decide` on views built from this call, as the host would.
    pub fn decide(&self, strategy: &mut dyn Strategy) -> Result<Decision, String> {
        self.with_view(|raw| {
            let call = unsafe { Call::from_raw(raw) };
            let mut d = Decision::default();
            match self.counter {
                None => strategy.decide(&call, &mut d)?,
                Some(count) => {
                    let text = |t: &str| count(t);
                    let view = call;
                    let cut = |i: usize, head: u64, marker: &str, tail: u64| {
                        let t = view.msg(i).text();
                        let (head, tail) = (head as usize, tail as usize);
                        match (
                            head.checked_add(tail).filter(|&n| n <= t.len()),
                            t.get(..head),
                            t.get(t.len().saturating_sub(tail)..),
                        ) {
                            (Some(_), Some(h), Some(tl)) => count(&format!("{h}{marker}{tl}")),
                            _ => u64::MAX,
                        }
                    };
                    let call = call.with_counter(&text).with_cut_counter(&cut);
                    strategy.decide(&call, &mut d)?
                }
            }
            Ok(d)
        })
    }

    /// Builds the C view of this call, as the host would, and hands it to `f` (the view lives
    /// only for the closure): for tests that call a plugin through its table.
    pub fn with_view<R>(&self, f: impl FnOnce(&CallView) -> R) -> R {
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
                        is_result: t.is_result as u8,
                        is_error: t.is_error as u8,
                    })
                    .collect()
            })
            .collect();
        let views: Vec<MessageView> = self
            .messages
            .iter()
            .zip(&tools)
            .enumerate()
            .map(|(i, (m, t))| MessageView {
                id: if m.id == 0 { i as u64 + 1 } else { m.id },
                role: m.role.to_abi(),
                flags: m.flags
                    | FLAG_CONTENT
                    | if m.parts.is_some() { FLAG_PARTS } else { 0 }
                    | if self.counter.is_some() { FLAG_CUT } else { 0 },
                agent: StrRef::new(&m.agent),
                tokens: m.token_count(),
                chars: m.text.chars().count() as u64,
                text: StrRef::new(&m.text),
                tools: t.as_ptr(),
                tools_len: t.len(),
                images: m.images,
                image_bytes: m.image_bytes,
                request: m.request,
                content_ascii: content_counts(m).0,
                content_other: content_counts(m).1,
                timestamp_ms: i64::MIN,
            })
            .collect();
        let parts: Vec<PartList> = self
            .messages
            .iter()
            .map(|m| match &m.parts {
                Some(p) => PartList {
                    parts: p.as_ptr(),
                    len: p.len(),
                },
                None => PartList::EMPTY,
            })
            .collect();
        let turns = self.assistant_turns.unwrap_or_else(|| {
            self.messages
                .iter()
                .filter(|m| m.role == Role::Assistant)
                .count() as u64
        });
        let raw = CallView {
            agent: StrRef::new(&self.agent),
            call_index: self.call_index,
            agent_call_index: self.agent_call_index,
            timestamp_ms: i64::MIN,
            budget: self.budget,
            overhead_tokens: self.overhead_tokens,
            context_tokens: self.context_tokens(),
            prev_input_tokens: self.prev_input_tokens,
            prev_recorded_input_tokens: self.prev_recorded_input_tokens,
            prev_raw_tokens: self.prev_raw_tokens,
            cumulative_input_tokens: self.cumulative_input_tokens,
            new_messages: self.new_messages,
            new_request: self.new_request as u8,
            assistant_turns: turns,
            messages: views.as_ptr(),
            messages_len: views.len(),
            message_parts: parts.as_ptr(),
        };
        f(&raw)
    }
}

/// splitmix64: deterministic random sessions and parameters for randomized tests, without a
/// dependency.
pub struct Rng(pub u64);

impl Rng {
    pub fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// In `0..n` (0 when `n` is 0).
    pub fn below(&mut self, n: u64) -> u64 {
        self.next() % n.max(1)
    }

    /// True `percent` times in 100.
    pub fn chance(&mut self, percent: u64) -> bool {
        self.below(100) < percent
    }
}

/// What the host reports of a test message's content (`MessageView::content_ascii/other`).
fn content_counts(m: &TestMsg) -> (u32, u32) {
    let content = match &m.content {
        Some(c) => c.as_str(),
        None if m.flags & FLAG_TOOL_CALL != 0 => "",
        None => &m.text,
    };
    let (a, o) = ascii_other_chars(content);
    (a.min(u32::MAX as u64) as u32, o.min(u32::MAX as u64) as u32)
}
