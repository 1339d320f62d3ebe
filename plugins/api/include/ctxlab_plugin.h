/*
 * ctxlab_plugin.h — the ctxlab strategy plugin ABI, version 1, for C and any language with a C FFI.
 *
 * This header and plugins/api/src/abi.rs describe the same ABI; tests/c_plugin.rs checks that
 * every struct below has the size and field offsets the Rust side uses.
 *
 * A plugin is a shared library exporting one symbol:
 *
 *     const ctxlab_plugin_table *ctxlab_plugin_entry_v1(void);
 *
 * returning a table that lives as long as the process. The host loads the library once and never
 * unloads it.
 *
 * STABILITY RULES
 *   - ABI major: bumped only when existing plugins would break. The host refuses any other major.
 *   - ABI minor: bumped when fields are appended (to ctxlab_plugin_table, to the sink) or a
 *     constant (op kind, flag) is added. Fields are never removed or reordered. 1.1 added the
 *     sink's count_text, 1.2 CTXLAB_OP_ALLOW_SPLIT, 1.3 the message's content counts (in what
 *     was padding, flagged by CTXLAB_FLAG_CONTENT), 1.4 per-result CTXLAB_OP_MASK parts and larger
 *     literal summaries under CTXLAB_OP_ALLOW_SPLIT, 1.5 CTXLAB_OP_DROP_RESULTS, 1.6 the call's
 *     message_parts (appended to ctxlab_call, read only for a message flagged
 *     CTXLAB_FLAG_PARTS), 1.7 CTXLAB_OP_REPEAT, 1.8 CTXLAB_OP_CUT and the sink's count_cut
 *     (read only for a message flagged CTXLAB_FLAG_CUT). Set `size` to
 *     sizeof(ctxlab_plugin_table) as you compiled it: the host reads the header (abi_major, abi_minor, size) first and refuses
 *     a table shorter than it needs.
 *
 * MEMORY RULES (nothing allocated on one side is freed on the other)
 *   - Strings are UTF-8, passed as pointer + length (ctxlab_str), never NUL-terminated by
 *     contract. A zero length may come with a NULL pointer.
 *   - The table, strategy descriptors and their strings belong to the plugin and must stay valid
 *     for the life of the process (static data is the simple way).
 *   - Everything the host passes in (call views, message views, tool views, sinks, writers, the
 *     strings they point to) belongs to the host and is valid only during the function call that
 *     received it. Copy what you want to keep; never free it, never keep a pointer to it.
 *   - What the plugin pushes into a sink or writes to a writer is copied by the host before the
 *     push/write returns: pass pointers to your stack or temporary buffers freely.
 *   - Instances are created by `create` and released by `destroy`; the host calls each instance
 *     from one thread at a time, but different instances may run on different threads.
 *   - Never let a C++ exception, longjmp or Rust panic cross these functions: return
 *     CTXLAB_STATUS_ERROR (or CTXLAB_STATUS_PANIC) with a message written to `err` instead.
 */
#ifndef CTXLAB_PLUGIN_H
#define CTXLAB_PLUGIN_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define CTXLAB_ABI_MAJOR 1u
#define CTXLAB_ABI_MINOR 8u
#define CTXLAB_ENTRY_SYMBOL "ctxlab_plugin_entry_v1"

/* Windows needs the entry point exported explicitly; elsewhere default visibility is enough. */
#if defined(_WIN32)
#define CTXLAB_EXPORT __declspec(dllexport)
#else
#define CTXLAB_EXPORT __attribute__((visibility("default")))
#endif

/* Borrowed UTF-8 string: `len` bytes at `ptr`. */
typedef struct ctxlab_str {
    const uint8_t *ptr;
    size_t len;
} ctxlab_str;

/* A host-owned text sink. Call write(ctx, bytes, len) any number of times to append text. */
typedef struct ctxlab_writer {
    void *ctx;
    void (*write)(void *ctx, const uint8_t *ptr, size_t len);
} ctxlab_writer;

