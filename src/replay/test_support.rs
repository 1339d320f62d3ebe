//! Sessions built in code for the engine's unit tests.

pub(crate) use crate::model::Role;
use crate::model::*;
use crate::tokens::TokenCounter;

/// phi-core's rules, enough for exact expectations in tests: ceil(chars/4) + 4 per message.
pub(crate) struct Chars4;

impl TokenCounter for Chars4 {
    fn name(&self) -> &'static str {
        "chars4"
    }
    fn count_text(&self, text: &str) -> u64 {
        (text.chars().count() as u64).div_ceil(4)
    }
    fn count_parts(&self, parts: &[Part]) -> u64 {
        let chars: usize = parts
            .iter()
            .map(|p| match p {
                Part::Text { text } | Part::Thinking { text } => text.chars().count(),
                Part::ToolCall { name, args, .. } => name.len() + args.chars().count(),
                Part::ToolResult { content, .. } => content.chars().count(),
                Part::Image { .. } => 0,
            })
            .sum();
        (chars as u64).div_ceil(4) + 4
    }
}

pub(crate) struct SessionBuilder {
    pub session: Session,
}

impl SessionBuilder {
    pub fn new() -> SessionBuilder {
        SessionBuilder {
            session: Session {
                id: "test".into(),
                source: Source {
                    format: "test".into(),
                    ..Source::default()
                },
                ..Session::default()
            },
        }
    }
    pub fn agent(&mut self, id: &str) -> AgentIdx {
        self.session.agent_index(id)
    }
    pub fn push(&mut self, agent: AgentIdx, role: Role, parts: Vec<Part>) -> MsgIdx {
        self.session.messages.push(Message {
            agent,
            role,
            parts,
            timestamp: None,
            flags: MessageFlags::default(),
            source: SourcePos::default(),
        });
        self.session.messages.len() - 1
    }
    pub fn msg(&mut self, agent: AgentIdx, role: Role, text: impl Into<String>) -> MsgIdx {
        self.push(agent, role, vec![Part::Text { text: text.into() }])
    }
    pub fn tool_call(&mut self, agent: AgentIdx, id: &str, args: &str) -> MsgIdx {
        self.push(
            agent,
            Role::Assistant,
            vec![Part::ToolCall {
                id: id.into(),
                name: "read".into(),
                args: args.into(),
            }],
        )
    }
    pub fn tool_result(&mut self, agent: AgentIdx, id: &str, content: &str) -> MsgIdx {
        self.push(
            agent,
            Role::Tool,
            vec![Part::ToolResult {
                call_id: id.into(),
                content: content.into(),
                is_error: false,
            }],
        )
    }
    /// A call of `agent` whose context is everything written so far.
    pub fn call(&mut self, agent: AgentIdx) -> usize {
        self.session.calls.push(Call {
            agent,
            context_end: self.session.messages.len(),
            reply: None,
            usage: None,
            model: None,
            timestamp: None,
            request_id: None,
            source: SourcePos::default(),
        });
        self.session.calls.len() - 1
    }
    pub fn compaction(
        &mut self,
        agent: AgentIdx,
        at_message: MsgIdx,
        summary: Option<MsgIdx>,
        kept_from: Option<MsgIdx>,
    ) {
        if let Some(s) = summary {
            self.session.messages[s].flags.is_summary = true;
        }
        self.session.compactions.push(RecordedCompaction {
            agent,
            at_message,
            trigger: "auto".into(),
            pre_tokens: None,
            summary,
            kept_from,
            timestamp: None,
            inferred: false,
            source: SourcePos::default(),
        });
    }
}
