//! Fixture: a small, well-behaved compacting strategy for benches and the conformance test.
//!
//! When the context exceeds `trigger` × the context window, it summarizes the oldest half of the
//! messages after the leading pinned ones, stopping early at a pinned message, with both ends of
//! the range at safe cuts (`ctxlab_plugin_api::pairs::Cuts`: pairs are never split).
//!
//! Cost: a call that does not compact is O(1) (one comparison). A compaction scans the context
//! once and replaces about half of it by one message, so scan work over a run is bounded by a
//! small multiple of the messages appended: O(1) amortised per message. When no range can be found, it waits until the
//! agent's context has doubled before scanning again, which keeps failed attempts amortised too.

use ctxlab_plugin_api::pairs::Cuts;
use ctxlab_plugin_api::*;
use serde_json::json;
use std::collections::HashMap;
use std::ops::Range;

struct Compact {
    trigger: f64,
    summary_tokens: u64,
    /// Per agent: context length below which a failed search is not retried.
    retry_at: HashMap<String, usize>,
}

/// The oldest half of the messages after the leading pinned ones, not reaching past the next
/// pinned message, with both ends at safe cuts (no tool call separated from its result); `None`
/// when that leaves fewer than 2 messages.
fn oldest_half(call: &Call<'_>) -> Option<Range<usize>> {
    let len = call.len();
    let first = (0..len).find(|&i| !call.msg(i).is_pinned())?;
    let cuts = Cuts::of(call);
    let start = cuts.at_or_after(first);
    let stop = (start..len)
        .find(|&i| call.msg(i).is_pinned())
        .unwrap_or(len);
    let target = (start + (len - start) / 2).min(stop);
    let mut end = cuts.at_or_before(target);
    if end < start + 2 {
        end = cuts.at_or_after(target);
    }
    (end >= start + 2 && end <= stop).then_some(start..end)
}

impl Strategy for Compact {
    fn decide(&mut self, call: &Call<'_>, out: &mut Decision) -> Result<(), String> {
        let window = call.budget().context_window;
        let limit = (self.trigger * window as f64) as u64;
        if window == 0 || call.context_tokens() <= limit {
            return Ok(());
        }
        if self
            .retry_at
            .get(call.agent())
            .is_some_and(|&n| call.len() < n)
        {
            return Ok(());
        }
        match oldest_half(call) {
            Some(r) => {
                let replaced = call.tokens_in(r.clone());
                out.event_tokens(
                    EventKind::Compaction,
                    "compact",
                    format!(
                        "context {} > {}% of window {}: summarized {} messages ({} tokens)",
                        fmt_tokens(call.context_tokens()),
                        (self.trigger * 100.0).round(),
                        fmt_tokens(window),
                        fmt_tokens(r.len() as u64),
                        fmt_tokens(replaced)
                    ),
                    call.context_tokens(),
                    0,
                );
                out.summarize(r, Role::User, self.summary_tokens);
                self.retry_at.remove(call.agent());
            }
            None => {
                out.event(
                    EventKind::Suppressed,
                    "nothing_to_compact",
                    format!(
                        "context {} > {}% of window but no pair-safe unpinned range of 2+ messages",
                        fmt_tokens(call.context_tokens()),
                        (self.trigger * 100.0).round()
                    ),
                );
                self.retry_at
                    .insert(call.agent().to_string(), call.len().max(1) * 2);
            }
        }
        Ok(())
    }

    fn export(&self, format: &str) -> Result<String, String> {
        Err(format!(
            "fixture.compact exports nothing (asked for {format})"
        ))
    }
}

struct Factory;

impl StrategyFactory for Factory {
    fn info(&self) -> StrategyInfo {
        StrategyInfo {
            id: "fixture.compact",
            title: "Fixture: summarize the oldest half",
            system: "fixture",
            description: "Summarizes the oldest half of the unpinned messages when the context exceeds a share of the window.",
            params: vec![
                ParamSpec::new(
                    "trigger",
                    ParamType::Float,
                    json!(0.8),
                    "Share of the context window above which it compacts.",
                )
                .range(0.01, 1.0),
                ParamSpec::new(
                    "summary_tokens",
                    ParamType::Int,
                    json!(2000),
                    "Cap of each simulated summary in tokens.",
                )
                .min(1.0),
            ],
            export_formats: &[],
        }
    }

