// Every export of the librechat plugin is valid for LibreChat's own loader: librechat.yaml read
// with js-yaml, then `configSchema.strict().safeParse` (librechat-data-provider, pinned), as
// LibreChat's loadCustomConfig does; and the values arrive as they were tuned.
import test from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { createRequire } from 'node:module';
import { CTXLAB } from './oracle.mjs';

const require = createRequire(import.meta.url);
const yaml = require('js-yaml');
const { configSchema } = require('librechat-data-provider');

const SETS = [
  {},
  { enabled: false },
  { enabled: false, reserveRatio: 0.1, 'contextPruning.enabled': true, 'contextPruning.keepLastAssistants': 5 },
  { 'trigger.type': 'token_ratio', 'trigger.value': 0.8, maxSummaryTokens: 1500 },
  { 'trigger.type': 'remaining_tokens', 'trigger.value': 5000 },
  { 'trigger.type': 'messages_to_refine', 'trigger.value': 12, reserveRatio: 0 },
  { reserveRatio: 1, 'contextPruning.softTrimRatio': 0.25, 'contextPruning.hardClearRatio': 0.75 },
  { provider: 'openAI', model: 'gpt-4o-mini', prompt: 'Summarize.', updatePrompt: 'Update the summary.' },
  { 'contextPruning.minPrunableToolChars': 0, 'contextPruning.keepLastAssistants': 0 },
];

function exportYaml(params, format, viaFile) {
  const args = ['export', '-s', 'librechat.agents', '--format', format];
  if (viaFile) {
    // The same parameters from a --params TOML file with dotted keys.
    const file = path.join(fs.mkdtempSync(path.join(os.tmpdir(), 'ctxlab-lc-')), 'p.toml');
    fs.writeFileSync(
      file,
      Object.entries(params)
        .map(([k, v]) => `${k} = ${JSON.stringify(v)}`)
        .join('\n') + '\n',
    );
    args.push('--params', file);
  } else {
    for (const [k, v] of Object.entries(params)) args.push('--param', `${k}=${JSON.stringify(v)}`);
  }
  return execFileSync(CTXLAB, args).toString();
}

test('every export passes librechat-data-provider configSchema.strict()', () => {
  assert.ok(fs.existsSync(CTXLAB), `${CTXLAB} is missing: run cargo build --workspace first`);
  let checked = 0;
  for (const params of SETS) {
    for (const format of ['librechat-yaml', 'librechat-yaml-full']) {
      for (const viaFile of [false, true]) {
        const text = exportYaml(params, format, viaFile);
        const doc = { version: '1.3.4', ...yaml.load(text) };
        const r = configSchema.strict().safeParse(doc);
        assert.ok(r.success, `${format} ${JSON.stringify(params)}:\n${text}\n${JSON.stringify(r.error?.issues)}`);
        const s = r.data.summarization ?? {};
        for (const [k, v] of Object.entries(params)) {
          const got = k.split('.').reduce((o, p) => (o == null ? o : o[p]), s);
          // reserveRatio 1 and 0 are LibreChat's own "no reserve"; the default-valued keys are
          // only written by the full format.
          if (got !== undefined || format.endsWith('full')) assert.deepEqual(got, v, `${k} in ${format}:\n${text}`);
        }
        checked++;
      }
    }
  }
  assert.equal(checked, SETS.length * 4);
});

// Every parameter the plugin declares (`ctxlab plugins info`) either round-trips through
// LibreChat's loader in a set above, or is one that loader does not keep (zod strips or refuses
// the key) and ctxlab's export refuses it by name rather than write a value LibreChat ignores.
test('every parameter reaches LibreChat with its tuned value, or its export is refused by name', () => {
  const info = JSON.parse(execFileSync(CTXLAB, ['plugins', 'info', 'librechat.agents', '--json']).toString());
  assert.ok(info.params.length >= 15, `${info.params.length} parameters`);
  const probe = (p) => {
    if (p.type === 'bool') return !p.default;
    if (p.type === 'string') return `${p.default}x`;
    return typeof p.default === 'number' ? p.default * 2 + 1 : 1;
  };
  const uncovered = [];
  for (const p of info.params) {
    if (SETS.some((s) => p.name in s && s[p.name] !== p.default)) continue;
    uncovered.push(p.name);
    const v = probe(p);
    const doc = { version: '1.3.4', summarization: {} };
    p.name.split('.').reduce((o, k, i, a) => (o[k] = i === a.length - 1 ? v : o[k] ?? {}), doc.summarization);
    const r = configSchema.strict().safeParse(doc);
    const kept = r.success && p.name.split('.').reduce((o, k) => (o == null ? o : o[k]), r.data.summarization) === v;
    assert.ok(!kept, `${p.name} = ${JSON.stringify(v)} reaches LibreChat's config but no set above exports it`);
    assert.throws(
      () => execFileSync(CTXLAB, ['export', '-s', 'librechat.agents', '--format', 'librechat-yaml', '--param', `${p.name}=${JSON.stringify(v)}`], { stdio: ['ignore', 'pipe', 'pipe'] }),
      (e) => String(e.stderr).includes(p.name),
      `${p.name} = ${JSON.stringify(v)}: LibreChat's loader drops it, so export must refuse it by name`,
    );
  }
  // The resolved soft-trim / hard-clear settings are the only ones LibreChat's schema lacks.
  assert.deepEqual(uncovered.sort(), [
    'contextPruning.hardClear.enabled',
    'contextPruning.hardClear.placeholder',
    'contextPruning.softTrim.headChars',
    'contextPruning.softTrim.maxChars',
    'contextPruning.softTrim.tailChars',
  ]);
});
