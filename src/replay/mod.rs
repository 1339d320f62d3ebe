//! The replay engine: rebuilds each agent's context call by call and replays it through a
//! strategy (a baseline or a plugin), validating every decision and measuring the run.
//!
//! Code map:
//! - `feed`: the walk over a session's calls that says what reached each agent, and when the log
//!   compacted it; the recorded context and every replay start from it.

mod feed;

use crate::model::{MsgIdx, Session};
use crate::tokens::TokenCounter;
use feed::{Feed, Step};

/// Raw counted tokens (no overhead, no calibration) of each call's context as the log recorded it:
/// the agent's messages among `messages[..context_end]`, with the log's own compactions applied
/// (the history before the boundary replaced by the summary and the messages kept verbatim).
/// `None` for every call of a usage-only session: there is no text to count.
pub fn recorded_raw_tokens(session: &Session, counter: &dyn TokenCounter) -> Vec<Option<u64>> {
    if session.usage_only {
        return vec![None; session.calls.len()];
    }
    let mut feed = Feed::new(session);
    // Per agent: (message, tokens) of its current context, and their sum.
    let mut context: Vec<Vec<(MsgIdx, u64)>> = vec![Vec::new(); session.agents.len()];
    let mut totals = vec![0u64; session.agents.len()];
    let mut out = Vec::with_capacity(session.calls.len());
    for call in &session.calls {
        let a = call.agent;
        if a >= context.len() {
            out.push(None);
            continue;
        }
        let (ctx, total) = (&mut context[a], &mut totals[a]);
        feed.advance(call, |step| match step {
            Step::Append(m) => {
                let t = counter.count_message(&session.messages[m]);
                ctx.push((m, t));
                *total += t;
            }
            Step::Compaction(c) => {
                let keep = recorded_keep(session, c);
                ctx.retain(|&(m, _)| keep(m));
                *total = ctx.iter().map(|&(_, t)| t).sum();
            }
        });
        out.push(Some(*total));
    }
    out
}

/// Which messages of the agent's context survive a recorded compaction: the summary and the
/// messages from `kept_from` on (those after the boundary have not reached the agent yet).
fn recorded_keep(session: &Session, compaction: usize) -> impl Fn(MsgIdx) -> bool {
    let c = &session.compactions[compaction];
    let kept_from = c.kept_from.unwrap_or(c.at_message);
    let summary = c.summary;
    move |m| m >= kept_from || Some(m) == summary
}

#[cfg(test)]
pub(crate) mod test_support;

#[cfg(test)]
mod tests {
    use super::test_support::*;
    use super::*;

    #[test]
    fn recorded_raw_tokens_follow_each_agents_context() {
        let mut s = SessionBuilder::new();
        let main = s.agent("main");
        let sub = s.agent("sub");
        s.msg(main, Role::System, "x".repeat(40)); // 10 + 4
        s.msg(main, Role::User, "y".repeat(80)); // 20 + 4
        s.msg(sub, Role::User, "z".repeat(400)); // 100 + 4
        s.call(main); // 38
        s.msg(main, Role::Assistant, "a".repeat(8)); // 2 + 4
        s.call(sub); // 104
        s.msg(main, Role::User, "b".repeat(4)); // 1 + 4
        s.call(main); // 38 + 6 + 5
        let t = recorded_raw_tokens(&s.session, &Chars4);
        assert_eq!(t, vec![Some(38), Some(104), Some(49)]);
    }

    #[test]
    fn recorded_compaction_replaces_history_with_summary_and_kept_messages() {
        let mut s = SessionBuilder::new();
        let a = s.agent("main");
        s.msg(a, Role::User, "q".repeat(400)); // 104
        let kept = s.msg(a, Role::Assistant, "k".repeat(40)); // 14
        s.call(a); // 118
        let boundary = s.session.messages.len();
        let summary = s.msg(a, Role::User, "s".repeat(20)); // 9
        s.msg(a, Role::User, "n".repeat(4)); // 5
        s.compaction(a, boundary, Some(summary), Some(kept));
        s.call(a); // kept 14 + summary 9 + 5
        let t = recorded_raw_tokens(&s.session, &Chars4);
        assert_eq!(t, vec![Some(118), Some(28)]);
    }

    #[test]
    fn usage_only_sessions_have_no_raw_tokens() {
        let mut s = SessionBuilder::new();
        let a = s.agent("main");
        s.call(a);
        s.session.usage_only = true;
        assert_eq!(recorded_raw_tokens(&s.session, &Chars4), vec![None]);
    }
}