    fn create(&self, params: Params) -> Result<Box<dyn Strategy>, String> {
        Ok(Box::new(Compact {
            trigger: params.float("trigger"),
            summary_tokens: params.uint("summary_tokens"),
            retry_at: HashMap::new(),
        }))
    }

    fn import(&self, format: &str, _text: &str) -> Result<serde_json::Value, String> {
        Err(format!(
            "fixture.compact imports nothing (asked for {format})"
        ))
    }
}

export_plugin!(name: "fixture-compact", version: env!("CARGO_PKG_VERSION"), strategies: [&Factory]);

#[cfg(test)]
mod tests {
    use super::*;
    use ctxlab_plugin_api::testing::{TestCall, TestMsg};

    fn strategy(trigger: f64) -> Box<dyn Strategy> {
        Factory
            .create(
                Params::resolve(&Factory.info().params, &json!({ "trigger": trigger })).unwrap(),
            )
            .unwrap()
    }

    fn summarized(d: &Decision) -> Vec<Range<usize>> {
        d.ops
            .iter()
            .filter(|o| matches!(o.kind, OpKind::Summarize { .. }))
            .map(|o| o.start..o.end)
            .collect()
    }

    #[test]
    fn below_the_trigger_nothing_happens() {
        let msgs = vec![
            TestMsg::user("hi").tokens(100),
            TestMsg::assistant("yo").tokens(100),
        ];
        let d = TestCall::new(msgs)
            .window(1000)
            .decide(&mut *strategy(0.8))
            .unwrap();
        assert!(d.ops.is_empty() && d.events.is_empty());
    }

    #[test]
    fn summarizes_the_oldest_half_after_the_pinned_prefix() {
        let mut msgs = vec![TestMsg::system("sys").pinned().tokens(10)];
        for i in 0..8 {
            msgs.push(TestMsg::user(&format!("u{i}")).tokens(100));
        }
        let d = TestCall::new(msgs)
            .window(1000)
            .decide(&mut *strategy(0.5))
            .unwrap();
        assert_eq!(summarized(&d), vec![1..5]);
        assert_eq!(d.events[0].kind, EventKind::Compaction);
        assert!(
            d.events[0].message.contains("810 > 50% of window 1,000"),
            "{}",
            d.events[0].message
        );
    }

    #[test]
    fn never_ends_between_a_tool_call_and_its_result() {
        let msgs = vec![
            TestMsg::user("go").tokens(100),
            TestMsg::tool_call("a", "read", "{}").tokens(100),
            TestMsg::tool_call("b", "read", "{}").tokens(100),
            TestMsg::tool_result("a", "read", "x").tokens(100),
            TestMsg::tool_result("b", "read", "y").tokens(100),
            TestMsg::assistant("done").tokens(100),
        ];
        // Half is 3 messages, but [0, 3) would leave two results without their calls.
        let d = TestCall::new(msgs)
            .window(100)
            .decide(&mut *strategy(0.5))
            .unwrap();
        assert_eq!(summarized(&d), vec![0..5]);
    }

    #[test]
    fn stops_at_a_pinned_message_and_backs_off_when_nothing_fits() {
        let msgs = vec![
            TestMsg::user("a").tokens(100),
            TestMsg::user("b").pinned().tokens(100),
            TestMsg::user("c").tokens(100),
            TestMsg::user("d").tokens(100),
        ];
        let mut s = strategy(0.1);
        let call = TestCall::new(msgs.clone()).window(100);
        let d = call.decide(&mut *s).unwrap();
        assert!(d.ops.is_empty());
        assert_eq!(d.events[0].code, "nothing_to_compact");
        // Same length again: no new scan, no new event.
        assert!(call.decide(&mut *s).unwrap().events.is_empty());
        // Twice as long: it looks again.
        let mut longer = msgs.clone();
        longer.extend(msgs.iter().cloned().map(|m| TestMsg { flags: 0, ..m }));
        let d = TestCall::new(longer).window(100).decide(&mut *s).unwrap();
        assert_eq!(d.events[0].code, "nothing_to_compact");
    }
}