/* Message roles. */
#define CTXLAB_ROLE_SYSTEM 0u
#define CTXLAB_ROLE_USER 1u
#define CTXLAB_ROLE_ASSISTANT 2u
#define CTXLAB_ROLE_TOOL 3u

/* Message flags (ctxlab_message.flags). */
#define CTXLAB_FLAG_PINNED (1u << 0)      /* ops may not touch it unless an earlier op unpins it */
#define CTXLAB_FLAG_SUMMARY (1u << 1)     /* a summary written by a compaction */
#define CTXLAB_FLAG_INJECTED (1u << 2)    /* a user message sent while the agent was working */
#define CTXLAB_FLAG_TOOL_CALL (1u << 3)   /* makes tool calls (see `tools`) */
#define CTXLAB_FLAG_TOOL_RESULT (1u << 4) /* carries tool results (see `tools`) */
#define CTXLAB_FLAG_ERROR (1u << 5)       /* one of its tool results is an error */
#define CTXLAB_FLAG_EDITED (1u << 6)      /* truncated, masked or offloaded by an earlier op */
#define CTXLAB_FLAG_IMAGE (1u << 7)       /* has at least one image */
#define CTXLAB_FLAG_REQUEST (1u << 8)     /* opens a new user request */
#define CTXLAB_FLAG_CONTENT (1u << 9)     /* ABI 1.3: content_ascii / content_other are set */
#define CTXLAB_FLAG_PARTS (1u << 10)      /* ABI 1.6: the call's message_parts[i] describes it */
#define CTXLAB_FLAG_CUT (1u << 11)        /* ABI 1.8: CTXLAB_OP_CUT and the sink's count_cut */

/* ABI 1.6: kinds of a message's parts. */
#define CTXLAB_PART_TEXT 0u
#define CTXLAB_PART_THINKING 1u
#define CTXLAB_PART_TOOL_CALL 2u   /* a tool call's arguments */
#define CTXLAB_PART_TOOL_RESULT 3u /* a tool result's content */

/* ABI 1.6: one part of a message's text. The text is its parts in order joined by one "\n"
 * (images have no part): part k is the `bytes` bytes after part k-1 and its "\n". */
typedef struct ctxlab_part {
    uint32_t kind; /* CTXLAB_PART_* */
    uint32_t reserved;
    uint64_t bytes;
} ctxlab_part;

/* ABI 1.6: the parts of one message. */
typedef struct ctxlab_part_list {
    const ctxlab_part *parts;
    size_t len;
} ctxlab_part_list;

/* One tool call (in an assistant message) or tool result (in a tool/user message). */
typedef struct ctxlab_tool {
    ctxlab_str id;     /* call id; for a result, the id of the call it answers */
    ctxlab_str name;   /* tool name */
    ctxlab_str body;   /* arguments (JSON text) of a call; content of a result */
    uint8_t is_result; /* 1 for a result, 0 for a call */
    uint8_t is_error;  /* 1 when the result is an error */
} ctxlab_tool;

/* One message of the agent's working context, as the host holds it. */
typedef struct ctxlab_message {
    uint64_t id; /* stable within the replay: survives edits and position changes */
    uint32_t role;
    uint32_t flags;
    ctxlab_str agent;  /* agent that wrote it */
    uint64_t tokens;   /* with the run's counter, per-message overhead included */
    uint64_t chars;    /* characters of `text` */
    ctxlab_str text;   /* everything the model sees of the message, as one text */
    const ctxlab_tool *tools;
    size_t tools_len;
    uint32_t images;      /* number of images */
    uint32_t content_ascii; /* ABI 1.3 (FLAG_CONTENT): ASCII chars of the content (text parts and
                               tool results joined by "\n"; no thinking, no tool arguments) */
    uint64_t image_bytes; /* their total decoded bytes */
    uint32_t request;     /* the agent's request number (0-based) */
    uint32_t content_other; /* ABI 1.3 (FLAG_CONTENT): the content's non-ASCII chars */
    int64_t timestamp_ms; /* ms since the Unix epoch, INT64_MIN when unknown */
} ctxlab_message;

