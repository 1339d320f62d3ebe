// Drives @librechat/agents' own createPruneMessages / shouldTriggerSummarization on the calls
// ctxlab replayed (from `ctxlab replay --json --decisions`), the way LibreChat's agent node
// (Graph.ts, AgentContext.ts) drives them, and compares each call with the plugin's decision.
// What the harness does around the pruner mirrors plugins/librechat/src/engine.rs; the pruning
// itself is LibreChat's.
import { createRequire } from 'node:module';
import { execFileSync } from 'node:child_process';
import path from 'node:path';
import fs from 'node:fs';

const require = createRequire(import.meta.url);
const agents = require('@librechat/agents');
const { AIMessage, HumanMessage, SystemMessage, ToolMessage } = require('@langchain/core/messages');

export const ROOT = path.resolve(path.dirname(new URL(import.meta.url).pathname), '../../..');
export const CTXLAB = path.join(ROOT, 'target/debug/ctxlab');

/** ctxlab's `heuristic` counter (src/tokens/heuristic.rs, FIM One's rule) on a bare text. */
export function countText(text) {
  if (text.length === 0) return 0;
  let ascii = 0;
  let other = 0;
  for (const ch of text) {
    if (ch.codePointAt(0) < 0x80) ascii++;
    else other++;
  }
  return Math.max(1, Math.floor((3 * ascii + 8 * other) / 12));
}

/** Length in Unicode scalar values (ctxlab's `chars`). */
export const chars = (s) => [...s].length;

/** `computeEffectiveMaxContextTokens` over initializeAgent's 95 % (engine.rs). */
export function maxContextTokens(window, maxOutput, r) {
  const base = Math.max(0, window - maxOutput);
  const initial = Math.round(base * 0.95);
  if (!(r > 0 && r < 1)) return initial;
  return Math.min(initial, Math.max(1024, Math.round(base * (1 - r))));
}

/** `ctxlab replay` of one log with decisions; null when the log does not load or replay. */
export function replay(log, window, params) {
  // The heuristic counter on both sides: countText above is its rule (the CLI's default for
  // OpenAI-model logs is the exact o200k counter since issue #15).
  const args = ['replay', log, '-s', 'librechat.agents', '--window', String(window), '--counter', 'heuristic', '--json', '--decisions'];
  for (const [k, v] of Object.entries(params)) args.push('--param', `${k}=${JSON.stringify(v)}`);
  try {
    const out = execFileSync(CTXLAB, args, { maxBuffer: 1 << 30, stdio: ['ignore', 'pipe', 'pipe'] });
    return JSON.parse(out.toString()).runs;
  } catch (e) {
    return { error: String(e.stderr ?? e) };
  }
}

function ownText(m) {
  let rest = m.text;
  for (const t of m.tools.filter((t) => !t.result)) {
    for (const part of [t.body, t.name]) if (part) rest = rest.replace(part, '');
  }
  return rest;
}

function kindOf(m) {
  const results = m.tools.some((t) => t.result);
  if (m.role === 'system') return 'system';
  if (m.role === 'assistant') return 'ai';
  if (m.role === 'tool' || (m.role === 'user' && results)) return 'tool';
  return 'human';
}

/** A LangChain message for a host message (its id in `id`). */
function toLangChain(m) {
  const id = String(m.id);
  switch (kindOf(m)) {
    case 'system':
      return new SystemMessage({ content: m.text, id });
    case 'human':
      return new HumanMessage({ content: m.text, id });
    case 'tool': {
      const r = m.tools.find((t) => t.result);
      return new ToolMessage({ content: m.text, tool_call_id: r ? r.id : '', id });
    }
    default: {
      const calls = m.tools.filter((t) => !t.result);
      if (calls.length === 0) return new AIMessage({ content: m.text, id });
      const own = ownText(m);
      const content = [];
      if (own.trim().length > 0) content.push({ type: 'text', text: own });
      // `call` numbers the blocks for hostText (ids may be empty and repeat; LibreChat's code
      // copies blocks whole, so the extra key travels with each).
      calls.forEach((c, call) => content.push({ type: 'tool_use', id: c.id, name: c.name, input: c.body, call }));
      let args;
      const tool_calls = calls.map((c) => {
        try {
          args = JSON.parse(c.body);
        } catch {
          args = { input: c.body };
        }
        return { id: c.id, name: c.name, args: typeof args === 'object' && args ? args : { input: args } };
      });
      return new AIMessage({ content, tool_calls, id });
    }
  }
}

