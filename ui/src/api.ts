// Typed calls to the app's commands (src-tauri/src/commands.rs). The types come from
// ./bindings, generated from the Rust types; a Rust test fails when they drift.

import { Channel, invoke } from "@tauri-apps/api/core";
import type { AppError } from "./bindings/AppError";
import type { BudgetRequest } from "./bindings/BudgetRequest";
import type { CompositionView } from "./bindings/CompositionView";
import type { ContextView } from "./bindings/ContextView";
import type { ExportRequest } from "./bindings/ExportRequest";
import type { ExportResult } from "./bindings/ExportResult";
import type { LogFile } from "./bindings/LogFile";
import type { OpenResult } from "./bindings/OpenResult";
import type { Progress } from "./bindings/Progress";
import type { ReplayRequest } from "./bindings/ReplayRequest";
import type { RunView } from "./bindings/RunView";
import type { SessionDetail } from "./bindings/SessionDetail";
import type { CompactionPointView } from "./bindings/CompactionPointView";
import type { ImportView } from "./bindings/ImportView";
import type { PricingView } from "./bindings/PricingView";
import type { LiveUpdate } from "./bindings/LiveUpdate";
import type { TuneProgress } from "./bindings/TuneProgress";
import type { TuneRequest } from "./bindings/TuneRequest";
import type { TuneView } from "./bindings/TuneView";
import type { JsonValue } from "./bindings/serde_json/JsonValue";
import type { SessionSummary } from "./bindings/SessionSummary";
import type { Strategies } from "./bindings/Strategies";
import type { StoredList } from "./bindings/StoredList";
import type { StrategyRequest } from "./bindings/StrategyRequest";

/** A command's error: always `{code, message}`. */
export function asAppError(e: unknown): AppError {
  if (e && typeof e === "object" && "code" in e && "message" in e) return e as AppError;
  return { code: "internal", message: String(e) };
}

async function call<T>(cmd: string, args?: Record<string, unknown>): Promise<T> {
  try {
    return await invoke<T>(cmd, args);
  } catch (e) {
    throw asAppError(e);
  }
}

export const api = {
  listStrategies: () => call<Strategies>("list_strategies"),
  discoverLogs: () => call<LogFile[]>("discover_logs"),
  library: () => call<OpenResult>("library"),
  storedSessions: () => call<StoredList>("stored_sessions"),
  openStored: (id: number) => call<SessionSummary>("open_stored", { id }),
  openPath: (path: string) => call<OpenResult>("open_path", { path }),
  closeSession: (key: number) => call<boolean>("close_session", { key }),
  sessionDetail: (key: number) => call<SessionDetail>("session_detail", { key }),
  composition: (key: number) => call<CompositionView>("composition", { key }),
  /** What the model table makes of the session: cost, unpriced models, assumed budget. */
  sessionPricing: (key: number) => call<PricingView>("session_pricing", { key }),
  /** Merges a LiteLLM price list into the user's models.toml (`ctxlab models import`). */
  importPriceList: (path: string) => call<ImportView>("import_price_list", { path }),
  contextAt: (key: number, callIndex: number, strategy: StrategyRequest, counter: string | null, budget: BudgetRequest | null) =>
    call<ContextView>("context_at", { key, call: callIndex, strategy, counter, budgetRequest: budget }),
  replay: (request: ReplayRequest, onProgress: (p: Progress) => void) => {
    const channel = new Channel<Progress>();
    channel.onmessage = onProgress;
    return call<RunView[]>("replay", { request, onProgress: channel });
  },
  tune: (request: TuneRequest, onProgress: (p: TuneProgress) => void) => {
    const channel = new Channel<TuneProgress>();
    channel.onmessage = onProgress;
    return call<TuneView>("tune", { request, onProgress: channel });
  },
  explain: (key: number, strategy: StrategyRequest, counter: string | null, budget: BudgetRequest, calibrate: boolean) =>
    call<CompactionPointView[]>("explain", { key, strategy, counter, budgetRequest: budget, calibrate }),
  saveProfile: (strategy: string, name: string, params: JsonValue, note: string) => call<null>("save_profile", { strategy, name, params, note }),
  follow: (key: number, onUpdate: (u: LiveUpdate) => void) => {
    const channel = new Channel<LiveUpdate>();
    channel.onmessage = onUpdate;
    return call<null>("follow", { key, onUpdate: channel });
  },
  unfollow: (key: number) => call<boolean>("unfollow", { key }),
  cancel: (job: number) => call<boolean>("cancel", { job }),
  exportConfig: (request: ExportRequest) => call<ExportResult>("export_config", { request }),
  /** The logs named on the command line, once read. */
  startup: () => call<OpenResult>("startup"),
  /** Tells the startup bench a step was reached; true when a bench listens. */
  startupMark: (step: string) => call<boolean>("startup_mark", { step }),
};
