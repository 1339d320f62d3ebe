// The UI's state, shared by the views, with a tiny change notification.

import type { AppError } from "./bindings/AppError";
import type { OpenResult } from "./bindings/OpenResult";
import type { RunView } from "./bindings/RunView";
import type { SessionDetail } from "./bindings/SessionDetail";
import type { Strategies } from "./bindings/Strategies";
import type { StoredSession } from "./bindings/StoredSession";

export type View = "library" | "session" | "compare" | "tune" | "export";

export interface Selection {
  id: string;
  /** The form's raw inputs by parameter name. */
  values: Record<string, string | boolean>;
}

export const store = {
  view: "library" as View,
  strategies: null as Strategies | null,
  library: { sessions: [], failed: [] } as OpenResult,
  /** The sessions of the SQLite library (opened before, maybe in an earlier run). */
  stored: [] as StoredSession[],
  /** Rows of the library that did not read back, each named with why. */
  storedSkipped: [] as string[],
  /** Errors of the last open attempts, newest first. */
  openErrors: [] as AppError[],
  current: null as number | null,
  detail: null as SessionDetail | null,
  /** Strategies picked for a comparison, in order. */
  picked: [] as Selection[],
  runs: [] as RunView[],
  running: null as { job: number; text: string; share: number } | null,
  status: "",
  /** Whether the startup bench listens (see main.ts): then the first drawn chart is reported. */
  benchStartup: Promise.resolve(false),
};

type Listener = () => void;
const listeners = new Set<Listener>();

export function onChange(f: Listener) {
  listeners.add(f);
}

export function changed() {
  for (const f of listeners) f();
}