typedef struct ctxlab_budget {
    uint64_t context_window;
    uint64_t max_output;
    uint64_t reserve;
} ctxlab_budget;

/* What the host tells a strategy at one call. The messages are the agent's working context in
 * order; the ones that arrived since the agent's previous call are the last `new_messages`. */
typedef struct ctxlab_call {
    ctxlab_str agent;
    uint64_t call_index;       /* among all calls of the session */
    uint64_t agent_call_index; /* among this agent's calls */
    int64_t timestamp_ms;      /* INT64_MIN when unknown */
    ctxlab_budget budget;
    uint64_t overhead_tokens;            /* calibrated system prompt + tool schemas */
    uint64_t context_tokens;             /* overhead + sum of messages[].tokens */
    uint64_t prev_input_tokens;          /* agent's previous call as replayed (0: first call) */
    uint64_t prev_recorded_input_tokens; /* same, as the log recorded it (0: unknown, or the
                                            replay's context has left the log's) */
    uint64_t prev_raw_tokens;            /* raw counted tokens of the previous call */
    uint64_t cumulative_input_tokens;    /* sum over the agent's previous calls */
    uint64_t new_messages;               /* appended since the agent's previous call */
    uint8_t new_request;                 /* 1: a new user request started since then */
    uint64_t assistant_turns;            /* the agent's replies already in the context */
    const ctxlab_message *messages;
    size_t messages_len;
    /* ABI 1.6: one entry per message; read entry i only when messages[i].flags has
     * CTXLAB_FLAG_PARTS (a 1.5 host's ctxlab_call ends before this field). */
    const ctxlab_part_list *message_parts;
} ctxlab_call;

/* Edit op kinds. */
#define CTXLAB_OP_DROP 0u      /* remove [start, end); nothing replaces it (silent loss) */
#define CTXLAB_OP_SUMMARIZE 1u /* replace [start, end) by one summary message */
#define CTXLAB_OP_TRUNCATE 2u  /* keep head_chars + tail_chars of each message, `text` between */
#define CTXLAB_OP_MASK 3u      /* replace each tool result's content by `text`; ABI 1.4: on a message
                                * of k tool results, k-1 NUL separators in `text` give each result
                                * its own content (k: the last part is the rest of the text) */
#define CTXLAB_OP_OFFLOAD 4u   /* move the content out; the stub `text` stays */
#define CTXLAB_OP_PIN 5u
#define CTXLAB_OP_UNPIN 6u
/* ABI 1.2: the drops and summaries that follow inside [start, end) may separate a tool call from
 * its result (a modelled system that keeps orphan results); each separated pair is counted in the
 * run's split tool pairs. ABI 1.4: a literal summary there may be larger than what it replaces
 * (phi-core's "[Summary] <short reply>"). Changes nothing itself. */
#define CTXLAB_OP_ALLOW_SPLIT 7u
/* ABI 1.5: removes some tool results of each message in [start, end) and keeps the others.
 * `text`: one '0' (keep) or '1' (remove) per tool result of the message in order, optionally one
 * more for the rest of its text (what follows its results); then, for each part kept, a NUL and
 * its new content. The message's text becomes the kept contents joined by "\n". A removed result
 * whose call is in the context is a separated pair: only under CTXLAB_OP_ALLOW_SPLIT (counted).
 * Removing every part is refused (use CTXLAB_OP_DROP); a 1.4 host refuses the kind as unknown. */
#define CTXLAB_OP_DROP_RESULTS 8u
/* ABI 1.7, CTXLAB_SCOPE_THIS_CALL only: each message in [start, end) gets again the this-call
 * content edit (truncate, mask, offload, or one repeated so) the agent's previous decision made
 * to it, with the same new text and tokens; a message that decision did not edit so (or that a
 * persistent edit changed since) is sent as it is. No `text`. A strategy that re-sends most of
 * its view edits call after call sends the changed ones and one repeat per stretch between them;
 * a 1.6 host refuses the kind as unknown. */
