// Following a log that is still being written: merging what a poll found into the calls the
// Session view holds, without reading the log again.

import type { CallColumns } from "./bindings/CallColumns";
import type { LiveUpdate } from "./bindings/LiveUpdate";

/** `calls` with everything from `u.from_call` on replaced by the update's calls (new calls
 *  appended, changed ones updated), and every call's estimate replaced by the update's (the
 *  calibration is refitted on the grown log). Returns the number of calls added. */
export function applyLive(calls: CallColumns, u: LiveUpdate): number {
  const before = calls.agent.length;
  const from = Math.min(u.from_call, before);
  const keys = ["agent", "timestamp", "recorded_context", "recorded_output", "estimate"] as const;
  for (const k of keys) {
    const col = calls[k] as unknown[];
    const fresh = u.calls[k] as unknown[];
    // A changed call keeps its estimate (the update has none); new calls have none yet.
    const kept = k === "estimate" && u.reloaded === null ? col.slice(from, from + fresh.length) : [];
    col.length = from;
    for (let i = 0; i < fresh.length; i++) col.push(k === "estimate" ? (fresh[i] ?? kept[i] ?? null) : fresh[i]);
  }
  if (u.error === null && u.estimate.length === calls.agent.length) calls.estimate = [...u.estimate];
  return calls.agent.length - before;
}
