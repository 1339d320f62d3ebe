// Differential test: the librechat plugin against @librechat/agents 3.1.63 itself
// (createPruneMessages in src/messages/prune.ts, shouldTriggerSummarization in
// src/summarization/index.ts), on every real log in ../shared/real-logs that loads and every
// sample, at several windows and parameter sets, with the same token counts (ctxlab's
// heuristic counter on both sides). Needs `cargo build --workspace` first (the CLI and the
// plugin) and ../shared beside the checkout.
import test from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { ROOT, CTXLAB, replay, compare, files } from './oracle.mjs';

const REAL = path.resolve(ROOT, '../shared/real-logs');
const WINDOWS = [8000, 32000, 128000];
const PARAMS = [
  {},
  { enabled: false },
  {
    enabled: false,
    'contextPruning.enabled': true,
    'contextPruning.minPrunableToolChars': 2000,
    'contextPruning.keepLastAssistants': 1,
  },
  { 'trigger.type': 'token_ratio', 'trigger.value': 0.85 },
  { 'trigger.type': 'remaining_tokens', 'trigger.value': 4000, reserveRatio: 0.2 },
  { 'trigger.type': 'messages_to_refine', 'trigger.value': 5 },
];

test('the plugin prunes as @librechat/agents 3.1.63 does', () => {
  assert.ok(fs.existsSync(CTXLAB), `${CTXLAB} is missing: run cargo build --workspace first`);
  assert.ok(fs.existsSync(REAL), `${REAL} is missing: the real logs live in ../shared beside the checkout`);
  const logs = [...files(REAL), ...files(path.join(ROOT, 'samples'))].filter(
    (f) => !/\.(md|json)$/.test(f) || /traj\.json$|conversation_history\.json$|ui_messages\.json$|session\.json$/.test(f),
  );
  const t = { runs: 0, calls: 0, kept: 0, edited: 0, lengths: 0, fired: 0, firedBoth: 0, firedEither: 0, pruned: 0, edits: 0 };
  const loaded = [];
  const misses = [];
  for (const log of logs) {
    let ok = false;
    for (const window of WINDOWS) {
      for (const params of PARAMS) {
        const runs = replay(log, window, params);
        if (runs.error) break;
        ok = true;
        for (const run of runs) {
          t.runs++;
          for (const d of run.decisions) {
            if (d.context.some((m) => m.state === 'dropped')) t.pruned++;
            if (d.context.some((m) => m.state === 'edited')) t.edits++;
          }
          for (const c of compare(run, params)) {
            t.calls++;
            t.kept += c.kept;
            t.edited += c.edited;
            t.lengths += c.lengths;
            t.fired += c.fired === c.pluginFired;
            t.firedBoth += c.fired && c.pluginFired;
            t.firedEither += c.fired || c.pluginFired;
            if (!(c.kept && c.edited && c.lengths && c.fired === c.pluginFired) && misses.length < 20) {
              misses.push(`${path.relative(ROOT, log)} window ${window} ${JSON.stringify(params)} call ${c.call}: ` +
                `summary LibreChat ${c.fired} ctxlab ${c.pluginFired}; ${c.detail}`);
            }
          }
        }
      }
      if (!ok) break;
    }
    if (ok) loaded.push(path.relative(ROOT, log));
  }
  const pct = (x) => ((100 * x) / t.calls).toFixed(2);
  console.log(`logs replayed: ${loaded.length} (${loaded.join(', ')})`);
  console.log(
    `${t.runs} runs, ${t.calls} calls (${t.pruned} with pruning, ${t.edits} with edits): kept set identical ${pct(t.kept)} %, ` +
      `edited set ${pct(t.edited)} %, edited lengths within 1 % ${pct(t.lengths)} %, ` +
      `summarization on the same calls ${pct(t.fired)} % (${t.firedBoth} fired in both, ${t.firedEither} in either)`,
  );
  for (const m of misses) console.log('  differs:', m);
  assert.ok(loaded.length >= 10, `only ${loaded.length} logs replayed`);
  assert.ok(t.pruned > 100 && t.edits > 100, 'the matrix must exercise pruning and edits');
  // Issue #17 asks for 99 % on each. The last full run gave 100.00 / 99.99 / 100.00 / 100.00 %
  // (720 runs, 38,772 calls), after the causes were found: lengths are UTF-16 code units in
  // LibreChat (utils/truncation.ts; emoji on claude-code_oh-my-posh), a message's token count
  // changes between calls (Codex reasoning; codex-cli_agentv), id-less tool calls
  // (codex-cli_gildore-arena: prune.ts stripOrphanToolUseBlocks, and the harness matching blocks
  // by id). The floors hold that level (docs/strategies/librechat.md, "Last differential run").
  assert.ok(t.kept / t.calls >= 0.999, `kept set identical on ${pct(t.kept)} % of calls`);
  assert.ok(t.edited / t.calls >= 0.999, `edited set identical on ${pct(t.edited)} % of calls`);
  assert.ok(t.lengths / t.calls >= 0.999, `edited lengths within 1 % on ${pct(t.lengths)} % of calls`);
  assert.ok(t.fired / t.calls >= 0.999, `summarization on the same calls: ${pct(t.fired)} %`);
});