#define CTXLAB_OP_REPEAT 9u
/* ABI 1.8: each message in [start, end) keeps the first `head_chars` BYTES and the last
 * `tail_chars` BYTES of its text as the view gave it, `text` between them: a truncation whose cut
 * points the strategy chose, sent without the new text. Both cuts on character boundaries,
 * head_chars + tail_chars at most the text's length; the result is what CTXLAB_OP_MASK with that
 * text would make. A 1.7 host refuses the kind as unknown. */
#define CTXLAB_OP_CUT 10u

/* Op scopes. */
#define CTXLAB_SCOPE_PERSISTENT 0u /* the history changes for every later call (a compaction) */
#define CTXLAB_SCOPE_THIS_CALL 1u  /* only what this call sends is filtered */

/* One edit of the working context. Positions index ctxlab_call.messages as the plugin saw them.
 * Ops must be sorted by position, not overlap, stay in bounds, leave pinned messages alone and
 * never separate a tool call from its result; the host rejects a decision that breaks a rule. */
typedef struct ctxlab_op {
    uint32_t kind;
    uint32_t scope;
    uint64_t start; /* half-open range [start, end) */
    uint64_t end;
    uint64_t head_chars;              /* TRUNCATE */
    uint64_t tail_chars;              /* TRUNCATE */
    uint64_t summary_max_tokens;      /* SUMMARIZE: simulated summary cap (0: `text` only) */
    uint64_t summarizer_input_tokens; /* SUMMARIZE: tokens sent to the summarizer (0: the range) */
    uint32_t role;                    /* SUMMARIZE: role of the summary message */
    ctxlab_str text; /* SUMMARIZE: literal summary; MASK: placeholder; OFFLOAD: stub;
                        TRUNCATE: marker between head and tail */
} ctxlab_op;

/* Event kinds. */
#define CTXLAB_EVENT_NOTE 0u
#define CTXLAB_EVENT_WARN 1u
#define CTXLAB_EVENT_CUTOVER 2u
#define CTXLAB_EVENT_FAILURE 3u
#define CTXLAB_EVENT_SUPPRESSED 4u
#define CTXLAB_EVENT_COMPACTION 5u
#define CTXLAB_EVENT_TRUNCATION 6u
#define CTXLAB_EVENT_STOP 7u

typedef struct ctxlab_event {
    uint32_t kind;
    ctxlab_str code;    /* machine-readable, in the modelled system's words */
    ctxlab_str message; /* a sentence a user can read: "cumulative 120,431 >= CutoverAt 120,000" */
    uint64_t tokens_before;
    uint64_t tokens_after;
} ctxlab_event;

/* Threshold kinds and the series they are drawn against. */
#define CTXLAB_THRESHOLD_WARN 0u
#define CTXLAB_THRESHOLD_CUTOVER 1u
#define CTXLAB_THRESHOLD_TRIGGER 2u
#define CTXLAB_LINE_OCCUPANCY 0u
#define CTXLAB_LINE_CUMULATIVE_SINCE_COMPACTION 1u
#define CTXLAB_LINE_CUMULATIVE 2u

typedef struct ctxlab_threshold {
    uint32_t kind;
    uint32_t line;
    uint64_t tokens;
    ctxlab_str label; /* the parameter it comes from, e.g. "CutoverAt" */
} ctxlab_threshold;

/* Host-owned sink: push ops, events, gauges (named per-call values) and thresholds.
 * The host copies each item before the push returns. */
typedef struct ctxlab_sink {
    void *ctx;
    void (*push_op)(void *ctx, const ctxlab_op *op);
    void (*push_event)(void *ctx, const ctxlab_event *ev);
    void (*push_gauge)(void *ctx, ctxlab_str name, double value);
    void (*push_threshold)(void *ctx, const ctxlab_threshold *th);
    /* ABI 1.1: tokens of a bare text with the run's counter (NULL: none). A message's tokens
     * after an edit are tokens - count_text(old text) + count_text(new text). */
    uint64_t (*count_text)(void *ctx, ctxlab_str text);
    /* ABI 1.8, read only for a message flagged CTXLAB_FLAG_CUT (a 1.7 host's sink ends before
     * it): tokens of the text a CTXLAB_OP_CUT of message `message` would give it (its first
     * `head` bytes, `marker`, its last `tail` bytes), without the text being made; UINT64_MAX
     * when that op would be refused. */
    uint64_t (*count_cut)(void *ctx, uint64_t message, uint64_t head, ctxlab_str marker,
                          uint64_t tail);
} ctxlab_sink;