/** The text ctxlab's host would hold for a LangChain message as it is now (engine.rs / prune.rs
 *  `ai_text`: the original with each tool input as it is now, stripped calls removed). */
function hostText(msg, orig) {
  if (typeof msg.content === 'string') return msg.content;
  let out = orig.text;
  const now = new Map();
  for (const b of msg.content) {
    if (b && (b.type === 'tool_use' || b.type === 'tool_call')) {
      now.set(b.call, typeof b.input === 'string' ? b.input : JSON.stringify(b.input));
    }
  }
  let stripped = false;
  orig.tools
    .filter((t) => !t.result)
    .forEach((c, call) => {
      if (!c.body) return;
      if (!now.has(call)) {
        out = out.replace(c.body, () => '');
        stripped = true;
      } else if (now.get(call) !== c.body) {
        out = out.replace(c.body, () => now.get(call));
      }
    });
  return stripped ? out.replace(/\n+$/, '') : out;
}

/**
 * Replays one run's decisions through LibreChat's own code and compares call by call.
 * Returns per-call comparisons.
 */
export function compare(run, params) {
  const summarization = params.enabled !== false;
  const reserveRatio = params.reserveRatio ?? 0.05;
  const trigger =
    params['trigger.type'] && params['trigger.type'] !== 'unset'
      ? { type: params['trigger.type'], value: params['trigger.value'] }
      : undefined;
  const contextPruningConfig = params['contextPruning.enabled']
    ? {
        enabled: true,
        keepLastAssistants: params['contextPruning.keepLastAssistants'] ?? 3,
        softTrimRatio: params['contextPruning.softTrimRatio'] ?? 0.3,
        hardClearRatio: params['contextPruning.hardClearRatio'] ?? 0.5,
        minPrunableToolChars: params['contextPruning.minPrunableToolChars'] ?? 50000,
      }
    : undefined;
  const maxContext = maxContextTokens(run.budget.context_window, run.budget.max_output, reserveRatio);
  const known = new Map(); // host id -> { text, tokens, tools, role }
  const tokenCounter = (msg) => {
    const orig = known.get(Number(msg.id));
    if (!orig) throw new Error(`tokenCounter: unknown message ${msg.id}`);
    const now = hostText(msg, orig);
    if (now === orig.text) return orig.tokens;
    return Math.max(0, orig.tokens - countText(orig.text)) + countText(now);
  };
  const states = new Map();
  const results = [];
  for (const d of run.decisions) {
    for (const m of d.context) {
      // Text and tools come with a message's first appearance; its token count comes with every
      // call and may change (a Codex reply's hidden reasoning counts only within its own
      // request): the count the host gives at this call is the one both sides use.
      if (m.text !== undefined) known.set(m.id, { text: m.text, tokens: m.tokens, tools: m.tools, role: m.role });
      else if (known.has(m.id)) known.get(m.id).tokens = m.tokens;
    }
    let st = states.get(d.agent);
    if (!st) {
      st = { pruner: null, messages: [], ids: [], ratio: 1, toolSchema: null, lastCount: 0, calls: 0 };
      states.set(d.agent, st);
    }
    let base = 0;
    while (base < d.context.length && d.context[base].summary) base++;
    const summaryTokens = d.context.slice(0, base).reduce((a, m) => a + m.tokens, 0);
    const hostMsgs = d.context.slice(base);
    if (d.new_request) {
      st.pruner = null;
      st.toolSchema = null;
      st.lastCount = 0;
    }
    const continues =
      hostMsgs.length >= st.ids.length && st.ids.every((id, i) => hostMsgs[i].id === id);
    if (st.pruner && !continues) st.pruner = null;
    if (!st.pruner) {
      st.messages = [];
      st.ids = [];
      st.calls = 0;
      st.pruner = agents.createPruneMessages({
        startIndex: 0,
        maxTokens: maxContext,
        tokenCounter,
        indexTokenCountMap: {},
        summarizationEnabled: summarization,
        reserveRatio,
        calibrationRatio: st.ratio,
        contextPruningConfig,
        getInstructionTokens: () => st.instructions,
      });
    }
    const fresh = [];
    for (const m of hostMsgs.slice(st.ids.length)) {
      const lc = toLangChain({ ...known.get(m.id), id: m.id, role: m.role });
      st.messages.push(lc);
      st.ids.push(m.id);
      fresh.push(lc);
    }
    let usageMetadata;
    const reply = fresh.find((m) => m.getType() === 'ai');
    if (st.calls > 0 && d.prev_recorded_input_tokens > 0 && reply) {
      usageMetadata = {
        input_tokens: d.prev_recorded_input_tokens,
        output_tokens: known.get(Number(reply.id)).tokens,
      };
    }
    st.calls++;
    const overhead = d.overhead_tokens;
    const instructions = (st.toolSchema ?? overhead) + summaryTokens;
    st.instructions = instructions;
    const res = st.pruner({ messages: st.messages, usageMetadata });
    if (res.calibrationRatio != null && res.calibrationRatio > 0) st.ratio = res.calibrationRatio;
    if (res.resolvedInstructionOverhead != null) {
      const tool = st.toolSchema ?? overhead;
      const calibrated = Math.max(0, res.resolvedInstructionOverhead - (instructions - tool));
      const variance = tool > 0 ? Math.abs(calibrated - tool) / tool : 1;
      if (variance > 0.15) st.toolSchema = calibrated;
    }
    const instructionsNow = (st.toolSchema ?? overhead) + summaryTokens;
    let fired = false;
    const refine = res.messagesToRefine ?? [];
    if (summarization && refine.length > 0) {
      const skip = st.lastCount > 0 && st.messages.length <= st.lastCount;
      fired =
        !skip &&
        agents.shouldTriggerSummarization({
          trigger,
          maxContextTokens: maxContext,
          prePruneContextTokens:
            res.prePruneContextTokens != null ? res.prePruneContextTokens + instructionsNow : undefined,
          remainingContextTokens: res.remainingContextTokens,
          messagesToRefineCount: refine.length,
        });
    }
    const pluginFired = d.context.some((m) => m.state === 'summary');
    const cmp = { call: d.call, fired, pluginFired, kept: true, edited: true, lengths: true, detail: '' };
    if (fired) {
      st.pruner = null;
      st.lastCount = 0;
    }
    if (!fired && !pluginFired) {
      const oracle = new Map();
      for (const m of res.context) {
        const orig = known.get(Number(m.id));
        const now = hostText(m, orig);
        oracle.set(Number(m.id), now === orig.text ? null : chars(now));
      }
      const plugin = new Map();
      for (const m of hostMsgs) {
        if (m.state === 'verbatim') plugin.set(m.id, null);
        else if (m.state === 'edited') plugin.set(m.id, m.sent_chars);
      }
      const same = (a, b) => a.size === b.size && [...a.keys()].every((k) => b.has(k));
      cmp.kept = same(oracle, plugin);
      const editedO = [...oracle].filter(([, v]) => v != null);
      const editedP = [...plugin].filter(([, v]) => v != null);
      cmp.edited = editedO.length === editedP.length && editedO.every(([k]) => plugin.get(k) != null);
      cmp.lengths = editedO.every(([k, v]) => {
        const p = plugin.get(k);
        return p == null || Math.abs(p - v) <= Math.max(1, 0.01 * v);
      });
      if (!cmp.kept || !cmp.edited || !cmp.lengths) {
        const onlyO = [...oracle.keys()].filter((k) => !plugin.has(k));
        const onlyP = [...plugin.keys()].filter((k) => !oracle.has(k));
        const lens = editedO
          .filter(([k, v]) => plugin.get(k) !== v)
          .slice(0, 3)
          .map(([k, v]) => `${k}:${v}/${plugin.get(k)}`);
        const editOnlyO = editedO.filter(([k]) => plugin.get(k) == null).map(([k, v]) => `${k}:${v}`);
        const editOnlyP = editedP.filter(([k]) => oracle.get(k) == null).map(([k, v]) => `${k}:${v}`);
        cmp.detail =
          `kept only by LibreChat ${onlyO.slice(0, 5)}; only by ctxlab ${onlyP.slice(0, 5)}; ` +
          `edited only by LibreChat ${editOnlyO.slice(0, 5)}; only by ctxlab ${editOnlyP.slice(0, 5)}; lengths ${lens}`;
      }
    }
    results.push(cmp);
  }
  return results;
}

/** Every file under a folder. */
export function files(dir) {
  const out = [];
  for (const e of fs.readdirSync(dir, { withFileTypes: true })) {
    const p = path.join(dir, e.name);
    if (e.isDirectory()) out.push(...files(p));
    else out.push(p);
  }
  return out.sort();
}