/* One strategy the plugin exports. */
typedef struct ctxlab_strategy_desc {
    ctxlab_str id;     /* globally unique, e.g. "fuseraft.compaction" */
    ctxlab_str title;
    ctxlab_str system; /* the modelled system, e.g. "fuseraft" */
    ctxlab_str description;
    /* JSON array of parameter specs: {"name", "type" (int|float|bool|string|enum|string_list|
     * int_list|int_map), "default", optional "min"/"max"/"choices", "description", "key"}. */
    ctxlab_str params_schema;
    ctxlab_str export_formats; /* comma-separated, e.g. "fuseraft-yaml" */
} ctxlab_strategy_desc;

/* Statuses. */
#define CTXLAB_STATUS_OK 0
#define CTXLAB_STATUS_ERROR 1
#define CTXLAB_STATUS_PANIC 2

/* create: a new instance of strategy number `strategy` (index into the descriptors) with the
 * given parameters (a JSON object; absent keys take their defaults; may be empty). Returns NULL
 * after writing the reason to `err` when the parameters are invalid. Values are not pre-checked
 * by the host: validate them against your schema. */
typedef void *(*ctxlab_create_fn)(size_t strategy, ctxlab_str params_json,
                                  const ctxlab_writer *err);
/* decide: called at every call of every agent, in time order. Push ops and events into `sink`.
 * Must cost O(new messages) on calls where nothing fires: never rescan the history each call. */
typedef int32_t (*ctxlab_decide_fn)(void *instance, const ctxlab_call *call,
                                    const ctxlab_sink *sink, const ctxlab_writer *err);
/* thresholds: push the threshold lines the chart should draw for this instance's parameters. */
typedef int32_t (*ctxlab_thresholds_fn)(void *instance, const ctxlab_sink *sink);
/* export: write the parameters as the target system's config file in `format` to `out`. */
typedef int32_t (*ctxlab_export_fn)(void *instance, ctxlab_str format, const ctxlab_writer *out,
                                    const ctxlab_writer *err);
/* import: parse a config file in `format` back into parameters; write a JSON object to `out`. */
typedef int32_t (*ctxlab_import_fn)(size_t strategy, ctxlab_str format, ctxlab_str text,
                                    const ctxlab_writer *out, const ctxlab_writer *err);
/* destroy: release an instance made by `create`. */
typedef void (*ctxlab_destroy_fn)(void *instance);

/* The table ctxlab_plugin_entry_v1 returns. Fields are only ever appended. */
typedef struct ctxlab_plugin_table {
    uint32_t abi_major; /* CTXLAB_ABI_MAJOR */
    uint32_t abi_minor; /* CTXLAB_ABI_MINOR */
    size_t size;        /* sizeof(ctxlab_plugin_table) */
    ctxlab_str name;
    ctxlab_str version;
    const ctxlab_strategy_desc *strategies;
    size_t strategies_len;
    ctxlab_create_fn create;
    ctxlab_decide_fn decide;
    ctxlab_thresholds_fn thresholds;
    ctxlab_export_fn export_params;
    ctxlab_import_fn import_params;
    ctxlab_destroy_fn destroy;
} ctxlab_plugin_table;

typedef const ctxlab_plugin_table *(*ctxlab_entry_fn)(void);

/* Builds a ctxlab_str from a string literal. */
#define CTXLAB_STR(lit) {(const uint8_t *)(lit), sizeof(lit) - 1}

#ifdef __cplusplus
}
#endif

#endif /* CTXLAB_PLUGIN_H */
